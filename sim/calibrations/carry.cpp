#include "calibrations/carry.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

#include <fmt/format.h>

#include "calibrations/measured_defaults.hpp"
#include "hw/pcie.hpp"

namespace osim {

namespace {

bool pcie_card(const std::string& model) {
  std::string u;
  for (char ch : model)
    if (std::isalnum(static_cast<unsigned char>(ch))) u += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return u.find("PCIE") != std::string::npos;
}

// Whether the calibration is borrowed from another GPU (the test the borrowed-calibration line uses).
bool other_gpu(const GpuFigures& from, const GpuFigures& to) {
  return !gpu_in_family(from.model, to.model) || pcie_card(from.model) != pcie_card(to.model);
}

double ratio_of(double to, double from) { return to > 0 && from > 0 ? to / from : 1.0; }

// Every memory-kernel share below streaming, carried; returns the least and most factor applied.
std::pair<double, double> carry_memory_shares(ModelParams& p, double hbm_ratio, double sm_ratio) {
  MemoryParams& m = p.memory;
  const double streaming = m.framework_hbm_efficiency > 0 ? m.framework_hbm_efficiency : m.hbm_efficiency;
  double lo = 1, hi = 1;
  bool any = false;
  const auto carry = [&](double& share) {
    const double was = share;
    share = carried_share(share, streaming, hbm_ratio, sm_ratio);
    if (share == was) return;
    const double f = share / was;
    lo = any ? std::min(lo, f) : f;
    hi = any ? std::max(hi, f) : f;
    any = true;
  };
  for (double* s : {&m.framework_norm_efficiency, &m.framework_broadcast_efficiency, &m.framework_strided_efficiency, &m.framework_roll_efficiency,
                    &m.framework_channel_norm_efficiency, &m.framework_channel_norm_efficiency_16, &m.framework_indexed_efficiency,
                    &m.framework_indexed_efficiency_16, &m.framework_pad_efficiency, &m.framework_pad_efficiency_16, &m.framework_upsample_efficiency,
                    &m.framework_upsample_efficiency_16, &p.conv.layout_efficiency, &p.conv.layout_efficiency_16})
    carry(*s);
  for (auto& row : m.framework_norm_rows) {
    carry(row[1]);
    carry(row[2]);
  }
  return {lo, hi};
}

std::string factors(std::pair<double, double> f) {
  const std::string lo = fmt::format("x{:.3f}", f.first), hi = fmt::format("{:.3f}", f.second);
  return lo == "x" + hi ? lo : lo + "-" + hi;
}

}  // namespace

GpuFigures gpu_figures(const hw::Topology& topo) {
  GpuFigures g;
  if (topo.gpus().empty()) return g;
  const hw::NodeSpec& n = topo.node(topo.gpus().front());
  g.model = n.gpu.model;
  if (n.gpu.hbm_bandwidth) g.hbm_GBps = n.gpu.hbm_bandwidth->GBps();
  if (const auto it = n.gpu.peak_tflops.find("bf16"); it != n.gpu.peak_tflops.end()) g.bf16_tflops = it->second;
  g.sms = n.gpu.sms.value_or(0);
  for (const hw::LinkSpec& l : topo.spec().links)
    if (l.kind == hw::LinkKind::Pcie && (l.a == n.name || l.b == n.name) && hw::pcie_nominal_GBps(l.label) > 0) {
      g.pcie = l.label;
      g.pcie_GBps = hw::pcie_nominal_GBps(l.label);
      break;
    }
  return g;
}

double carried_share(double share, double streaming, double hbm_ratio, double sm_ratio) {
  if (share <= 0 || streaming <= 0 || share >= streaming) return share;
  return std::min(streaming, share * sm_ratio / hbm_ratio);
}

CarriedCalibration carry_calibration(const ModelParams& p, const GpuFigures& from, const GpuFigures& to) {
  CarriedCalibration c{p, false, {}};
  if (!other_gpu(from, to)) return c;
  c.carried = true;
  const double flops = ratio_of(to.bf16_tflops, from.bf16_tflops), hbm = ratio_of(to.hbm_GBps, from.hbm_GBps), sms = ratio_of(to.sms, from.sms),
               pcie = ratio_of(to.pcie_GBps, from.pcie_GBps);
  c.steps.push_back({"compute-bound kernels (GEMM, attention, convolution shares of the peak)",
                     fmt::format("bf16 peak {:g} -> {:g} TFLOP/s", from.bf16_tflops, to.bf16_tflops), flops, "shares as they are"});
  c.steps.push_back({"streaming memory kernels (hbm_efficiency, framework_hbm_efficiency)",
                     fmt::format("HBM {:.2f} -> {:.2f} TB/s", from.hbm_GBps / 1e3, to.hbm_GBps / 1e3), hbm, "shares as they are"});
  const auto f = carry_memory_shares(c.params, hbm, sms);
  c.steps.push_back({"memory kernels held by their SMs (below the streaming share: norms, broadcasts, strided, roll, channels-first, layout)",
                     fmt::format("SMs {} -> {} (clocks taken equal), up to the streaming rate", from.sms, to.sms), sms,
                     fmt::format("shares {}", factors(f))});
  CopyParams& cp = c.params.copies;
  for (Bandwidth* b : {&cp.copy_engine_bandwidth.h2d, &cp.copy_engine_bandwidth.d2h})
    if (!b->is_unlimited()) b->bytes_per_s *= pcie;
  c.steps.push_back({"copy engines over PCIe (copy_engine_bandwidth)",
                     fmt::format("{} -> {}", from.pcie.empty() ? "?" : from.pcie, to.pcie.empty() ? "?" : to.pcie), pcie,
                     pcie == 1 ? "as they are" : fmt::format("x{:.3f}", pcie)});
  return c;
}

std::string carry_note(const CarriedCalibration& c, const GpuFigures& from, const GpuFigures& to) {
  if (!c.carried) return "";
  std::string out = fmt::format(
      "calibration carried from {} to {} through the datasheets (host figures, times, NCCL's rates and a GEMM's "
      "slowdown beside copies as measured):\n",
      from.model, to.model);
  for (const CarryStep& s : c.steps) out += fmt::format("    {}: {} (x{:.3f}): {}\n", s.what, s.follows, s.ratio, s.change);
  return out;
}

}  // namespace osim
