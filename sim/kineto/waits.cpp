// Stream waits and event synchronizes bound to their records (waits.hpp).
#include "kineto/waits.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace osim::kineto {

using namespace trace;

namespace {

// The stream a cudaStreamWaitEvent made wait, when the profiler gave it no
// cuda_sync event (recorded without enable_cuda_sync_events): the stream of
// the next work the thread issued (in `with stream(s): s.wait_event(e); ...`
// and wait_stream the waiter's work follows). A stream never waits on
// itself: where no record so far went to another stream (by its guess, the
// thread's last stream), the record just before the wait was on the stream
// the thread used before (wait_stream called inside the waiter's `with
// stream(...)`): `record_stream` says so. -1: not known.
struct InferredWait {
  int waiting = -1, record_stream = -1;
};
InferredWait infer_waiting_stream(const std::vector<Call>& calls, size_t wait, const std::vector<RecordInfo>& records, bool after_record,
                                  int stream_before) {
  int next = -1;
  for (size_t j = wait + 1; j < calls.size() && next < 0; ++j)
    if (calls[j].gpu) next = calls[j].gpu->stream;
  if (next < 0 || std::any_of(records.begin(), records.end(), [&](const RecordInfo& r) { return r.stream != next; })) return {next, -1};
  return after_record && stream_before != next ? InferredWait{next, stream_before} : InferredWait{};
}

// Whether the thread's next call that is not host-only, after `i`, is another stream wait.
bool next_call_waits(const std::vector<Call>& calls, size_t i) {
  for (size_t j = i + 1; j < calls.size(); ++j)
    if (const CallKind k = kind_of(calls[j]); k != CallKind::HostOnly) return k == CallKind::Wait;
  return false;
}

}  // namespace

