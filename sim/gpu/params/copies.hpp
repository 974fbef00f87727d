// Copies between host and GPU memory: the copy engine's rate and set-up,
// pageable staging, both directions at once on one GPU, and a host bridge's
// limit with several GPUs copying (docs/execution-model.md "Copies"; bench
// h2d_pinned, d2h_pinned, *_pageable, bidir_pinned, copy_span, multi_*).
#pragma once

#include <array>
#include <vector>

#include "core/units.hpp"
#include "gpu/params/per_direction.hpp"

namespace osim {

struct CopyParams {
  // One engine's ceiling for copies to and from host memory over PCIe (D2H
  // unset: H2D's; calibration fields copy_engine_bandwidth, _d2h).
  PerDirection<Bandwidth> copy_engine_bandwidth{Bandwidth::unlimited(), Bandwidth::unlimited()};
  // The same for copies whose host link is NVLink-C2C (a Grace Hopper's GPU
  // to its CPU; fields copy_engine_bandwidth_c2c, _c2c_d2h). The defaults
  // are public GH200 figures, not our measurement: nvbandwidth's
  // host_to_device_memcpy_ce gave 346 GB/s on a GH200 480 GB, D2H about 15 %
  // lower (NVIDIA/nvbandwidth issue 23; Schieffer et al., arXiv 2407.07850,
  // report 375 and 297 GB/s over C2C). A GH200's own calibration sets them.
  PerDirection<Bandwidth> copy_engine_bandwidth_c2c{Bandwidth::from_GBps(346), Bandwidth::from_GBps(300)};
  // DMA set-up before the first byte, beyond the route's latency.
  PerDirection<Time> copy_latency{Time::zero(), Time::from_ps(-1)};

  // Pageable copies: the driver's staging through a pinned buffer (the CPU's
  // copy sets the rate). The set-up in place of the pinned one where >= 0.
  PerDirection<Bandwidth> pageable_bandwidth{Bandwidth::from_GBps(10), Bandwidth::unlimited()};
  PerDirection<Time> pageable_latency{Time::from_ps(-1), Time::from_ps(-1)};

  // Both directions at once on one GPU: the share of its engine's rate a
  // pinned copy keeps while the other direction runs one (PCIe is full
  // duplex, but each direction carries the other's requests). 1 = none.
  PerDirection<double> copy_bidir_factor{1, 1};
  // The same per size: (bytes, H2D share, D2H share) by bytes, interpolated
  // in log(bytes), the ends held. Where set it replaces the factors above,
  // and a copy beside the other direction takes the longer set-up.
  std::vector<std::array<double, 3>> copy_bidir_table;

  // A host bridge's limit on copies from (to) host memory while k GPUs under
  // it copy at once: entry k-1, the last for more. Never above the
  // topology's limit; empty = that limit alone.
  std::vector<Bandwidth> host_h2d_aggregate;
  std::vector<Bandwidth> host_d2h_aggregate;
  // A host bridge's limit on H2D and D2H together while k GPUs under it copy
  // to or from host memory (either way): entry k-1, the last for more; from
  // two GPUs on. Empty = the per-direction limits alone.
  std::vector<Bandwidth> host_bidir_aggregate;
  // Pageable copies of one direction from k GPUs at once (one process
  // each): the host's limit on them together, entry k-1, the last for more;
  // from two GPUs on (the CPU's copies into the driver's staging buffers).
  // Empty = none.
  std::vector<Bandwidth> pageable_h2d_aggregate;
  std::vector<Bandwidth> pageable_d2h_aggregate;

  // One engine's ceiling for a host copy in direction d; `c2c`: its route
  // crosses an NVLink-C2C link rather than PCIe.
  [[nodiscard]] Bandwidth engine_bandwidth(Direction d, bool c2c) const { return c2c ? copy_engine_bandwidth_c2c[d] : copy_engine_bandwidth[d]; }
  // A host copy's set-up before its first byte, beyond its route's latency.
  [[nodiscard]] Time host_copy_setup(bool d2h, bool pageable) const {
    const Direction d = copy_direction(d2h);
    if (pageable && pageable_latency[d] >= Time::zero()) return pageable_latency[d];
    return copy_latency[d];
  }
  [[nodiscard]] bool copy_bidir_tabled() const { return !copy_bidir_table.empty(); }
  // Whether copies both ways at once share anything (else no limit is built).
  [[nodiscard]] bool copy_bidir_modelled() const { return copy_bidir_factor.h2d < 1 || copy_bidir_factor.d2h < 1 || copy_bidir_tabled(); }
  // The share a copy of `bytes` in direction d keeps while the other direction copies.
  [[nodiscard]] double copy_bidir_share(Direction d, Bytes bytes) const;
};

}  // namespace osim
