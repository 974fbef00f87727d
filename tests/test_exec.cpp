// The execution model against hand-computed timelines. A small test node
// with round numbers: 10 GB/s PCIe per GPU, 100 GB/s NVLink between the two
// GPUs, zero latencies, 100 bf16 TFLOP/s, and (unless a test sets them)
// zero host overheads.
#include <cmath>
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <string>

#include "gpu/executor.hpp"
#include "gpu/as_run.hpp"

using namespace osim;

namespace {

const char* kTopo = R"(name: testnode
nodes:
  - {name: cpu0, kind: cpu, memory: 64 GiB}
  - {name: "gpu{i}", kind: gpu, memory: 1 GiB, hbm_bandwidth: 1000 GB/s, sms: 100, copy_engines: 3, peak_tflops: {bf16: 100}, repeat: 2}
links:
  - {a: "gpu{i}", b: cpu0, kind: pcie, bandwidth: 10 GB/s, latency: 0 us, repeat: 2}
  - {a: gpu0, b: gpu1, kind: nvlink, bandwidth: 100 GB/s, latency: 0 us}
)";

ModelParams quiet() {
  ModelParams p;
  p.overheads.kernel_launch = p.overheads.memcpy_call = p.overheads.event_call = p.overheads.sync_call = p.overheads.collective_call = p.overheads.alloc_call = p.overheads.free_call = Time::zero();
  p.nccl.nccl_latency = p.nccl.nccl_step_latency = Time::zero();
  return p;
}

struct Sim {
  hw::Topology topo;
  Schedule sched;
  ExecResult res;
  Sim(const std::string& schedule, const ModelParams& p = quiet(), const char* topo_yaml = kTopo)
      : topo(hw::parse_topology_string(topo_yaml, "topo.yaml")), sched(parse_schedule_string(schedule, "s.yaml")) {
    res = execute(sched, topo, p);
  }
  const OpRecord& op(int rank, int index) const { return res.ops[rank][index]; }
  double start_ms(int r, int i) const { return op(r, i).start.ms(); }
  double end_ms(int r, int i) const { return op(r, i).end.ms(); }
};

std::string error_of(const std::string& schedule, const ModelParams& p = quiet()) {
  try {
    Sim s(schedule, p);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// Four GPUs under one host bridge with the given limit (e.g.
// "throughput_from_host: 100 GB/s"), 40 GB/s links each.
std::string bridge_topo(const std::string& limit) {
  return fmt::format(R"(name: bridge
nodes:
  - {{name: cpu0, kind: cpu, memory: 64 GiB}}
  - {{name: rc0, kind: host_bridge, {}}}
  - {{name: "gpu{{i}}", kind: gpu, memory: 8 GiB, copy_engines: 3, peak_tflops: {{bf16: 100}}, repeat: 4}}
links:
  - {{a: cpu0, b: rc0, kind: internal, bandwidth: 1000 GB/s, latency: 0 us}}
  - {{a: "gpu{{i}}", b: rc0, kind: pcie, bandwidth: 40 GB/s, latency: 0 us, repeat: 4}}
)",
                     limit);
}

// Every rank copies 600 MB of the given kind at once.
std::string bridge_copies(int ranks, const char* kind) {
  return fmt::format(R"(name: copies
ranks: {}
streams: [copy]
programs:
  - rank: all
    ops:
      - {{op: memcpy, kind: {}, bytes: 600 MB, stream: copy}}
)",
                     ranks, kind);
}

}  // namespace

TEST_CASE("kernel time from the compute model") {
  hw::Topology t(hw::parse_topology_string(kTopo, "topo.yaml"));
  const auto& gpu = t.node(t.find("gpu0"));
  ModelParams p;
  Op op;
  op.kind = OpKind::Kernel;
  op.gemm = GemmShape{4096, 4096, 4096};
  // 2*4096^3 = 137.4 GFLOP at 100 TFLOP/s * 0.75
  CHECK(kernel_time(op, gpu, p).ms() == doctest::Approx(2.0 * 4096.0 * 4096 * 4096 / 75e12 * 1e3).epsilon(1e-9));
  op.gemm.reset();
  op.hbm_bytes = 850e6;  // memory-bound: 850 MB at 1000 GB/s * 0.85 = 1 ms
  CHECK(kernel_time(op, gpu, p).ms() == doctest::Approx(1.0));
  op.hbm_bytes = 0;
  op.attention = AttentionShape{1, 8, 1000, 1000, 128};  // 4*8*1000*1000*128 FLOPs at 60 TFLOP/s
  CHECK(kernel_time(op, gpu, p).ms() == doctest::Approx(4.0 * 8 * 1000 * 1000 * 128 / 60e12 * 1e3).epsilon(1e-6));
  op.attention.reset();
  op.dtype = DType::FP8;
  op.flops = 1e12;  // no fp8 rate in this topology
  CHECK_THROWS_AS(kernel_time(op, gpu, p), InputError);
}

TEST_CASE("kernels as overlapsim-validate run realises them (shared with compare --simulate)") {
  Op op;
  op.kind = OpKind::Kernel;
  // Wan self-attention at 16,384 tokens, 40 heads of 128: 5.50e12 FLOPs x 2.1 = a
  // 16384 x 5120 GEMM with k = 68,809, in 9 chunks of 7,645.4 -> 7,616 (a multiple of 64).
  op.attention = AttentionShape{1, 40, 16384, 16384, 128};
  auto rg = realised_gemm(op, 2.1);
  REQUIRE(rg.has_value());
  CHECK(*rg == RealisedGemm{16384, 5120, 7616, 9});
  // Cross-attention to 512 text tokens: k = 2,150.4 -> one chunk of 2,176.
  op.attention = AttentionShape{1, 40, 16384, 512, 128};
  CHECK(*realised_gemm(op, 2.1) == RealisedGemm{16384, 5120, 2176, 1});
  op.attention.reset();
  op.gemm = GemmShape{100, 200, 300};
  CHECK(*realised_gemm(op, 2.1) == RealisedGemm{100, 200, 300, 1});
  op.gemm.reset();
  op.flops = 2.0 * 4096 * 4096 * 20000;  // k = 20,000: 3 chunks of 6,666.7 -> 6,656
  CHECK(*realised_gemm(op, 2.1) == RealisedGemm{4096, 4096, 6656, 3});
  op.flops = 0;
  op.duration = Time::from_us(5);
  CHECK_FALSE(realised_gemm(op, 2.1).has_value());
  op.duration.reset();
  op.hbm_bytes = 1e9;
  CHECK_FALSE(realised_gemm(op, 2.1).has_value());
  CHECK(aligned_k(10) == 64);

  // as_realised: the attention kernel takes its realised GEMM's time at that
  // shape's measured efficiency (else the median), whatever the attention efficiency.
  hw::Topology t(hw::parse_topology_string(kTopo, "topo.yaml"));
  const Schedule s = parse_schedule_string(R"(name: realise
ranks: 1
streams: [a]
programs:
  - rank: 0
    ops:
      - {op: kernel, stream: a, attention: {batch: 1, heads: 40, seq: 16384, seq_kv: 16384, head_dim: 128}}
      - {op: kernel, stream: a, attention: {batch: 1, heads: 40, seq: 16384, seq_kv: 512, head_dim: 128}}
      - {op: kernel, stream: a, gemm: {m: 64, n: 64, k: 64}}
)", "s.yaml");
  ModelParams p = quiet();
  p.gemm.gemm_efficiency = 0.5;
  p.attention.attention_efficiency = 0.01;
  p.gemm.gemm_shapes.push_back({16384, 5120, 7616, 0.8});
  const Schedule r = as_realised(s, p, 2.1);
  const auto& gpu = t.node(t.find("gpu0"));
  const auto& ops = *r.programs[0].ops;
  CHECK(kernel_time(ops[0], gpu, p).s() == doctest::Approx(9 * 2.0 * 16384 * 5120 * 7616 / (100e12 * 0.8)).epsilon(1e-6));
  CHECK(kernel_time(ops[1], gpu, p).s() == doctest::Approx(2.0 * 16384 * 5120 * 2176 / (100e12 * 0.5)).epsilon(1e-6));
  CHECK(kernel_time(ops[2], gpu, p) == kernel_time((*s.programs[0].ops)[2], gpu, p));  // GEMMs unchanged
  CHECK((*s.programs[0].ops)[0].efficiency == 0);  // the input is not modified
}

