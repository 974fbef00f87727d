#include "kineto/import.hpp"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kineto/copy_overlap.hpp"
#include "kineto/host_calls.hpp"
#include "kineto/job.hpp"
#include "kineto/trace.hpp"
#include "kineto/waits.hpp"
#include "schedule/builder.hpp"

namespace osim::kineto {

namespace {

using namespace trace;

// How long an activity ran on the GPU.
Time measured_time(const Activity& a) { return Time::from_ps((a.end - a.start) * 1000); }

// The engine a copy the importer makes a memcpy runs on (-1: it becomes a kernel of its measured time).
int copy_engine_of(const Activity& a) {
  if (a.cat != "gpu_memcpy" || a.bytes == kNone) return -1;
  const std::string& n = a.name;
  return n.find("HtoD") != std::string::npos   ? CopyOverlap::kH2D
         : n.find("DtoH") != std::string::npos ? CopyOverlap::kD2H
         : n.find("DtoD") != std::string::npos ? CopyOverlap::kOther
                                               : -1;
}

// A copy call the replay's host waits for (Host::effect): a blocking one, or
// a pageable one between host and device (staged through a pinned buffer).
bool host_waits_for_copy(const Call& c) {
  const std::string& n = c.gpu->name;
  return c.name.find("Async") == std::string::npos || (n.find("Pageable") != std::string::npos && n.find("DtoD") == std::string::npos);
}

// A call that does not wait for the GPU (a launch, an event call) and ran
// this long with nothing left on the GPU did the driver's first-use work
// (lazy module loading, cuDNN's first call): host time the model's cost of
// the call does not hold. Such calls take seconds; a warm launch, tens of us.
constexpr int64_t kLongCallNs = 1'000'000;

// The blocks of a kernel's grid (args.grid), 0 where not recorded or past any GPU's SMs.
int64_t grid_blocks(const Activity& a) {
  if (!a.args) return 0;
  const auto g = a.args->find("grid");
  if (g == a.args->end() || !g->is_array()) return 0;
  int64_t n = 1;
  for (const auto& d : *g) {
    if (!d.is_number_integer() || d.get<int64_t>() < 1) return 0;
    n *= d.get<int64_t>();
    if (n > 4096) return 0;
  }
  return n;
}

// An op's host and GPU times, ns from the first call of any rank.
struct OpTimes {
  int64_t issue, returned, start, end;
};

// Builds the schedule from every rank's trace, and the measured run beside it.
class Importer {
 public:
  // `measured`: the call costs a first pass took from the same traces; each
  // call's host time over its kind's cost is then kept (keep_over_cost).
  Importer(std::vector<const RankTrace*> ranks, const std::string& name, ImportSummary& sum, const HostCallSamples* measured = nullptr,
           const RuntimeSettings::HostCalls& model = {})
      : t_(std::move(ranks)), n_(static_cast<int>(t_.size())), b_(name, n_), sum_(sum), times_(t_.size()), end_(t_.size(), 0) {
    if (measured) cost_ = measured->replay_costs_ns(model);
    choose_compute_stream();
    plan_collectives();
    t0_ = std::numeric_limits<int64_t>::max();
    for (const RankTrace* t : t_) t0_ = std::min(t0_, t->calls.front().ts);
  }

  // The first pass: what the traces measured of each kind of call.
  HostCallSamples samples() {
    for (int r = 0; r < n_; ++r) import_rank(r);
    return calls_;
  }

  ImportedTrace run() {
    for (int r = 0; r < n_; ++r) import_rank(r);
    if (syncs_device_ + syncs_stream_ > 0)
      sum_.notes.push_back(fmt::format(
          "stream synchronizes without their cuda_sync event: {} became device synchronizes (no stream was busy as the call returned), {} "
          "stream synchronizes of the stream whose work had ended by then (another was still busy)",
          syncs_device_, syncs_stream_));
    b_.schedule().runtime.framework_kernels = true;  // PyTorch's kernels; the host's time is measured
    calls_.write(b_.schedule().runtime.host_calls, sum_);
    write_copy_rates();
    ImportedTrace out;
    out.schedule = b_.build();
    out.measured = measured(out.schedule);
    return out;
  }

 private:
  // The stream with the most kernel time on rank 0 is "compute"; the others keep their id.
  void choose_compute_stream() {
    std::map<int, int64_t> kernel_time;
    for (const Activity& a : t_[0]->gpu)
      if (a.cat == "kernel") kernel_time[a.stream] += a.end - a.start;
    compute_id_ = kernel_time.empty() ? (t_[0]->gpu.empty() ? 7 : t_[0]->gpu[0].stream) : kernel_time.begin()->first;
    for (const auto& [s, t] : kernel_time)
      if (t > kernel_time[compute_id_]) compute_id_ = s;
    compute_ = stream(compute_id_);
  }
  int stream(int id) { return b_.stream(id == compute_id_ ? "compute" : fmt::format("stream{}", id)); }

