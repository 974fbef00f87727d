// Calibration fields of the interference between compute, collectives and
// copies on shared SMs, HBM and links.
#include "gpu/params/field.hpp"

namespace osim {

namespace params {

std::vector<Field> interference_fields() {
  return {
    {.name = "gemm_slowdown_base", .family = "interference", .kind = Kind::Number, .ref = OSIM_REF(interference, gemm_slowdown_base), .hi = 0.95,
     .example = "0.04", .doc = "a compute kernel beside a collective is slower by base + per_channel x channels"},
    {.name = "gemm_slowdown_per_channel", .family = "interference", .kind = Kind::Number, .ref = OSIM_REF(interference, gemm_slowdown_per_channel),
     .precision = 5, .hi = 0.1, .example = "0.0025", .doc = "see gemm_slowdown_base"},
    {.name = "gemm_slowdown_per_copy", .family = "interference", .kind = Kind::Number, .ref = OSIM_REF(interference, gemm_slowdown_per_copy),
     .hi = 0.5, .example = "0.035", .doc = "a compute kernel is slower by this per busy copy engine (HBM)"},
    {.name = "comm_slowdown_base", .family = "interference", .kind = Kind::Number, .ref = OSIM_REF(interference, comm_slowdown_base), .hi = 100,
     .example = "0.9", .doc = "a collective beside compute runs at its rate / max(1, base + per_channel x channels)"},
    {.name = "comm_slowdown_per_channel", .family = "interference", .kind = Kind::Number, .ref = OSIM_REF(interference, comm_slowdown_per_channel),
     .precision = 5, .hi = 10, .example = "0.045", .doc = "see comm_slowdown_base"},
    {.name = "comm_slowdown_receiver", .family = "interference", .kind = Kind::Number, .ref = OSIM_REF(interference, comm_slowdown_receiver), .lo = 1,
     .hi = 10, .example = "1.3", .written = [](const ModelParams& p) { return p.interference.comm_slowdown_receiver != 1.0; },
     .doc = "a collective's flow into a rank that computes runs / this as well (fitted from a GEMM on every GPU beside the all-to-all)"},
    {.name = "copy_weight", .family = "interference", .kind = Kind::Number, .ref = OSIM_REF_DIR(interference, copy_weight, h2d), .lo = 0.01,
     .hi = 100, .example = "2.7", .doc = "a copy's max-min weight against collective flows on a shared link"},
    {.name = "copy_weight_d2h", .family = "interference", .kind = Kind::Number, .ref = OSIM_REF_DIR(interference, copy_weight, d2h), .lo = 0.01,
     .hi = 100, .example = "1.8", .written = OSIM_POS_DIR(interference, copy_weight, d2h), .doc = "the same for D2H copies (absent: copy_weight)"},
    {.name = "host_transport_cost_h2d", .family = "interference", .kind = Kind::Number, .ref = OSIM_REF_DIR(interference, host_transport_cost, h2d),
     .lo = 0.1, .hi = 10, .example = "1.1",
     .written = [](const ModelParams& p) { return p.interference.host_transport_cost.h2d != 1.0 || p.interference.host_transport_cost.d2h != 1.0; },
     .doc = "what a byte of a collective through host memory costs the receiver's way down, in copy bytes"},
    {.name = "host_transport_cost_d2h", .family = "interference", .kind = Kind::Number, .ref = OSIM_REF_DIR(interference, host_transport_cost, d2h),
     .lo = 0.1, .hi = 10, .example = "1.3",
     .written = [](const ModelParams& p) { return p.interference.host_transport_cost.h2d != 1.0 || p.interference.host_transport_cost.d2h != 1.0; },
     .doc = "the same for the sender's way up"},
  };
}

}  // namespace params
}  // namespace osim