TEST_CASE("the sustained-load duty cycle counts memory-bound kernels, not bare durations") {
  // 1 s of back-to-back work brings the duty cycle to ~1: the GEMM after it
  // runs at 1 / (1 + 0.2) of its burst speed if that work drew power (an HBM
  // kernel), at full speed after a bare `duration` kernel.
  ModelParams p = quiet();
  p.power.sustained_slowdown = 0.2;
  p.power.sustained_duty = 0.5;
  p.power.sustained_time_constant = Time::from_ms(10);
  auto gemm_ms = [&](const std::string& first) {
    Sim s(R"(name: duty
ranks: 1
streams: [a]
programs:
  - rank: 0
    ops:
      - )" + first + R"(
      - {op: kernel, stream: a, flops: 60.0e9}
)",
          p);
    return (s.op(0, 1).end - s.op(0, 1).start).ms();
  };
  // 60 GFLOP at 100 TFLOP/s x 0.6 = 1 ms burst.
  CHECK(gemm_ms("{op: kernel, stream: a, bytes: 850.0e9}") == doctest::Approx(1.2).epsilon(1e-6));
  CHECK(gemm_ms("{op: kernel, stream: a, duration: 1 s}") == doctest::Approx(1.0).epsilon(1e-6));
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
  CHECK(execute_after_runs(s.sched, s.topo, p, 2).ops[0][1].start.ms() ==
        doctest::Approx(10 * (1 + 0.5 * u1)).epsilon(1e-6));
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

  // A memory-bound kernel takes hbm_latency + bytes / (bandwidth x efficiency).
  ModelParams q = quiet();
  q.memory.hbm_latency = Time::from_us(2.5);
  Sim m(R"(name: hbm
ranks: 1
streams: [a]
programs:
  - rank: 0
    ops:
      - {op: kernel, stream: a, bytes: 850.0e6}
)",
        q);
  CHECK((m.op(0, 0).end - m.op(0, 0).start).us() == doctest::Approx(1000 + 2.5).epsilon(1e-6));
}

// k1 (100 us) on stream a, an event after it, k2 (50 us) on stream b after it.
const char* kJoin = R"(name: join
ranks: 1
streams: [a, b]
programs:
  - rank: 0
    ops:
      - {op: kernel, name: k1, stream: a, duration: 100 us}
      - {op: event_record, event: e, stream: a}
      - {op: stream_wait_event, stream: b, event: e}
      - {op: kernel, name: k2, stream: b, duration: 50 us}
)";

TEST_CASE("two streams joined by an event") {
  Sim s(kJoin);
  CHECK(s.op(0, 3).start == Time::from_us(100));
  CHECK(s.op(0, 3).end == Time::from_us(150));
  CHECK(s.res.makespan == Time::from_us(150));
}

TEST_CASE("kernels on two streams share the SMs") {
  Sim s(R"(name: share
ranks: 1
streams: [a, b]
programs:
  - rank: 0
    ops:
      - {op: kernel, stream: a, duration: 100 us}
      - {op: kernel, stream: b, duration: 100 us}
      - {op: kernel, stream: b, duration: 100 us, sm_limit: 50}
)");
  // Both want all 100 SMs: half speed each until both end at 200 us.
  CHECK(s.op(0, 0).end == Time::from_us(200));
  CHECK(s.op(0, 1).end == Time::from_us(200));
  // Then the 50-SM kernel alone at full speed.
  CHECK(s.op(0, 2).end == Time::from_us(300));
}

TEST_CASE("a pageable copy blocks the host, delaying the next kernel's launch") {
  ModelParams p = quiet();
  p.overheads.kernel_launch = Time::from_us(4);
  p.copies.pageable_bandwidth = Bandwidth::from_GBps(5);
  const std::string prog = R"(name: pageable
ranks: 1
streams: [copy, compute]
programs:
  - rank: 0
    ops:
      - {op: memcpy, kind: h2d, bytes: 100 MB, stream: copy, host: HOST}
      - {op: kernel, stream: compute, duration: 1 ms}
)";
  auto with = [&](const std::string& host) {
    std::string y = prog;
    y.replace(y.find("HOST"), 4, host);
    return y;
  };
  Sim pageable(with("pageable"), p);
  CHECK(pageable.op(0, 0).end == Time::from_ms(20));             // 100 MB at 5 GB/s
  CHECK(pageable.op(0, 1).issue == Time::from_ms(20));           // the host was blocked until then
  CHECK(pageable.op(0, 1).start == Time::from_us(20004));        // plus the launch overhead
  Sim pinned(with("pinned"), p);
  CHECK(pinned.op(0, 0).end == Time::from_ms(10));               // 100 MB at the link's 10 GB/s
  CHECK(pinned.op(0, 1).start == Time::from_us(4));              // overlaps the copy
}

TEST_CASE("H2D copies serialise on one engine whatever the stream, and H2D and D2H overlap") {
  Sim s(R"(name: engines
ranks: 1
streams: [s1, s2, s3]
programs:
  - rank: 0
    ops:
      - {op: memcpy, kind: h2d, bytes: 100 MB, stream: s1}
      - {op: memcpy, kind: h2d, bytes: 100 MB, stream: s2}
      - {op: memcpy, kind: d2h, bytes: 100 MB, stream: s3}
)");
  CHECK(s.op(0, 0).end == Time::from_ms(10));
  CHECK(s.op(0, 1).start == Time::from_ms(10));  // FIFO behind the first
  CHECK(s.op(0, 1).end == Time::from_ms(20));
  CHECK(s.op(0, 2).start == Time::zero());       // its own engine and link direction
  CHECK(s.op(0, 2).end == Time::from_ms(10));
}

TEST_CASE("copy set-up latency per direction: D2H's own where calibrated") {
  const std::string sched = R"(name: lat
ranks: 1
streams: [s1, s2]
programs:
  - rank: 0
    ops:
      - {op: memcpy, kind: h2d, bytes: 100 MB, stream: s1}
      - {op: memcpy, kind: d2h, bytes: 100 MB, stream: s2}
)";
  ModelParams p = quiet();
  p.copies.copy_latency = Time::from_us(3);
  const Sim one(sched, p);
  CHECK(one.op(0, 0).end == Time::from_ms(10) + Time::from_us(3));
  CHECK(one.op(0, 1).end == Time::from_ms(10) + Time::from_us(3));  // one latency for both
  p.copies.copy_latency_d2h = Time::from_us(1);
  const Sim two(sched, p);
  CHECK(two.op(0, 0).end == Time::from_ms(10) + Time::from_us(3));
  CHECK(two.op(0, 1).end == Time::from_ms(10) + Time::from_us(1));
}

TEST_CASE("host_h2d_aggregate: the host bridge's H2D limit follows how many GPUs copy at once") {
  // Four GPUs under one bridge (100 GB/s from host), 40 GB/s links each.
  const std::string bridge = bridge_topo("throughput_from_host: 100 GB/s");
  const char* topo = bridge.c_str();
  auto copies = [](int ranks) { return bridge_copies(ranks, "h2d"); };
  ModelParams p = quiet();
  // Without a table: the bridge's 100 GB/s, 3 x 40 GB/s would want 120.
  CHECK(Sim(copies(3), p, topo).op(0, 0).end.ms() == doctest::Approx(18.0));  // 600 MB at 100/3 GB/s
  p.copies.host_h2d_aggregate = {Bandwidth::from_GBps(39), Bandwidth::from_GBps(70), Bandwidth::from_GBps(90), Bandwidth::from_GBps(96)};
  CHECK(Sim(copies(1), p, topo).op(0, 0).end.ms() == doctest::Approx(15.0));  // one GPU: its own 40 GB/s link, not 39
  CHECK(Sim(copies(2), p, topo).op(1, 0).end.ms() == doctest::Approx(600.0 / 35.0));  // 70 / 2 each
  CHECK(Sim(copies(3), p, topo).op(2, 0).end.ms() == doctest::Approx(20.0));         // 90 / 3 each
  CHECK(Sim(copies(4), p, topo).op(3, 0).end.ms() == doctest::Approx(25.0));         // 96 / 4 each
  // Entries past the list take its last; the topology's limit stays the ceiling.
  p.copies.host_h2d_aggregate = {Bandwidth::from_GBps(39), Bandwidth::from_GBps(150)};
  CHECK(Sim(copies(3), p, topo).op(0, 0).end.ms() == doctest::Approx(18.0));  // min(150, 100) / 3
  // A second copy on rank 0 after the others finish runs alone again: 600 MB
  // at 40 GB/s after 3 copies shared 60 GB/s (20 each) for 30 ms.
  p.copies.host_h2d_aggregate = {Bandwidth::from_GBps(39), Bandwidth::from_GBps(60)};
  const Sim two(R"(name: h2d
ranks: 3
streams: [copy]
programs:
  - rank: 0
    ops:
      - {op: memcpy, kind: h2d, bytes: 600 MB, stream: copy}
      - {op: memcpy, kind: h2d, bytes: 600 MB, stream: copy}
  - rank: 1
    ops:
      - {op: memcpy, kind: h2d, bytes: 600 MB, stream: copy}
  - rank: 2
    ops:
      - {op: memcpy, kind: h2d, bytes: 600 MB, stream: copy}
)", p, topo);
  CHECK(two.op(0, 0).end.ms() == doctest::Approx(30.0));
  CHECK(two.op(1, 0).end.ms() == doctest::Approx(30.0));
  CHECK(two.op(0, 1).end.ms() == doctest::Approx(45.0));
  // D2H copies are not counted and not held by it.
  CHECK(Sim(bridge_copies(3, "d2h"), p, topo).op(0, 0).end.ms() == doctest::Approx(15.0));
}