  // A process group's ranks (the job's) as the schedule's; nullopt where one was not imported.
  std::optional<std::vector<int>> local(const std::vector<int>& job_ranks) const {
    std::vector<int> out;
    for (const int g : job_ranks) {
      int found = -1;
      for (int r = 0; r < n_ && found < 0; ++r)
        if ((t_[static_cast<size_t>(r)]->rank < 0 ? r : t_[static_cast<size_t>(r)]->rank) == g) found = r;
      if (found < 0) return std::nullopt;
      out.push_back(found);
    }
    return out;
  }

  // Collectives are simulated where every rank of the group was imported and
  // each issued as many; otherwise they keep their measured time.
  void plan_collectives() {
    using Issued = std::vector<std::pair<const Activity*, CollectiveInfo>>;
    std::map<std::vector<int>, std::vector<Issued>> issued;  // group ranks -> per rank, its collectives in order
    // Some ranks of a larger job: how many collective calls (of each rank) are simulated and how many keep their time.
    const int world = t_[0]->world;
    const size_t job_note = sum_.notes.size();
    if (world > n_) sum_.notes.emplace_back();
    std::map<std::vector<int>, size_t> outside;  // a group (the job's ranks) with a rank not given -> its calls
    for (int r = 0; r < n_; ++r)
      for (const Call& c : t_[static_cast<size_t>(r)]->calls) {
        if (!c.gpu || !is_nccl(*c.gpu)) continue;
        std::string why;
        if (auto ci = collective_of(*c.gpu, &why); ci && local(ci->ranks)) {
          auto& v = issued[*local(ci->ranks)];
          v.resize(static_cast<size_t>(n_));
          v[static_cast<size_t>(r)].emplace_back(c.gpu, *ci);
        } else if (ci) {
          ++outside[ci->ranks];
        }
      }
    std::map<std::vector<int>, size_t> simulated;  // a group (the job's ranks) simulated -> its calls
    for (const auto& [ranks, per_rank] : issued) {
      if (!std::all_of(ranks.begin(), ranks.end(), [&](int r) { return r >= 0 && r < n_; })) continue;
      if (ranks.size() < 2) continue;  // a group of one rank moves nothing: its kernels keep their measured time
      check_collectives_match(ranks, per_rank);
      std::vector<size_t> counts;
      for (const Issued& v : per_rank) counts.push_back(v.size());
      if (std::any_of(ranks.begin(), ranks.end(),
                      [&counts = counts, first = ranks[0]](int r) { return counts[static_cast<size_t>(r)] != counts[static_cast<size_t>(first)]; })) {
        sum_.notes.push_back(
            fmt::format("the ranks of group [{}] issued different numbers of collectives in their traces (profile every rank "
                        "over the same steps): those keep their measured time",
                        fmt::join(ranks, ", ")));
        continue;
      }
      bool all = static_cast<int>(ranks.size()) == n_;
      for (int i = 0; all && i < n_; ++i) all = ranks[static_cast<size_t>(i)] == i;
      groups_[ranks] = all ? -1 : b_.group(fmt::format("ranks{}", fmt::join(ranks, "_")), ranks);
      std::vector<int> job;
      for (const int r : ranks) job.push_back(t_[static_cast<size_t>(r)]->rank < 0 ? r : t_[static_cast<size_t>(r)]->rank);
      for (const Issued& v : per_rank) simulated[job] += v.size();
    }
    if (world > n_) {
      const auto calls = [](const std::map<std::vector<int>, size_t>& by_group) {
        size_t n = 0;
        std::vector<std::string> groups;
        for (const auto& [g, k] : by_group) {
          n += k;
          groups.push_back(fmt::format("[{}]", fmt::join(g, ", ")));
        }
        return groups.empty() ? std::string("none") : fmt::format("{} call(s) of group(s) {}", n, fmt::join(groups, ", "));
      };
      sum_.notes[job_note] = fmt::format(
          "the job had {} ranks and {} trace(s) were given: a collective whose group's ranks were all given is simulated ({}); "
          "one whose group has a rank not given keeps its measured time ({})",
          world, n_, calls(simulated), calls(outside));
    }
    if (n_ > 1) {
      std::vector<int> all(static_cast<size_t>(n_));
      for (int i = 0; i < n_; ++i) all[static_cast<size_t>(i)] = i;
      world_ = b_.group("world", all);
    }
  }

  // The ranks of a group issue the same collectives in the same order (sizes
  // aside for all-to-all, whose splits may differ): else the traces are not
  // of one run, or not over the same steps. Refused at the first that differs.
  template <class Issued>
  void check_collectives_match(const std::vector<int>& ranks, const std::vector<Issued>& per_rank) const {
    const size_t f = static_cast<size_t>(ranks[0]);
    for (int r : ranks) {
      const auto& mine = per_rank[static_cast<size_t>(r)];
      const auto& theirs = per_rank[f];
      for (size_t j = 0; j < std::min(mine.size(), theirs.size()); ++j) {
        const auto& [a, ci] = mine[j];
        const auto& [b, cf] = theirs[j];
        if (ci.kind == cf.kind && (ci.bytes == cf.bytes || ci.kind == CollKind::AllToAll)) continue;
        fail(t_[static_cast<size_t>(r)]->file,
             fmt::format("collective {} of group [{}] is {} of {} bytes ({}) where rank {}'s is {} of {} bytes ({} in {}): the ranks of one job "
                         "issue the same collectives in the same order; give the traces of one run, profiled over the same steps",
                         j, fmt::join(ranks, ", "), to_string(ci.kind), ci.bytes, event_at(a->index, a->cat, a->name, us_of(a->start)), ranks[0],
                         to_string(cf.kind), cf.bytes, event_at(b->index, b->cat, b->name, us_of(b->start)), t_[f]->file));
      }
    }
  }

