// Hand-offs between the copy engines and the SMs: an op on one engine whose
// stream last ran an op on the other starts later
// (docs/execution-model.md "Hand-offs"; bench copy_reps, copy_after_idle,
// handoff_wait, kernel_reps).
#pragma once

#include "core/units.hpp"
#include "gpu/params/per_direction.hpp"

namespace osim {

struct HandoffParams {
  // A pinned copy after a kernel or collective on its stream (however long
  // ago), or waiting through an event on one still running when the host
  // issued it; 0 = none.
  PerDirection<Time> copy_after_kernel_latency{Time::zero(), Time::from_ps(-1)};
  // A kernel after a copy, by the same rule; 0 = none.
  Time kernel_after_copy_latency = Time::zero();
  // One hand-off takes between these two (its phase, ~1 us steps); the
  // executor charges the latencies above (their mean), calibrate's replay
  // gives each row's time at either end. Negative = not measured.
  Time handoff_phase_min = Time::from_ps(-1);
  Time handoff_phase_max = Time::from_ps(-1);

  [[nodiscard]] bool has_handoff_phase() const { return handoff_phase_min >= Time::zero() && handoff_phase_max >= handoff_phase_min; }
  // Whether any hand-off is modelled: streams then track what they wait on.
  [[nodiscard]] bool any(Time event_gpu_time_copy) const {
    return copy_after_kernel_latency.h2d > Time::zero() || copy_after_kernel_latency.d2h > Time::zero() || kernel_after_copy_latency > Time::zero() ||
           event_gpu_time_copy >= Time::zero();
  }
};

}  // namespace osim
