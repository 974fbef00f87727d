// Host overheads: the host time each CUDA/NCCL API call costs before it
// returns, the GPU time an event record holds its stream, and how far the
// host can issue ahead of the GPU (docs/execution-model.md "Host overheads";
// bench overhead_*, launch_queue).
#pragma once

#include "core/units.hpp"

namespace osim {

struct OverheadParams {
  Time kernel_launch = Time::from_us(4);
  Time memcpy_call = Time::from_us(10);  // an async pinned copy's return
  Time event_call = Time::from_us(2);    // event_record, stream_wait_event, stream_wait_stream
  Time sync_call = Time::from_us(2);     // stream/event/device synchronize, before it waits
  // A host blocked in a wait for the GPU (a synchronize, a blocking copy)
  // returns this long after the work it waited for ended: CUDA's wake-up of
  // the thread; 0 = at once. Not fitted: an imported trace measures it
  // (settings.host_calls.wait_return).
  Time wait_return = Time::zero();
  Time collective_call = Time::from_us(6);
  Time alloc_call = Time::from_us(2);  // the caching allocator
  Time free_call = Time::from_us(1);
  // What a framework (PyTorch) adds to the host time of each op that issues
  // GPU work (kernel, copy, collective) in a schedule of settings
  // `framework: pytorch`: its dispatch before the CUDA call; 0 = none.
  Time framework_op_call = Time::zero();
  // A framework call that launches nothing (a view, transpose, split,
  // reshape): an op's `views` (Op::views) each cost this before its own
  // call; 0 = none.
  Time framework_view_call = Time::zero();
  // A framework's host back from a wait that blocked (a synchronize, a
  // blocking copy): this before its next call, after wait_return (CUDA's
  // wake-up where wait_return is 0, the framework's return, its loop's
  // Python run cold); 0 = none.
  Time framework_wait_return = Time::zero();
  // Its collective call (NCCL's all-to-all as torch.distributed calls it)
  // in place of collective_call + framework_op_call; negative = those.
  Time framework_collective_call = Time::from_ps(-1);
  // A pairwise all-to-all called from the framework (the rank's own chunk
  // copied, then a batched send/recv per partner, each waited on): the host
  // time per round, partners (group size - 1) rounds in place of the
  // collective call's; 0 = one collective call.
  Time framework_p2p_round = Time::zero();

  // The stream's next op starts this much later after an event record (the
  // GPU drains the stream and writes the event); 0 = none.
  Time event_gpu_time = Time::zero();
  // What it takes more while the GPU has an H2D copy in flight; 0 = none.
  Time event_gpu_time_h2d = Time::zero();
  // An event recorded after a copy (its stream's last op a copy) takes this
  // instead; negative = event_gpu_time.
  Time event_gpu_time_copy = Time::from_ps(-1);

  // CUDA calls a hardware queue holds issued and not yet started: one more
  // blocks the host until the queue's head starts (CUDA's launch queue; the
  // CUDA 13 driver's 1,021 per connection, bench launch_queue); 0 = no limit.
  int launch_queue_depth = 1021;
};

}  // namespace osim
