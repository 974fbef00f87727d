// VRAM beyond a job's own tensors (validate/src/testcases/vram.py, run by
// PyTorch): the memory a process holds outside its caching allocator
// (vram_context), cuBLAS's workspace per stream (vram_gemm_workspace) and
// the allocator's reserve over the activations of a forward
// (vram_allocator_reserve). Each a direct reading, the median where there
// are several; nothing to replay on the simulator.
#include <cmath>

#include <fmt/format.h>

#include "calib/bench_replay.hpp"
#include "calib/family.hpp"
#include "core/stats.hpp"

namespace osim {
namespace {

std::vector<double> values(const BenchDocs& docs, const char* key, const char* field) {
  std::vector<double> v;
  for (const auto& [name, doc] : docs)
    for (const auto& r : rows(doc, key)) v.push_back(r.at(field).get<double>());
  return v;
}

void fit_vram(FitContext& ctx) {
  VramParams& v = ctx.p.vram;
  Fit f{"VRAM beyond the tensors", "direct readings through PyTorch (median where several): memory outside its allocator, cuBLAS's workspace per "
        "stream, the allocator's reserve over a forward's activations", {}, 0, 0};
  if (const auto c = values(ctx.docs, "vram_context", "bytes"); !c.empty()) {
    v.cuda_context = static_cast<Bytes>(median(c));
    f.values.emplace_back("cuda_context_MiB", static_cast<double>(v.cuda_context) / (1 << 20));
    f.points += static_cast<int>(c.size());
  }
  if (const auto w = values(ctx.docs, "vram_gemm_workspace", "bytes"); !w.empty()) {
    v.gemm_workspace = static_cast<Bytes>(median(w));
    f.values.emplace_back("gemm_workspace_MiB", static_cast<double>(v.gemm_workspace) / (1 << 20));
    f.points += static_cast<int>(w.size());
  }
  if (const auto r = values(ctx.docs, "vram_allocator_reserve", "fraction"); !r.empty()) {
    v.allocator_reserve = std::max(0.0, std::round(median(r) * 1e4) / 1e4);  // as written: well within the shapes' spread
    f.values.emplace_back("allocator_reserve", v.allocator_reserve);
    f.points += static_cast<int>(r.size());
  }
  if (f.points > 0) ctx.cal.fits.push_back(f);
}

const CalibFamily kVram{"vram", {}, {{900, fit_vram}}, nullptr};
OSIM_CALIB_FAMILY(kVram);

}  // namespace
}  // namespace osim