TEST_CASE("host_d2h_aggregate: the same for D2H copies, under the bridge's to-host limit") {
  // Four GPUs under one bridge (90 GB/s to host), 40 GB/s links each.
  const std::string bridge = bridge_topo("throughput_to_host: 90 GB/s");
  const char* topo = bridge.c_str();
  ModelParams p = quiet();
  CHECK(Sim(bridge_copies(3, "d2h"), p, topo).op(0, 0).end.ms() == doctest::Approx(20.0));  // 600 MB at 90/3 GB/s
  p.copies.host_d2h_aggregate = {Bandwidth::from_GBps(39), Bandwidth::from_GBps(70), Bandwidth::from_GBps(60)};
  CHECK(Sim(bridge_copies(1, "d2h"), p, topo).op(0, 0).end.ms() == doctest::Approx(15.0));  // one GPU: its link
  CHECK(Sim(bridge_copies(2, "d2h"), p, topo).op(0, 0).end.ms() == doctest::Approx(600.0 / 35));  // 70 / 2
  CHECK(Sim(bridge_copies(3, "d2h"), p, topo).op(0, 0).end.ms() == doctest::Approx(30.0));  // 60 / 3
  CHECK(Sim(bridge_copies(4, "d2h"), p, topo).op(0, 0).end.ms() == doctest::Approx(40.0));  // the last entry for more GPUs
  p.copies.host_d2h_aggregate = {Bandwidth::from_GBps(39), Bandwidth::from_GBps(200)};
  CHECK(Sim(bridge_copies(3, "d2h"), p, topo).op(0, 0).end.ms() == doctest::Approx(20.0));  // never above the bridge's 90
  CHECK(Sim(bridge_copies(3, "h2d"), p, topo).op(0, 0).end.ms() == doctest::Approx(15.0));  // H2D: not held by it
}

TEST_CASE("CUDA_DEVICE_MAX_CONNECTIONS=1: a waiting op blocks later streams' work") {
  const std::string prog = R"(name: hwq
ranks: 1
settings: {device_max_connections: N}
streams: [s1, s2, s3]
programs:
  - rank: 0
    ops:
      - {op: kernel, stream: s1, duration: 1 ms, sm_limit: 10}
      - {op: event_record, event: e, stream: s1}
      - {op: stream_wait_event, stream: s2, event: e}
      - {op: kernel, stream: s2, duration: 1 ms, sm_limit: 10}
      - {op: kernel, stream: s3, duration: 1 ms, sm_limit: 10}
)";
  auto with = [&](int n) {
    std::string y = prog;
    y.replace(y.find("N}"), 1, std::to_string(n));
    return y;
  };
  Sim one(with(1));
  CHECK(one.op(0, 4).start == Time::from_ms(1));  // queued behind s2's wait
  Sim eight(with(8));
  CHECK(eight.op(0, 4).start == Time::zero());    // own queue: runs beside k1
  CHECK(eight.op(0, 3).start == Time::from_ms(1));
}

TEST_CASE("a collective waits for the latest rank") {
  Sim s(R"(name: late
ranks: 2
streams: [comm]
programs:
  - rank: 0
    ops:
      - {op: collective, kind: all_to_all, group: world, bytes: 200 MB, stream: comm}
  - rank: 1
    ops:
      - {op: host_work, duration: 1 ms}
      - {op: collective, kind: all_to_all, group: world, bytes: 200 MB, stream: comm}
)");
  CHECK(s.op(0, 0).start == Time::zero());        // rank 0's kernel is up, spinning
  CHECK(s.op(1, 1).start == Time::from_ms(1));
  // Each rank sends 100 MB over the 100 GB/s NVLink: 1 ms once both are there.
  CHECK(s.op(0, 0).end == Time::from_ms(2));
  CHECK(s.op(1, 1).end == Time::from_ms(2));
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
  CHECK(a2a_ms(0, 0.5) == doctest::Approx(20.0).epsilon(1e-6));  // NVLink: the host share does not apply
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

TEST_CASE("a measured NCCL table sets a collective's time inside one host, not between hosts") {
  // 2 ranks, 1 GB each: one 500 MB flow per rank. The table says 20 ms at
  // 1 GB with 10 us latency: the flow runs at 500 MB / 19.99 ms (under the
  // 100 GB/s NVLink), so the all-to-all takes the table's 20 ms.
  const std::string sched = R"(name: tabled
ranks: 2
streams: [comm]
programs:
  - rank: 0
    ops:
      - {op: collective, kind: all_to_all, group: world, bytes: 1 GB, stream: comm}
  - rank: 1
    ops:
      - {op: collective, kind: all_to_all, group: world, bytes: 1 GB, stream: comm}
)";
  ModelParams p = quiet();
  p.nccl.nccl_tables.push_back({TableColl::AllToAll, 2, false, {{1e6, 10e-6}, {1e9, 20e-3}}});
  Sim one(sched, p);
  CHECK((one.op(0, 0).end - one.op(0, 0).start).ms() == doctest::Approx(20.0).epsilon(1e-6));
  // A channel count the table was not measured at: the channel model (1 ms on NVLink, as above).
  std::string four = sched;
  for (size_t at = four.find("stream: comm}"); at != std::string::npos; at = four.find("stream: comm}", at + 1)) four.replace(at, 13, "stream: comm, channels: 4}");
  Sim other(four, p);
  CHECK((other.op(0, 0).end - other.op(0, 0).start) < Time::from_ms(20));

  // Two ranks on two hosts: the flows cross the network, where the table
  // (measured inside one host) does not apply.
  const hw::Topology two(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/h100-2node-ib.yaml"));
  Schedule s = parse_schedule_string(std::string(sched).insert(sched.find("ranks:"), "gpus: [n0_gpu0, n1_gpu0]\n"), "s.yaml");
  const ExecResult with = execute(s, two, p), without = execute(s, two, quiet());
  CHECK(with.ops[0][0].end == without.ops[0][0].end);
  CHECK(with.ops[0][0].end - with.ops[0][0].start < Time::from_ms(20));
}

TEST_CASE("a measured collective's latency overlaps a transfer its links make longer than the table allows") {
  // kTopo: gpu0 <-> gpu1 over NVLink, 100 GB/s. A 1 MB-per-rank all-to-all
  // sends 0.5 MB each way: 5 us on the link. The table says 31 us at 1 MB
  // with 30 us of latency (its smallest size): 1 us of transfer is less than
  // the link needs, so 4 us of the latency overlaps it: 26 + 5 = 31 us, the
  // table's time (30 + 5 = 35 us without the overlap).
  auto sched = [](const std::string& kind) {
    return fmt::format(R"(name: t
ranks: 2
streams: [comm]
programs:
  - rank: all
    ops:
      - {{op: collective, kind: {}, group: world, bytes: 1 MB, stream: comm}}
)",
                       kind);
  };
  using TC = TableColl;
  ModelParams p = quiet();
  p.nccl.nccl_tables.push_back({TC::AllToAll, 2, false, {{1e3, 30e-6}, {1e6, 31e-6}, {1e9, 20e-3}}});
  // A ring all-gather of 2 ranks: one step, 0.5 MB each way (5 us); the
  // table leaves 2 us after its 30 us: 27 + 5 = 32 us.
  p.nccl.nccl_tables.push_back({TC::AllGather, 2, false, {{1e3, 30e-6}, {1e6, 32e-6}, {1e9, 20e-3}}});
  const Sim a2a(sched("all_to_all"), p), gather(sched("all_gather"), p);
  CHECK((a2a.op(0, 0).end - a2a.op(0, 0).start).us() == doctest::Approx(31.0).epsilon(1e-6));
  CHECK((gather.op(0, 0).end - gather.op(0, 0).start).us() == doctest::Approx(32.0).epsilon(1e-6));
  // A table slower than the link (2 ms at 1 MB): no overlap, the table's time.
  p.nccl.nccl_tables[0].points = {{1e3, 30e-6}, {1e6, 2e-3}};
  const Sim slow(sched("all_to_all"), p);
  CHECK((slow.op(0, 0).end - slow.op(0, 0).start).us() == doctest::Approx(2000.0).epsilon(1e-6));
}

