// Sustained load: the SM clock drops once a GPU has been busy for a while,
// slowing compute-bound kernels and, by a share, collectives; under the power
// cap ranks drift apart (docs/execution-model.md "Sustained load"; bench
// gemm_sustained*, gemm_after_idle, nccl_all_to_all_loaded, nccl_barrier_skew).
#pragma once

#include "core/units.hpp"

namespace osim {

struct PowerParams {
  // u = the duty cycle (any kernel with work running), an exponential average
  // over sustained_time_constant; compute-bound kernels take (1 +
  // sustained_slowdown x clamp((u - sustained_duty) / (1 - sustained_duty), 0, 1))
  // times longer. 0 = off.
  double sustained_slowdown = 0;
  double sustained_duty = 0.7;
  Time sustained_time_constant = Time::from_ms(50);
  // A second, slower term with the same threshold; 0 = off.
  double sustained_slow_slowdown = 0;
  Time sustained_slow_time_constant = Time::from_ms(1000);
  // What a fused SDPA kernel puts on the duty cycle while it runs, against a
  // GEMM's 1 (its softmax phases leave the tensor cores idle, and it draws
  // less power): 1 = as a GEMM.
  double sustained_attention_load = 1;
  // The same for a memory-bound kernel (HBM bytes, no FLOPs: norms,
  // activations, residuals): 1 = as a GEMM.
  double sustained_memory_load = 1;
  // The same for a collective's kernels while they hold their SMs (NCCL's
  // SM code moving bytes, or spinning for a peer): 0 = nothing, the GPU
  // cools through an all-to-all as through an idle gap.
  double sustained_comm_load = 0;
  // A collective slows by this share of the compute slowdown (its SM code
  // runs at the clock too); _host through host memory. 0 = keeps its speed.
  double comm_clock_share = 0;
  double comm_clock_share_host = 0;
  // A collective waits for the later rank: straggler_share x the time since
  // the ranks' last collective x how far the clock is down. 0 = off.
  double straggler_share = 0;
};

}  // namespace osim
