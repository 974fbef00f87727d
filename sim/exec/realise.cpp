#include "exec/realise.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

namespace osim {

int64_t aligned_k(double k) { return std::max<int64_t>(64, std::llround(k / 64.0) * 64); }

namespace {
RealisedGemm chunked(int64_t m, int64_t n, double k_total) {
  const int chunks = std::max(1, static_cast<int>(std::ceil(k_total / static_cast<double>(kRealiseChunkK))));
  return RealisedGemm{m, n, aligned_k(k_total / chunks), chunks};
}
}  // namespace

std::optional<RealisedGemm> realised_gemm(const Op& op, double attention_slowdown) {
  if (op.kind != OpKind::Kernel) return std::nullopt;
  if (op.gemm) return RealisedGemm{op.gemm->m, op.gemm->n, op.gemm->k, 1};
  if (op.attention) {
    const auto& a = *op.attention;
    const double flops = a.flops();
    const int64_t m = static_cast<int64_t>(a.batch) * a.seq_q, n = static_cast<int64_t>(a.heads) * a.head_dim;
    return chunked(m, n, flops * attention_slowdown / (2.0 * static_cast<double>(m) * static_cast<double>(n)));
  }
  if (op.duration) return std::nullopt;
  if (op.flops > 0) return chunked(4096, 4096, op.flops / (2.0 * 4096 * 4096));
  return std::nullopt;
}

Schedule as_realised(const Schedule& s, const ModelParams& p, double attention_slowdown) {
  Schedule out = s;
  std::map<const std::vector<Op>*, std::shared_ptr<const std::vector<Op>>> done;  // programs share op lists
  for (auto& prog : out.programs) {
    auto& slot = done[prog.ops.get()];
    if (!slot) {
      auto ops = std::make_shared<std::vector<Op>>(*prog.ops);
      for (Op& op : *ops) {
        if (op.gemm) continue;  // runs as itself
        const auto rg = realised_gemm(op, attention_slowdown);
        if (!rg) continue;
        const double flops = op.attention ? op.attention->flops() : op.flops;
        // time = realised FLOPs / (peak * eff(shape)) = flops / (peak * efficiency)
        op.efficiency = static_cast<float>(p.gemm_efficiency_for(rg->m, rg->n, rg->k) * flops / rg->flops());
        op.realised = true;
      }
      slot = std::move(ops);
    }
    prog.ops = slot;
  }
  return out;
}

}  // namespace osim