TEST_CASE("pairwise and ring algorithms take their rounds and steps") {
  // 4xH200 box: NVSwitch, 394 GB/s per GPU port, 0.5 us per hop (1 us GPU to GPU); nccl latency 0.
  hw::Topology topo(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/h200x4-nvlink.yaml"));
  auto run = [&](const std::string& coll, const std::string& algo) {
    Schedule s = parse_schedule_string("name: c\nranks: 4\nstreams: [comm]\nprograms:\n  - rank: all\n    ops:\n"
                                       "      - {op: collective, kind: " + coll + ", algorithm: " + algo +
                                           ", group: world, bytes: 600 MB, stream: comm}\n",
                                       "c.yaml");
    return execute(s, topo, quiet()).makespan.ms();
  };
  const double chunk = 150e6 / 394e9 * 1e3;  // 600 MB / 4 at a GPU's whole 394 GB/s port, in ms
  CHECK(run("all_to_all", "pairwise") == doctest::Approx(3 * (chunk + 1e-3)).epsilon(1e-6));
  CHECK(run("all_gather", "ring") == doctest::Approx(3 * (chunk + 1e-3)).epsilon(1e-6));
  CHECK(run("all_reduce", "ring") == doctest::Approx(6 * (chunk + 1e-3)).epsilon(1e-6));
  // NCCL all-to-all: all three peers at once share the port (131.3 GB/s each, under
  // the 24 x 19.5 / 3 = 156 GB/s channel cap).
  CHECK(run("all_to_all", "nccl") == doctest::Approx(3 * chunk + 1e-3).epsilon(1e-6));
}

TEST_CASE("fp8 payloads carry one fp32 scale per 128 values") {
  Sim s(R"(name: fp8
ranks: 2
streams: [comm]
programs:
  - rank: all
    ops:
      - {op: collective, kind: all_to_all, group: world, bytes: 256 MB, dtype: fp8, stream: comm}
)");
  // 128 MB each way, x (1 + 4/128), at 100 GB/s.
  CHECK(s.res.makespan.ms() == doctest::Approx(128e6 * (1 + 4.0 / 128) / 100e9 * 1e3).epsilon(1e-9));
}

TEST_CASE("an all-to-all is slowed by concurrent H2D on PCIe, not on NVLink") {
  auto a2a_ms = [](const std::string& topo_file, bool with_h2d) {
    hw::Topology topo(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/" + topo_file));
    std::string y = "name: x\nranks: 4\nstreams: [compute, copy]\nprograms:\n  - rank: all\n    ops:\n";
    if (with_h2d) y += "      - {op: memcpy, kind: h2d, bytes: 1 GiB, stream: copy}\n";
    y += "      - {op: collective, kind: all_to_all, group: world, bytes: 1 GiB, stream: compute}\n";
    Schedule s = parse_schedule_string(y, "x.yaml");
    const ExecResult r = execute(s, topo, quiet());
    return r.ops[0][with_h2d ? 1 : 0].end.ms();
  };
  const double pcie_alone = a2a_ms("aces-4xh100-pcie.yaml", false), pcie_both = a2a_ms("aces-4xh100-pcie.yaml", true);
  const double nvl_alone = a2a_ms("h200x4-nvlink.yaml", false), nvl_both = a2a_ms("h200x4-nvlink.yaml", true);
  CHECK(pcie_both > 1.15 * pcie_alone);
  CHECK(nvl_both == doctest::Approx(nvl_alone).epsilon(1e-9));
  // PCIe alone: the UPI link binds: 4 cross-socket bounces per direction share
  // 64 GB/s (16 GB/s each); the same-socket one gets the link's rest. The last
  // cross-socket 256 MiB ends after 2.5 us of route latency (nccl latency is 0 here).
  CHECK(pcie_alone == doctest::Approx((268435456.0 / 16e9 + 2.5e-6) * 1e3).epsilon(1e-6));
  // Send/recv of the same size: sizes must match.
  CHECK(error_of(R"(name: sr
ranks: 2
streams: [comm]
programs:
  - rank: 0
    ops: [{op: collective, kind: send, peer: 1, bytes: 1 MB, stream: comm}]
  - rank: 1
    ops: [{op: collective, kind: recv, peer: 0, bytes: 2 MB, stream: comm}]
)").find("send #0 and its matching recv differ") == 0);
}

TEST_CASE("SM interference between a GEMM and an all-to-all") {
  ModelParams p = quiet();
  Sim s(R"(name: interfere
ranks: 2
streams: [compute, comm]
programs:
  - rank: all
    ops:
      - {op: collective, kind: all_to_all, group: world, bytes: 200 MB, channels: 4, stream: comm}
      - {op: kernel, stream: compute, duration: 1 ms}
)", p);
  // The kernel runs at 1 - (0.04 + 0.0025 * 4) = 0.95 while the collective runs.
  const double k_end = 1.0 / 0.95;
  // The collective: 4 channels x 19.5 = 78 GB/s, / (0.908 + 0.0455 x 4) while the kernel runs.
  const double slow = 78e9 / (0.908 + 0.0455 * 4), fast = 78e9;
  const double sent_during = slow * k_end * 1e-3;
  const double a2a_end = k_end + (100e6 - sent_during) / fast * 1e3;
  CHECK(s.end_ms(0, 1) == doctest::Approx(k_end).epsilon(1e-9));
  CHECK(s.end_ms(0, 0) == doctest::Approx(a2a_end).epsilon(1e-9));
}

TEST_CASE("a collective kernel holds its SMs while it waits for a late peer") {
  Sim s(R"(name: spin
ranks: 2
streams: [compute, comm]
programs:
  - rank: 0
    ops:
      - {op: collective, kind: all_gather, group: world, bytes: 1 MB, stream: comm}
      - {op: kernel, stream: compute, duration: 1 ms}
  - rank: 1
    ops:
      - {op: host_work, duration: 5 ms}
      - {op: collective, kind: all_gather, group: world, bytes: 1 MB, stream: comm}
)");
  // 24 channels held from t=0: the kernel runs at 1 - (0.04 + 0.06) = 0.9.
  CHECK(s.end_ms(0, 1) == doctest::Approx(1.0 / 0.9).epsilon(1e-9));
}

TEST_CASE("memory: peaks are tracked and going over capacity is an error") {
  Sim ok(R"(name: mem
ranks: 1
streams: [s]
programs:
  - rank: 0
    ops:
      - {op: alloc, tag: a, bytes: 400 MiB}
      - {op: alloc, tag: b, bytes: 400 MiB}
      - {op: free, tag: a}
      - {op: alloc, tag: c, bytes: 500 MiB}
)");
  CHECK(ok.res.ranks[0].peak_vram == 900LL * 1048576);
  const std::string e = error_of(R"(name: oom
ranks: 1
streams: [s]
programs:
  - rank: 0
    ops:
      - {op: alloc, tag: a, bytes: 600 MiB}
      - {op: alloc, tag: b, bytes: 600 MiB}
)");
  CHECK(e.find("s.yaml:8:") == 0);
  CHECK(e.find("rank 0 (gpu0) runs out of GPU memory: alloc 'b' of 600.00 MiB needs 1.17 GiB with 600.00 MiB already in use of 1.00 GiB") !=
        std::string::npos);
}

TEST_CASE("deadlocks are reported with what each rank waits for") {
  SUBCASE("a collective one rank never reaches") {
    const std::string e = error_of(R"(name: dl
ranks: 2
streams: [comm]
programs:
  - rank: 0
    ops:
      - {op: collective, kind: all_gather, group: world, bytes: 1 MB, stream: comm}
      - {op: stream_sync, stream: comm}
  - rank: 1
    ops:
      - {op: host_work, duration: 1 us}
)");
    CHECK(e.find("deadlock") == 0);
    CHECK(e.find("rank 0 (gpu0): host blocked in stream_sync(comm)") != std::string::npos);
    CHECK(e.find("call #0 on group 'world' waits for rank 1 to reach it") != std::string::npos);
    CHECK(e.find("rank 1 (gpu1): host finished its program") != std::string::npos);
  }
  SUBCASE("a stream waiting on an event behind a stuck collective") {
    const std::string e = error_of(R"(name: dlw
ranks: 2
streams: [compute, comm]
programs:
  - rank: 0
    ops:
      - {op: collective, kind: all_gather, group: world, bytes: 1 MB, stream: comm}
      - {op: event_record, event: ready, stream: comm}
      - {op: stream_wait_event, event: ready, stream: compute}
      - {op: kernel, name: k, duration: 1 us, stream: compute}
      - {op: device_sync}
  - rank: 1
    ops:
      - {op: host_work, duration: 1 us}
)");
    CHECK(e.find("rank 0 (gpu0): host blocked in device_sync at op 4") != std::string::npos);
    CHECK(e.find("stream compute: op 2 stream_wait_event") != std::string::npos);
    CHECK(e.find(": waits for stream comm to finish its op 1") != std::string::npos);
    CHECK(e.find("stream comm: op 0 collective all_gather") != std::string::npos);
  }
  SUBCASE("collectives on two groups issued in opposite orders") {
    const std::string e = error_of(R"(name: cycle
ranks: 2
streams: [comm]
groups: [{name: a, ranks: [0, 1]}, {name: b, ranks: [0, 1]}]
programs:
  - rank: 0
    ops:
      - {op: collective, kind: all_reduce, group: a, bytes: 1 MB, stream: comm}
      - {op: collective, kind: all_reduce, group: b, bytes: 1 MB, stream: comm}
  - rank: 1
    ops:
      - {op: collective, kind: all_reduce, group: b, bytes: 1 MB, stream: comm}
      - {op: collective, kind: all_reduce, group: a, bytes: 1 MB, stream: comm}
)");
    CHECK(e.find("deadlock") == 0);
    CHECK(e.find("call #0 on group 'a' waits for rank 1 to reach it") != std::string::npos);
    CHECK(e.find("call #0 on group 'b' waits for rank 0 to reach it") != std::string::npos);
  }
  SUBCASE("blocking sends to each other without a group (as in NCCL)") {
    const std::string e = error_of(R"(name: sends
ranks: 2
streams: [comm]
programs:
  - rank: all
    ops:
      - {op: collective, kind: send, peer: "{1 - rank}", bytes: 1 MB, stream: comm}
      - {op: collective, kind: recv, peer: "{1 - rank}", bytes: 1 MB, stream: comm}
)");
    CHECK(e.find("deadlock") == 0);
    CHECK(e.find("send/recv waits for rank") != std::string::npos);
  }
  SUBCASE("collectives of different sizes") {
    const std::string e = error_of(R"(name: sizes
ranks: 2
streams: [comm]
programs:
  - rank: 0
    ops: [{op: collective, kind: all_gather, group: world, bytes: 1 MB, stream: comm}]
  - rank: 1
    ops: [{op: collective, kind: all_gather, group: world, bytes: 2 MB, stream: comm}]
)");
    CHECK(e.find("collectives issued in different orders or sizes on group 'world'") == 0);
    CHECK(e.find("rank 1: all_gather all_gather (1.91 MiB") != std::string::npos);
  }
}

TEST_CASE("send and recv matched in order") {
  Sim s(R"(name: sr
ranks: 2
streams: [comm]
programs:
  - rank: 0
    ops: [{op: collective, kind: send, peer: 1, bytes: 100 MB, stream: comm}]
  - rank: 1
    ops: [{op: collective, kind: recv, peer: 0, bytes: 100 MB, stream: comm}]
)");
  CHECK(s.end_ms(1, 0) == doctest::Approx(1.0));  // 100 MB over 100 GB/s NVLink
}

TEST_CASE("bad schedules name file:line and what to do") {
  auto err = [](const std::string& ops, const std::string& extra = "") {
    return error_of("name: bad\nranks: 2\nstreams: [s]\n" + extra + "programs:\n  - rank: all\n    ops:\n" + ops);
  };
  CHECK(err("      - {op: kernel, stream: t, duration: 1 us}\n").find("s.yaml:7:") == 0);
  CHECK(err("      - {op: kernel, stream: t, duration: 1 us}\n").find("unknown stream 't'") != std::string::npos);
  CHECK(err("      - {op: collective, kind: all_gather, group: wrld, bytes: 1 MB, stream: s}\n")
            .find("unknown group 'wrld' (did you mean 'world'?)") != std::string::npos);
  CHECK(err("      - {op: stream_wait_event, stream: s, event: e}\n").find("before any event_record of it") != std::string::npos);
  CHECK(err("      - {op: memcpy, kind: h2d, bytes: -5 MB, stream: s}\n").find("negative") != std::string::npos);
  CHECK(err("      - {op: kernal, stream: s}\n").find("unknown op 'kernal' (did you mean 'kernel'?)") != std::string::npos);
  CHECK(err("      - {op: kernel, stream: s}\n").find("give the work exactly one way") != std::string::npos);
  CHECK(err("      - {op: free, tag: x}\n").find("free of tag 'x', which is not allocated") != std::string::npos);
  CHECK(err("      - {op: memcpy, kind: p2p, bytes: 1 MB, stream: s, peer: 5}\n").find("rank 5 is out of range 0..1") != std::string::npos);
  CHECK(err("      - {op: collective, kind: all_gather, group: world, algorithm: pairwise, bytes: 1 MB, stream: s}\n")
            .find("pairwise (round-robin) applies to all_to_all only") != std::string::npos);
  // Errors inside a loop point at the line written, not an expanded copy.
  const std::string loop = err("      - op: loop\n        count: 2\n        ops:\n          - {op: kernel, stream: x, duration: 1 us}\n");
  CHECK(loop.find("s.yaml:10:") == 0);
}

TEST_CASE("a schedule survives to_yaml and back") {
  const std::string src = R"(name: rt
ranks: 2
settings: {device_max_connections: 1, nccl_p2p_disable: true}
streams: [compute, {name: copy, priority: 1}]
groups: [{name: pair, ranks: [0, 1]}]
programs:
  - rank: all
    ops:
      - {op: alloc, tag: w, bytes: 1 MB}
      - {op: memcpy, kind: h2d, bytes: 1 MB, stream: copy, host: pageable}
      - {op: memcpy, kind: d2h, bytes: 1 MB, stream: copy, host_span: 64 MB}
      - {op: event_record, event: e, stream: copy}
      - {op: stream_wait_event, stream: compute, event: e}
      - {op: kernel, name: g, stream: compute, gemm: {m: 64, n: 128, k: 256}, dtype: fp8, sm_limit: 8}
      - {op: kernel, name: a, stream: compute, attention: {heads: 2, seq: 64, head_dim: 64}}
      - {op: kernel, name: f, stream: compute, flops: 1e9, bytes: 1 MB, efficiency: 0.5}
      - {op: collective, kind: all_to_all, group: pair, bytes: 2 MB, stream: compute, algorithm: pairwise, channels: 4}
      - {op: stream_wait_stream, stream: copy, on: compute}
      - {op: marker, name: "layer {rank}", stream: compute}
      - {op: host_work, duration: 3 us}
      - {op: event_sync, event: e}
      - {op: free, tag: w}
      - {op: device_sync}
)";
  const Schedule a = parse_schedule_string(src, "a.yaml");
  const std::string y1 = to_yaml(a);
  const Schedule b = parse_schedule_string(y1, "b.yaml");
  CHECK(to_yaml(b) == y1);
  CHECK((*b.programs[1].ops)[10].label == "layer 1");
  CHECK((*b.programs[0].ops)[2].host_span == 64'000'000);
  CHECK((*b.programs[0].ops)[1].host_span == 0);
  CHECK(y1.find("host_span: 64000000") != std::string::npos);
  CHECK(b.runtime.device_max_connections == 1);
  CHECK(b.streams[1].priority == 1);
}

TEST_CASE("golden: the shipped prefetch schedule on the PCIe node") {
  const std::string src = OVERLAPSIM_SOURCE_DIR;
  const Schedule s = parse_schedule_file(src + "/configs/schedules/prefetch-overlap-2gpu.yaml");
  hw::Topology topo(hw::parse_topology_file(src + "/configs/topologies/aces-4xh100-pcie.yaml"));
  const std::string text = format_exec_report(s, execute(s, topo));
  CHECK(text == format_exec_report(s, execute(s, topo)));  // deterministic
  const std::string path = src + "/tests/golden/run-prefetch-overlap-2gpu.txt";
  if (const char* u = std::getenv("OVERLAPSIM_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::ofstream(path) << text;
    return;
  }
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str() == text);
}

TEST_CASE("a schedule with more streams than the simulator indexes is refused with what to do") {
  std::string streams;
  for (int i = 0; i <= 32767; ++i) streams += (i ? ", s" : "s") + std::to_string(i);
  const std::string e = error_of("name: many\nranks: 1\nstreams: [" + streams + "]\nprograms:\n  - rank: 0\n    ops:\n      - {op: kernel, stream: s0, duration: 1 us}\n");
  CHECK(e.find("declares 32768 streams; the simulator takes at most 32767: share streams between ops") != std::string::npos);
}

TEST_CASE("a collective through host memory beside a copy: the copy's weight per direction and the link cost of the collective's bytes") {
  // P2P off: the all-to-all's flows bounce through host memory, each up the
  // sender's 10 GB/s link and down the receiver's, at most 4 GB/s each.
  // 100 MB per flow; GPU 0 copies 100 MB meanwhile.
  auto sched = [](const char* kind) {
    return fmt::format(R"(name: host-transport
ranks: 2
settings: {{nccl_p2p_disable: true}}
streams: [s, copy]
programs:
  - rank: 0
    ops:
      - {{op: memcpy, kind: {}, bytes: 100 MB, stream: copy}}
      - {{op: collective, kind: all_to_all, group: world, bytes: 200 MB, stream: s}}
  - rank: 1
    ops:
      - {{op: collective, kind: all_to_all, group: world, bytes: 200 MB, stream: s}}
)",
                       kind);
  };
  ModelParams p = quiet();
  p.nccl.nccl_host_rank_bandwidth = Bandwidth::from_GBps(4);
  p.interference.copy_weight = 3;
  p.interference.copy_weight_d2h = 2;
  p.interference.host_transport_cost_h2d = 1.5;
  p.interference.host_transport_cost_d2h = 2;
  {
    // H2D: GPU 0's link down holds the copy (weight 3) and the flow from GPU 1
    // (weight 1, 1.5 per byte): level 10 / (3 + 1.5); the copy 6.67 GB/s, 15 ms;
    // the flow 2.22 GB/s until then (33.3 MB), the other 66.7 MB at 4 GB/s: 31.67 ms.
    const Sim s(sched("h2d"), p);
    CHECK(s.end_ms(0, 0) == doctest::Approx(15.0).epsilon(1e-6));
    CHECK(s.end_ms(0, 1) == doctest::Approx(15.0 + (100.0 - 15.0 * 10.0 / 4.5) / 4.0).epsilon(1e-6));
  }
  {
    // D2H: GPU 0's link up, the copy weighing 2 and the flow to GPU 1 costing 2
    // per byte: level 10 / 4; the copy 5 GB/s, 20 ms; the flow 50 MB by then, 32.5 ms.
    const Sim s(sched("d2h"), p);
    CHECK(s.end_ms(0, 0) == doctest::Approx(20.0).epsilon(1e-6));
    CHECK(s.end_ms(0, 1) == doctest::Approx(32.5).epsilon(1e-6));
  }
  {
    // One weight, bytes costing a byte: level 10 / 4 both ways (the copy 7.5 GB/s).
    ModelParams q = p;
    q.interference.copy_weight_d2h = 0;
    q.interference.host_transport_cost_h2d = q.interference.host_transport_cost_d2h = 1;
    CHECK(Sim(sched("h2d"), q).end_ms(0, 0) == doctest::Approx(100.0 / 7.5).epsilon(1e-6));
    CHECK(Sim(sched("d2h"), q).end_ms(0, 0) == doctest::Approx(100.0 / 7.5).epsilon(1e-6));
  }
  {
    // The cost never makes the collective alone slower than its cap: at 8 GB/s
    // a 1.5 cost would fill the 10 GB/s link at 6.67; it is held at 1.25.
    ModelParams q = p;
    q.nccl.nccl_host_rank_bandwidth = Bandwidth::from_GBps(8);
    const Sim s(R"(name: alone
ranks: 2
settings: {nccl_p2p_disable: true}
streams: [s]
programs:
  - rank: all
    ops:
      - {op: collective, kind: all_to_all, group: world, bytes: 200 MB, stream: s}
)",
                q);
    CHECK(s.end_ms(0, 0) == doctest::Approx(12.5).epsilon(1e-6));
  }
}

