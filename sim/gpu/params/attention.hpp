// Attention kernels (SDPA): efficiency against the GPU's peak, cross-attention
// apart, per backend where measured (docs/execution-model.md "Compute"; bench
// attention_sdpa, attention_default).
#pragma once

#include <algorithm>
#include <vector>

#include "schedule/schedule.hpp"

namespace osim {

/// What one attention kernel reaches: self-attention's efficiency,
/// cross-attention's (fewer keys than queries) as efficiency / (1 + q0 / seq_q),
/// and causal attention's on the pairs it computes as efficiency / (1 + s0 /
/// seq_q) (the diagonal's partly masked tiles weigh more in a short
/// sequence); all at head_dim 128, and
/// x (d / (d + d0)) / (128 / (128 + d0)) at head_dim d.
struct AttentionRates {
  double efficiency = 0.60;
  double cross_efficiency = 0;   // 0: `efficiency` for cross-attention too
  double cross_q0 = 0;           // 0: one efficiency for every length
  double head_dim0 = 0;          // 0: one efficiency for every head_dim
  double causal_efficiency = 0;  // 0: `efficiency` for causal attention too
  double causal_s0 = 0;          // causal: causal_efficiency / (1 + s0 / seq_q) (0: one for every length)
  /// The efficiency of an attention of seq_q queries over seq_kv keys of head_dim.
  [[nodiscard]] double for_shape(int32_t seq_q, int32_t seq_kv, int32_t head_dim = 128, bool causal = false) const {
    const double e = causal && causal_efficiency > 0                     ? causal_efficiency / (1 + causal_s0 / static_cast<double>(seq_q))
                     : !causal && seq_kv < seq_q && cross_efficiency > 0 ? cross_efficiency / (1 + cross_q0 / static_cast<double>(seq_q))
                                                                         : efficiency;
    if (head_dim0 <= 0 || head_dim == 128) return e;
    const double d = head_dim;
    return std::min(1.0, e * (d / (d + head_dim0)) * ((128 + head_dim0) / 128));
  }
};

struct AttentionBackendRates {
  AttnBackend backend = AttnBackend::Default;
  AttentionRates rates;
};

struct AttentionParams {
  // The rates of the kernel the framework picks by default (`default_backend`
  // where the bench named it), for attention ops of backend `default` and of
  // any backend `backends` does not hold.
  double attention_efficiency = 0.60;
  double cross_attention_efficiency = 0;
  double cross_attention_q0 = 0;
  double attention_head_dim0 = 0;
  double causal_attention_efficiency = 0;
  double causal_attention_s0 = 0;
  AttnBackend default_backend = AttnBackend::Default;  // Default: not measured
  // Each measured backend's own rates.
  std::vector<AttentionBackendRates> backends;
  // The share of the sustained-load slow term attention takes (GEMMs take all of it).
  double attention_slow_share = 1.0;

  /// The rates an attention op of `backend` runs at.
  [[nodiscard]] AttentionRates rates_for(AttnBackend backend) const {
    const AttnBackend b = backend == AttnBackend::Default ? default_backend : backend;
    for (const auto& e : backends)
      if (b != AttnBackend::Default && e.backend == b) return e.rates;
    return {attention_efficiency, cross_attention_efficiency,  cross_attention_q0,
            attention_head_dim0,  causal_attention_efficiency, causal_attention_s0};
  }
};

}  // namespace osim
