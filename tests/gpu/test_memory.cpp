// Memory-bound kernels: HBM bytes at a share of the GPU's HBM bandwidth plus
// a ramp-up and tail (their fit from bench memory_kernel rows: tests/calib/test_memory.cpp).
#include <doctest/doctest.h>

#include "gpu/sim_fixture.hpp"

using namespace osim;
using namespace osim::test;

TEST_CASE("a memory-bound kernel takes hbm_latency + bytes / (HBM bandwidth x hbm_efficiency)") {
  const hw::Topology t(hw::parse_topology_string(kTopo, "topo.yaml"));
  const auto& gpu = t.node(t.find("gpu0"));
  Op op;
  op.kind = OpKind::Kernel;
  op.hbm_bytes = 850e6;
  ModelParams p;  // defaults: efficiency 0.85, no latency: 850 MB at 1000 GB/s x 0.85 = 1 ms
  CHECK(kernel_time(op, gpu, p).ms() == doctest::Approx(1.0));
  p.memory.hbm_efficiency = 0.5;
  p.memory.hbm_latency = Time::from_us(2.5);
  CHECK(kernel_time(op, gpu, p).us() == doctest::Approx(1700 + 2.5).epsilon(1e-9));
  // The same inside a run, on a stream.
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
