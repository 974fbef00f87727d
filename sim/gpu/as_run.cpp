#include "gpu/as_run.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <map>
#include <memory>

namespace osim {

Schedule as_realised(const Schedule& s, const ModelParams& p, double attention_slowdown, bool sdpa) {
  Schedule out = s;
  std::map<const std::vector<Op>*, std::shared_ptr<const std::vector<Op>>> done;  // programs share op lists
  for (auto& prog : out.programs) {
    auto& slot = done[prog.ops.get()];
    if (!slot) {
      auto ops = std::make_shared<std::vector<Op>>(*prog.ops);
      for (Op& op : *ops) {
        if (op.gemm) continue;  // runs as itself
        if (sdpa && attention_runs_as_sdpa(op)) {
          op.attention->backend = AttnBackend::Cudnn;
          continue;
        }
        const auto rg = realised_gemm(op, attention_slowdown);
        if (!rg) continue;
        const double flops = op.attention ? op.attention->flops() : op.flops;
        // time = realised FLOPs / (peak * eff(shape)) = flops / (peak * efficiency)
        op.efficiency = static_cast<float>(p.gemm.gemm_efficiency_for(rg->m, rg->n, rg->k) * flops / rg->flops());
        op.realised = true;
      }
      slot = std::move(ops);
    }
    prog.ops = slot;
  }
  return out;
}

ExecResult without_timing_events(const Schedule& s, ExecResult r, const std::vector<std::vector<int>>& at) {
  assert(r.ops.size() == at.size());
  for (size_t rank = 0; rank < at.size(); ++rank) {
    std::map<int, int> back;  // instrumented index -> original
    for (size_t i = 0; i < at[rank].size(); ++i) back[at[rank][i]] = static_cast<int>(i);
    std::vector<OpRecord> kept;
    kept.reserve(at[rank].size());
    for (size_t i = 0; i < at[rank].size(); ++i) {
      OpRecord rec = r.ops[rank][static_cast<size_t>(at[rank][i])];
      rec.op = &(*s.programs[rank].ops)[i];
      if (rec.waits_on >= 0) rec.waits_on = back.at(rec.waits_on);
      kept.push_back(rec);
    }
    r.ops[rank] = std::move(kept);
  }
  return r;
}

}  // namespace osim