// For every wait and event synchronize (by call index): the record it binds.
// A wait the timeline decides (the waiting stream went on late, as a record's
// work ended) binds the latest record on another stream whose work had ended
// by then; one it does not decide binds by the program's idioms (below).
std::map<size_t, Binding> pair_waits(const RankTrace& t, std::vector<RecordInfo>& records, int default_stream, ImportSummary& sum) {
  std::map<size_t, Binding> bound;  // call -> its binding
  const auto& calls = t.calls;
  // Per stream: GPU end of the work enqueued so far, and the activities in issue order.
  std::map<int, std::vector<size_t>> per_stream;  // call indices of activities
  for (size_t i = 0; i < calls.size(); ++i)
    if (calls[i].gpu) per_stream[calls[i].gpu->stream].push_back(i);
  auto next_on = [&](int stream, size_t after) -> const Call* {
    auto it = per_stream.find(stream);
    if (it == per_stream.end()) return nullptr;
    auto jt = std::upper_bound(it->second.begin(), it->second.end(), after);
    return jt == it->second.end() ? nullptr : &calls[*jt];
  };
  auto prev_end_on = [&](int stream, size_t before) -> int64_t {
    auto it = per_stream.find(stream);
    if (it == per_stream.end()) return kNone;
    auto jt = std::lower_bound(it->second.begin(), it->second.end(), before);
    int64_t e = kNone;
    for (auto kt = it->second.begin(); kt != jt; ++kt) e = std::max(e, calls[*kt].gpu->end);
    return e;
  };
  std::map<int, int64_t> enqueued_end;
  int last_stream = default_stream, stream_before = default_stream;  // the thread's last stream, and the one before it
  bool last_was_copy = false;
  std::map<std::pair<int, int>, size_t> last_bound;  // (waiting stream, record stream) -> record index + 1
  std::map<int, int> last_waiter;                    // record stream -> the stream that last waited on one of its records
  std::map<int64_t, int> stream_of_event;
  size_t last_gpu_call = SIZE_MAX;  // the last call that was no host-only call
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call& c = calls[i];
    const CallKind k = kind_of(c);
    if (c.gpu) {
      if (c.gpu->stream != last_stream) stream_before = last_stream;
      last_stream = c.gpu->stream;
      last_was_copy = c.gpu->cat == "gpu_memcpy";
      auto& e = enqueued_end[last_stream];
      e = std::max(e, c.gpu->end);
    }
    if (k == CallKind::Record) {
      RecordInfo r;
      r.call = i;
      r.stream = last_stream;
      auto it = enqueued_end.find(last_stream);
      r.covered_end = it == enqueued_end.end() ? kNone : it->second;
      r.after_copy = last_was_copy;
      records.push_back(r);
    }
    if (k == CallKind::Wait || k == CallKind::EventSync) {
      const json* args = c.sync && (*c.sync).contains("args") ? &(*c.sync)["args"] : nullptr;
      int waiting = k == CallKind::Wait && args ? static_cast<int>(int_arg(*args, "stream", -1)) : -1;
      const int64_t event_id = args ? int_arg(*args, "wait_on_cuda_event_id", kNone) : kNone;
      const int64_t record_corr = args ? int_arg(*args, "wait_on_cuda_event_record_corr_id", -1) : -1;
      const bool inferred = k == CallKind::Wait && !args;
      if (inferred) {
        const bool after_record = last_gpu_call != SIZE_MAX && !records.empty() && records.back().call == last_gpu_call;
        const InferredWait w = infer_waiting_stream(calls, i, records, after_record, stream_before);
        waiting = w.waiting;
        if (w.record_stream >= 0) {
          RecordInfo& r = records.back();
          r.stream = w.record_stream;
          auto it = enqueued_end.find(r.stream);
          r.covered_end = it == enqueued_end.end() ? kNone : it->second;
          r.after_copy = false;
        }
        // A record on the stream whose work comes next, then two waits with no
        // work between: the first is a wait_stream whose waiter gets no work
        // before the next wait (the copy stream waiting for compute at the end
        // of a prefetch loop, the prefetch never coming): the stream that last
        // waited on that one, else the next work's as above.
        if (waiting >= 0 && after_record && records.back().stream == waiting && next_call_waits(calls, i))
          if (auto lw = last_waiter.find(waiting); lw != last_waiter.end()) waiting = lw->second;
      }
      if (k == CallKind::Wait && waiting < 0) {
        ++sum.not_imported[inferred ? "stream waits without a cuda_sync event whose waiting stream the calls do not show: left out"
                                    : "stream waits the profiler gave no waiting stream for: left out"];
        continue;
      }
      // Record-then-wait: the call just before is a record on another stream
      // (wait_stream), or within the same framework op (NCCL's hand-off, a
      // no-op where the collective runs on the current stream).
      const bool idiom = last_gpu_call != SIZE_MAX && kind_of(calls[last_gpu_call]) == CallKind::Record && !records.empty() &&
                         records.back().call == last_gpu_call &&
                         (records.back().stream != waiting || (c.ext != kNone && calls[last_gpu_call].ext == c.ext)) &&
                         (records.back().event_id == kNone || event_id == kNone || records.back().event_id == event_id);
      std::vector<size_t> cand;
      for (size_t r = 0; r < records.size(); ++r) {
        if (records[r].stream == waiting) continue;
        if (records[r].event_id != kNone && event_id != kNone && records[r].event_id != event_id) continue;
        cand.push_back(r);
      }
      if (record_corr >= 0)  // the profiler says which record, and on which stream
        for (size_t r = 0; r < records.size(); ++r)
          if (calls[records[r].call].corr == record_corr) {
            cand = {r};
            if (const int64_t on = int_arg(*args, "wait_on_stream", -1); on >= 0) records[r].stream = static_cast<int>(on);
          }
      if (auto se = stream_of_event.find(event_id); se != stream_of_event.end() && cand.size() > 1) {
        std::vector<size_t> same;
        for (size_t r : cand)
          if (records[r].stream == se->second) same.push_back(r);
        if (!same.empty()) cand = same;
      }
      if (cand.empty() && !idiom) {
        ++sum.not_imported["waits on an event no record in the trace made (recorded before the profiler started): left out"];
        continue;
      }
      // When the waiter went on: the waiting stream's next work's start (a
      // wait), the host's return (an event synchronize).
      // (A wait whose stream gets no more work never went on: any record will do.)
      constexpr int64_t kNever = std::numeric_limits<int64_t>::max() / 2;
      int64_t went_on = c.end, could = c.ts;
      if (k == CallKind::Wait) {
        const Call* next = next_on(waiting, i);
        went_on = next ? next->gpu->start : kNever;
        could = next ? std::max(prev_end_on(waiting, i), next->ts) : went_on;
      }
      // A record the waiter can have waited on: its work had ended when the waiter went on.
      const auto feasible = [&](size_t r) { return records[r].covered_end == kNone || records[r].covered_end <= went_on + kSlackNs; };
      // The timeline decides a wait whose stream went on late, just as a
      // record's work ended (a delay no record explains is the GPU's own).
      const bool late = went_on != kNever && went_on > could + kSlackNs;
      const bool decided = late && std::any_of(cand.begin(), cand.end(), [&](size_t r) {
                             return feasible(r) && records[r].covered_end != kNone && records[r].covered_end >= went_on - kExplainNs;
                           });
      size_t pick = cand.empty() ? records.size() - 1 : cand.back();
      if (record_corr >= 0) {
        // the profiler said
      } else if (decided) {
        int64_t best = kNone;
        for (size_t r : cand)
          if (feasible(r) && records[r].covered_end >= best) best = records[r].covered_end, pick = r;
      } else {
        // Of the records whose work had ended: the one just before the wait
        // within the same framework op (NCCL's hand-off); else the next copy
        // in a queue (a record marking a copy, after the last this stream
        // waited on from that stream: prefetch loops); else the one just
        // before it on another stream (wait_stream); else the first.
        size_t queue = SIZE_MAX, first = SIZE_MAX;
        for (size_t r : cand) {
          if (!feasible(r)) continue;
          first = std::min(first, r);
          auto lb = last_bound.find({waiting, records[r].stream});
          if (records[r].after_copy && (lb == last_bound.end() || r >= lb->second)) queue = std::min(queue, r);
        }
        const size_t just_before = records.size() - 1;
        const bool idiom_ok = idiom && feasible(just_before);
        const bool same_op = idiom_ok && c.ext != kNone && calls[records[just_before].call].ext == c.ext;
        pick = same_op ? just_before : queue != SIZE_MAX ? queue : idiom_ok ? just_before : first != SIZE_MAX ? first : pick;
      }
      ++(decided ? sum.waits_timed : sum.waits_untimed);
      if (inferred) ++(decided ? sum.inferred_timed : sum.inferred_untimed);
      if (k == CallKind::Wait && !inferred) ++sum.waits_recorded;
      bound[i] = {pick, waiting};
      last_bound[{waiting, records[pick].stream}] = pick + 1;
      if (k == CallKind::Wait) last_waiter[records[pick].stream] = waiting;
      if (event_id != kNone) {
        records[pick].event_id = event_id;
        stream_of_event[event_id] = records[pick].stream;
      }
    }
    if (k != CallKind::HostOnly) last_gpu_call = i;
  }
  return bound;
}

}  // namespace osim::kineto
