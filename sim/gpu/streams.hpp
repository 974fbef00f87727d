// Streams and hardware queues: the host issues an op to its stream; streams
// are multiplexed onto `device_max_connections` hardware queues, which
// dispatch in submission order (an op that cannot start blocks the ops behind
// it in its queue). Dispatch hands kernels to Compute, copies to Copies and
// collectives to Collectives, and charges the hand-off between engines
// (HandoffParams); events and waits complete here.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "gpu/exec_context.hpp"
#include "gpu/ports.hpp"
#include "gpu/programs.hpp"

namespace osim::exec {

class Copies;
class Collectives;
class Memory;

class Streams {
 public:
  Streams(ExecContext& x, Kernels& kernels, Copies& copies, Collectives& colls, Memory& memory, HostWake& host);
  /// Sets up rank r's streams and queues for its program.
  void add_rank(int r, const ProgramQueues& q);

  /// The host issues rank r's op at program place `pc`; returns its id.
  int enqueue(int r, int pc, const Op& op);
  /// Op `id` of rank r finished: its stream moves on.
  void complete(int r, int id);
  /// Op `id` starts now (a copy when its engine takes it, a collective when its rank reaches it).
  /// A mirror has no streams: its representative's stand for its own.
  void mark_start(int r, int id, const Op& op) {
    if (x_.mirrors.is_mirror(r)) return;
    if (x_.keeps(r)) x_.records[static_cast<size_t>(r)][static_cast<size_t>(id)].start = x_.engine.now();
    if (x_.spans_on) ranks_[static_cast<size_t>(r)].streams[static_cast<size_t>(op.stream)].started = x_.engine.now();
  }

  [[nodiscard]] int enqueued(int r, int s) const { return ranks_[static_cast<size_t>(r)].streams[static_cast<size_t>(s)].enqueued; }
  /// Whether stream s's hardware queue holds launch_queue_depth CUDA calls
  /// issued and not yet started: another one into it blocks the host.
  [[nodiscard]] bool queue_full(int r, int s) const {
    const Rank& S = ranks_[static_cast<size_t>(r)];
    const HwQueue& q = S.hwq[static_cast<size_t>(S.streams[static_cast<size_t>(s)].hwq)];
    return depth_ > 0 && q.calls_issued - q.calls_started >= depth_;
  }
  [[nodiscard]] int done(int r, int s) const { return ranks_[static_cast<size_t>(r)].streams[static_cast<size_t>(s)].done; }
  [[nodiscard]] int priority(int r, int s) const { return ranks_[static_cast<size_t>(r)].streams[static_cast<size_t>(s)].priority; }
  /// The stream and place of event e's latest record issued.
  [[nodiscard]] std::pair<int, int> event_position(int r, int e) const { return ranks_[static_cast<size_t>(r)].event_pos[static_cast<size_t>(e)]; }
  /// Hand-offs rank r paid: how many, and their time in all.
  [[nodiscard]] int64_t handoffs(int r) const { return ranks_[static_cast<size_t>(r)].handoffs; }
  [[nodiscard]] Time handoff_time(int r) const { return ranks_[static_cast<size_t>(r)].handoff_time; }
  /// Whether every issued op ran; what stream s's first unfinished op waits
  /// for ("" when the stream is drained): deadlock reports.
  [[nodiscard]] bool drained(int r) const;
  [[nodiscard]] std::string head(int r, int s) const;
  /// The earliest start of rank r's ops running on its streams (now if
  /// none): no op of r that finishes from now on started before it.
  [[nodiscard]] Time running_since(int r) const;
  /// Lowers each bound to what rank r still reads: the first op place, each
  /// hardware queue's first entry, each stream's first place (its program's
  /// windows may drop what lies before).
  void live_from(int r, int64_t& op, std::vector<int64_t>& queue_entry, std::vector<int64_t>& stream_pos) const;

 private:
  // The engine of the latest op a stream's next op depends on (the stream's
  // own last kernel, collective or copy, or one it waited on through an
  // event) and when that op ended: the hand-offs.
  struct EngineDep {
    enum Kind : uint8_t { None, Compute, Copy } kind = None;
    Time end;
  };
  struct StreamState {
    int enqueued = 0;  // ops the host has issued to it
    int done = 0;
    int hwq = 0;
    int priority = 0;
    Time started;  // when its running op was dispatched (a stream runs one op at a time)
    EngineDep dep;
    EngineDep::Kind own = EngineDep::None;  // the engine of its own last such op
    int dep_waiting = -1;                   // its ops up to this place were issued when `dep` came through a wait
    Time dep_released;                      // when that wait was satisfied
  };
  struct HwQueue {
    const Window<QueueEntry>* ops = nullptr;  // [head, end) are waiting (once issued)
    int64_t head = 0;
    int64_t calls_issued = 0, calls_started = 0;  // its CUDA calls (takes_launch_slot)
  };
  // Per event: the stream and place of the record that last completed, and
  // that stream's EngineDep then.
  struct EventDep {
    int stream = -1, pos = -1;
    EngineDep dep;
  };
  struct Rank {
    std::vector<StreamState> streams;
    std::vector<HwQueue> hwq;
    std::vector<std::pair<int, int>> event_pos;
    std::vector<EventDep> event_dep;
    int issued = 0;  // program ops [0, issued) are in their queues
    bool pumping = false, again = false;
    int64_t handoffs = 0;
    Time handoff_time;
  };
  bool can_dispatch(const Rank& S, const HwQueue& q) const;
  // Dispatches every queue head that can go, queue by queue, until none can.
  void pump(int r, size_t first = 0);
  void dispatch(int r, int id, const QueueEntry& e);
  // The hand-off op `id` pays before it starts (its stream's engine dependency).
  Time handoff(int r, const Op& op, const QueueEntry& e);
  void end_event_record(uint64_t packed) { complete(packed_rank(packed), packed_id(packed)); }
  void start_kernel_event(uint64_t packed) { kernels_.start_kernel(packed_rank(packed), packed_id(packed)); }

  ExecContext& x_;
  Kernels& kernels_;
  Copies& copies_;
  Collectives& colls_;
  Memory& memory_;
  HostWake& host_;
  std::vector<Rank> ranks_;
  const int64_t depth_;  // OverheadParams::launch_queue_depth
};

}  // namespace osim::exec
