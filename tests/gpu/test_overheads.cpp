// Host overheads and the GPU time of an event record.
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

TEST_CASE("an event record holds its stream event_gpu_time, event_gpu_time_h2d more while the GPU has an H2D copy in flight") {
  ModelParams p = quiet();
  p.overheads.event_gpu_time = Time::from_us(2);
  p.overheads.event_gpu_time_h2d = Time::from_us(3);
  p.interference.gemm_slowdown_per_copy = 0;  // kernels keep their durations beside the copy
  // Stream a: k1 (100 us), event, k2 (50 us), event, k3 (10 us). Stream b:
  // waits for the first event (which ends at 102 us), then a 1 MB H2D copy
  // at 10 GB/s: 102-202 us. The second event (after k2, at 152 us) finds the
  // copy in flight: 2 + 3 us, so k3 runs 157-167 us.
  const std::string sched = R"(name: events
ranks: 1
streams: [a, b]
programs:
  - rank: 0
    ops:
      - {op: kernel, name: k1, stream: a, duration: 100 us}
      - {op: event_record, event: e1, stream: a}
      - {op: stream_wait_event, stream: b, event: e1}
      - {op: memcpy, kind: h2d, bytes: 1 MB, stream: b}
      - {op: kernel, name: k2, stream: a, duration: 50 us}
      - {op: event_record, event: e2, stream: a}
      - {op: kernel, name: k3, stream: a, duration: 10 us}
)";
  const Sim s(sched, p);
  CHECK(s.op(0, 1).start == Time::from_us(100));
  CHECK(s.op(0, 1).end == Time::from_us(102));
  CHECK(s.op(0, 3).start == Time::from_us(102));
  CHECK(s.op(0, 3).end == Time::from_us(202));
  CHECK(s.op(0, 4).start == Time::from_us(102));
  CHECK(s.op(0, 5).end == Time::from_us(157));
  CHECK(s.op(0, 6).start == Time::from_us(157));
  CHECK(s.res.makespan == Time::from_us(202));
  // Off (the default): events take no GPU time.
  ModelParams off = quiet();
  off.interference.gemm_slowdown_per_copy = 0;
  const Sim q(sched, off);
  CHECK(q.op(0, 4).start == Time::from_us(100));
  CHECK(q.op(0, 6).start == Time::from_us(150));
}

// Four ranks calling one all-to-all of 1 MB on stream comm, issued by
// `framework`, behind a kernel of `ahead_us` on that stream (none at 0).
static std::string framework_all_to_all(const char* framework, const char* algorithm, int ahead_us = 0) {
  const std::string ahead = ahead_us > 0 ? fmt::format("      - {{op: kernel, name: ahead, stream: comm, duration: {} us}}\n", ahead_us) : "";
  return fmt::format(R"(name: calls
ranks: 4
streams: [comm]
settings: {{framework: {}}}
programs:
  - rank: all
    ops:
{}      - {{op: collective, kind: all_to_all, group: world, bytes: 1 MB, stream: comm, algorithm: {}}}
)",
                     framework, ahead, algorithm);
}

TEST_CASE("a collective called from the framework: framework_collective_call, and a pairwise all-to-all's rounds of framework_p2p_round") {
  // Four ranks; each calls one all-to-all: the collective's host time is
  // when the call returns.
  const std::string four = bridge_topo("throughput_from_host: 100 GB/s");
  ModelParams p = quiet();
  p.overheads.collective_call = Time::from_us(6);
  p.overheads.framework_op_call = Time::from_us(10);
  auto returned = [&](const char* algorithm, const char* framework) {
    return Sim(framework_all_to_all(framework, algorithm), p, four.c_str()).op(0, 0).returned;
  };
  CHECK(returned("nccl", "none") == Time::from_us(6));
  CHECK(returned("nccl", "pytorch") == Time::from_us(16));      // collective_call + framework_op_call
  CHECK(returned("pairwise", "pytorch") == Time::from_us(16));  // no per-round cost calibrated
  p.overheads.framework_collective_call = Time::from_us(35);
  p.overheads.framework_p2p_round = Time::from_us(70);
  CHECK(returned("nccl", "pytorch") == Time::from_us(35));
  CHECK(returned("pairwise", "pytorch") == Time::from_us(210));  // 3 partners, a round each
  CHECK(returned("pairwise", "none") == Time::from_us(6));       // CUDA/NCCL called directly
}

