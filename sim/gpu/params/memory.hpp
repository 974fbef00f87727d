// Memory-bound kernels: HBM bytes at a share of the GPU's HBM bandwidth, plus
// a ramp-up and tail (docs/execution-model.md "Memory-bound kernels"; bench memory_kernel).
#pragma once

#include "core/units.hpp"

namespace osim {

struct MemoryParams {
  double hbm_efficiency = 0.85;
  Time hbm_latency = Time::zero();
  // Memory-bound kernels of a framework program (schedules with framework:
  // pytorch): the share its own elementwise kernels reach; 0 = hbm_efficiency.
  double framework_hbm_efficiency = 0;
};

}  // namespace osim