TEST_CASE("an NVLink collective after nvlink_wake_after without NVLink collective traffic pays the wake-up first, and beside a host copy nvlink_copy_latency") {
  // kTopo: gpu0 <-> gpu1 over NVLink. A 2 MB all-to-all (1 MB each way,
  // 10 us at 100 GB/s), then `gap` of a bare duration kernel, then the same
  // all-to-all again; with a 25 ms threshold and 110 us of wake-up, the
  // second pays it after 30 ms, not after 10 ms. A 4-byte all-reduce
  // between (under nvlink_wake_min_bytes, 1 MiB) neither pays nor keeps the
  // link awake. A run starts awake: the first never pays.
  auto sched = [](const char* gap, bool tiny) {
    return fmt::format(R"(name: wake
ranks: 2
streams: [s]
programs:
  - rank: all
    ops:
      - {{op: collective, kind: all_to_all, group: world, bytes: 2 MB, stream: s}}
      - {{op: kernel, stream: s, duration: {}}}
{}      - {{op: collective, kind: all_to_all, group: world, bytes: 2 MB, stream: s}}
)",
                       gap, tiny ? "      - {op: collective, kind: all_reduce, group: world, bytes: 4 B, stream: s}\n" : "");
  };
  ModelParams p = quiet();
  p.nvlink.nvlink_wake_latency = Time::from_us(110);
  p.nvlink.nvlink_wake_after = Time::from_ms(25);
  auto a2a_us = [](const Sim& s, int i) { return (s.op(0, i).end - s.op(0, i).start).us(); };
  const Sim near(sched("10 ms", false), p), far(sched("30 ms", false), p), tiny(sched("30 ms", true), p);
  CHECK(a2a_us(near, 0) == doctest::Approx(10.0).epsilon(1e-6));
  CHECK(a2a_us(near, 2) == doctest::Approx(10.0).epsilon(1e-6));
  CHECK(a2a_us(far, 0) == doctest::Approx(10.0).epsilon(1e-6));
  CHECK(a2a_us(far, 2) == doctest::Approx(120.0).epsilon(1e-6));
  CHECK(a2a_us(tiny, 3) == doctest::Approx(120.0).epsilon(1e-6));
  CHECK(a2a_us(tiny, 2) < 1.0);
  // Off (0, the default): no step.
  const Sim off(sched("30 ms", false));
  CHECK(a2a_us(off, 2) == doctest::Approx(10.0).epsilon(1e-6));
  // Beside a host copy (a 100 MB H2D on another stream, 10 ms over kTopo's
  // PCIe): nvlink_copy_latency first; a 4-byte all-reduce does not pay it.
  ModelParams q = quiet();
  q.nvlink.nvlink_copy_latency = Time::from_us(12);
  const Sim beside(R"(name: beside
ranks: 2
streams: [s, c]
programs:
  - rank: all
    ops:
      - {op: memcpy, kind: h2d, bytes: 100 MB, stream: c}
      - {op: collective, kind: all_to_all, group: world, bytes: 2 MB, stream: s}
      - {op: collective, kind: all_reduce, group: world, bytes: 4 B, stream: s}
      - {op: stream_sync, stream: c}
      - {op: collective, kind: all_to_all, group: world, bytes: 2 MB, stream: s}
)",
                   q);
  CHECK(a2a_us(beside, 1) == doctest::Approx(22.0).epsilon(1e-6));
  CHECK(a2a_us(beside, 2) < 1.0);
  CHECK(a2a_us(beside, 4) == doctest::Approx(10.0).epsilon(1e-6));
}

