// Host overheads: what API calls cost the host (bench overhead_kernel_launch,
// overhead_event_record, overhead_stream_sync_idle,
// overhead_memcpy_async_pinned_return), how far it issues ahead
// (launch_queue), and the GPU time an event record holds its stream
// (overhead_gpu_event_gap); PyTorch's calls that launch nothing
// (overhead_framework_view, framework.py); its return after a wait on the
// GPU (overhead_framework_sync_return: fitted from its block loops, the
// simple waits replayed), its ops' host time at a block's
// shapes (overhead_framework_op_sized) and the calls beside a prefetch
// (overhead_framework_stream_call) replayed, not fitted.
#include <algorithm>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "calib/bench_replay.hpp"
#include "calib/families/steps.hpp"
#include "core/stats.hpp"
#include "schedule/builder.hpp"

namespace osim {
namespace families::overheads {

void fit_api(FitContext& ctx) {
  const json& d = ctx.def;
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  // API overheads: medians measured directly.
  auto overhead = [&](const char* key, Time& field) {
    for (const auto& r : rows(d, key)) field = Time::from_us(r.at("time_us").get<double>());
  };
  overhead("overhead_kernel_launch", p.overheads.kernel_launch);
  overhead("overhead_event_record", p.overheads.event_call);
  overhead("overhead_stream_sync_idle", p.overheads.sync_call);
  overhead("overhead_memcpy_async_pinned_return", p.overheads.memcpy_call);
  c.fits.push_back({"API overheads",
                    "host time per call, median",
                    {{"kernel_launch_us", p.overheads.kernel_launch.us()},
                     {"event_us", p.overheads.event_call.us()},
                     {"sync_us", p.overheads.sync_call.us()},
                     {"memcpy_async_us", p.overheads.memcpy_call.us()}},
                    0,
                    4});
}

// A framework's dispatch (bench overhead_framework_op: small PyTorch ops
// back to back, the GPU ahead): the median host time per op less the CUDA
// launch the model charges apart.
void fit_framework_op(FitContext& ctx) {
  const auto ops = rows(ctx.def, "overhead_framework_op");
  if (ops.empty()) return;
  std::vector<double> us;
  for (const auto& r : ops) us.push_back(r.at("host_us").get<double>());
  const double per_op = median(us);
  ctx.p.overheads.framework_op_call = Time::from_us(std::max(0.0, per_op - ctx.p.overheads.kernel_launch.us()));
  ctx.cal.fits.push_back({"framework dispatch",
                          "host time per framework op that launches a kernel (median over the ops), less the kernel launch",
                          {{"framework_op_call_us", ctx.p.overheads.framework_op_call.us()}, {"per_op_us", per_op}},
                          0,
                          static_cast<int>(us.size())});
}

// A framework's calls that launch nothing (framework.py host_calls,
// overhead_framework_view: slices, views, transposes, splits, reshapes,
// empty_like back to back, the GPU ahead): the median host time per call.
// `contiguous` of a contiguous tensor returns the tensor itself: no call
// the model charges.
bool returns_itself(const json& r) { return r.at("op") == "contiguous"; }

void fit_framework_view(FitContext& ctx) {
  std::vector<double> us;
  for (const auto& r : rows(ctx.def, "overhead_framework_view"))
    if (!returns_itself(r)) us.push_back(r.at("host_us").get<double>());
  if (us.empty()) return;
  ctx.p.overheads.framework_view_call = Time::from_us(median(us));
  ctx.cal.fits.push_back({"framework views",
                          "host time per framework call that launches nothing (median over the calls)",
                          {{"framework_view_call_us", ctx.p.overheads.framework_view_call.us()}},
                          0,
                          static_cast<int>(us.size())});
}

// A framework's collective calls (bench overhead_framework_collective: the
// Ulysses all-to-all as PyTorch programs call it, the GPU ahead): NCCL's
// all_to_all_single's host time at the most ranks measured; the pairwise
// exchange's per round, least squares through the origin over the rows
// (host time = rounds x per round).
void fit_framework_collective(FitContext& ctx) {
  const auto rs = rows(ctx.def, "overhead_framework_collective");
  if (rs.empty()) return;
  Fit f{"framework collectives",
        "host time per all-to-all call from the framework: all_to_all_single (at the most ranks), pairwise per round "
        "(least squares through the origin over rounds)",
        {},
        0,
        0};
  int most = 0;
  double rh = 0, rr = 0;
  for (const auto& r : rs) {
    const double us = r.at("host_us").get<double>();
    if (r.at("op") == "all_to_all_single" && r.at("ranks").get<int>() > most) {
      most = r.at("ranks").get<int>();
      ctx.p.overheads.framework_collective_call = Time::from_us(us);
    } else if (r.at("op") == "all_to_all_pairwise" && r.at("rounds").get<int>() > 0) {
      const double rounds = r.at("rounds").get<double>();
      rh += rounds * us;
      rr += rounds * rounds;
    }
    ++f.points;
  }
  if (most) f.values.emplace_back("framework_collective_call_us", ctx.p.overheads.framework_collective_call.us());
  if (rr > 0) {
    ctx.p.overheads.framework_p2p_round = Time::from_us(rh / rr);
    f.values.emplace_back("framework_p2p_round_us", rh / rr);
  }
  ctx.cal.fits.push_back(f);
}

// How far the host issues ahead (bench launch_queue: tiny kernels launched
// round-robin on 1-16 streams, each held by a long kernel, until a launch
// blocks): the ops one hardware queue holds, the launches before the block
// over the queues they went to (streams, at most the connections), median.
void fit_launch_queue(FitContext& ctx) {
  std::vector<double> per_queue;
  for (const auto& r : rows(ctx.def, "launch_queue")) {
    if (!r.at("blocked").get<bool>()) continue;
    const int queues = std::min(r.at("streams").get<int>(), r.at("device_max_connections").get<int>());
    if (queues > 0) per_queue.push_back(r.at("launches").get<double>() / queues);
  }
  if (per_queue.empty()) return;
  ctx.p.overheads.launch_queue_depth = static_cast<int>(median(per_queue));
  ctx.cal.fits.push_back({"launch queue",
                          "ops a hardware queue holds ahead of the GPU: launches before one blocked / the queues they went to, median",
                          {{"launch_queue_depth", static_cast<double>(ctx.p.overheads.launch_queue_depth)}},
                          0,
                          static_cast<int>(per_queue.size())});
}

void fit_event_time(FitContext& ctx) {
  const json& d = ctx.def;
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  // GPU time of an event record: 1 MiB memory kernels back to back with and
  // without an event after each (overhead_gpu_event_gap), the difference per
  // op; with an H2D copy in flight beside (`beside: h2d`), what it adds.
  {
    Fit f{"GPU time of an event record", "per op: kernels with an event after each - the same without (overhead_gpu_event_gap)", {}, 0, 0};
    std::optional<double> alone, beside_h2d, after_copy;
    for (const auto& r : rows(d, "overhead_gpu_event_gap")) {
      const std::string beside = r.value("beside", std::string("none"));
      if (r.at("op") == "h2d" && beside == "none") after_copy = r.at("gap_us").get<double>();
      if (r.at("op") != "memory_kernel") continue;
      if (beside == "none")
        alone = r.at("gap_us").get<double>();
      else if (beside == "h2d")
        beside_h2d = r.at("gap_us").get<double>();
    }
    if (alone) {
      p.overheads.event_gpu_time = Time::from_us(std::max(0.0, *alone));
      f.values.emplace_back("event_gpu_time_us", p.overheads.event_gpu_time.us());
      ++f.points;
      if (beside_h2d) {
        p.overheads.event_gpu_time_h2d = Time::from_us(std::max(0.0, *beside_h2d - *alone));
        f.values.emplace_back("event_gpu_time_h2d_us", p.overheads.event_gpu_time_h2d.us());
        ++f.points;
      }
    }
    // After a copy: H2D copies with and without an event after each.
    if (after_copy) {
      p.overheads.event_gpu_time_copy = Time::from_us(std::max(0.0, *after_copy));
      f.values.emplace_back("event_gpu_time_copy_us", p.overheads.event_gpu_time_copy.us());
      ++f.points;
    }
    if (f.points > 0) c.fits.push_back(f);
  }
}

// overhead_gpu_event_gap as the bench ran it: `ops` ops back to back on
// stream 0 of GPU 0 (1 MiB memory kernels or pinned H2D copies; `fenced`: an
// event recorded after each), gated (host calls left out); `beside: h2d`
// (h2d_all): a copy of copy_bytes in flight on GPU 0's copy stream (each of
// the row's `gpus` GPUs') from the start. Per op, from the first op's start to the last one's
// end (with its event), in us.
double replay_event_gap(const json& r, bool fenced, const hw::Topology& topo, const ModelParams& params) {
  ModelParams p = params;
  p.overheads.kernel_launch = p.overheads.memcpy_call = p.overheads.event_call = Time::zero();
  const std::string beside = r.value("beside", std::string("none"));
  const int n = r.at("ops"), ranks = beside == "h2d_all" ? r.at("gpus").get<int>() : 1;
  Schedule s = bench_schedule(ranks);
  std::vector<std::vector<Op>> progs(static_cast<size_t>(ranks));
  if (beside != "none")
    for (auto& prog : progs) prog.push_back(bench_copy(CopyKind::H2D, r.at("copy_bytes").get<Bytes>(), 1));
  const size_t first = progs[0].size();
  const Op op = r.at("op") == "h2d" ? bench_copy(CopyKind::H2D, r.at("bytes").get<Bytes>()) : bench_memory_kernel(r.at("bytes").get<double>());
  for (int i = 0; i < n; ++i) {
    progs[0].push_back(op);
    if (!fenced) continue;
    Op ev;
    ev.kind = OpKind::EventRecord;
    ev.stream = 0;
    ev.event = static_cast<int32_t>(s.events.size());
    s.events.push_back(fmt::format("e{}", i));
    progs[0].push_back(ev);
  }
  const ExecResult res = replay_programs(std::move(s), progs, topo, p);
  return (res.ops[0].back().end - res.ops[0][first].start).us() / n;
}

// A sync_return row of LightX2V's block loop (copy- or compute-bound), the
// rows the wait return is fitted from; the others are bare waits.
bool block_loop_row(const json& r) {
  const std::string what = r.at("wait");
  return what == "block_loop" || what == "block_loop_compute";
}

// overhead_framework_sync_return as framework.py ran it: `items` items one
// after another on one GPU from PyTorch (a kernel of item_us on the compute
// stream, a pinned H2D copy of copy_mib on a side stream, or a blocking one
// on the compute stream; block_loop: that copy on the side stream, then
// `ops` small kernels on the compute stream, the first after `views` calls
// that launch nothing, then with block_loop_compute a kernel of
// `compute_us`, then both streams synchronized), the host waiting for each
// (`wait`) or not. Every call costs what the model charges a framework's;
// per item in us on the stream framework.py's events timed (block_loop: the
// copies'), from the first item's start to the last one's end.
double replay_sync_return(const json& r, bool wait, const hw::Topology& topo, const ModelParams& p) {
  Schedule s = bench_schedule(1);
  s.runtime.framework = Framework::PyTorch;
  const std::string what = r.at("wait");
  if (what != "kernel_sync" && what != "copy_stream_sync" && what != "blocking_to" && !block_loop_row(r))
    throw std::invalid_argument(fmt::format(
        "overhead_framework_sync_return row with wait '{}' (kernel_sync, copy_stream_sync, blocking_to, block_loop or block_loop_compute)", what));
  const int items = r.at("items");
  if (items < 1) throw std::invalid_argument("overhead_framework_sync_return row with no items");
  const Bytes bytes = r.at("copy_mib").get<Bytes>() << 20;
  std::vector<std::vector<Op>> progs(1);
  // The items' timed ops' places in the program (the records' ops belong to the replay's schedule, gone after it).
  std::vector<size_t> first_at, last_at;
  for (int i = 0; i < items; ++i) {
    size_t first = progs[0].size(), last = first;  // the item's first and last timed ops
    if (what == "kernel_sync") {
      progs[0].push_back(bench_idle(Time::from_us(r.at("item_us").get<double>())));
      if (wait) progs[0].push_back(ops::stream_sync(0));
    } else if (what == "copy_stream_sync") {
      progs[0].push_back(bench_copy(CopyKind::H2D, bytes, 1));
      if (wait) progs[0].push_back(ops::stream_sync(1));
    } else if (what == "blocking_to") {  // .to("cuda") blocking, or not
      progs[0].push_back(ops::copy(0, CopyKind::H2D, bytes, HostMem::Pinned, !wait));
    } else {
      const bool on_compute = what == "block_loop_compute";
      progs[0].push_back(bench_copy(CopyKind::H2D, bytes, 1));
      const int ops_n = r.at("ops"), views = r.at("views");
      if (ops_n < 1 || views < 0 || views > 255)
        throw std::invalid_argument(
            fmt::format("overhead_framework_sync_return {} row with ops {} and views {} (at least 1 op, 0-255 views)", what, ops_n, views));
      if (on_compute) first = progs[0].size();
      for (int k = 0; k < ops_n; ++k) {
        progs[0].push_back(bench_idle(Time::from_us(2)));
        if (k == 0) progs[0].back().views = static_cast<uint8_t>(views);
      }
      if (on_compute && r.at("compute_us").get<double>() > 0) progs[0].push_back(bench_idle(Time::from_us(r.at("compute_us").get<double>())));
      if (on_compute) last = progs[0].size() - 1;
      if (wait) {
        progs[0].push_back(ops::stream_sync(0));
        progs[0].push_back(ops::stream_sync(1));
      }
    }
    first_at.push_back(first);
    last_at.push_back(last);
  }
  const ExecResult res = replay_programs(std::move(s), progs, topo, p);
  return (res.ops[0][last_at.back()].end - res.ops[0][first_at.front()].start).us() / items;
}

// The GPU idle per item the model gives a sync_return row: waited for
// against queued.
double sync_return_gap(const json& r, const hw::Topology& topo, const ModelParams& p) {
  return replay_sync_return(r, true, topo, p) - replay_sync_return(r, false, topo, p);
}

// A framework's host back from a wait (framework.py sync_return's
// block_loop rows: LightX2V's block loop at small shapes, the host waiting
// for each block): the GPU idle per item the model leaves out, median over
// the rows; the simple waits' rows are replayed, not fitted (a loop's
// Python between its waits is what makes them dear).
void fit_wait_return(FitContext& ctx) {
  ModelParams p = ctx.p;
  p.overheads.framework_wait_return = Time::zero();
  std::vector<double> missing;
  for (const auto& r : rows(ctx.def, "overhead_framework_sync_return"))
    if (block_loop_row(r)) missing.push_back(r.at("gap_us").get<double>() - sync_return_gap(r, ctx.topo, p));
  if (missing.empty()) return;
  ctx.p.overheads.framework_wait_return = Time::from_us(std::max(0.0, median(missing)));
  ctx.cal.fits.push_back({"framework wait return",
                          "GPU idle per block of a block loop waited for, beyond what its calls cost the model (median over the rows)",
                          {{"framework_wait_return_us", ctx.p.overheads.framework_wait_return.us()}},
                          0,
                          static_cast<int>(missing.size())});
}

// The host time per op of kernels issued back to back from PyTorch, each
// after `views` calls that launch nothing (the GPU never holds the host
// back: 1 us kernels), from the first op's issue to the last one's.
double replay_host_per_op(int views, const hw::Topology& topo, const ModelParams& p) {
  constexpr int kOps = 100;
  Schedule s = bench_schedule(1);
  s.runtime.framework = Framework::PyTorch;
  std::vector<std::vector<Op>> progs(1);
  for (int i = 0; i < kOps; ++i) {
    progs[0].push_back(bench_idle(Time::from_us(1)));
    progs[0].back().views = static_cast<uint8_t>(views);
  }
  const ExecResult res = replay_programs(std::move(s), progs, topo, p);
  return (res.ops[0][kOps - 1].issue - res.ops[0][0].issue).us() / (kOps - 1);
}

void replay_row(ReplayContext& ctx, const json& r, Comparison c, std::vector<Comparison>& out) {
  const ModelParams& p = ctx.p;
  const hw::Topology& topo = ctx.topo;
  // The host's calls are what these rows measure: the calibration's, not the bench replays' free ones.
  if (r.at("key") == "overhead_framework_view") {
    c.cls = "a framework call that launches nothing";
    c.what = fmt::format("{}: host time per call", r.at("op").get<std::string>());
    if (returns_itself(r)) c.outside = "a contiguous tensor's contiguous() returns it: nothing a block's views count";
    c.measured_us = r.at("host_us");
    // A split costs about a view per tensor it returns (framework.py's
    // returns 3; rows before `tensors` was written are its).
    const int tensors = r.value("tensors", r.at("op") == "split" ? 3 : 1);
    c.simulated_us = replay_host_per_op(tensors, topo, ctx.params) - replay_host_per_op(0, topo, ctx.params);
    out.push_back(c);
    return;
  }
  if (r.at("key") == "overhead_framework_op_sized") {
    c.cls = "a framework op at a block's shapes";
    c.what = fmt::format("{} over [{}, {}]: host time per call", r.at("op").get<std::string>(), r.at("tokens").get<int>(), r.at("hidden").get<int>());
    c.outside = "a box's dispatch time by op (the model: one framework_op_call for every op, from the calibration's box)";
    c.measured_us = r.at("host_us");
    c.simulated_us = replay_host_per_op(0, topo, ctx.params);
    out.push_back(c);
    return;
  }
  if (r.at("key") == "overhead_framework_stream_call") {
    // What the model charges a framework program for the call: its CUDA
    // call's cost alone where it has an op (an event's record or wait, an
    // allocation, a copy); a stream's context and record_stream, nothing.
    const std::string op = r.at("op");
    const OverheadParams& o = ctx.params.overheads;
    c.cls = "a framework call beside a prefetch";
    c.what = fmt::format("{}: host time per call", op);
    c.measured_us = r.at("host_us");
    if (op == "event_record" || op == "wait_event" || op == "wait_stream")
      c.simulated_us = o.event_call.us();
    else if (op == "empty")
      c.simulated_us = (o.alloc_call + o.free_call).us();
    else if (op == "copy_pinned")
      c.simulated_us = (o.memcpy_call + o.framework_op_call).us();
    else {
      c.simulated_us = 0;
      c.outside = "a call the model does not charge";
    }
    out.push_back(c);
    return;
  }
  if (r.at("key") == "overhead_framework_sync_return") {
    c.cls = "a framework's return after a wait";
    c.what = fmt::format("{}: the GPU idle per item, waited for against queued ({:.0f} us items)", r.at("wait").get<std::string>(),
                         r.at("item_us").get<double>());
    if (!block_loop_row(r)) c.outside = "a bare wait's return (the model charges every wait a block loop's: framework_wait_return)";
    c.measured_us = r.at("gap_us");
    c.simulated_us = sync_return_gap(r, topo, ctx.params);
    out.push_back(c);
    return;
  }
  const int ngpu = ctx.ngpu;
  const std::string beside = r.value("beside", std::string("none"));
  if (beside == "h2d_all" && r.at("gpus").get<int>() > ngpu) return;
  const bool kernel = r.at("op") == "memory_kernel";
  for (const bool fenced : {false, true}) {
    c.cls = "GPU time of an event record";
    c.what = fmt::format("{} {}{}{}", format_bytes(r.at("bytes").get<double>()), kernel ? "memory kernels" : "H2D copies",
                         fenced ? ", an event after each" : "",
                         beside == "none"  ? ""
                         : beside == "h2d" ? ", an H2D copy beside"
                                           : ", every GPU copying H2D");
    // 1 MiB kernels' buffers stay in the L2 from one kernel to the next
    // (as memory_kernel's under 64 MiB); the event's time is the same.
    if (kernel) c.outside = "the GPU's L2 cache holds the buffers";
    c.measured_us = r.at(fenced ? "fenced_us" : "plain_us");
    c.simulated_us = replay_event_gap(r, fenced, topo, p);
    out.push_back(c);
  }
}

}  // namespace families::overheads
}  // namespace osim
