// Calibration fields of the memory-bound kernels.
#include "gpu/params/field.hpp"

namespace osim {

namespace params {

std::vector<Field> memory_fields() {
  return {
    {"hbm_efficiency", "memory", Kind::Number, OSIM_REF(memory, hbm_efficiency), 4, 1e-3, 1, false, "0.85", nullptr,
     "share of the HBM bandwidth a memory-bound kernel reaches"},
    {"hbm_latency", "memory", Kind::TimeUs, OSIM_REF(memory, hbm_latency), 4, 0, 1e6, false, "3 us", OSIM_POS(memory, hbm_latency),
     "added to a memory-bound kernel's time (ramp-up and tail)"},
    {"framework_hbm_efficiency", "memory", Kind::Number, OSIM_REF(memory, framework_hbm_efficiency), 4, 0, 1, false, "0.62",
     OSIM_POS(memory, framework_hbm_efficiency),
     "share of the HBM bandwidth the framework's own contiguous elementwise kernels reach (schedules with framework: pytorch; absent: hbm_efficiency)"},
    {"framework_norm_efficiency", "memory", Kind::Number, OSIM_REF(memory, framework_norm_efficiency), 4, 0, 1, false, "0.55",
     OSIM_POS(memory, framework_norm_efficiency), "the same for its layer and RMS norms (access: norm; absent: framework_hbm_efficiency)"},
    {"framework_broadcast_efficiency", "memory", Kind::Number, OSIM_REF(memory, framework_broadcast_efficiency), 4, 0, 1, false, "0.33",
     OSIM_POS(memory, framework_broadcast_efficiency), "the same for ops with an operand broadcast over the tokens (access: broadcast)"},
    {"framework_strided_efficiency", "memory", Kind::Number, OSIM_REF(memory, framework_strided_efficiency), 4, 0, 1, false, "0.34",
     OSIM_POS(memory, framework_strided_efficiency), "the same for ops on strided views (access: strided)"},
    {"framework_roll_efficiency", "memory", Kind::Number, OSIM_REF(memory, framework_roll_efficiency), 4, 0, 1, false, "0.19",
     OSIM_POS(memory, framework_roll_efficiency), "the same for roll (access: roll)"},
  };
}

}  // namespace params
}  // namespace osim