TEST_CASE("compute runs nvlink_awake_slowdown slower while the rank's NVLink is awake: after an NVLink collective, not before one, not through host memory") {
  // kTopo: a 60 GFLOP kernel takes 1 ms. Kernel, 2 MB all-to-all over
  // NVLink, kernel (awake: 1.02 ms with 0.02), 30 ms of a bare duration
  // kernel (asleep from 25 ms), kernel (1 ms). Before any NVLink collective
  // the link is not awake (a run starts awake only for the wake-up
  // latency); through host memory (P2P off) nothing changes.
  const std::string sched = R"(name: awake
ranks: 2
streams: [s]
programs:
  - rank: all
    ops:
      - {op: kernel, stream: s, flops: 60.0e9}
      - {op: collective, kind: all_to_all, group: world, bytes: 2 MB, stream: s}
      - {op: kernel, stream: s, flops: 60.0e9}
      - {op: kernel, stream: s, duration: 30 ms}
      - {op: kernel, stream: s, flops: 60.0e9}
)";
  ModelParams p = quiet();
  p.nvlink.nvlink_awake_slowdown = 0.02;
  p.nvlink.nvlink_wake_after = Time::from_ms(25);
  auto ms = [](const Sim& s, int i) { return (s.op(0, i).end - s.op(0, i).start).ms(); };
  const Sim nv(sched, p);
  CHECK(ms(nv, 0) == doctest::Approx(1.0).epsilon(1e-9));
  CHECK(ms(nv, 2) == doctest::Approx(1.02).epsilon(1e-9));
  CHECK(ms(nv, 3) == doctest::Approx(30.0).epsilon(1e-9));  // a bare duration does not slow
  CHECK(ms(nv, 4) == doctest::Approx(1.0).epsilon(1e-9));
  const Sim host("settings: {nccl_p2p_disable: true}\n" + sched, p);
  CHECK(ms(host, 2) == doctest::Approx(1.0).epsilon(1e-9));
  const Sim off(sched);
  CHECK(ms(off, 2) == doctest::Approx(1.0).epsilon(1e-9));
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

