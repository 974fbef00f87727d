// NVLink's power states: a collective after a quiet spell pays a wake-up, one
// beside host copies a wait, and compute runs slower while the link is awake
// (docs/execution-model.md "NVLink"; bench nccl_all_to_all_insitu).
#pragma once

#include "core/units.hpp"

namespace osim {

struct NvlinkParams {
  // An NVLink collective a rank starts nvlink_wake_after or more after its
  // last one first pays this; 0 = off.
  Time nvlink_wake_latency = Time::zero();
  Time nvlink_wake_after = Time::from_ms(40);
  // Collectives below this neither wake the link nor keep it awake.
  Bytes nvlink_wake_min_bytes = 1 << 20;
  // An NVLink collective starting while one of its ranks copies to or from
  // the host first waits this long; 0 = off.
  Time nvlink_copy_latency = Time::zero();
  // Compute-bound kernels take (1 + this) times longer while the rank's
  // NVLink is awake; 0 = off.
  double nvlink_awake_slowdown = 0;
  [[nodiscard]] bool any() const { return nvlink_wake_latency > Time::zero() || nvlink_copy_latency > Time::zero() || nvlink_awake_slowdown > 0; }
};

}  // namespace osim
