// Calibration fields of the host overheads: what API calls cost the host,
// what an event costs the GPU, how far the host issues ahead.
#include "gpu/params/field.hpp"

namespace osim {

namespace params {

std::vector<Field> overheads_fields() {
  return {
    {.name = "kernel_launch", .family = "overheads", .kind = Kind::TimeUs, .ref = OSIM_REF(overheads, kernel_launch), .hi = 1e6, .example = "4 us",
     .doc = "host time a kernel launch costs before it returns"},
    {.name = "memcpy_call", .family = "overheads", .kind = Kind::TimeUs, .ref = OSIM_REF(overheads, memcpy_call), .hi = 1e6, .example = "10 us",
     .doc = "host time an async copy call costs before it returns"},
    {.name = "event_call", .family = "overheads", .kind = Kind::TimeUs, .ref = OSIM_REF(overheads, event_call), .hi = 1e6, .example = "2 us",
     .doc = "host time of event_record, stream_wait_event and stream_wait_stream"},
    {.name = "sync_call", .family = "overheads", .kind = Kind::TimeUs, .ref = OSIM_REF(overheads, sync_call), .hi = 1e6, .example = "2 us",
     .doc = "host time of a synchronize call before it waits"},
    {.name = "collective_call", .family = "overheads", .kind = Kind::TimeUs, .ref = OSIM_REF(overheads, collective_call), .hi = 1e6,
     .example = "6 us", .written = OSIM_NOTDEF(overheads, collective_call), .doc = "host time a collective call costs"},
    {.name = "alloc_call", .family = "overheads", .kind = Kind::TimeUs, .ref = OSIM_REF(overheads, alloc_call), .hi = 1e6, .example = "2 us",
     .written = OSIM_NOTDEF(overheads, alloc_call), .doc = "host time of an allocation (the caching allocator)"},
    {.name = "free_call", .family = "overheads", .kind = Kind::TimeUs, .ref = OSIM_REF(overheads, free_call), .hi = 1e6, .example = "1 us",
     .written = OSIM_NOTDEF(overheads, free_call), .doc = "host time of a free"},
    {.name = "framework_op_call", .family = "overheads", .kind = Kind::TimeUs, .ref = OSIM_REF(overheads, framework_op_call), .hi = 1e6,
     .example = "8 us", .written = OSIM_POS(overheads, framework_op_call),
     .doc = "what a framework's dispatch adds to each op that issues GPU work (schedules with framework: pytorch)"},
    {.name = "framework_view_call", .family = "overheads", .kind = Kind::TimeUs, .ref = OSIM_REF(overheads, framework_view_call), .hi = 1e6,
     .example = "3 us", .written = OSIM_POS(overheads, framework_view_call),
     .doc = "host time of a framework call that launches nothing (a view, transpose, split, reshape): an op's `views` cost this each (framework: pytorch)"},
    {.name = "framework_wait_return", .family = "overheads", .kind = Kind::TimeUs, .ref = OSIM_REF(overheads, framework_wait_return), .hi = 1e6,
     .example = "61 us", .written = OSIM_POS(overheads, framework_wait_return),
     .doc = "host time a framework spends back from a wait that blocked (a synchronize, a blocking copy) before its next call (framework: pytorch)"},
    {.name = "framework_collective_call", .family = "overheads", .kind = Kind::TimeUs, .ref = OSIM_REF(overheads, framework_collective_call),
     .hi = 1e6, .example = "35 us", .written = OSIM_NONNEG(overheads, framework_collective_call),
     .doc = "a collective's host time called from the framework, in place of collective_call + framework_op_call (absent: those)"},
    {.name = "framework_p2p_round", .family = "overheads", .kind = Kind::TimeUs, .ref = OSIM_REF(overheads, framework_p2p_round), .hi = 1e6,
     .example = "70 us", .written = OSIM_POS(overheads, framework_p2p_round),
     .doc = "a pairwise all-to-all called from the framework: host time per round (batched send/recv, waited on), group size - 1 rounds"},
    {.name = "event_gpu_time", .family = "overheads", .kind = Kind::TimeUs, .ref = OSIM_REF(overheads, event_gpu_time), .hi = 1e6,
     .example = "1.9 us", .written = OSIM_POS(overheads, event_gpu_time), .doc = "GPU time an event record holds its stream (0: none)"},
    {.name = "event_gpu_time_h2d", .family = "overheads", .kind = Kind::TimeUs, .ref = OSIM_REF(overheads, event_gpu_time_h2d), .hi = 1e6,
     .example = "5.5 us", .written = OSIM_POS(overheads, event_gpu_time_h2d),
     .doc = "what an event record takes more while its GPU has an H2D copy in flight"},
    {.name = "event_gpu_time_copy", .family = "overheads", .kind = Kind::TimeUs, .ref = OSIM_REF(overheads, event_gpu_time_copy), .hi = 1e6,
     .example = "1.3 us", .written = OSIM_NONNEG(overheads, event_gpu_time_copy),
     .doc = "GPU time of an event recorded after a copy (absent: event_gpu_time)"},
    {.name = "launch_queue_depth", .family = "overheads", .kind = Kind::Count, .ref = OSIM_REF(overheads, launch_queue_depth), .precision = 0,
     .hi = 1e6, .example = "1021", .written = OSIM_NOTDEF(overheads, launch_queue_depth),
     .doc = "CUDA calls a hardware queue holds issued and not yet started; one more blocks the host until the head starts (0: no limit; absent: 1021)"},
  };
}

}  // namespace params
}  // namespace osim