  void emit(Op op, OpTimes ot, const std::string& what) {
    // A kernel of measured time: how much of it ran beside busy copy engines.
    if (op.kind == OpKind::Kernel && op.duration) op.beside_copies_ns = overlap_.beside(ot.start, ot.end);
    b_.add(r_, std::move(op));
    const OpTimes rel{ot.issue - t0_, ot.returned - t0_, ot.start - t0_, ot.end - t0_};
    times_[static_cast<size_t>(r_)].push_back(rel);
    auto& e = end_[static_cast<size_t>(r_)];
    e = std::max({e, rel.returned, rel.end});
    ++sum_.ops[what];
  }
  // The host's own time up to `when`, as host work.
  // A call that took less than its replay's cost ended late there by the
  // difference (owed_): that much less of it, the host reaches `when` on time.
  void host_until(int64_t when) {
    if (when <= cursor_) return;
    const int64_t taken = std::min(owed_, when - cursor_);
    owed_ -= taken;
    sum_.under_cost_ns += taken;
    if (cursor_ + taken < when) emit(ops::host_work(Time::from_ps((when - cursor_ - taken) * 1000)), {cursor_ + taken, when, cursor_ + taken, when}, "host_work");
    cursor_ = when;
  }
  // A marker on the compute stream, which reaches it after the work before it.
  void marker(int64_t when, std::string label, const char* what) {
    host_until(when);
    const int64_t at = cursor_, reached = std::max(at, compute_end_);
    emit(ops::marker(compute_, std::move(label)), {at, at, reached, reached}, what);
  }

  void import_rank(int r) {
    r_ = r;
    const RankTrace& t = *t_[static_cast<size_t>(r)];
    // Kernels per ATen op, and each op's longest kernel (the one that carries its shape).
    kernels_of_op_.clear();
    longest_.clear();
    for (const Activity& a : t.gpu)
      if (a.cat == "kernel" && a.ext != kNone) {
        ++kernels_of_op_[a.ext];
        auto& l = longest_[a.ext];
        if (!l || a.end - a.start > l->end - l->start) l = &a;
      }
    // The copies that become memcpys, for the time each kernel ran beside them.
    overlap_ = CopyOverlap{};
    for (const Call& c : t.calls)
      if (const int e = c.gpu && kind_of(c) == CallKind::Memcpy ? copy_engine_of(*c.gpu) : -1; e >= 0)
        overlap_.add(static_cast<CopyOverlap::Engine>(e), c.gpu->start, c.gpu->end);
    overlap_.build();
    std::vector<RecordInfo> records;
    const auto bound = pair_waits(t, records, compute_id_, sum_);
    std::map<size_t, const RecordInfo*> record_at;
    for (auto& rec : records) {
      rec.index = b_.event(fmt::format("r{}e{}", r, &rec - records.data()));
      record_at[rec.call] = &rec;
    }
    cursor_ = t.calls.front().ts;
    owed_ = 0;
    compute_end_ = 0;
    stream_end_.clear();
    // Step markers go before the first call at or after their range's start;
    // the end of the last before the first call after it ends.
    size_t next_step = 0;
    bool steps_ended = t.steps.empty();
    for (size_t i = 0; i < t.calls.size(); ++i) {
      const Call& c = t.calls[i];
      const CallKind k = kind_of(c);
      if (k == CallKind::HostOnly) {
        ++sum_.host_only[c.name];
        continue;
      }
      if (!steps_ended && next_step == t.steps.size() && t.steps.back().end <= c.ts) {
        marker(t.steps.back().end, kStepsEndMarker, "marker (end of steps)");
        steps_ended = true;
      }
      for (; next_step < t.steps.size() && t.steps[next_step].start <= c.ts; ++next_step) {
        marker(t.steps[next_step].start, fmt::format("step {} ({})", next_step, t.steps[next_step].name), "marker (step)");
        if (r == 0) ++sum_.steps;
      }
      host_until(c.ts);
      const int64_t first_use = first_use_time(c, k);
      if (first_use > 0) {
        host_until(c.ts + first_use);
        ++sum_.long_calls;
        sum_.long_call_ns += first_use;
      } else if (const int64_t over = measure_call(c, k); over > 0) {
        host_until(c.ts + over);
        ++sum_.over_cost_calls;
        sum_.over_cost_ns += over;
      } else {
        owed_ -= over;
      }
      cursor_ = std::max(cursor_, c.end);
      if (c.gpu && c.gpu->stream == compute_id_) compute_end_ = std::max(compute_end_, c.gpu->end);
      if (c.gpu) stream_end_[c.gpu->stream] = std::max(stream_end_[c.gpu->stream], c.gpu->end);
      const OpTimes host{c.ts, c.end, c.ts, c.end};
      switch (k) {
        case CallKind::Kernel: kernel(t, c); break;
        case CallKind::Memset: {
          const Activity& a = *c.gpu;
          Op op = ops::busy(stream(a.stream), measured_time(a), "memset");
          op.hbm_bytes = static_cast<double>(std::max<int64_t>(0, a.bytes));
          emit(std::move(op), {c.ts, c.end, a.start, a.end}, "kernel (memset)");
          break;
        }
        case CallKind::Memcpy: memcpy(c); break;
        case CallKind::Record: {
          const RecordInfo& rec = *record_at.at(i);
          const int64_t at = std::max(c.end, rec.covered_end == kNone ? c.end : rec.covered_end);
          emit(ops::record(stream(rec.stream), rec.index), {c.ts, c.end, at, at}, "event_record");
          break;
        }
        case CallKind::Wait:
        case CallKind::EventSync: {
          auto it = bound.find(i);
          if (it == bound.end()) break;  // counted in not_imported
          const RecordInfo& rec = records[it->second.record];
          if (k == CallKind::Wait) {
            emit(ops::wait_event(stream(it->second.waiting), rec.index), host, "stream_wait_event");
          } else {
            Op op;
            op.kind = OpKind::EventSync;
            op.event = rec.index;
            emit(std::move(op), host, "event_sync");
            if (rec.covered_end != kNone) wake(HostCallSamples::EventSyncWait, c.ts, rec.covered_end, c.end);
          }
          break;
        }
        case CallKind::StreamSync: {
          const int64_t s = c.sync && (*c.sync).contains("args") ? int_arg((*c.sync)["args"], "stream", -1) : -1;
          if (s < 0) {
            if (const int on = synchronized_stream(c.end); on >= 0) {
              ++syncs_stream_;
              emit(ops::stream_sync(stream(on)), host, "stream_sync");
              wake(HostCallSamples::StreamSyncWait, c.ts, stream_end_[on], c.end);
            } else {
              ++syncs_device_;
              emit(ops::device_sync(), host, "device_sync");
              wake(HostCallSamples::StreamSyncWait, c.ts, gpu_end(), c.end);
            }
          } else {
            emit(ops::stream_sync(stream(static_cast<int>(s))), host, "stream_sync");
            if (const auto e = stream_end_.find(static_cast<int>(s)); e != stream_end_.end())
              wake(HostCallSamples::StreamSyncWait, c.ts, e->second, c.end);
          }
          break;
        }
        case CallKind::DeviceSync:
          emit(ops::device_sync(), host, "device_sync");
          wake(HostCallSamples::DeviceSyncWait, c.ts, gpu_end(), c.end);
          break;
        case CallKind::HostOnly: break;
      }
    }
    if (!steps_ended && next_step == t.steps.size()) marker(t.steps.back().end, kStepsEndMarker, "marker (end of steps)");
  }

