// Calibration fields of the attention: self- and cross-attention efficiency,
// the slow term's share.
#include "gpu/params/field.hpp"

namespace osim {

namespace params {

constexpr double kBig = 1e9;

std::vector<Field> attention_fields() {
  return {
    {"attention_efficiency", "attention", Kind::Number, OSIM_REF(attention, attention_efficiency), 4, 1e-3, 1, false, "0.6", nullptr,
     "share of the GPU's peak self-attention reaches"},
    {"cross_attention_efficiency", "attention", Kind::Number, OSIM_REF(attention, cross_attention_efficiency), 4, 1e-3, 1, false, "0.3",
     OSIM_POS(attention, cross_attention_efficiency), "the same for cross-attention, over cross_attention_q0 (absent: attention_efficiency)"},
    {"cross_attention_q0", "attention", Kind::Number, OSIM_REF(attention, cross_attention_q0), 1, 0, kBig, false, "930",
     OSIM_POS(attention, cross_attention_q0), "cross-attention efficiency / (1 + q0 / seq_q): short query sets lose more"},
    {"attention_slow_share", "attention", Kind::Number, OSIM_REF(attention, attention_slow_share), 2, 0, 1, false, "0",
     [](const ModelParams& p) { return p.attention.attention_slow_share != 1.0; }, "the share of the sustained-load slow term attention takes"},
  };
}

}  // namespace params
}  // namespace osim
