// Sustained load: the clock with the duty cycle, collectives and stragglers under it.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "gpu/as_run.hpp"
#include "gpu/executor.hpp"
#include "gpu/sim_fixture.hpp"

using namespace osim;
using namespace osim::test;

namespace {
// A clock that drops by 1 + 0.2 x clamp((u - 0.5) / 0.5) with the duty cycle
// u averaged over 10 ms.
ModelParams clocked() {
  ModelParams p = quiet();
  p.power.sustained_slowdown = 0.2;
  p.power.sustained_duty = 0.5;
  p.power.sustained_time_constant = Time::from_ms(10);
  return p;
}
// How long a GEMM of `flops` takes right after the kernel `first` (YAML).
double gemm_after_us(const ModelParams& p, const std::string& first, const std::string& flops) {
  Sim s("name: duty\nranks: 1\nstreams: [a]\nprograms:\n  - rank: 0\n    ops:\n      - " + first +
            "\n      - {op: kernel, stream: a, flops: " + flops + "}\n",
        p);
  return (s.op(0, 1).end - s.op(0, 1).start).us();
}
}  // namespace

TEST_CASE("the sustained-load duty cycle counts memory-bound kernels, not bare durations") {
  // 1 s of back-to-back work brings the duty cycle to ~1: the GEMM after it
  // runs at 1 / (1 + 0.2) of its burst speed if that work drew power (an HBM
  // kernel), at full speed after a bare `duration` kernel.
  const ModelParams p = clocked();
  // 60 GFLOP at 100 TFLOP/s x 0.6 = 1 ms burst.
  CHECK(gemm_after_us(p, "{op: kernel, stream: a, bytes: 850.0e9}", "60.0e9") == doctest::Approx(1200).epsilon(1e-6));
  CHECK(gemm_after_us(p, "{op: kernel, stream: a, duration: 1 s}", "60.0e9") == doctest::Approx(1000).epsilon(1e-6));
}

TEST_CASE("an SDPA kernel puts its sustained_attention_load on the duty cycle, a GEMM 1") {
  // 1 s of back-to-back SDPA brings the duty cycle to its load w (10 ms time
  // constant). A GEMM right after it starts at activation clamp((w - 0.5) /
  // 0.5): w = 1 slows it by 1 + 0.2, w = 0.75 by 1 + 0.2 x 0.5 (the duty then
  // climbs to 1 while it runs: a 10 us GEMM barely moves it), w = 0.4 not at all.
  ModelParams p = clocked();
  auto run = [&](double w) {
    p.power.sustained_attention_load = w;
    return Sim(R"(name: sdpa-load
ranks: 1
streams: [a]
programs:
  - rank: 0
    ops:
      - {op: kernel, stream: a, attention: {heads: 100000, seq: 1000, head_dim: 100}, efficiency: 0.4}
      - {op: kernel, stream: a, flops: 0.6e9}
)",
               p);
  };
  // The SDPA: 4 x 100000 x 1000^2 x 100 = 40 TFLOP at 100 TFLOP/s x 0.4 = 1 s burst; the GEMM: 0.6 GFLOP at 60 TFLOP/s = 10 us burst.
  CHECK(run(0.4).op(0, 0).end.s() == doctest::Approx(1.0).epsilon(1e-6));
  CHECK((run(1.0).op(0, 1).end - run(1.0).op(0, 1).start).us() == doctest::Approx(12.0).epsilon(1e-3));
  CHECK((run(0.75).op(0, 1).end - run(0.75).op(0, 1).start).us() == doctest::Approx(11.0).epsilon(1e-3));
  CHECK((run(0.4).op(0, 1).end - run(0.4).op(0, 1).start).us() == doctest::Approx(10.0).epsilon(1e-6));
}

