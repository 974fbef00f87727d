// Calibration fields of the interference between compute, collectives and
// copies on shared SMs, HBM and links.
#include "gpu/params/field.hpp"

namespace osim {

namespace params {

std::vector<Field> interference_fields() {
  return {
    {"gemm_slowdown_base", "interference", Kind::Number, OSIM_REF(interference, gemm_slowdown_base), 4, 0, 0.95, false, "0.04", nullptr,
     "a compute kernel beside a collective is slower by base + per_channel x channels"},
    {"gemm_slowdown_per_channel", "interference", Kind::Number, OSIM_REF(interference, gemm_slowdown_per_channel), 5, 0, 0.1, false, "0.0025",
     nullptr, "see gemm_slowdown_base"},
    {"gemm_slowdown_per_copy", "interference", Kind::Number, OSIM_REF(interference, gemm_slowdown_per_copy), 4, 0, 0.5, false, "0.035", nullptr,
     "a compute kernel is slower by this per busy copy engine (HBM)"},
    {"comm_slowdown_base", "interference", Kind::Number, OSIM_REF(interference, comm_slowdown_base), 4, 0, 100, false, "0.9", nullptr,
     "a collective beside compute runs at its rate / max(1, base + per_channel x channels)"},
    {"comm_slowdown_per_channel", "interference", Kind::Number, OSIM_REF(interference, comm_slowdown_per_channel), 5, 0, 10, false, "0.045",
     nullptr, "see comm_slowdown_base"},
    {"comm_slowdown_receiver", "interference", Kind::Number, OSIM_REF(interference, comm_slowdown_receiver), 4, 1, 10, false, "1.3",
     [](const ModelParams& p) { return p.interference.comm_slowdown_receiver != 1.0; },
     "a collective's flow into a rank that computes runs / this as well (fitted from a GEMM on every GPU beside the all-to-all)"},
    {"copy_weight", "interference", Kind::Number, OSIM_REF_DIR(interference, copy_weight, h2d), 4, 0.01, 100, false, "2.7", nullptr,
     "a copy's max-min weight against collective flows on a shared link"},
    {"copy_weight_d2h", "interference", Kind::Number, OSIM_REF_DIR(interference, copy_weight, d2h), 4, 0.01, 100, false, "1.8",
     OSIM_POS_DIR(interference, copy_weight, d2h), "the same for D2H copies (absent: copy_weight)"},
    {"host_transport_cost_h2d", "interference", Kind::Number, OSIM_REF_DIR(interference, host_transport_cost, h2d), 4, 0.1, 10, false, "1.1",
     [](const ModelParams& p) { return p.interference.host_transport_cost.h2d != 1.0 || p.interference.host_transport_cost.d2h != 1.0; },
     "what a byte of a collective through host memory costs the receiver's way down, in copy bytes"},
    {"host_transport_cost_d2h", "interference", Kind::Number, OSIM_REF_DIR(interference, host_transport_cost, d2h), 4, 0.1, 10, false, "1.3",
     [](const ModelParams& p) { return p.interference.host_transport_cost.h2d != 1.0 || p.interference.host_transport_cost.d2h != 1.0; },
     "the same for the sender's way up"},
  };
}

}  // namespace params
}  // namespace osim
