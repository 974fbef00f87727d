// Memory-bound kernels: HBM bytes at a share of the GPU's HBM bandwidth, plus
// a ramp-up and tail (docs/execution-model.md "Memory-bound kernels"; bench memory_kernel).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

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
  // Norms over rows of few elements (per-head q/k norms): [row, layer norm's
  // share, RMS norm's share] by row length, interpolated in log(row); a norm
  // op that names its row takes it (access norm: the two kinds' mean). Empty:
  // every norm at framework_norm_efficiency.
  std::vector<std::array<double, 3>> framework_norm_rows;
  // Kernels on 5-D channels-first tensors (video VAEs): a norm over the
  // channels, indexed copies, a constant pad, nearest upsampling, each at
  // 4-byte and (_16) 2-byte elements; 0 = framework_hbm_efficiency.
  double framework_channel_norm_efficiency = 0, framework_channel_norm_efficiency_16 = 0;
  double framework_indexed_efficiency = 0, framework_indexed_efficiency_16 = 0;
  double framework_pad_efficiency = 0, framework_pad_efficiency_16 = 0;
  double framework_upsample_efficiency = 0, framework_upsample_efficiency_16 = 0;
  // Their time beyond hbm_latency that does not grow with the bytes: the
  // ramp and tail of the extra kernels an op runs (F.normalize: a reduction,
  // then a division; F.pad: a fill, then a copy), per kind, either width.
  Time framework_channel_norm_fixed = Time::zero(), framework_indexed_fixed = Time::zero(), framework_pad_fixed = Time::zero(),
       framework_upsample_fixed = Time::zero();
  /// The share a framework kernel of access `a` reaches; `row`: a norm's
  /// elements per row (0: long rows); `element`: its element's bytes.
  [[nodiscard]] double framework_efficiency(Access a, int32_t row = 0, double element = 2) const;
  /// A framework kernel's fixed time of access `a` (zero but for the channels-first kinds).
  [[nodiscard]] Time framework_fixed(Access a) const;
};

}  // namespace osim