TEST_CASE("a memory-bound kernel puts its sustained_memory_load on the duty cycle") {
  // As for SDPA: 1 s of one HBM-bound kernel brings the duty cycle to its
  // load w; the 10 us GEMM after it slows by 1 + 0.2 x clamp((w - 0.5) / 0.5).
  ModelParams p = clocked();
  auto gemm_us = [&](double w, const std::string& first) {
    p.power.sustained_memory_load = w;
    return gemm_after_us(p, first, "0.6e9");
  };
  const std::string hbm = "{op: kernel, stream: a, bytes: 850.0e9}";
  CHECK(gemm_us(1.0, hbm) == doctest::Approx(12.0).epsilon(1e-3));
  CHECK(gemm_us(0.75, hbm) == doctest::Approx(11.0).epsilon(1e-3));
  CHECK(gemm_us(0.4, hbm) == doctest::Approx(10.0).epsilon(1e-6));
  // A compute-bound kernel before it counts whole, whatever the memory load.
  CHECK(gemm_us(0.4, "{op: kernel, stream: a, flops: 60.0e12}") == doctest::Approx(12.0).epsilon(1e-3));
}

TEST_CASE("a collective holding its SMs puts its sustained_comm_load on the duty cycle") {
  // Two ranks in a tabled all-to-all of 1 s (a 10 ms time constant: the
  // duty cycle settles at the collective's load w), then the 10 us GEMM:
  // slowed by 1 + 0.2 x clamp((w - 0.5) / 0.5). w = 0, the default: the
  // GPU cools through the all-to-all as through an idle gap.
  const std::string sched = R"(name: comm-load
ranks: 2
streams: [s]
programs:
  - rank: 0
    ops:
      - {op: collective, kind: all_to_all, group: world, bytes: 1 GB, stream: s}
      - {op: kernel, stream: s, flops: 0.6e9}
  - rank: 1
    ops:
      - {op: collective, kind: all_to_all, group: world, bytes: 1 GB, stream: s}
      - {op: kernel, stream: s, flops: 0.6e9}
)";
  ModelParams p = clocked();
  p.nccl.nccl_tables.push_back({TableColl::AllToAll, 2, false, {{1e6, 1e-3}, {1e9, 1.0}}});
  auto gemm_us = [&](double w) {
    p.power.sustained_comm_load = w;
    Sim s(sched, p);
    CHECK((s.op(0, 0).end - s.op(0, 0).start).s() == doctest::Approx(1.0).epsilon(1e-6));
    return (s.op(0, 1).end - s.op(0, 1).start).us();
  };
  CHECK(gemm_us(0) == doctest::Approx(10.0).epsilon(1e-6));
  CHECK(gemm_us(1.0) == doctest::Approx(12.0).epsilon(1e-3));
  CHECK(gemm_us(0.75) == doctest::Approx(11.0).epsilon(1e-3));
  CHECK(gemm_us(0.4) == doctest::Approx(10.0).epsilon(1e-6));
}

