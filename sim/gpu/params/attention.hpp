// Attention kernels (SDPA): efficiency against the GPU's peak, cross-attention
// apart, per backend where measured (docs/execution-model.md "Compute"; bench
// attention_sdpa, attention_default).
#pragma once

#include <vector>

#include "schedule/schedule.hpp"

namespace osim {

/// What one attention kernel reaches: self-attention's efficiency, and
/// cross-attention's (fewer keys than queries) as efficiency / (1 + q0 / seq_q).
struct AttentionRates {
  double efficiency = 0.60;
  double cross_efficiency = 0;  // 0: `efficiency` for cross-attention too
  double cross_q0 = 0;          // 0: one efficiency for every length
  /// The efficiency of an attention of seq_q queries over seq_kv keys.
  [[nodiscard]] double for_shape(int32_t seq_q, int32_t seq_kv) const {
    return seq_kv < seq_q && cross_efficiency > 0 ? cross_efficiency / (1 + cross_q0 / static_cast<double>(seq_q)) : efficiency;
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
    return {attention_efficiency, cross_attention_efficiency, cross_attention_q0};
  }
};

}  // namespace osim
