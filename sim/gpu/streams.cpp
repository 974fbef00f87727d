#include "gpu/streams.hpp"

#include <cassert>

#include <fmt/format.h>

#include "gpu/collectives.hpp"
#include "gpu/copies.hpp"
#include "gpu/memory.hpp"

namespace osim::exec {

Streams::Streams(ExecContext& x, Kernels& kernels, Copies& copies, Collectives& colls, Memory& memory, HostWake& host)
    : x_(x),
      kernels_(kernels),
      copies_(copies),
      colls_(colls),
      memory_(memory),
      host_(host),
      ranks_(static_cast<size_t>(x.s.ranks())),
      depth_(x.p.overheads.launch_queue_depth) {}

void Streams::add_rank(int r, const ProgramQueues& q) {
  Rank& S = ranks_[static_cast<size_t>(r)];
  const int nq = x_.s.runtime.device_max_connections;
  S.hwq.resize(static_cast<size_t>(nq));
  for (size_t i = 0; i < x_.s.streams.size(); ++i) {
    StreamState& st = S.streams.emplace_back();
    st.hwq = static_cast<int>(i % static_cast<size_t>(nq));
    st.priority = x_.s.streams[i].priority;
  }
  S.event_pos.assign(x_.s.events.size(), {-1, -1});
  if (x_.handoffs) S.event_dep.assign(x_.s.events.size(), {});
  for (size_t i = 0; i < S.hwq.size(); ++i) S.hwq[i].ops = &q.queues[i];
}

void Streams::live_from(int r, int64_t& op, std::vector<int64_t>& queue_entry, std::vector<int64_t>& stream_pos) const {
  const Rank& S = ranks_[static_cast<size_t>(r)];
  const ProgramQueues& q = x_.ranks[static_cast<size_t>(r)].program->q;
  for (size_t i = 0; i < S.hwq.size(); ++i) queue_entry[i] = std::min(queue_entry[i], S.hwq[i].head);
  for (size_t s = 0; s < S.streams.size(); ++s) {
    const StreamState& st = S.streams[s];
    stream_pos[s] = std::min(stream_pos[s], static_cast<int64_t>(st.done));
    if (st.done < st.enqueued) op = std::min(op, static_cast<int64_t>(q.stream_ops[s][st.done]));
  }
}

int Streams::enqueue(int r, int pc, const Op& op) {
  Rank& S = ranks_[static_cast<size_t>(r)];
  const RankInfo& R = x_.ranks[static_cast<size_t>(r)];
  S.issued = pc + 1;
  StreamState& st = S.streams[static_cast<size_t>(op.stream)];
  ++st.enqueued;
  if (op.kind == OpKind::StreamWaitEvent && x_.keeps(r)) {
    const auto [es, ep] = S.event_pos[static_cast<size_t>(op.event)];
    x_.record(r, pc).waits_on = R.program->q.stream_ops[static_cast<size_t>(es)][ep];
  }
  // Outside a pump no queue's head can dispatch; a new op changes only its
  // own queue's head, and only when it is that head. The scan starts there:
  // the queues before it would have done nothing.
  HwQueue& q = S.hwq[static_cast<size_t>(st.hwq)];
  q.calls_issued += takes_launch_slot(op);
  if ((*q.ops)[q.head].index == pc) pump(r, static_cast<size_t>(st.hwq));
  if (op.kind == OpKind::EventRecord) S.event_pos[static_cast<size_t>(op.event)] = {op.stream, st.enqueued - 1};
  return pc;
}

bool Streams::can_dispatch(const Rank& S, const HwQueue& q) const {
  if (q.head == q.ops->end()) return false;
  const QueueEntry& e = (*q.ops)[q.head];
  if (e.index >= S.issued || S.streams[static_cast<size_t>(e.stream)].done != e.pos) return false;
  return e.dep_stream < 0 || S.streams[static_cast<size_t>(e.dep_stream)].done > e.dep_pos;
}

void Streams::pump(int r, size_t first) {
  Rank& S = ranks_[static_cast<size_t>(r)];
  if (S.pumping) {
    S.again = true;
    return;
  }
  S.pumping = true;
  const RankInfo& R = x_.ranks[static_cast<size_t>(r)];
  do {
    S.again = false;
    for (const size_t i : R.program->q.used) {  // the others never hold an op
      if (i < first) continue;
      HwQueue& q = S.hwq[i];
      while (can_dispatch(S, q)) {
        const QueueEntry& e = (*q.ops)[q.head++];
        dispatch(r, e.index, e);
      }
    }
    first = 0;
  } while (S.again);
  S.pumping = false;
}

void Streams::complete(int r, int id) {
  if (x_.mirrors.is_mirror(r)) return;
  Rank& S = ranks_[static_cast<size_t>(r)];
  RankInfo& R = x_.ranks[static_cast<size_t>(r)];
  const int index = id;
  const Op& op = x_.op_of(r, id);
  StreamState& st = S.streams[static_cast<size_t>(op.stream)];
  uint8_t& f = x_.flag(r, id);
  assert(!(f & kDone) && R.program->q.stream_ops[static_cast<size_t>(op.stream)][st.done] == index);
  f |= kDone;
  ++st.done;
  if (holds_past_free(op, x_.s.runtime.framework)) memory_.free(r, id, op);  // its tensors' memory back
  const Time now = x_.engine.now();
  if (x_.handoffs) {
    if (op.kind == OpKind::Kernel || op.kind == OpKind::Collective)
      st.dep = {EngineDep::Compute, now}, st.own = EngineDep::Compute;
    else if (op.kind == OpKind::Memcpy)
      st.dep = {EngineDep::Copy, now}, st.own = EngineDep::Copy;
    else if (op.kind == OpKind::EventRecord)
      S.event_dep[static_cast<size_t>(op.event)] = {op.stream, st.done - 1, st.dep};
  }
  if (x_.keeps(r)) {
    OpRecord& rec = x_.records[static_cast<size_t>(r)][static_cast<size_t>(index)];
    rec.end = now;
    rec.ran = true;
  }
  if (x_.spans_on) {
    x_.spans.add(r, op, st.started, now);
    if (x_.spans.wants_fold(r)) x_.spans.fold(r, running_since(r).ps());
  }
  R.last_end = std::max(R.last_end, now);
  pump(r);
  host_.wake(r);
}

// An op whose stream last ran an op on the other engine (however long ago),
// or that waited through an event on such an op still running when the host
// issued it, pays the latency of the hand-over from that engine (a copy
// after a kernel long done on its stream paid it, one waiting on an event
// after a kernel long done on another stream did not).
Time Streams::handoff(int r, const Op& op, const QueueEntry& e) {
  Rank& S = ranks_[static_cast<size_t>(r)];
  StreamState& st = S.streams[static_cast<size_t>(op.stream)];
  const Time now = x_.engine.now();
  // A wait takes the later of the two: the stream's own, or the waited
  // stream's at the record (at its end, for a stream wait). The ops issued
  // to the stream by then waited on it.
  const EngineDep* d = nullptr;
  if (op.kind == OpKind::StreamWaitEvent) {
    const EventDep& ed = S.event_dep[static_cast<size_t>(op.event)];
    if (ed.stream == e.dep_stream && ed.pos == e.dep_pos) d = &ed.dep;
  } else if (op.kind == OpKind::StreamWaitStream) {
    d = &S.streams[static_cast<size_t>(op.stream2)].dep;
  }
  if (d && d->kind != EngineDep::None && d->end >= st.dep.end) {
    st.dep = *d;
    st.dep_waiting = st.enqueued - 1;
    st.dep_released = now;
  }
  if (op.kind == OpKind::StreamWaitEvent || op.kind == OpKind::StreamWaitStream) return Time::zero();
  // On its own stream the switch adds the latency; through a wait it runs
  // from the wait's release, beside the ops between (the validation runs'
  // timing events: validate/sets/handoff/).
  const bool waited = e.pos <= st.dep_waiting;
  const auto after = [&](EngineDep::Kind k, Time latency) {
    if (st.own == k) return latency;
    if (waited && st.dep.kind == k) return std::max(Time::zero(), st.dep_released + latency - now);
    return Time::zero();
  };
  Time t;
  if (op.kind == OpKind::Memcpy && (op.copy == CopyKind::H2D || op.copy == CopyKind::D2H))
    t = after(EngineDep::Compute, x_.p.handoff.copy_after_kernel_latency[copy_direction(op.copy == CopyKind::D2H)]);
  else if (op.kind == OpKind::Kernel)
    t = after(EngineDep::Copy, x_.p.handoff.kernel_after_copy_latency);
  if (t > Time::zero()) ++S.handoffs, S.handoff_time += t;
  return t;
}

void Streams::dispatch(int r, int id, const QueueEntry& e) {
  x_.flag(r, id) |= kDispatched;
  const Op& op = x_.op_of(r, id);
  if (takes_launch_slot(op)) {
    Rank& S = ranks_[static_cast<size_t>(r)];
    ++S.hwq[static_cast<size_t>(S.streams[static_cast<size_t>(op.stream)].hwq)].calls_started;
  }
  mark_start(r, id, op);
  const Time wait = x_.handoffs ? handoff(r, op, e) : Time::zero();
  switch (op.kind) {
    case OpKind::Kernel:
      if (wait > Time::zero()) {
        x_.engine.after(wait, &Engine::call<&Streams::start_kernel_event, Streams>, this, pack(r, id));
        return;
      }
      kernels_.start_kernel(r, id);
      return;
    case OpKind::Memcpy:
      if (x_.mirrors.has_mirrors(r)) x_.mirrored_start(r, id);
      copies_.queue_copy(r, id, wait);
      if (x_.mirrors.has_mirrors(r))
        for (const int m : x_.mirrors.of[static_cast<size_t>(r)]) copies_.queue_copy(m, id, wait);
      return;
    case OpKind::Collective:
      if (x_.mirrors.has_mirrors(r)) x_.mirrored_start(r, id);
      colls_.arrive_or_park(r, id);
      if (x_.mirrors.has_mirrors(r))
        for (const int m : x_.mirrors.of[static_cast<size_t>(r)]) colls_.arrive_or_park(m, id);
      return;
    case OpKind::EventRecord: {
      // The stream is held event_gpu_time (after a copy: event_gpu_time_copy
      // where calibrated; beside an H2D copy: event_gpu_time_h2d more).
      const OverheadParams& o = x_.p.overheads;
      const bool after_copy = x_.handoffs && o.event_gpu_time_copy >= Time::zero() &&
                              ranks_[static_cast<size_t>(r)].streams[static_cast<size_t>(op.stream)].own == EngineDep::Copy;
      const Time t = after_copy ? o.event_gpu_time_copy : o.event_gpu_time + (copies_.busy(r, kH2D) ? o.event_gpu_time_h2d : Time::zero());
      if (t > Time::zero()) {
        x_.engine.after(t, &Engine::call<&Streams::end_event_record, Streams>, this, pack(r, id));
        return;
      }
      complete(r, id);
      return;
    }
    case OpKind::Free:
      memory_.free(r, id, op);
      complete(r, id);
      return;
    default: complete(r, id); return;  // waits and markers take no time
  }
}

Time Streams::running_since(int r) const {
  const Rank& S = ranks_[static_cast<size_t>(r)];
  const RankInfo& R = x_.ranks[static_cast<size_t>(r)];
  Time t = x_.engine.now();
  for (size_t s = 0; s < S.streams.size(); ++s) {
    const StreamState& st = S.streams[s];
    if (st.done == st.enqueued) continue;
    const int index = R.program->q.stream_ops[s][st.done];
    if (x_.flag(r, index) & kDispatched) t = std::min(t, st.started);
  }
  return t;
}

bool Streams::drained(int r) const {
  for (const StreamState& st : ranks_[static_cast<size_t>(r)].streams)
    if (st.done < st.enqueued) return false;
  return true;
}

std::string Streams::head(int r, int s) const {
  const Rank& S = ranks_[static_cast<size_t>(r)];
  const RankInfo& R = x_.ranks[static_cast<size_t>(r)];
  const StreamState& st = S.streams[static_cast<size_t>(s)];
  if (st.done >= st.enqueued) return "";
  const int index = R.program->q.stream_ops[static_cast<size_t>(s)][st.done];
  const uint8_t f = x_.flag(r, index);
  const Op& op = x_.op_of(r, index);
  std::string what = fmt::format("op {} {}{} ({})", index, to_string(op.kind), op.label.empty() ? "" : " " + op.label, x_.where(r, index));
  if (op.kind == OpKind::Collective) return what + colls_.waiting(r, index, f);
  const QueueEntry* e = nullptr;  // still queued: its entry has the dependency
  for (const HwQueue& q : S.hwq)
    for (int64_t i = q.head; i < q.ops->end(); ++i)
      if ((*q.ops)[i].index == index) e = &(*q.ops)[i];
  if (const int ds = e ? e->dep_stream : -1, dp = e ? e->dep_pos : -1; ds >= 0 && S.streams[static_cast<size_t>(ds)].done <= dp)
    return what + fmt::format(": waits for stream {} to finish its op {}", x_.s.streams[static_cast<size_t>(ds)].name,
                              R.program->q.stream_ops[static_cast<size_t>(ds)][dp]);
  return what + ((f & kDispatched) ? ": running" : ": waits in its hardware queue behind another stream's op");
}

}  // namespace osim::exec