TEST_CASE("the sustained-load model's slow term and the HBM latency, closed form") {
  // Ten 10 ms compute kernels back to back; only the slow term acts (the
  // fast one is ~0, the duty threshold 0): kernel i takes
  // 10 ms x (1 + 0.5 x (1 - exp(-t_i / 100 ms))), t_i its start.
  ModelParams p = quiet();
  p.power.sustained_slowdown = 1e-12;
  p.power.sustained_duty = 0;
  p.power.sustained_time_constant = Time::from_ms(1);
  p.power.sustained_slow_slowdown = 0.5;
  p.power.sustained_slow_time_constant = Time::from_ms(100);
  std::string ops;
  for (int i = 0; i < 10; ++i) ops += "      - {op: kernel, stream: a, flops: 600.0e9}\n";  // 10 ms at 100 TFLOP/s x 0.6
  Sim s("name: slow\nranks: 1\nstreams: [a]\nprograms:\n  - rank: 0\n    ops:\n" + ops, p);
  double t = 0;
  for (int i = 0; i < 10; ++i) {
    CHECK(s.op(0, i).start.ms() == doctest::Approx(t).epsilon(1e-6));
    t += 10 * (1 + 0.5 * (1 - std::exp(-t / 100)));
  }
  CHECK(s.res.makespan.ms() == doctest::Approx(t).epsilon(1e-6));
  CHECK(t > 100 * 1.1);  // the term did act

  // The run ends with the slow duty at 1 - exp(-T / 100 ms) (busy from 0 to
  // T, no idle after). The same schedule run right after it starts there:
  // kernel i takes 10 ms x (1 + 0.5 x (1 - (1 - u0) exp(-t_i / 100 ms))).
  const double T = t;
  const double u0 = 1 - std::exp(-T / 100);
  REQUIRE(s.res.final_load.size() == 1);
  CHECK(s.res.final_load[0].duty_slow == doctest::Approx(u0).epsilon(1e-9));
  const ExecResult second = execute_after_runs(s.sched, s.topo, p, 1);
  t = 0;
  for (int i = 0; i < 10; ++i) {
    CHECK(second.ops[0][i].start.ms() == doctest::Approx(t).epsilon(1e-6));
    t += 10 * (1 + 0.5 * (1 - (1 - u0) * std::exp(-t / 100)));
  }
  CHECK(second.makespan.ms() == doctest::Approx(t).epsilon(1e-6));
  CHECK(t > T + 10);  // the carried state did act
  // Two runs before: the second's end state carried on; zero runs: execute.
  const double u1 = 1 - (1 - u0) * std::exp(-second.makespan.ms() / 100);
  CHECK(second.final_load[0].duty_slow == doctest::Approx(u1).epsilon(1e-9));
  CHECK(execute_after_runs(s.sched, s.topo, p, 2).ops[0][1].start.ms() == doctest::Approx(10 * (1 + 0.5 * u1)).epsilon(1e-6));
  CHECK(execute_after_runs(s.sched, s.topo, p, 0).makespan == s.res.makespan);

  // SDPA takes attention_slow_share of the slow term: with 0.2, attention
  // kernel i (the same 10 ms at burst) takes 10 ms x (1 + 0.2 x 0.5 x (1 -
  // exp(-t_i / 100 ms))); realised as GEMMs (validate run), as a GEMM.
  {
    ModelParams a = p;
    a.attention.attention_slow_share = 0.2;
    a.attention.attention_efficiency = 0.6;
    // heads x seq x seq_kv x head_dim x 4 = 6e11 FLOP: 10 ms at 100 TFLOP/s x 0.6.
    std::string att;
    for (int i = 0; i < 10; ++i) att += "      - {op: kernel, stream: a, attention: {heads: 1, seq: 1171875, seq_kv: 1000, head_dim: 128}}\n";
    Sim sa("name: att\nranks: 1\nstreams: [a]\nprograms:\n  - rank: 0\n    ops:\n" + att, a);
    double ta = 0;
    for (int i = 0; i < 10; ++i) {
      CHECK(sa.op(0, i).start.ms() == doctest::Approx(ta).epsilon(1e-6));
      ta += 10 * (1 + 0.2 * 0.5 * (1 - std::exp(-ta / 100)));
    }
    CHECK(sa.res.makespan.ms() == doctest::Approx(ta).epsilon(1e-6));
    Schedule realised = sa.sched;
    auto rops = std::make_shared<std::vector<Op>>(*realised.programs[0].ops);
    for (Op& op : *rops) op.realised = true;
    realised.programs[0].ops = rops;
    CHECK(execute(realised, sa.topo, a).makespan.ms() == doctest::Approx(T).epsilon(1e-6));
  }
}

