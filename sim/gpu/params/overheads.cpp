// Calibration fields of the host overheads: what API calls cost the host,
// what an event costs the GPU, how far the host issues ahead.
#include "gpu/params/field.hpp"

namespace osim {

namespace params {

std::vector<Field> overheads_fields() {
  return {
    {"kernel_launch", "overheads", Kind::TimeUs, OSIM_REF(overheads, kernel_launch), 4, 0, 1e6, false, "4 us", nullptr,
     "host time a kernel launch costs before it returns"},
    {"memcpy_call", "overheads", Kind::TimeUs, OSIM_REF(overheads, memcpy_call), 4, 0, 1e6, false, "10 us", nullptr,
     "host time an async copy call costs before it returns"},
    {"event_call", "overheads", Kind::TimeUs, OSIM_REF(overheads, event_call), 4, 0, 1e6, false, "2 us", nullptr,
     "host time of event_record, stream_wait_event and stream_wait_stream"},
    {"sync_call", "overheads", Kind::TimeUs, OSIM_REF(overheads, sync_call), 4, 0, 1e6, false, "2 us", nullptr,
     "host time of a synchronize call before it waits"},
    {"collective_call", "overheads", Kind::TimeUs, OSIM_REF(overheads, collective_call), 4, 0, 1e6, false, "6 us",
     OSIM_NOTDEF(overheads, collective_call), "host time a collective call costs"},
    {"alloc_call", "overheads", Kind::TimeUs, OSIM_REF(overheads, alloc_call), 4, 0, 1e6, false, "2 us", OSIM_NOTDEF(overheads, alloc_call),
     "host time of an allocation (the caching allocator)"},
    {"free_call", "overheads", Kind::TimeUs, OSIM_REF(overheads, free_call), 4, 0, 1e6, false, "1 us", OSIM_NOTDEF(overheads, free_call),
     "host time of a free"},
    {"framework_op_call", "overheads", Kind::TimeUs, OSIM_REF(overheads, framework_op_call), 4, 0, 1e6, false, "8 us",
     OSIM_POS(overheads, framework_op_call), "what a framework's dispatch adds to each op that issues GPU work (schedules with framework: pytorch)"},
    {"framework_view_call", "overheads", Kind::TimeUs, OSIM_REF(overheads, framework_view_call), 4, 0, 1e6, false, "3 us",
     OSIM_POS(overheads, framework_view_call),
     "host time of a framework call that launches nothing (a view, transpose, split, reshape): an op's `views` cost this each (framework: pytorch)"},
    {"framework_wait_return", "overheads", Kind::TimeUs, OSIM_REF(overheads, framework_wait_return), 4, 0, 1e6, false, "61 us",
     OSIM_POS(overheads, framework_wait_return),
     "host time a framework spends back from a wait that blocked (a synchronize, a blocking copy) before its next call (framework: pytorch)"},
    {"framework_collective_call", "overheads", Kind::TimeUs, OSIM_REF(overheads, framework_collective_call), 4, 0, 1e6, false, "35 us",
     OSIM_NONNEG(overheads, framework_collective_call),
     "a collective's host time called from the framework, in place of collective_call + framework_op_call (absent: those)"},
    {"framework_p2p_round", "overheads", Kind::TimeUs, OSIM_REF(overheads, framework_p2p_round), 4, 0, 1e6, false, "70 us",
     OSIM_POS(overheads, framework_p2p_round),
     "a pairwise all-to-all called from the framework: host time per round (batched send/recv, waited on), group size - 1 rounds"},
    {"event_gpu_time", "overheads", Kind::TimeUs, OSIM_REF(overheads, event_gpu_time), 4, 0, 1e6, false, "1.9 us", OSIM_POS(overheads, event_gpu_time),
     "GPU time an event record holds its stream (0: none)"},
    {"event_gpu_time_h2d", "overheads", Kind::TimeUs, OSIM_REF(overheads, event_gpu_time_h2d), 4, 0, 1e6, false, "5.5 us",
     OSIM_POS(overheads, event_gpu_time_h2d), "what an event record takes more while its GPU has an H2D copy in flight"},
    {"event_gpu_time_copy", "overheads", Kind::TimeUs, OSIM_REF(overheads, event_gpu_time_copy), 4, 0, 1e6, false, "1.3 us",
     OSIM_NONNEG(overheads, event_gpu_time_copy), "GPU time of an event recorded after a copy (absent: event_gpu_time)"},
    {"launch_queue_depth", "overheads", Kind::Count, OSIM_REF(overheads, launch_queue_depth), 0, 0, 1e6, false, "1021",
     OSIM_NOTDEF(overheads, launch_queue_depth),
     "CUDA calls a hardware queue holds issued and not yet started; one more blocks the host until the head starts (0: no limit; absent: 1021)"},
  };
}

}  // namespace params
}  // namespace osim