TEST_CASE("a framework's pairwise all-to-all where its call is measured: launched as the call begins, the table's time") {
  // Four ranks, one pairwise all-to-all of 1 MB each, behind a kernel of
  // `ahead` on its stream. The framework's table says 400 us a call (timed
  // from before it, the GPU otherwise idle): launched as the call begins, it
  // takes that, while the host spends 3 x 70 us issuing its rounds.
  // Four GPUs, NVLink between every pair: the table's transport (peer to peer).
  const char* four = R"(name: mesh
nodes:
  - {name: cpu0, kind: cpu, memory: 64 GiB}
  - {name: "gpu{i}", kind: gpu, memory: 8 GiB, copy_engines: 3, peak_tflops: {bf16: 100}, repeat: 4}
links:
  - {a: "gpu{i}", b: cpu0, kind: pcie, bandwidth: 40 GB/s, latency: 0 us, repeat: 4}
  - {a: gpu0, b: gpu1, kind: nvlink, bandwidth: 100 GB/s, latency: 0 us}
  - {a: gpu0, b: gpu2, kind: nvlink, bandwidth: 100 GB/s, latency: 0 us}
  - {a: gpu0, b: gpu3, kind: nvlink, bandwidth: 100 GB/s, latency: 0 us}
  - {a: gpu1, b: gpu2, kind: nvlink, bandwidth: 100 GB/s, latency: 0 us}
  - {a: gpu1, b: gpu3, kind: nvlink, bandwidth: 100 GB/s, latency: 0 us}
  - {a: gpu2, b: gpu3, kind: nvlink, bandwidth: 100 GB/s, latency: 0 us}
)";
  ModelParams p = quiet();
  p.overheads.framework_p2p_round = Time::from_us(70);
  p.nccl.nccl_tables.push_back(NcclTable{TableColl::FrameworkAllToAllPairwise, 4, false, {{1048576, 400e-6}, {16777216, 500e-6}}, 0});
  const auto near = [](Time a, Time b) { return std::llabs(a.ps() - b.ps()) <= 1000; };  // within 1 ns
  const Sim idle(framework_all_to_all("pytorch", "pairwise", 1), p, four);
  CHECK(idle.op(0, 1).issue == Time::zero());  // the kernel's launch costs nothing here
  CHECK(idle.op(0, 1).returned == Time::from_us(210));
  CHECK(near(idle.op(0, 1).start, Time::from_us(1)));
  CHECK(near(idle.op(0, 1).end, Time::from_us(1 + 400)));
  const Sim ahead(framework_all_to_all("pytorch", "pairwise", 1000), p, four);
  CHECK(near(ahead.op(0, 1).start, Time::from_us(1000)));
  CHECK(near(ahead.op(0, 1).end, Time::from_us(1000 + 400)));
  // A host slower than the table's: the call takes as long as the host issues its rounds.
  ModelParams slow = p;
  slow.overheads.framework_p2p_round = Time::from_us(200);
  CHECK(near(Sim(framework_all_to_all("pytorch", "pairwise", 1), slow, four).op(0, 1).end, Time::from_us(1 + 600)));
  // Called directly (no framework) or with no such table: the runner's model.
  const Sim direct(framework_all_to_all("none", "pairwise", 1), p, four);
  CHECK(direct.op(0, 1).end < Time::from_us(100));
  ModelParams no_table = p;
  no_table.nccl.nccl_tables.clear();
  const Sim other(framework_all_to_all("pytorch", "pairwise", 1), no_table, four);
  CHECK(other.op(0, 1).returned == Time::from_us(210));
  CHECK(other.op(0, 1).start == Time::from_us(210));  // launched after every round's host call
}