  // The call's own host time, for the median of its kind (settings.host_calls):
  // a launch or event call's duration; a copy or synchronize only where it
  // had nothing to wait for (every stream's work done as it was called), its
  // time until the copy started or its whole duration. Calls that waited hold
  // their wait, which the replay models. Returns, in the second pass, the
  // time over its kind's cost (keep_over_cost) of a call that did not wait.
  int64_t measure_call(const Call& c, CallKind k) {
    const bool idle = gpu_end() <= c.ts;
    const int64_t d = c.end - c.ts;
    const auto take = [&](HostCallSamples::Cost kind, int64_t ns) {
      calls_.cost(kind, ns);
      return keep_over_cost(kind, ns);
    };
    switch (k) {
      case CallKind::Kernel:
        if (c.gpu && is_nccl(*c.gpu)) {
          std::string why;
          if (const auto ci = collective_of(*c.gpu, &why); ci && local(ci->ranks) && groups_.count(*local(ci->ranks)))
            return take(HostCallSamples::Collective, d);
        }
        return take(HostCallSamples::Launch, d);
      case CallKind::Memset: return take(HostCallSamples::Launch, d);
      case CallKind::Record:
      case CallKind::Wait: return take(HostCallSamples::Event, d);
      case CallKind::Memcpy:
        // Returned before its copy ended: it did not wait. Kept only where
        // the replay's host does not wait for the copy either (a pageable
        // copy's staging is the replay's copy's, not the call's).
        if (!c.gpu || c.end <= c.gpu->end) {
          const int64_t over = take(HostCallSamples::Copy, d);
          return c.gpu && host_waits_for_copy(c) ? 0 : over;
        }
        if (idle) calls_.cost(HostCallSamples::Copy, std::clamp<int64_t>(c.gpu->start - c.ts, 0, d));
        return 0;
      case CallKind::StreamSync:
      case CallKind::DeviceSync:
      case CallKind::EventSync: return idle ? take(HostCallSamples::Sync, d) : 0;
      case CallKind::HostOnly: break;
    }
    return 0;
  }

