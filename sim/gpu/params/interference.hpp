// Interference between kernels, collectives and copies on one GPU and its
// links (docs/execution-model.md "Interference"; bench interference).
#pragma once

#include "gpu/params/per_direction.hpp"

namespace osim {

struct InterferenceParams {
  // A compute kernel beside a collective: slower by base + per_channel x channels.
  double gemm_slowdown_base = 0.04;
  double gemm_slowdown_per_channel = 0.0025;
  // ... beside a busy copy engine (HBM), per engine.
  double gemm_slowdown_per_copy = 0.035;
  // A collective beside compute kernels: its rate / max(1, base + per_channel x channels).
  double comm_slowdown_base = 0.908;
  double comm_slowdown_per_channel = 0.0455;
  // ... and / this as well where the flow's receiving rank computes (NCCL's
  // kernel is slowed at both ends): a GEMM on every GPU slows an all-to-all
  // more than one on a single GPU. 1 = only the sender counts.
  double comm_slowdown_receiver = 1.0;
  // A copy's max-min weight against collective flows on a shared link (DMA
  // out-competes SM-driven traffic).
  PerDirection<double> copy_weight{1.0, 0};
  // What a byte of a collective bounced through host memory costs the
  // sender's way up (d2h) and the receiver's way down (h2d), in copy bytes.
  PerDirection<double> host_transport_cost{1.0, 1.0};
};

}  // namespace osim