TEST_CASE("a launch into a full hardware queue returns once the queue's head starts (launch_queue_depth)") {
  // One stream: k0 (100 us), then five 10 us kernels, each launch 1 us of
  // host time. The queue holds two launches not yet started: k3's launch
  // (at 4 us) waits for k1 to start (101 us), k4's for k2 (111 us), k5's for
  // k3 (121 us). The GPU runs as before: 1-101, then 10 us each to 151 us.
  const std::string sched = R"(name: queue
ranks: 1
streams: [a]
programs:
  - rank: 0
    ops:
      - {op: kernel, name: k0, stream: a, duration: 100 us}
      - {op: kernel, name: k1, stream: a, duration: 10 us}
      - {op: kernel, name: k2, stream: a, duration: 10 us}
      - {op: kernel, name: k3, stream: a, duration: 10 us}
      - {op: kernel, name: k4, stream: a, duration: 10 us}
      - {op: kernel, name: k5, stream: a, duration: 10 us}
)";
  ModelParams p = quiet();
  p.overheads.kernel_launch = Time::from_us(1);
  p.overheads.launch_queue_depth = 2;
  const Sim s(sched, p);
  CHECK(s.op(0, 2).returned == Time::from_us(3));
  CHECK(s.op(0, 3).issue == Time::from_us(3));
  CHECK(s.op(0, 3).returned == Time::from_us(101));
  CHECK(s.op(0, 4).issue == Time::from_us(101));
  CHECK(s.op(0, 4).returned == Time::from_us(111));
  CHECK(s.op(0, 5).returned == Time::from_us(121));
  CHECK(s.op(0, 5).start == Time::from_us(141));
  CHECK(s.res.makespan == Time::from_us(151));
  // No limit: the host issues all six by 6 us; the GPU's times are the same.
  p.overheads.launch_queue_depth = 0;
  const Sim u(sched, p);
  CHECK(u.op(0, 5).returned == Time::from_us(6));
  CHECK(u.op(0, 5).start == Time::from_us(141));
  CHECK(u.res.makespan == Time::from_us(151));
}

TEST_CASE("hosts resuming at the same instant share a heap entry, at the times each would have alone") {
  // Two ranks issue the same calls in lockstep (launch 1 us, host work 3 us):
  // each issues k0 at 0, works 1-4 us, issues k1 at 4 us and k2 at 5 us; a
  // third rank, one call behind, keeps its own times.
  const std::string sched = R"(name: lockstep
ranks: 3
streams: [a]
programs:
  - rank: 0
    ops: &calls
      - {op: kernel, name: k0, stream: a, duration: 10 us}
      - {op: host_work, duration: 3 us}
      - {op: kernel, name: k1, stream: a, duration: 10 us}
      - {op: kernel, name: k2, stream: a, duration: 10 us}
  - rank: 1
    ops: *calls
  - rank: 2
    ops:
      - {op: host_work, duration: 1 us}
      - {op: kernel, name: k0, stream: a, duration: 10 us}
      - {op: kernel, name: k1, stream: a, duration: 10 us}
)";
  ModelParams p = quiet();
  p.overheads.kernel_launch = Time::from_us(1);
  const Sim s(sched, p, R"(name: three
nodes:
  - {name: cpu0, kind: cpu, memory: 64 GiB}
  - {name: "gpu{i}", kind: gpu, memory: 1 GiB, hbm_bandwidth: 1000 GB/s, sms: 100, peak_tflops: {bf16: 100}, repeat: 3}
links:
  - {a: "gpu{i}", b: cpu0, kind: pcie, bandwidth: 10 GB/s, latency: 0 us, repeat: 3}
)");
  for (int r = 0; r < 2; ++r) {
    CAPTURE(r);
    CHECK(s.op(r, 0).issue == Time::zero());
    CHECK(s.op(r, 0).returned == Time::from_us(1));
    CHECK(s.op(r, 1).end == Time::from_us(4));
    CHECK(s.op(r, 2).issue == Time::from_us(4));
    CHECK(s.op(r, 3).issue == Time::from_us(5));
    CHECK(s.op(r, 3).returned == Time::from_us(6));
    CHECK(s.op(r, 0).start == Time::from_us(1));
    CHECK(s.op(r, 3).end == Time::from_us(31));
  }
  CHECK(s.op(2, 1).issue == Time::from_us(1));
  CHECK(s.op(2, 2).issue == Time::from_us(2));
  CHECK(s.op(2, 2).end == Time::from_us(22));
}