  // A call's host time over what the replay charges its kind (the trace's
  // median, else the model's cost): host work the trace measured at that
  // call (the first call after a long host op, a slow record), which the
  // replay keeps before it, as it keeps the host's time between calls;
  // negative where the call took less, which the host's time after it gives
  // back (host_until). 0 in the first pass, which takes the medians.
  int64_t keep_over_cost(HostCallSamples::Cost k, int64_t ns) const { return cost_ && (*cost_)[k] >= 0 ? ns - (*cost_)[k] : 0; }

  // A blocking call that waited for GPU work ending at `work_end`: its return
  // after that work, sampled for wait_return; in the second pass, its return
  // over what the replay charges (wait_return) kept as host work after it.
  void wake(HostCallSamples::Wait k, int64_t called, int64_t work_end, int64_t returned) {
    calls_.wait(k, called, work_end, returned);
    if (work_end > called) owed_ = 0;  // the host waited: the replay's, late or not, waits with it
    if (!cost_ || (*cost_)[HostCallSamples::WaitReturn] < 0 || work_end <= called || returned < work_end) return;
    const int64_t over = returned - work_end - (*cost_)[HostCallSamples::WaitReturn];
    if (over <= 0) return;
    emit(ops::host_work(Time::from_ps(over * 1000)), {returned - over, returned, returned - over, returned}, "host_work");
    ++sum_.late_returns;
    sum_.late_return_ns += over;
  }

  // When the work put on every stream so far ends (0: none).
  int64_t gpu_end() const {
    int64_t done = 0;
    for (const auto& [id, end] : stream_end_) done = std::max(done, end);
    return done;
  }

  // The host time a call that does not wait for the GPU spent with the GPU
  // idle (every op issued before it had ended), where over kLongCallNs: kept
  // as host work before the call (its own cost stays the model's); else 0.
  int64_t first_use_time(const Call& c, CallKind k) const {
    if (k != CallKind::Kernel && k != CallKind::Memset && k != CallKind::Record && k != CallKind::Wait) return 0;
    int64_t gpu_done = c.ts;
    for (const auto& [id, end] : stream_end_) gpu_done = std::max(gpu_done, end);
    const int64_t idle = c.end - gpu_done;
    return idle > kLongCallNs ? idle : 0;
  }

  // Which stream a cudaStreamSynchronize without its cuda_sync event waited
  // for, from when it returned: -1 (a device synchronize reproduces it) where
  // no stream was still busy then; else the stream whose work ended last by
  // then (the one it waited for), or the compute stream where none had.
  int synchronized_stream(int64_t returned) const {
    int busy = 0, on = -1;
    int64_t latest = std::numeric_limits<int64_t>::min();
    for (const auto& [id, end] : stream_end_) {
      if (end > returned + kSlackNs)
        ++busy;
      else if (end >= latest)
        latest = end, on = id;
    }
    if (busy == 0) return -1;
    return on >= 0 ? on : compute_id_;
  }

  // A kernel: a collective (NCCL, its group imported whole), or a kernel of
  // its measured time with the shape its ATen op's inputs give.
  void kernel(const RankTrace& t, const Call& c) {
    const Activity& a = *c.gpu;
    const int s = stream(a.stream);
    const OpTimes gt{c.ts, c.end, a.start, a.end};
    if (is_nccl(a)) {
      std::string why;
      const auto ci = collective_of(a, &why);
      if (const auto loc = ci ? local(ci->ranks) : std::nullopt; loc && groups_.count(*loc)) {
        const int g = groups_[*loc] < 0 ? world_ : groups_[*loc];
        emit(ops::collective(s, ci->kind, g, ci->bytes, CollAlgo::Nccl, ci->dtype, to_string(ci->kind)), gt, "collective " + to_string(ci->kind));
        return;
      }
      if (!why.empty()) ++sum_.not_imported[why + ": a kernel at its measured time"];
      Op op = ops::busy(s, measured_time(a), short_name(a.name));
      // NCCL runs a block per channel, each on an SM of its own: the kernel
      // holds its grid's SMs, not the GPU (the kernels beside it ran on the rest).
      op.sm_limit = static_cast<int>(grid_blocks(a));
      emit(std::move(op), gt, "kernel (NCCL, measured)");
      return;
    }
    Op op = ops::busy(s, measured_time(a), short_name(a.name));
    std::string what = "kernel (measured)";
    if (auto it = a.ext != kNone ? t.ops_by_ext.find(a.ext) : t.ops_by_ext.end(); it != t.ops_by_ext.end()) {
      const CpuOp& cop = it->second;
      const auto gemm = gemm_of(cop);
      const auto attention = attention_of(cop);
      if (longest_[a.ext] == &a && gemm) {
        op.gemm = gemm->first, op.dtype = gemm->second, what = "kernel (gemm)";
      } else if (longest_[a.ext] == &a && attention) {
        op.attention = attention->first, op.dtype = attention->second, what = "kernel (attention)";
      } else if (kernels_of_op_[a.ext] == 1 && !gemm && !attention) {
        if (const double bytes = input_hbm_bytes(cop); bytes > 0) {
          op.hbm_bytes = bytes, what = "kernel (memory, HBM bytes from its op's inputs)";
          if (const auto norm = norm_of(cop))
            op.access = norm->first, op.norm_row = norm->second, what = "kernel (norm, HBM bytes and row from its op's inputs)";
          else
            op.access = memory_access_of(cop);
        }
      }
    }
    emit(std::move(op), gt, what);
  }