TEST_CASE("a collective slows with its GPU's clock by the calibrated share") {
  // Both ranks draw power for 1 s (an HBM kernel: the duty cycle reaches 1,
  // the clock 1 / 1.2), then a tabled all-to-all: 20 ms with 10 us latency
  // rested. With comm_clock_share 0.5 it takes 1 + 0.5 x 0.2 = 1.1x, in steps
  // of 1/256: 1 + 26/256 (rate and latency alike); through host memory its own share.
  const std::string sched = R"(name: clocked
ranks: 2
streams: [s]
programs:
  - rank: 0
    ops:
      - {op: kernel, stream: s, bytes: 850.0e9}
      - {op: collective, kind: all_to_all, group: world, bytes: 1 GB, stream: s}
  - rank: 1
    ops:
      - {op: kernel, stream: s, bytes: 850.0e9}
      - {op: collective, kind: all_to_all, group: world, bytes: 1 GB, stream: s}
)";
  ModelParams p = quiet();
  p.power.sustained_slowdown = 0.2;
  p.power.sustained_duty = 0.5;
  p.power.sustained_time_constant = Time::from_ms(10);
  p.nccl.nccl_tables.push_back({TableColl::AllToAll, 2, false, {{1e6, 10e-6}, {1e9, 20e-3}}});
  auto a2a_ms = [&](double share, double share_host) {
    ModelParams q = p;
    q.power.comm_clock_share = share;
    q.power.comm_clock_share_host = share_host;
    Sim s(sched, q);
    CHECK(s.op(0, 1).start == s.op(0, 0).end);
    return (s.op(0, 1).end - s.op(0, 1).start).ms();
  };
  CHECK(a2a_ms(0, 0) == doctest::Approx(20.0).epsilon(1e-6));
  CHECK(a2a_ms(0.5, 0) == doctest::Approx(20.0 * (1 + 26.0 / 256)).epsilon(1e-6));
  CHECK(a2a_ms(0, 0.5) == doctest::Approx(20.0).epsilon(1e-6));                     // NVLink: the host share does not apply
  CHECK(a2a_ms(1.0, 0) == doctest::Approx(20.0 * (1 + 51.0 / 256)).epsilon(1e-6));  // 0.2 x 256 = 51.2: 51 steps
  // NCCL_P2P_DISABLE=1: through host memory, the host share (the channel
  // model there, no table for that transport; its rank ceiling of 5 GB/s
  // is what binds, so the slowed cap shows whole).
  auto host_ms = [&](double share, double share_host) {
    ModelParams q = p;
    q.nccl.nccl_host_rank_bandwidth = Bandwidth::from_GBps(5);
    q.power.comm_clock_share = share;
    q.power.comm_clock_share_host = share_host;
    Sim s("settings: {nccl_p2p_disable: true}\n" + sched, q);
    return (s.op(0, 1).end - s.op(0, 1).start).ms();
  };
  const double host = host_ms(0, 0);
  CHECK(host_ms(0.5, 0) == doctest::Approx(host).epsilon(1e-9));
  CHECK(host == doctest::Approx(100).epsilon(1e-6));  // 500 MB per rank at 5 GB/s
  CHECK(host_ms(0, 0.5) == doctest::Approx(host * (1 + 26.0 / 256)).epsilon(1e-6));
}

TEST_CASE("under the power cap a collective waits for the straggler: straggler_share x the time since the last one x how far the clock is down") {
  // Two ranks run thirty 1 ms kernels (at burst; the clock is set as each
  // starts) and meet in a 2 MB all-to-all (10 us over kTopo's NVLink). The
  // clock falls to 1/1.25 within the first (time constant 0.1 ms, no
  // threshold): they meet at 1 + 29 x 1.25 = 37.25 ms with it fully down,
  // and the all-to-all waits 0.02 x 37.25 ms = 745 us first. The next one,
  // after that wait without compute, finds the clock back up: no wait.
  // Rested (no sustained slowdown), or with the share 0, no wait.
  std::string sched = "name: straggler\nranks: 2\nstreams: [s]\nprograms:\n  - rank: all\n    ops:\n";
  for (int i = 0; i < 30; ++i) sched += "      - {op: kernel, stream: s, flops: 60.0e9}\n";
  for (int i = 0; i < 2; ++i) sched += "      - {op: collective, kind: all_to_all, group: world, bytes: 2 MB, stream: s}\n";
  ModelParams p = quiet();
  p.power.sustained_slowdown = 0.25;
  p.power.sustained_duty = 0;
  p.power.sustained_time_constant = Time::from_us(100);
  p.power.straggler_share = 0.02;
  const Sim s(sched, p);
  const double start = s.op(0, 30).start.ms();
  CHECK(start == doctest::Approx(37.25).epsilon(1e-3));
  CHECK((s.op(0, 30).end - s.op(0, 30).start).us() == doctest::Approx(10 + 0.02 * start * 1e3).epsilon(1e-3));
  CHECK((s.op(0, 31).end - s.op(0, 31).start).us() == doctest::Approx(10).epsilon(1e-6));
  ModelParams rested = p;
  rested.power.sustained_slowdown = 0;
  const Sim r(sched, rested);
  CHECK((r.op(0, 30).end - r.op(0, 30).start).us() == doctest::Approx(10).epsilon(1e-6));
  ModelParams off = p;
  off.power.straggler_share = 0;
  const Sim o(sched, off);
  CHECK((o.op(0, 30).end - o.op(0, 30).start).us() == doctest::Approx(10).epsilon(1e-6));
}