TEST_CASE("a P2P copy to a higher rank runs on the NVLink at its rate, not capped by the copy engines' host rate") {
  // Rank 0 copies to rank 1 and rank 1 to rank 0, 1 GB each: the NVLink's
  // 100 GB/s each way, 10 ms. Before 2026-11-23 the route to a higher rank
  // was looked up before that rank had its GPU (a wrong route, or a crash),
  // and a calibrated copy_engine_bandwidth (the PCIe rate) held P2P copies
  // to it: 1 GB at 5 GB/s, 200 ms.
  ModelParams p = quiet();
  p.copies.copy_engine_bandwidth = Bandwidth::from_GBps(5);
  const Sim s(R"(name: p2p
ranks: 2
streams: [s]
programs:
  - rank: 0
    ops:
      - {op: memcpy, kind: p2p, bytes: 1 GB, stream: s, peer: 1}
  - rank: 1
    ops:
      - {op: memcpy, kind: p2p, bytes: 1 GB, stream: s, peer: 0}
)",
              p);
  CHECK(s.end_ms(0, 0) == doctest::Approx(10.0));
  CHECK(s.end_ms(1, 0) == doctest::Approx(10.0));
}

TEST_CASE("copies both ways at once on one GPU keep copy_bidir_factor of their engine's rate, pageable copies their own latency and rate") {
  ModelParams p = quiet();
  p.copies.copy_engine_bandwidth = Bandwidth::from_GBps(8);
  p.copies.copy_bidir_factor = 0.75;     // H2D: 6 GB/s while a D2H runs
  p.copies.copy_bidir_factor_d2h = 0.5;  // D2H: 4 GB/s while an H2D runs
  // 120 MB H2D beside 40 MB D2H: both at once until the D2H ends at 10 ms
  // (40 MB at 4 GB/s; the H2D has moved 60 MB at 6), then the H2D alone at
  // 8 GB/s: 60 MB more, 7.5 ms. A pageable D2H after it: 50 us + 10 MB at
  // 2 GB/s = 5.05 ms; a pageable H2D (no D2H rate or latency of its own: the
  // pinned set-up, 0, and pageable_bandwidth) 10 MB at 1 GB/s = 10 ms.
  p.copies.pageable_bandwidth = Bandwidth::from_GBps(1);
  p.copies.pageable_bandwidth_d2h = Bandwidth::from_GBps(2);
  p.copies.pageable_latency_d2h = Time::from_us(50);
  const std::string sched = R"(name: bidir
ranks: 1
streams: [a, b]
programs:
  - rank: 0
    ops:
      - {op: memcpy, kind: h2d, bytes: 120 MB, stream: a}
      - {op: memcpy, kind: d2h, bytes: 40 MB, stream: b}
      - {op: memcpy, kind: d2h, bytes: 10 MB, stream: b, host: pageable}
      - {op: memcpy, kind: h2d, bytes: 10 MB, stream: a, host: pageable}
)";
  const Sim s(sched, p);
  CHECK(s.end_ms(0, 1) == doctest::Approx(10.0));
  CHECK(s.end_ms(0, 0) == doctest::Approx(17.5));
  // The pageable D2H is issued once the host returns from nothing (async
  // pinned copies return at once): it starts when the D2H engine frees, at
  // 10 ms, beside the H2D (a pageable copy does not lower the other way's rate).
  CHECK(s.start_ms(0, 2) == doctest::Approx(10.0));
  CHECK(s.end_ms(0, 2) == doctest::Approx(15.05));
  CHECK(s.start_ms(0, 3) == doctest::Approx(17.5));
  CHECK(s.end_ms(0, 3) == doctest::Approx(27.5));
  // Factors 1: the copies do not interact (120 MB at 8 GB/s, 15 ms).
  ModelParams q = p;
  q.copies.copy_bidir_factor = q.copies.copy_bidir_factor_d2h = 1;
  const Sim t(sched, q);
  CHECK(t.end_ms(0, 0) == doctest::Approx(15.0));
  CHECK(t.end_ms(0, 1) == doctest::Approx(5.0));
}

TEST_CASE("copies both ways at once keep copy_bidir_table's share for their size, and a copy beside the other direction takes the longer set-up") {
  ModelParams p = quiet();
  p.copies.copy_engine_bandwidth = Bandwidth::from_GBps(8);
  p.copies.copy_latency = Time::from_us(20);
  p.copies.copy_latency_d2h = Time::from_us(5);
  p.copies.copy_bidir_factor = 0.75;  // without the table: H2D 6 GB/s, D2H 4 GB/s while the other way copies
  p.copies.copy_bidir_factor_d2h = 0.5;
  // 100 KB: H2D 4 GB/s, D2H 2 GB/s; 4 MB: H2D 6 GB/s, D2H 4 GB/s.
  p.copies.copy_bidir_table = {{100000, 0.5, 0.25}, {4000000, 0.75, 0.5}};
  // At 0 the 100 KB H2D starts (nothing the other way: its own 20 us), then
  // the 100 KB D2H beside it (the longer set-up, 20 us). From 20 us the H2D
  // at 4 GB/s ends at 45 us; the D2H at 2 GB/s has 50 KB left. The 4 MB H2D
  // starts at 45 (20 us set-up beside the D2H), the D2H ends at 70; the big
  // H2D moves 30 KB at 6 GB/s from 65 to 70, then 3.97 MB at 8 GB/s: 566.25 us.
  const std::string sched = R"(name: bidir-small
ranks: 1
streams: [a, b]
programs:
  - rank: 0
    ops:
      - {op: memcpy, kind: h2d, bytes: 100 KB, stream: a}
      - {op: memcpy, kind: d2h, bytes: 100 KB, stream: b}
      - {op: memcpy, kind: h2d, bytes: 4 MB, stream: a}
)";
  const Sim s(sched, p);
  CHECK(s.end_ms(0, 0) * 1e3 == doctest::Approx(45.0));
  CHECK(s.end_ms(0, 1) * 1e3 == doctest::Approx(70.0));
  CHECK(s.start_ms(0, 2) * 1e3 == doctest::Approx(45.0));
  CHECK(s.end_ms(0, 2) * 1e3 == doctest::Approx(566.25));
  // Without the table (the factors at every size, each direction its own
  // set-up): the D2H its own 5 us, then 4 GB/s beside the H2D's set-up and
  // flow: 30 us; the H2D from 20 us at 6 GB/s (60 KB) until then, 40 KB at
  // 8 GB/s: 35 us.
  ModelParams q = p;
  q.copies.copy_bidir_table.clear();
  const Sim t(sched, q);
  CHECK(t.end_ms(0, 1) * 1e3 == doctest::Approx(30.0));
  CHECK(t.end_ms(0, 0) * 1e3 == doctest::Approx(35.0));
}

