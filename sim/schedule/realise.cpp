#include "schedule/realise.hpp"

#include <algorithm>
#include <cmath>
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

bool attention_runs_as_sdpa(const Op& op) {
  return op.kind == OpKind::Kernel && op.attention && (op.attention->backend == AttnBackend::Default || op.attention->backend == AttnBackend::Cudnn);
}

Schedule with_timing_events(const Schedule& s, std::vector<std::vector<int>>& at) {
  Schedule out = s;
  const int ev = static_cast<int>(out.events.size());
  out.events.push_back("_timing");
  at.assign(static_cast<size_t>(s.ranks()), {});
  for (size_t r = 0; r < out.programs.size(); ++r) {
    const std::vector<Op>& in = *s.programs[r].ops;
    auto ops = std::make_shared<std::vector<Op>>();
    ops->reserve(in.size() * 3);
    auto timing = [&](int stream) {
      Op e;
      e.kind = OpKind::EventRecord;
      e.stream = stream;
      e.event = ev;
      ops->push_back(e);
    };
    for (const Op& op : in) {
      const bool bracket = op.kind == OpKind::Kernel || op.kind == OpKind::Memcpy || op.kind == OpKind::Collective;
      const bool after = op.kind == OpKind::EventRecord || op.kind == OpKind::StreamWaitEvent || op.kind == OpKind::StreamWaitStream ||
                         (op.kind == OpKind::Marker && op.stream >= 0);
      if (bracket) timing(op.stream);
      at[r].push_back(static_cast<int>(ops->size()));
      ops->push_back(op);
      if (bracket || after) timing(op.stream);
    }
    out.programs[r].ops = std::move(ops);
  }
  return out;
}

}  // namespace osim
