// What the runner realises and the timing events it records, as the simulator sees them.
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
)",
                                           "s.yaml");
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
  CHECK((*s.programs[0].ops)[0].efficiency == 0);                                      // the input is not modified

  // A runner that ran cuDNN's SDPA: default-backend attention stays attention, as cudnn; GEMMs as before.
  const Schedule sd = as_realised(s, p, 2.1, true);
  const auto& sops = *sd.programs[0].ops;
  CHECK_FALSE(sops[0].realised);
  REQUIRE(sops[0].attention);
  CHECK(sops[0].attention->backend == AttnBackend::Cudnn);
  CHECK(kernel_time(sops[0], gpu, p) != kernel_time(ops[0], gpu, p));
  CHECK(sops[2].gemm);
}

TEST_CASE(
    "validate's timing events written in: an event before and after every op, one after every event and wait, mapped back to the schedule's ops") {
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