namespace {

// One rank, one stream `a`, issued by `framework` (pytorch or none): `ops`
// are the program's op lines.
std::string one_stream_schedule(const char* framework, const char* ops) {
  return fmt::format("name: host\nranks: 1\nstreams: [a]\nsettings: {{framework: {}}}\nprograms:\n  - rank: 0\n    ops:{}\n", framework, ops);
}

// The calls' host costs: a launch 4 us, a framework's dispatch 10 us more.
ModelParams launch_and_dispatch() {
  ModelParams p = quiet();
  p.overheads.kernel_launch = Time::from_us(4);
  p.overheads.framework_op_call = Time::from_us(10);
  return p;
}

}  // namespace

TEST_CASE(
    "an op's views and launches: the calls before it that launch nothing each cost framework_view_call (framework: pytorch), a kernel's launches a "
    "launch and a dispatch each") {
  // Three kernels; the second after 3 views, the third after 255. Each
  // call: launch 4 us + dispatch 10 us, and 2 us per view before it.
  auto sched = [](const char* framework) {
    return one_stream_schedule(framework, R"(
      - {op: kernel, name: k1, stream: a, duration: 1 us}
      - {op: kernel, name: k2, stream: a, duration: 1 us, views: 3}
      - {op: kernel, name: k3, stream: a, duration: 1 us, views: 255}
      - {op: kernel, name: k4, stream: a, duration: 1 us, launches: 3})");
  };
  ModelParams p = launch_and_dispatch();
  p.overheads.framework_view_call = Time::from_us(2);
  const Sim s(sched("pytorch"), p);
  CHECK(s.op(0, 0).returned == Time::from_us(14));
  CHECK(s.op(0, 1).issue == Time::from_us(14));
  CHECK(s.op(0, 1).returned == Time::from_us(14 + 6 + 14));
  CHECK(s.op(0, 2).returned == Time::from_us(34 + 510 + 14));
  CHECK(s.op(0, 3).returned == Time::from_us(558 + 3 * 14));  // three framework ops: a launch and a dispatch each
  // CUDA called directly: no framework, no views.
  const Sim direct(sched("none"), p);
  CHECK(direct.op(0, 1).returned == Time::from_us(8));
  CHECK(direct.op(0, 2).returned == Time::from_us(12));
  CHECK(direct.op(0, 3).returned == Time::from_us(24));  // three launches
}

// Two waits that block and one on an event already done, on one stream
// (the wait-return tests below).
constexpr const char* kWaitOps = R"(
      - {op: kernel, name: k1, stream: a, duration: 100 us}
      - {op: stream_sync, stream: a}
      - {op: kernel, name: k2, stream: a, duration: 50 us}
      - {op: event_record, event: e, stream: a}
      - {op: stream_sync, stream: a}
      - {op: event_sync, event: e}
      - {op: kernel, name: k3, stream: a, duration: 10 us})";

TEST_CASE(
    "a framework's host back from a wait that blocked: framework_wait_return before its next call, none after a wait that found the GPU done or "
    "without a framework") {
  // k1 (14-114 us) then a stream sync that blocks: the host is back at 114
  // us, then takes 30 us before k2's call (launch 4 + dispatch 10): k2 starts at
  // 158 us. The next sync finds k2 (50 us, to 208) running: it blocks too,
  // back at 238. An event sync on an event already done does not wait: no
  // return; k3's call from 238.
  auto sched = [](const char* framework) {
    return one_stream_schedule(framework, kWaitOps);
  };
  ModelParams p = launch_and_dispatch();
  p.overheads.framework_wait_return = Time::from_us(30);
  const Sim s(sched("pytorch"), p);
  CHECK(s.op(0, 0).start == Time::from_us(14));
  CHECK(s.op(0, 1).returned == Time::from_us(114 + 30));  // k1 ends at 114: back from the wait 30 us later
  CHECK(s.op(0, 2).start == Time::from_us(144 + 14));     // k2's call after that
  CHECK(s.op(0, 4).returned == Time::from_us(208 + 30));  // k2 ends at 208: blocked again
  CHECK(s.op(0, 5).returned == Time::from_us(238));       // the event is done: no wait, no return
  CHECK(s.op(0, 6).start == Time::from_us(238 + 14));
  // CUDA called directly: no framework, no return.
  const Sim direct(sched("none"), p);
  CHECK(direct.op(0, 1).returned == Time::from_us(104));
  CHECK(direct.op(0, 2).start == Time::from_us(108));
}

