#include "gpu/host.hpp"

#include <fmt/format.h>

#include "gpu/collectives.hpp"
#include "gpu/memory.hpp"
#include "gpu/streams.hpp"

namespace osim::exec {

Host::Host(ExecContext& x, Streams& streams, Memory& memory, const Collectives& colls)
    : x_(x), streams_(streams), memory_(memory), colls_(colls), ranks_(static_cast<size_t>(x.s.ranks())) {}

void Host::start() {
  for (int r = 0; r < x_.s.ranks(); ++r)
    if (!x_.mirrors.is_mirror(r)) x_.engine.at(Time::zero(), &Host::step_event, this, static_cast<uint64_t>(r));
}

Time Host::overhead(int r, const Op& op) const {
  const OverheadParams& o = x_.p.overheads;
  if (op.views > 0 && x_.s.runtime.framework != Framework::None)  // the calls before it that launch nothing, then its own
    return Time::from_ps(o.framework_view_call.ps() * op.views) + call_overhead(r, op);
  return call_overhead(r, op);
}

int64_t Host::partners(int r, const Op& op) const {
  return static_cast<int64_t>(x_.s.groups[static_cast<size_t>(x_.group_of(r, op))].ranks.size()) - 1;
}

bool Host::waits_for_gpu(const Rank& H, const Op& op) const {
  if (H.until.kind == Rank::Wait::Queue) return false;
  switch (op.kind) {
    case OpKind::StreamSync:
    case OpKind::EventSync:
    case OpKind::DeviceSync:
    case OpKind::Memcpy: return true;
    default: return false;  // an allocation waiting for room, a full launch queue
  }
}

Time Host::rounds_while_running(int r, const Op& op) const {
  const Time round = x_.p.overheads.framework_p2p_round;
  if (round <= Time::zero() || !colls_.framework_pairwise_table(r, op)) return Time::zero();
  return Time::from_ps(round.ps() * partners(r, op));
}

Time Host::call_overhead(int r, const Op& op) const {
  const OverheadParams& o = x_.p.overheads;
  const Time framework = x_.s.runtime.framework == Framework::None ? Time::zero() : o.framework_op_call;
  switch (op.kind) {
    case OpKind::Kernel: return Time::from_ps((o.kernel_launch + framework).ps() * op.launches);
    case OpKind::Memcpy: return o.memcpy_call + framework;
    case OpKind::EventRecord:
    case OpKind::StreamWaitEvent:
    case OpKind::StreamWaitStream: return o.event_call;
    case OpKind::StreamSync:
    case OpKind::EventSync:
    case OpKind::DeviceSync: return o.sync_call;
    case OpKind::Collective: {
      if (x_.s.runtime.framework == Framework::None) return o.collective_call;
      const bool pairwise = op.coll == CollKind::AllToAll && op.algo == CollAlgo::Pairwise;
      if (pairwise && o.framework_p2p_round > Time::zero()) {
        // A round per partner; where the framework's call is measured, the
        // collective is launched as the call begins and the host issues the
        // rounds while the GPU runs it (effect).
        if (rounds_while_running(r, op) > Time::zero()) return Time::zero();
        return Time::from_ps(o.framework_p2p_round.ps() * partners(r, op));
      }
      return o.framework_collective_call >= Time::zero() ? o.framework_collective_call : o.collective_call + framework;
    }
    // Only weights are allocated by calls of the program's own: the other
    // parts are taken before the run (context, workspaces) or by the ops
    // that produce them, whose dispatch holds that time; weights loaded
    // with the model (launches 0) before it.
    case OpKind::Alloc: return op.part == MemPart::Weights && op.launches > 0 ? o.alloc_call : Time::zero();
    case OpKind::Free: return memory_.part_of(r, op.label) == MemPart::Weights ? o.free_call : Time::zero();
    case OpKind::HostWork:
    case OpKind::Marker: return Time::zero();
  }
  return Time::zero();
}

void Host::step(int r) {
  Rank& H = ranks_[static_cast<size_t>(r)];
  if (H.state == Rank::Done) return;
  H.state = Rank::Ready;
  Engine& engine = x_.engine;
  while (has_op(r, H.pc)) {
    const Op& op = x_.op_of(r, H.pc);
    OpRecord& rec = x_.record(r, H.pc);
    if (!H.paid) {
      rec.issue = engine.now();
      H.paid = true;
      const Time oh = overhead(r, op);
      // The call's overhead: when nothing else is due before it ends, the
      // clock just moves on (same order of events as waking up later).
      if (oh > Time::zero() && !engine.try_advance(engine.now() + oh)) {
        H.state = Rank::Busy;
        engine.after(oh, &Host::step_event, this, static_cast<uint64_t>(r));
        return;
      }
    }
    if (!H.effect_done) {
      H.effect_done = true;
      rec.returned = engine.now();
      effect(r, op);
    }
    if (H.busy_until > engine.now() && !engine.try_advance(H.busy_until)) {
      H.state = Rank::Busy;
      engine.at(H.busy_until, &Host::step_event, this, static_cast<uint64_t>(r));
      return;
    }
    if (!satisfied(r)) {
      H.state = Rank::Blocked;
      H.waited = waits_for_gpu(H, op);
      return;
    }
    // Back from a wait: CUDA's wake-up, then a framework's return, before
    // the call returns.
    if (H.waited) {
      H.waited = false;
      const OverheadParams& o = x_.p.overheads;
      if (const Time back = o.wait_return + (x_.s.runtime.framework == Framework::None ? Time::zero() : o.framework_wait_return);
          back > Time::zero()) {
        H.busy_until = engine.now() + back;
        if (!engine.try_advance(H.busy_until)) {
          H.state = Rank::Busy;
          engine.at(H.busy_until, &Host::step_event, this, static_cast<uint64_t>(r));
          return;
        }
      }
    }
    H.until.kind = Rank::Wait::None;
    if (!is_gpu_op(op)) {
      rec.start = rec.issue;
      rec.end = engine.now();
      rec.ran = true;
      x_.ranks[static_cast<size_t>(r)].last_end = std::max(x_.ranks[static_cast<size_t>(r)].last_end, engine.now());
    }
    rec.returned = engine.now();
    ++H.pc;
    H.paid = H.effect_done = false;
  }
  H.state = Rank::Done;
  H.host_end = engine.now();
}

bool Host::satisfied(int r) const {
  const Rank::Wait& w = ranks_[static_cast<size_t>(r)].until;
  switch (w.kind) {
    case Rank::Wait::None: return true;
    case Rank::Wait::Gop: return (x_.flag(r, w.gop) & kDone) != 0;
    case Rank::Wait::Stream: return streams_.done(r, w.stream) >= w.count;
    case Rank::Wait::Device:
      for (size_t i = 0; i < w.counts.size(); ++i)
        if (streams_.done(r, static_cast<int>(i)) < w.counts[i]) return false;
      return true;
    case Rank::Wait::Queue: return !streams_.queue_full(r, w.stream);
  }
  return true;
}

std::string Host::waiting_in(int r) const {
  const Op& op = x_.op_of(r, ranks_[static_cast<size_t>(r)].pc);
  if (ranks_[static_cast<size_t>(r)].until.kind == Rank::Wait::Queue)
    return fmt::format("a {} call into a full hardware queue (stream {})", to_string(op.kind), x_.s.streams[static_cast<size_t>(op.stream)].name);
  switch (op.kind) {
    case OpKind::Memcpy: return fmt::format("a blocking {} copy", to_string(op.copy));
    case OpKind::StreamSync: return fmt::format("stream_sync({})", x_.s.streams[static_cast<size_t>(op.stream)].name);
    case OpKind::EventSync: return fmt::format("event_sync({})", x_.s.events[static_cast<size_t>(op.event)]);
    case OpKind::DeviceSync: return "device_sync";
    default: return to_string(op.kind);
  }
}

void Host::block_on_stream(Rank& H, int stream, int count) {
  H.until.kind = Rank::Wait::Stream;
  H.until.stream = stream;
  H.until.count = count;
}

void Host::wake(int r) {
  Rank& H = ranks_[static_cast<size_t>(r)];
  if (H.state == Rank::Blocked && satisfied(r)) {
    H.state = Rank::Busy;
    x_.engine.after(Time::zero(), &Host::step_event, this, static_cast<uint64_t>(r));
  }
}

void Host::effect(int r, const Op& op) {
  Rank& H = ranks_[static_cast<size_t>(r)];
  H.until.kind = Rank::Wait::None;  // a retried call (a full queue, no room) waits afresh
  // A CUDA call into a stream whose hardware queue is full returns once the
  // queue's head has started (CUDA's launch queue).
  if (op.stream >= 0 && takes_launch_slot(op) && streams_.queue_full(r, op.stream)) {
    H.until.kind = Rank::Wait::Queue;
    H.until.stream = op.stream;
    H.effect_done = false;
    return;
  }
  switch (op.kind) {
    case OpKind::Kernel:
    case OpKind::Collective:
    case OpKind::StreamWaitEvent:
    case OpKind::StreamWaitStream:
    case OpKind::EventRecord:
    case OpKind::Marker:
      if (op.kind == OpKind::Marker) memory_.marker(r, op.label);  // a request stage's VRAM window
      if (op.kind == OpKind::Marker && op.stream < 0) return;
      streams_.enqueue(r, H.pc, op);
      // A framework's pairwise rounds: the host issues them while the GPU
      // runs the call (Collectives::framework_pairwise_table).
      if (const Time rounds = rounds_while_running(r, op); rounds > Time::zero()) H.busy_until = x_.engine.now() + rounds;
      // Its send and receive tensors, held until the stream has run it.
      if (holds_past_free(op, x_.s.runtime.framework)) memory_.hold_behind_stream(r, H.pc, op.stream, streams_.enqueued(r, op.stream), 2 * op.bytes);
      return;
    case OpKind::Memcpy: {
      const int g = streams_.enqueue(r, H.pc, op);
      const bool blocking = !op.async || (op.host_mem == HostMem::Pageable && (op.copy == CopyKind::H2D || op.copy == CopyKind::D2H));
      if (blocking) {
        H.until.kind = Rank::Wait::Gop;
        H.until.gop = g;
      }
      return;
    }
    case OpKind::StreamSync: block_on_stream(H, op.stream, streams_.enqueued(r, op.stream)); return;
    case OpKind::EventSync: {
      const auto [s, pos] = streams_.event_position(r, op.event);
      block_on_stream(H, s, pos + 1);
      return;
    }
    case OpKind::DeviceSync:
      H.until.kind = Rank::Wait::Device;
      H.until.counts.clear();
      for (int s = 0; s < static_cast<int>(x_.s.streams.size()); ++s) H.until.counts.push_back(streams_.enqueued(r, s));
      return;
    case OpKind::Alloc:
      // Not enough room while freed memory waits for its stream: wait for
      // that stream, then allocate (PyTorch's allocator synchronises on the
      // blocks' events before it reports out of memory).
      if (const auto room = memory_.room_after(r, op)) {
        block_on_stream(H, room->first, room->second);
        H.effect_done = false;
        return;
      }
      memory_.alloc(r, H.pc, op);
      return;
    case OpKind::Free:
      if (op.stream < 0) {
        memory_.free(r, H.pc, op);
        return;
      }
      // Freed on the host, returned to the GPU's memory once the stream has
      // done the work issued before it (a tensor used on another stream).
      memory_.free_behind_stream(r, H.pc, op, streams_.enqueued(r, op.stream) + 1);
      streams_.enqueue(r, H.pc, op);
      return;
    case OpKind::HostWork: H.busy_until = x_.engine.now() + *op.duration; return;
  }
}

bool Host::extend(int r, int id) {
  ProgramInfo& P = *x_.ranks[static_cast<size_t>(r)].program;
  if (!P.generated_as_run()) return false;
  // What every rank running the program is past goes first.
  int64_t op = INT64_MAX;
  std::vector<int64_t> queue_entry(P.q.queues.size(), INT64_MAX), stream_pos(P.q.stream_ops.size(), INT64_MAX);
  for (const int rr : P.ranks) {
    if (x_.mirrors.is_mirror(rr)) continue;  // its copies and collectives in flight are its representative's pending ops
    op = std::min(op, static_cast<int64_t>(pc(rr)));
    streams_.live_from(rr, op, queue_entry, stream_pos);
    if (x_.mirrors.has_mirrors(rr) && !x_.mirrors.pending[static_cast<size_t>(rr)].empty())
      op = std::min(op, x_.mirrors.pending[static_cast<size_t>(rr)].lowest());
  }
  P.drop_before(op, queue_entry, stream_pos);
  while (id >= P.end())
    if (!P.generate()) return false;
  x_.most_ops_held = std::max(x_.most_ops_held, P.held());
  if (P.end() > static_cast<int64_t>(INT32_MAX))
    throw InputError(SourceLocation{x_.s.file, 0, 0}, "a program holds more than 2^31 ops: simulate fewer steps");
  for (const int rr : P.ranks) {
    Window<uint8_t>& f = x_.ranks[static_cast<size_t>(rr)].flags;
    f.drop_before(op);
    f.grow_to(P.end());
  }
  return true;
}

}  // namespace osim::exec
