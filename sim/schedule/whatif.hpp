// What-ifs on a schedule that change its ops rather than the machine:
// kernels timed from their shape instead of their measured duration (an
// imported trace on another GPU), and every host copy from another kind of
// host memory. `overlapsim run` and `compare --simulate` apply them.
#pragma once

#include <optional>

#include "schedule/schedule.hpp"

namespace osim {

struct WhatIf {
  /// Kernels that carry a shape (GEMM, attention, FLOPs/HBM bytes) beside a
  /// measured duration are timed by the model from the shape.
  bool remodel_kernels = false;
  /// Every H2D/D2H copy from this host memory.
  std::optional<HostMem> host_memory;
  bool any() const { return remodel_kernels || host_memory.has_value(); }
};

/// `s` with the what-ifs applied (ops copied only where they change).
/// InputError on --remodel-kernels where kernels have measured times and none a shape.
Schedule apply_what_if(const Schedule& s, const WhatIf& w);

}  // namespace osim
