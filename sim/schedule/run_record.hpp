// What a run of a schedule records, whichever backend ran it: every op's
// host and GPU times, each rank's end and peak VRAM, the VRAM timeline; and
// where the simulator ran it, what its transfers were bound by and how busy
// each resource was (empty for a measured run). Reports read this.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/units.hpp"
#include "schedule/schedule.hpp"
#include "schedule/spans.hpp"

namespace osim {

/// What happened to one op; RunRecord::ops[rank][index] is the op at that
/// place in the rank's program. 56 bytes: a run keeps one per op.
struct OpRecord {
  const Op* op = nullptr;
  Time issue;                    // host thread starts the call
  Time returned;                 // host thread returns from it
  Time start;                    // GPU starts it (host ops: = issue)
  Time end;                      // GPU finishes it (host ops: when the host moves on)
  Time bottleneck_time;          // memcpy: how long it was bound at `bottleneck`
  int32_t waits_on = -1;         // stream_wait_event: index of the event_record op it bound to
  int32_t bottleneck : 31 = -2;  // memcpy: resource that bound it longest (-1: its own cap); -2: none
  bool ran : 1 = false;
};
static_assert(sizeof(OpRecord) <= 56);

/// Time transfers spent bottlenecked on a resource.
struct BottleneckStat {
  Time time;
  int64_t transfers = 0;  // transfers whose main bottleneck it was
};

struct LinkSample {
  Time time;
  int resource;
  double bytes_per_s;
};

// A request stage's peak VRAM: the most live tensors held while it ran, and
// what each part (MemPart) held at that moment.
struct StagePeak {
  std::string name;
  Bytes vram = 0;
  std::array<Bytes, kMemParts> parts{};
};

struct RankSummary {
  std::string gpu;
  Time end;  // the host finished the program and every stream drained
  Bytes peak_vram = 0;
  std::array<Bytes, kMemParts> peak_parts{};  // what each part (MemPart) held at the peak
  Bytes peak_vram_held = 0;                   // with memory freed on a stream not there yet (the allocator's view while the GPU has room)
  Bytes vram_capacity = 0;
  // Per request stage ("stage NAME" markers), in order: its name and the most VRAM live tensors held while it ran.
  std::vector<StagePeak> stage_peaks;
  // Hand-offs between engines it paid (HandoffParams): how many, and the latency in all.
  int64_t handoffs = 0;
  Time handoff_time;
  // Kernel time added by what slowed its kernels, by source: the collectives' and the copies'
  // interference, the clock under sustained load, NVLink awake (a simulated run's).
  Time slowed_by_collectives, slowed_by_copies, slowed_by_clock, slowed_by_nvlink;
};

/// "weights 1.2 GB, activations 300 MB, ...": the parts that hold anything.
std::string format_vram_parts(const std::array<Bytes, kMemParts>& parts);

struct RunRecord {
  std::vector<std::vector<OpRecord>> ops;  // [rank][index]; empty where only spans were kept
  std::optional<RunSpans> spans;           // in place of ops: what the metrics need
  std::vector<RankSummary> ranks;
  Time makespan;
  std::vector<std::vector<std::pair<Time, Bytes>>> vram;  // per rank: (time, bytes in use) after each alloc/free (runs with per-op records)
  // The simulator's view of the fabric (empty for a measured run): bytes per
  // topology resource; per resource, plus one last entry for "the transfer's
  // own cap", the time transfers were bound there; every change of every
  // resource's use (with ExecOptions::link_samples).
  std::vector<double> resource_bytes;
  std::vector<BottleneckStat> copy_bottlenecks, collective_bottlenecks;
  // Per resource as copy_bottlenecks: how long at least one copy (collective transfer) was bound
  // there (a union over time, at most the makespan; the *_bottlenecks sum it over transfers running
  // at once).
  std::vector<Time> copy_binding, collective_binding;
  std::vector<LinkSample> link_samples;
};

}  // namespace osim
