// Compute: kernel times from the compute model, SM shares.
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
  op.attention = AttentionShape{1, 8, 1000, 1000, 128};  // 4*8*1000*1000*128 FLOPs at 60 TFLOP/s
  CHECK(kernel_time(op, gpu, p).ms() == doctest::Approx(4.0 * 8 * 1000 * 1000 * 128 / 60e12 * 1e3).epsilon(1e-6));
  op.attention.reset();
  op.dtype = DType::FP8;
  op.flops = 1e12;  // no fp8 rate in this topology
  CHECK_THROWS_AS(kernel_time(op, gpu, p), InputError);
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
