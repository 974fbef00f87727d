// Memory-bound kernels: HBM bytes at a share of the GPU's HBM bandwidth, plus
// a ramp-up and tail (docs/execution-model.md "Memory-bound kernels"; bench memory_kernel).
#pragma once

#include "core/units.hpp"
#include "schedule/schedule.hpp"

namespace osim {

struct MemoryParams {
  double hbm_efficiency = 0.85;
  Time hbm_latency = Time::zero();
  // Memory-bound kernels of a framework program (schedules with framework:
  // pytorch): the share its own contiguous elementwise kernels reach; 0 =
  // hbm_efficiency. Its norms, broadcasts, strided ops and roll: their own
  // shares (Access order from Norm; 0 = framework_hbm_efficiency).
  double framework_hbm_efficiency = 0;
  double framework_norm_efficiency = 0, framework_broadcast_efficiency = 0, framework_strided_efficiency = 0, framework_roll_efficiency = 0;
  [[nodiscard]] double framework_efficiency(Access a) const {
    const double by = a == Access::Norm ? framework_norm_efficiency
                      : a == Access::Broadcast ? framework_broadcast_efficiency
                      : a == Access::Strided   ? framework_strided_efficiency
                      : a == Access::Roll      ? framework_roll_efficiency
                                               : 0.0;
    return by > 0 ? by : framework_hbm_efficiency > 0 ? framework_hbm_efficiency : hbm_efficiency;
  }
};

}  // namespace osim
