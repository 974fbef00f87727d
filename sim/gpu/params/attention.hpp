// Attention kernels (SDPA): efficiency against the GPU's peak, cross-attention
// apart (docs/execution-model.md "Compute"; bench attention_sdpa).
#pragma once

namespace osim {

struct AttentionParams {
  double attention_efficiency = 0.60;
  // Cross-attention (fewer keys than queries): cross_attention_efficiency /
  // (1 + cross_attention_q0 / seq_q); efficiency 0 = attention_efficiency,
  // q0 0 = one efficiency for every length.
  double cross_attention_efficiency = 0;
  double cross_attention_q0 = 0;
  // The share of the sustained-load slow term attention takes (GEMMs take all of it).
  double attention_slow_share = 1.0;
};

}  // namespace osim