TEST_CASE("a re-clocked measured kernel runs its recorded time at the recorded clock, slowed by the clock it meets") {
  // run --reclock-measured. Recorded back to back, measured kernels of 1 s
  // and 12 us loading the duty cycle as GEMMs (record_measured_clock): the
  // first starts at clock 1, the second at 1 / (1 + 0.2) (1 s is 100 time
  // constants: the duty cycle ~1); each keeps its measured time.
  const ModelParams p = clocked();
  const hw::Topology topo(hw::parse_topology_string(kTopo, "topo.yaml"));
  // Rank 0's program: the 1 s kernel, with or without an idle second after it, then a kernel of `us` microseconds.
  auto program = [](bool idle, int us) {
    return parse_schedule_string(
        fmt::format("name: reclock\nranks: 1\nstreams: [a]\nprograms:\n  - rank: 0\n    ops:\n"
                    "      - {{op: kernel, stream: a, duration: 1 s}}\n{}      - {{op: kernel, stream: a, duration: {} us}}\n",
                    idle ? "      - {op: device_sync}\n      - {op: host_work, duration: 1 s}\n" : "", us),
        "reclock.yaml");
  };
  const Schedule busy = program(false, 12), idle = program(true, 10);
  auto us = [](const ExecResult& r, int i) { return (r.ops[0][i].end - r.ops[0][i].start).us(); };
  ExecOptions record;
  record.record_measured_clock = true;
  const ExecResult busy_rec = execute(busy, topo, p, record);
  REQUIRE(busy_rec.measured_clock.size() == 1);
  CHECK(busy_rec.measured_clock[0][0] == doctest::Approx(1.0));
  CHECK(busy_rec.measured_clock[0][1] == doctest::Approx(1 / 1.2).epsilon(1e-6));
  CHECK(us(busy_rec, 1) == doctest::Approx(12.0).epsilon(1e-6));
  // The GPU idle 1 s before the second: the duty cycle ~0 again, clock 1.
  const ExecResult idle_rec = execute(idle, topo, p, record);
  CHECK(idle_rec.measured_clock[0][3] == doctest::Approx(1.0).epsilon(1e-6));
  // Without the flag nothing is recorded and a measured kernel draws no power (the GEMM test above).
  CHECK(execute(busy, topo, p).measured_clock.empty());

  // Re-planned with an idle second between them, the second's 12 us at clock
  // 1 / 1.2 is 10 us of work at clock 1, and runs at clock 1: 10 us.
  ExecOptions to_idle;
  to_idle.measured_clock = {{busy_rec.measured_clock[0][0], 0, 0, busy_rec.measured_clock[0][1]}};
  const ExecResult a = execute(program(true, 12), topo, p, to_idle);
  CHECK(us(a, 0) == doctest::Approx(1e6).epsilon(1e-9));
  CHECK(us(a, 3) == doctest::Approx(10.0).epsilon(1e-6));
  // The reverse: 10 us recorded at clock 1 after the idle second, re-planned
  // back to back, meets clock 1 / 1.2 (the re-clocked first kernel loads the
  // duty cycle): 12 us.
  ExecOptions to_busy;
  to_busy.measured_clock = {{idle_rec.measured_clock[0][0], idle_rec.measured_clock[0][3]}};
  CHECK(us(execute(program(false, 10), topo, p, to_busy), 1) == doctest::Approx(12.0).epsilon(1e-6));
  // Replayed as recorded, re-clocking changes nothing: each meets the clock it had.
  ExecOptions self;
  self.measured_clock = busy_rec.measured_clock;
  CHECK(us(execute(busy, topo, p, self), 1) == doctest::Approx(12.0).epsilon(1e-6));
}