  void memcpy(const Call& c) {
    const Activity& a = *c.gpu;
    const std::string& n = a.name;
    const OpTimes gt{c.ts, c.end, a.start, a.end};
    const bool h2d = n.find("HtoD") != std::string::npos, d2h = n.find("DtoH") != std::string::npos, d2d = n.find("DtoD") != std::string::npos;
    if (!h2d && !d2h && !d2d) {
      ++sum_.not_imported[fmt::format("'{}' copies (peer or host-to-host): kernels at their measured time", n)];
      emit(ops::busy(stream(a.stream), measured_time(a), n), gt, "kernel (measured)");
      return;
    }
    if (a.bytes == kNone) {
      ++sum_.not_imported["copies without args.bytes: kernels at their measured time"];
      emit(ops::busy(stream(a.stream), measured_time(a), n), gt, "kernel (measured)");
      return;
    }
    const CopyKind kind = h2d ? CopyKind::H2D : d2h ? CopyKind::D2H : CopyKind::D2D;
    const HostMem mem = n.find("Pageable") != std::string::npos ? HostMem::Pageable : HostMem::Pinned;
    const Bytes bytes = std::max<int64_t>(1, a.bytes);  // a copy of 0 bytes still takes a copy's time
    const bool async = c.name.find("Async") != std::string::npos;
    if (kind != CopyKind::D2D && a.bytes >= kRateMinBytes) {
      CopyTotals& t = copy_totals_[{kind == CopyKind::H2D, mem == HostMem::Pageable}];
      t.bytes += a.bytes, t.ns += a.end - a.start, ++t.copies;
    }
    emit(ops::copy(stream(a.stream), kind, bytes, mem, async, fmt::format("memcpy_{}", to_string(kind))), gt,
         "memcpy " + to_string(kind) +
             (kind == CopyKind::D2D      ? ""
              : mem == HostMem::Pageable ? " pageable"
                                         : " pinned"));
    // A copy the replay's host waits for (Host::effect): its return after it.
    if (host_waits_for_copy(c)) wake(HostCallSamples::CopyWait, c.ts, a.end, c.end);
  }

  // The trace's timeline as a run of the built schedule.
  RunRecord measured(const Schedule& s) const {
    RunRecord m;
    m.ops.resize(static_cast<size_t>(n_));
    m.ranks.resize(static_cast<size_t>(n_));
    int64_t makespan = 0;
    for (size_t r = 0; r < static_cast<size_t>(n_); ++r) {
      const auto& prog = *s.programs[r].ops;
      auto& recs = m.ops[r];
      recs.resize(prog.size());
      for (size_t i = 0; i < prog.size(); ++i) {
        const OpTimes& ot = times_[r][i];
        recs[i].op = &prog[i];
        recs[i].issue = Time::from_ps(ot.issue * 1000);
        recs[i].returned = Time::from_ps(ot.returned * 1000);
        recs[i].start = Time::from_ps(ot.start * 1000);
        recs[i].end = Time::from_ps(ot.end * 1000);
        recs[i].ran = true;
      }
      m.ranks[r].gpu = t_[r]->gpu_name;
      m.ranks[r].end = Time::from_ps(end_[r] * 1000);
      makespan = std::max(makespan, end_[r]);
    }
    m.makespan = Time::from_ps(makespan * 1000);
    return m;
  }

  std::vector<const RankTrace*> t_;
  int n_;
  ScheduleBuilder b_;
  ImportSummary& sum_;
  int compute_id_ = -1, compute_ = -1, world_ = -1;
  std::map<std::vector<int>, int> groups_;  // simulated collectives' ranks -> group (-1: world)
  int64_t t0_ = 0;
  std::vector<std::vector<OpTimes>> times_;
  std::vector<int64_t> end_;  // per rank, from t0
  // The rank being imported.
  int r_ = 0;
  int64_t cursor_ = 0;                           // where its host is: the end of the last call that became an op
  int64_t compute_end_ = 0;                      // GPU end of the work put on its compute stream so far
  int64_t owed_ = 0;                             // how much later than the trace its host is at calls that took less than their cost
  std::map<int, int64_t> stream_end_;            // per stream, GPU end of the work put on it so far
  int64_t syncs_device_ = 0, syncs_stream_ = 0;  // stream synchronizes without a cuda_sync event, as they became
  std::unordered_map<int64_t, int> kernels_of_op_;
  std::unordered_map<int64_t, const Activity*> longest_;
  CopyOverlap overlap_;  // its copies' engines' busy time
  HostCallSamples calls_;  // every rank's calls' costs and waits' returns
  // Host copies of at least kRateMinBytes by (h2d, pageable): bytes, GPU time and count (settings.copy_rates).
  static constexpr int64_t kRateMinBytes = int64_t{1} << 20;
  struct CopyTotals {
    int64_t bytes = 0, ns = 0, copies = 0;
  };
  std::map<std::pair<bool, bool>, CopyTotals> copy_totals_;

