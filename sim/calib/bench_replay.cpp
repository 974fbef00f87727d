#include "calib/bench_replay.hpp"

#include <cassert>

#include <fmt/format.h>

#include "schedule/builder.hpp"

namespace osim {

using json = nlohmann::json;

Schedule bench_schedule(int ranks, bool p2p_disabled) {
  ScheduleBuilder b("bench", ranks);
  b.stream("s");
  b.stream("copy");
  if (ranks >= 2) {
    std::vector<int> all;
    for (int r = 0; r < ranks; ++r) all.push_back(r);
    b.group("world", all);
  }
  b.schedule().runtime.nccl_p2p_disable = p2p_disabled;
  return b.build();
}

// Runs one program per rank; returns each rank's records.
ExecResult replay_programs(Schedule s, const std::vector<std::vector<Op>>& programs, const hw::Topology& topo, const ModelParams& p) {
  for (size_t r = 0; r < s.programs.size(); ++r) s.programs[r].ops = std::make_shared<const std::vector<Op>>(programs[r]);
  return execute(s, topo, p);
}

double replay(Schedule s, const std::vector<Op>& per_rank, const hw::Topology& topo, const ModelParams& p) {
  for (size_t r = 0; r < s.programs.size(); ++r) s.programs[r].ops = std::make_shared<const std::vector<Op>>(std::vector<Op>{per_rank[r]});
  const ExecResult res = execute(s, topo, p);
  double worst = 0;
  for (const auto& rank : res.ops) worst = std::max(worst, (rank[0].end - rank[0].start).us());
  return worst;
}

Op bench_gemm(const json& shape) { return ops::gemm(0, shape.at(0).get<int32_t>(), shape.at(1).get<int32_t>(), shape.at(2).get<int32_t>()); }
Op bench_attention(const AttentionShape& shape) { return ops::attention(0, shape); }
Op bench_memory_kernel(double hbm_bytes) { return ops::memory_kernel(0, hbm_bytes); }
Op bench_idle(Time t) { return ops::busy(0, t); }
Op bench_copy(CopyKind kind, Bytes bytes, int stream) { return ops::copy(stream, kind, bytes); }

std::vector<double> replay_gated(const std::vector<Op>& lanes, int reps, const std::string& gate, int dev, const hw::Topology& topo,
                                 const ModelParams& params, std::optional<Time> busy) {
  assert(reps >= 1 && lanes.size() <= 2);
  ModelParams p = params;
  p.overheads.kernel_launch = p.overheads.memcpy_call = p.overheads.event_call = p.overheads.collective_call = Time::zero();
  Schedule s = bench_schedule(dev + 1);
  s.streams.push_back({"gate", 0});
  // The gate's kernel: the bench's one-thread spin, or (`busy`, handoff_wait)
  // a kernel of that long on every SM.
  Op spin = bench_idle(busy.value_or(Time::from_us(50)));
  spin.sm_limit = busy ? 0 : 1;
  std::vector<std::vector<Op>> progs(static_cast<size_t>(dev) + 1);
  auto& prog = progs[static_cast<size_t>(dev)];
  const bool wait = gate == "kernel_wait";
  if (wait) {
    spin.stream = 2;
    prog.push_back(spin);
  }
  const bool done = gate == "kernel_done" || gate == "kernel_wait_done";
  int done_event = -1;
  if (done) {
    assert(lanes.size() == 1);
    spin.stream = gate == "kernel_done" ? 0 : 2;
    prog.push_back(spin);
    if (gate == "kernel_wait_done") {
      Op ev;
      ev.kind = OpKind::EventRecord;
      ev.stream = 2;
      ev.event = done_event = static_cast<int>(s.events.size());
      s.events.push_back("done");
      prog.push_back(ev);
    }
    Op host;
    host.kind = OpKind::HostWork;
    host.duration = Time::from_us(100);
    prog.push_back(host);
  }
  std::vector<std::pair<size_t, size_t>> timed;  // per lane: its two events' places
  for (size_t i = 0; i < lanes.size(); ++i) {
    const int st = static_cast<int>(i);
    Op ev;
    ev.kind = OpKind::EventRecord;
    ev.stream = wait ? 2 : st;
    ev.event = static_cast<int>(s.events.size());
    s.events.push_back(fmt::format("a{}", i));
    if (gate == "kernel") {
      spin.stream = st;
      prog.push_back(spin);
    }
    if (done_event >= 0) {
      Op w;
      w.kind = OpKind::StreamWaitEvent;
      w.stream = st;
      w.event = done_event;
      prog.push_back(w);
    }
    prog.push_back(ev);
    const size_t first = prog.size() - 1;
    if (wait) {
      Op w;
      w.kind = OpKind::StreamWaitEvent;
      w.stream = st;
      w.event = ev.event;
      prog.push_back(w);
    }
    Op op = lanes[i];
    op.stream = st;
    prog.insert(prog.end(), static_cast<size_t>(reps), op);
    ev.stream = st;
    ev.event = static_cast<int>(s.events.size());
    s.events.push_back(fmt::format("b{}", i));
    prog.push_back(ev);
    timed.emplace_back(first, prog.size() - 1);
  }
  const ExecResult res = replay_programs(std::move(s), progs, topo, p);
  std::vector<double> out;
  for (const auto& [a, b] : timed) out.push_back((res.ops[static_cast<size_t>(dev)][b].end - res.ops[static_cast<size_t>(dev)][a].end).us() / reps);
  return out;
}

Op bench_a2a(Bytes bytes) { return ops::collective(0, CollKind::AllToAll, 0, bytes); }

double replay_hot(const Schedule& s, const Op& op, const hw::Topology& topo, const ModelParams& p) {
  if (p.power.sustained_slowdown <= 0) return replay(s, {op}, topo, p);
  Schedule t = s;
  Op warm;
  warm.kind = OpKind::Kernel;
  warm.stream = 0;
  warm.flops = 2e14;  // ~0.25 s on an H200
  t.programs[0].ops = std::make_shared<const std::vector<Op>>(std::vector<Op>{warm, op});
  const ExecResult res = execute(t, topo, p);
  return (res.ops[0][1].end - res.ops[0][1].start).us();
}

// A bench row timed over a window (`loaded_mean_us` of the GEMM table,
// `timing: window` SDPA rows): `soak` calls of the op back to back, then
// `window` more; the window's mean per call, as the bench timed it.
double replay_window(const Schedule& s, const Op& op, int soak, int window, const hw::Topology& topo, const ModelParams& p) {
  assert(soak >= 0 && window >= 1);
  Schedule t = s;
  t.programs[0].ops = std::make_shared<const std::vector<Op>>(static_cast<size_t>(soak + window), op);
  const ExecResult res = execute(t, topo, p);
  const auto& ops = res.ops[0];
  return (ops.back().end - ops[static_cast<size_t>(soak)].start).us() / window;
}

}  // namespace osim