TEST_CASE("host_span: at least the copy's bytes, on h2d and d2h copies only") {
  const auto e = [](const std::string& op) {
    return error_of("name: s\nranks: 2\nstreams: [a]\nprograms:\n  - rank: all\n    ops:\n      - " + op + "\n");
  };
  CHECK(e("{op: memcpy, kind: h2d, bytes: 4 MB, stream: a, host_span: 1 MB}").find("at least the copy's 4000000 bytes") != std::string::npos);
  CHECK(e("{op: memcpy, kind: p2p, bytes: 4 MB, stream: a, peer: 1, host_span: 1 GB}").find("applies only to h2d and d2h copies") != std::string::npos);
  CHECK(e("{op: memcpy, kind: h2d, bytes: 4 MB, stream: a, host_span: 1 GB}") == "");
}

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

TEST_CASE("hand-offs between engines: a copy that waited on a kernel, a kernel that waited on a copy, the event after a copy") {
  // 10 GB/s PCIe, no other latency: a 1 MB copy takes 100 us.
  ModelParams p = quiet();
  p.handoff.copy_after_kernel_latency = Time::from_us(6);
  p.handoff.copy_after_kernel_latency_d2h = Time::from_us(7);
  p.handoff.kernel_after_copy_latency = Time::from_us(3);
  p.overheads.event_gpu_time = Time::from_us(2);
  p.overheads.event_gpu_time_copy = Time::from_us(1);
  p.interference.gemm_slowdown_per_copy = 0;
  // Stream a: k1 (50 us), e0 (2 us after a kernel: 50-52); an H2D copy
  // issued while k1 runs waited on it: 52 + 6 hand-off + 100, done at 158; a
  // second copy after the first: no hand-off, 158-258; an event after it
  // takes 1 us (after a copy), to 259; k2 after the event (its last engine
  // op a copy) 3 us later: 262-272. Stream b waits on e0 and copies D2H:
  // its own hand-off, 7 us, done at 52 + 7 + 100 = 159.
  const Sim s(R"(name: handoff
ranks: 1
streams: [a, b]
programs:
  - rank: 0
    ops:
      - {op: kernel, name: k1, stream: a, duration: 50 us}
      - {op: event_record, event: e0, stream: a}
      - {op: memcpy, kind: h2d, bytes: 1 MB, stream: a}
      - {op: memcpy, kind: h2d, bytes: 1 MB, stream: a}
      - {op: event_record, event: e1, stream: a}
      - {op: kernel, name: k2, stream: a, duration: 10 us}
      - {op: stream_wait_event, stream: b, event: e0}
      - {op: memcpy, kind: d2h, bytes: 1 MB, stream: b}
)",
              p);
  CHECK(s.op(0, 1).end == Time::from_us(52));
  CHECK(s.op(0, 2).start == Time::from_us(52));
  CHECK(s.op(0, 2).end == Time::from_us(158));
  CHECK(s.op(0, 3).end == Time::from_us(258));
  CHECK(s.op(0, 4).end == Time::from_us(259));
  CHECK(s.op(0, 5).start == Time::from_us(259));
  CHECK(s.op(0, 5).end == Time::from_us(272));
  CHECK(s.op(0, 7).start == Time::from_us(52));
  CHECK(s.op(0, 7).end == Time::from_us(159));
  // What the run reports: three hand-offs, 6 + 3 + 7 us.
  CHECK(s.res.ranks[0].handoffs == 3);
  CHECK(s.res.ranks[0].handoff_time == Time::from_us(16));
  // Through a wait the hand-off runs from the wait's release, beside the
  // ops between: two events (2 us each, after a kernel's event) on the
  // copy stream after the wait on e0 (released at 52) end at 56, the D2H
  // copy starts its set-up at 52 + 7 = 59 all the same, done at 159; four
  // of them outlast it (60): no hand-off left, done at 160.
  for (const int events : {2, 4}) {
    std::string sched = "name: overlap\nranks: 1\nstreams: [a, b]\nprograms:\n  - rank: 0\n    ops:\n"
                        "      - {op: kernel, name: k1, stream: a, duration: 50 us}\n"
                        "      - {op: event_record, event: e0, stream: a}\n"
                        "      - {op: stream_wait_event, stream: b, event: e0}\n";
    for (int i = 0; i < events; ++i) sched += "      - {op: event_record, event: x" + std::to_string(i) + ", stream: b}\n";
    sched += "      - {op: memcpy, kind: d2h, bytes: 1 MB, stream: b}\n";
    const Sim o(sched, p);
    const auto copy_end = o.op(0, static_cast<int>(3 + events)).end;
    CHECK(copy_end == Time::from_us(events == 2 ? 159 : 160));
  }
  // Copies the host issues after the kernels ended (1 ms of host work
  // first): on the kernel's own stream the hand-off is paid all the same
  // (its stream's last op a kernel); waiting on an event after a kernel of
  // another stream, done before, it is not. Off: neither.
  const std::string late = R"(name: late
ranks: 1
streams: [a, b, c]
programs:
  - rank: 0
    ops:
      - {op: kernel, name: k1, stream: a, duration: 50 us}
      - {op: kernel, name: k2, stream: c, duration: 50 us}
      - {op: event_record, event: e, stream: c}
      - {op: host_work, duration: 1 ms}
      - {op: memcpy, kind: h2d, bytes: 1 MB, stream: a}
      - {op: stream_wait_event, stream: b, event: e}
      - {op: memcpy, kind: h2d, bytes: 1 MB, stream: b}
)";
  const Sim l(late, p);
  CHECK(l.op(0, 4).start == Time::from_us(1000));
  CHECK(l.op(0, 4).end == Time::from_us(1106));
  CHECK(l.op(0, 6).start == Time::from_us(1106));  // the one H2D engine, after the first
  CHECK(l.op(0, 6).end == Time::from_us(1206));      // no hand-off of its own
  const Sim off(late, quiet());
  CHECK(off.op(0, 4).end == Time::from_us(1100));
  CHECK(off.op(0, 6).end == Time::from_us(1200));
}

TEST_CASE("validate's timing events written in: an event before and after every op, one after every event and wait, mapped back to the schedule's ops") {
  ModelParams p = quiet();
  p.overheads.event_gpu_time = Time::from_us(2);
  const hw::Topology topo(hw::parse_topology_string(kTopo, "topo.yaml"));
  const Schedule s = parse_schedule_string(kJoin, "s.yaml");
  std::vector<std::vector<int>> at;
  const Schedule timed = with_timing_events(s, at);
  REQUIRE(timed.programs[0].ops->size() == 4 + 2 + 1 + 1 + 2);
  CHECK(at[0] == std::vector<int>{1, 3, 5, 8});
  const ExecResult r = without_timing_events(s, execute(timed, topo, p), at);
  REQUIRE(r.ops[0].size() == 4);
  // Stream a: timing event 0-2, k1 2-102, timing event 102-104, e 104-106,
  // timing event 106-108. Stream b: the wait binds to e (done at 106), its
  // timing event 106-108, k2's own timing event 108-110, k2 110-160.
  CHECK(r.ops[0][0].start.us() == doctest::Approx(2));
  CHECK(r.ops[0][0].end.us() == doctest::Approx(102));
  CHECK(r.ops[0][1].end.us() == doctest::Approx(106));
  CHECK(r.ops[0][2].waits_on == 1);
  CHECK(r.ops[0][3].start.us() == doctest::Approx(110));
  CHECK(r.ops[0][3].end.us() == doctest::Approx(160));
  CHECK(r.ops[0][3].op == &(*s.programs[0].ops)[3]);
  // Without them k2 runs 102 (after e's own 2 us) to 152.
  const ExecResult plain = execute(s, topo, p);
  CHECK(plain.ops[0][3].start.us() == doctest::Approx(102));
}