  // settings.copy_rates and the summary's line: each kind's bytes over its copies' time.
  void write_copy_rates() {
    std::string text;
    auto& rates = b_.schedule().runtime.copy_rates;
    for (const auto& [key, field] : RuntimeSettings::CopyRates::kFields) {
      const std::string k = key;
      const auto it = copy_totals_.find({k.starts_with("h2d"), k.ends_with("pageable")});
      if (it == copy_totals_.end() || it->second.ns <= 0) continue;
      const CopyTotals& c = it->second;
      rates.*field = Bandwidth::from_GBps(static_cast<double>(c.bytes) / static_cast<double>(c.ns));
      text += fmt::format("{}{} {:.6g} GB/s ({} copies, {:.2f} GiB)", text.empty() ? "" : ", ", k, (rates.*field)->GBps(), c.copies,
                          static_cast<double>(c.bytes) / static_cast<double>(int64_t{1} << 30));
    }
    sum_.copy_rates = text;
  }
  std::optional<std::array<int64_t, 6>> cost_;  // the second pass: what the replay charges each kind of call (ns)
};

}  // namespace

std::string ImportSummary::text() const {
  std::string out = fmt::format("{} rank(s), {} trace events\n", ranks, events);
  out += "ops:\n";
  for (const auto& [k, n] : ops) out += fmt::format("  {:>8}  {}\n", n, k);
  if (steps) out += steps_from.empty() ? fmt::format("steps: {}\n", steps) : fmt::format("steps: {} ({})\n", steps, steps_from);
  if (waits_timed + waits_untimed)
    out += fmt::format("stream waits / event syncs: {} bound by the timeline, {} by program order (their wait did not bind)\n", waits_timed,
                       waits_untimed);
  if (const int64_t n = inferred_timed + inferred_untimed)
    out += fmt::format(
        "stream waits without a cuda_sync event, inferred: {} (waiting stream: the next work issued; record: by stream and order)\n"
        "  confidence: {} of {} confirmed by the timeline (the waiting stream went on as its record's work ended), {} by program order only\n",
        n, inferred_timed, n, inferred_untimed);
  if (!host_calls.empty())
    out += fmt::format("host calls measured (the median of each kind, of that many calls; a run without --calibration takes them): {}\n", host_calls);
  if (!host_calls_too_few.empty())
    out += fmt::format("host calls of too few calls to stand for their kind (under {}; a run keeps the calibration's cost): {}\n", kMinCostCalls,
                       host_calls_too_few);
  if (!copy_rates.empty())
    out += fmt::format("host copies measured (bytes over their time, copies of 1 MiB or more; run takes the pageable ones, --copy-rates-as-traced "
                       "every one): {}\n",
                       copy_rates);
  if (!wait_returns.empty())
    out += fmt::format("waits' returns (the host back after the GPU work it waited for ended; wait_return: their median, of every kind): {}\n",
                       wait_returns);
  if (over_cost_calls || late_returns)
    out += fmt::format("host time over the replay's cost of its call (a run without --calibration charges the costs above, else the model's), "
                       "kept as host work: {} calls before them, {:.1f} us; {} waits' returns after them, {:.1f} us; calls under their cost: {:.1f} us "
                       "taken from the host's time after them\n",
                       over_cost_calls, static_cast<double>(over_cost_ns) * 1e-3, late_returns, static_cast<double>(late_return_ns) * 1e-3,
                       static_cast<double>(under_cost_ns) * 1e-3);
  if (other_threads) out += fmt::format("calls from other host threads merged in time order: {}\n", other_threads);
  if (long_calls)
    out += fmt::format("launches and event calls of over 1 ms with the GPU idle (first-use work: lazy module loading, cuDNN's first call): {}, "
                       "{:.3f} ms kept as host work\n",
                       long_calls, static_cast<double>(long_call_ns) * 1e-6);
  if (!host_only.empty()) {
    int64_t total = 0;
    for (const auto& [k, n] : host_only) total += n;
    out += fmt::format("CUDA calls kept as host time ({}):", total);
    for (const auto& [k, n] : host_only) out += fmt::format(" {} {},", k, n);
    out.back() = '\n';
  }
  if (!not_imported.empty()) {
    out += "not imported:\n";
    for (const auto& [k, n] : not_imported) out += fmt::format("  {:>8}  {}\n", n, k);
  }
  for (const auto& n : notes) out += "note: " + n + "\n";
  return out;
}

ImportedTrace import_traces(const std::vector<std::string>& paths, const ImportOptions& options) {
  if (paths.empty()) throw InputError(SourceLocation{}, "no trace given");
  ImportSummary sum;
  // Without --steps: torch.profiler's ProfilerStep#N, else `step N` record_function ranges.
  std::vector<StepPattern> steps;
  try {
    if (options.steps.empty()) {
      steps.push_back({"ProfilerStep#N", "^ProfilerStep#\\d+$", std::regex("^ProfilerStep#\\d+$")});
      steps.push_back({"step N", "^[Ss]tep[ _#]?\\d+$", std::regex("^[Ss]tep[ _#]?\\d+$")});
    } else {
      steps.push_back({options.steps, options.steps, std::regex(options.steps)});
    }
  } catch (const std::regex_error& e) {
    throw InputError(SourceLocation{}, fmt::format("--steps '{}' is not a regular expression ({})", options.steps, e.what()));
  }
  std::vector<RankTrace> traces;
  for (const auto& p : paths) {
    try {
      traces.push_back(read_trace(p, steps, sum));
    } catch (const nlohmann::json::exception& e) {  // a field of a type read_trace's checks did not foresee
      fail(p, fmt::format("a field of an unexpected type ({}): not a trace as Kineto writes it; export it with prof.export_chrome_trace(path)",
                          e.what()));
    }
  }
  choose_steps(traces, steps, !options.steps.empty(), sum);
  check_one_job(traces);
  // Ranks: as the traces say, else in the order given.
  const bool ranked = std::all_of(traces.begin(), traces.end(), [](const RankTrace& t) { return t.rank >= 0; });
  std::map<int, size_t> by_rank;
  for (size_t i = 0; i < traces.size(); ++i) {
    const int r = ranked ? traces[i].rank : static_cast<int>(i);
    if (!by_rank.emplace(r, i).second) fail(traces[i].file, fmt::format("rank {} again (also {}): give each rank's trace once, from one run of the job", r, traces[by_rank[r]].file));
  }
  // One rank of a larger job as every rank, peers assumed symmetric: the trace
  // again under each rank of the job.
  if (options.symmetric_ranks) {
    if (traces.size() != 1 || traces[0].world < 2)
      throw InputError(SourceLocation{paths[0], 0, 0},
                       traces.size() != 1 ? "--symmetric-ranks takes one rank's trace: give one file, or drop the option to import every rank's"
                                          : "--symmetric-ranks: the trace's distributedInfo names no job of several ranks (world_size); "
                                            "a single-GPU trace imports without it");
    const int job = traces[0].rank;
    sum.notes.push_back(
        fmt::format("rank {}'s trace replayed as each of the job's {} ranks (--symmetric-ranks): its collectives over the job are "
                    "simulated with every peer issuing the same",
                    job, traces[0].world));
    by_rank.clear();
    traces.reserve(static_cast<size_t>(traces[0].world));  // the copies point into the first's activities
    for (int r = 0; r < traces[0].world; ++r) {
      if (r > 0) traces.push_back(traces[0]);
      traces.back().rank = r;
      by_rank.emplace(r, static_cast<size_t>(r));
    }
  }
  // Some ranks of a larger job: the schedule's ranks are theirs in order.
  std::vector<const RankTrace*> ranks;
  std::vector<int> renumbered;
  for (const auto& [r, i] : by_rank) {
    if (r != static_cast<int>(ranks.size())) renumbered.push_back(r);
    ranks.push_back(&traces[i]);
  }
  sum.ranks = static_cast<int>(ranks.size());
  if (!renumbered.empty()) {
    std::vector<int> job;
    for (const auto& [r, i] : by_rank) job.push_back(r);
    sum.notes.push_back(fmt::format("the job's rank(s) [{}] are the schedule's rank(s) 0 to {}", fmt::join(job, ", "), sum.ranks - 1));
  }
  // The name: the first trace's file name without .gz, .json, .trace, .rankN.
  std::string name = options.name;
  if (name.empty()) {
    name = std::filesystem::path(paths[0]).filename().string();
    for (const std::regex& suffix :
         {std::regex("\\.gz$"), std::regex("\\.json$"), std::regex("\\.pt\\.trace$|\\.trace$"), std::regex("\\.rank\\d+$")})
      name = std::regex_replace(name, suffix, "");
  }
  // Two passes (options.call_times): the first takes each kind of call's
  // cost; the second keeps each call's host time against it.
  ImportSummary first = sum;
  const HostCallSamples measured = options.call_times ? Importer(ranks, name, first).samples() : HostCallSamples{};
  ImportedTrace out = Importer(ranks, name, sum, options.call_times ? &measured : nullptr, options.model_costs).run();
  for (const RankTrace* t : ranks) out.gpus.push_back({t->file, t->gpu_name, t->gpu_sms, t->gpu_memory});
  if (sum.inferred_timed + sum.inferred_untimed > 0 && sum.waits_recorded == 0)
    sum.notes.push_back(
        "the trace has no CUDA sync events: stream waits were inferred from the runtime calls; profile with "
        "experimental_config=torch._C._profiler._ExperimentalConfig(enable_cuda_sync_events=True) to have them recorded");
  // Kernels --remodel-kernels can time from a shape.
  int64_t kernels = 0, shaped = 0;
  for (const auto& [what, n] : sum.ops)
    if (what.rfind("kernel (", 0) == 0 && what != "kernel (memset)") {
      kernels += n;
      if (what != "kernel (measured)" && what != "kernel (NCCL, measured)") shaped += n;
    }
  if (kernels > 0 && shaped == 0)
    sum.notes.push_back(
        fmt::format("none of the {} kernels carries a shape (profile with record_shapes=True): --remodel-kernels has nothing to re-model{}", kernels,
                    sum.ops.count("kernel (memset)") ? " but the memsets" : ""));
  out.summary = std::move(sum);
  return out;
}

}  // namespace osim::kineto
