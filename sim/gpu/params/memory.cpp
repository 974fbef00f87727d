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
     "share of the HBM bandwidth the framework's own elementwise kernels reach (schedules with framework: pytorch; absent: hbm_efficiency)"},
  };
}

}  // namespace params
}  // namespace osim