TEST_CASE("a host back from a wait that blocked returns wait_return after the work ended, with or without a framework, and a framework's return after it") {
  // The schedule above, and a blocking copy. CUDA called directly (launch 4
  // us): k1 4-104 us; the sync blocks and returns 104 + 8; k2's call from
  // 112, k2 116-166; the record, then the stream sync blocks: 166 + 8 = 174;
  // the event is done: no wait, no return; k3's call 174-178, k3 178-188.
  auto sched = [](const char* framework) {
    return one_stream_schedule(framework, (std::string(kWaitOps) + R"(
      - {op: memcpy, kind: d2h, bytes: 1 MB, stream: a, async: false})").c_str());
  };
  ModelParams p = launch_and_dispatch();
  p.overheads.sync_call = p.overheads.event_call = p.overheads.memcpy_call = Time::zero();
  p.overheads.wait_return = Time::from_us(8);
  const Sim direct(sched("none"), p);
  CHECK(direct.op(0, 1).returned == Time::from_us(104 + 8));
  CHECK(direct.op(0, 2).start == Time::from_us(112 + 4));
  CHECK(direct.op(0, 4).returned == Time::from_us(166 + 8));
  CHECK(direct.op(0, 5).returned == Time::from_us(174));  // found done: no wake-up
  CHECK(direct.op(0, 6).start == Time::from_us(178));
  // The copy waits for k3 (to 188) and itself: back 8 us after the copy ends.
  CHECK(direct.op(0, 7).returned == direct.op(0, 7).end + Time::from_us(8));
  // With a framework: the wake-up, then its own return (30 us), then k2's
  // call (launch 4 + dispatch 10): k1 14-114, back at 152, k2 166-216.
  p.overheads.framework_wait_return = Time::from_us(30);
  const Sim framework(sched("pytorch"), p);
  CHECK(framework.op(0, 1).returned == Time::from_us(114 + 8 + 30));
  CHECK(framework.op(0, 2).start == Time::from_us(152 + 14));
  // 0 (every calibration's unless set): back as the work ends, as before.
  p.overheads.wait_return = Time::zero();
  p.overheads.framework_wait_return = Time::zero();
  const Sim none(sched("none"), p);
  CHECK(none.op(0, 1).returned == Time::from_us(104));
  CHECK(none.op(0, 7).returned == none.op(0, 7).end);
}

TEST_CASE("weights loaded with the model (alloc loaded: true) cost no alloc_call, and a written schedule keeps them so") {
  ModelParams p = quiet();
  p.overheads.alloc_call = Time::from_us(7);
  // Two weight allocations, the first loaded before the run, then a 10 us
  // kernel: the kernel is issued after the second's call alone.
  const std::string sched = R"(name: loaded
ranks: 1
streams: [a]
programs:
  - rank: 0
    ops:
      - {op: alloc, tag: w0, bytes: 1 MB, loaded: true}
      - {op: alloc, tag: w1, bytes: 1 MB}
      - {op: kernel, name: k, stream: a, duration: 10 us}
)";
  const Sim s(sched, p);
  CHECK(s.op(0, 0).returned == Time::zero());
  CHECK(s.op(0, 1).returned == Time::from_us(7));
  CHECK(s.op(0, 2).start == Time::from_us(7));
  CHECK(s.res.ranks[0].peak_vram == 2'000'000);
  const std::string yaml = to_yaml(s.sched);
  CHECK(yaml.find("loaded: true") != std::string::npos);
  CHECK(to_yaml(parse_schedule_string(yaml, "back.yaml")) == yaml);
  // Only an alloc takes it.
  CHECK(error_of(R"(name: bad
ranks: 1
streams: [a]
programs:
  - rank: 0
    ops:
      - {op: kernel, name: k, stream: a, duration: 10 us, loaded: true}
)").find("loaded") != std::string::npos);
}
