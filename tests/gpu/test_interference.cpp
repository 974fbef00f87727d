// Interference between kernels, collectives and copies.
#include <doctest/doctest.h>

#include <algorithm>
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
)")
            .find("send #0 and its matching recv differ") == 0);
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
)",
        p);
  // The kernel runs at 1 - (0.04 + 0.0025 * 4) = 0.95 while the collective runs.
  const double k_end = 1.0 / 0.95;
  // The collective: 4 channels x 19.5 = 78 GB/s, / (0.908 + 0.0455 x 4) while the kernel runs.
  const double slow = 78e9 / (0.908 + 0.0455 * 4), fast = 78e9;
  const double sent_during = slow * k_end * 1e-3;
  const double a2a_end = k_end + (100e6 - sent_during) / fast * 1e3;
  CHECK(s.end_ms(0, 1) == doctest::Approx(k_end).epsilon(1e-9));
  CHECK(s.end_ms(0, 0) == doctest::Approx(a2a_end).epsilon(1e-9));
}

TEST_CASE("a GEMM on every GPU slows the all-to-all at both ends of each flow (comm_slowdown_receiver)") {
  ModelParams p = quiet();
  p.interference.comm_slowdown_receiver = 1.5;
  // Two ranks, 100 MB a flow at 4 channels x 19.5 = 78 GB/s; kernels of
  // 100 ms outlast it. A flow from a computing rank runs / s, s = 0.908 +
  // 0.0455 x 4; into one, / 1.5 as well.
  auto a2a_end_ms = [&](bool rank1_computes, int times = 1) {
    const std::string kernel = "      - {op: kernel, stream: compute, duration: 100 ms}\n";
    std::string a2a;
    for (int i = 0; i < times; ++i) a2a += "      - {op: collective, kind: all_to_all, group: world, bytes: 200 MB, channels: 4, stream: comm}\n";
    Sim sim("name: both\nranks: 2\nstreams: [compute, comm]\nprograms:\n  - rank: 0\n    ops:\n" + a2a + kernel + "  - rank: 1\n    ops:\n" + a2a +
                (rank1_computes ? kernel : ""),
            p);
    return sim.end_ms(0, times - 1);
  };
  const double s = 0.908 + 0.0455 * 4, flow = 100e6 / 78e9 * 1e3;
  // GPU 0 computing: its send runs / s, what it receives / 1.5; it ends with the slower.
  CHECK(a2a_end_ms(false) == doctest::Approx(flow * std::max(s, 1.5)).epsilon(1e-9));
  // Both computing: every flow / (s x 1.5).
  CHECK(a2a_end_ms(true) == doctest::Approx(flow * s * 1.5).epsilon(1e-9));
  // Recurring, the all-to-all is replayed in closed form: the same times.
  CHECK(a2a_end_ms(false, 3) == doctest::Approx(3 * flow * std::max(s, 1.5)).epsilon(1e-9));
  CHECK(a2a_end_ms(true, 3) == doctest::Approx(3 * flow * s * 1.5).epsilon(1e-9));
  // The default (1): only the sender counts, as before.
  p.interference.comm_slowdown_receiver = 1.0;
  CHECK(a2a_end_ms(true) == doctest::Approx(flow * s).epsilon(1e-9));
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
  p.interference.copy_weight.h2d = 3;
  p.interference.copy_weight.d2h = 2;
  p.interference.host_transport_cost.h2d = 1.5;
  p.interference.host_transport_cost.d2h = 2;
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
    q.interference.copy_weight.d2h = 0;
    q.interference.host_transport_cost.h2d = q.interference.host_transport_cost.d2h = 1;
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

TEST_CASE("a measured kernel beside the copies it was measured with takes its measured time again") {
  // 1 ms measured; beside it one H2D copy (and in the two-engine case a D2H
  // one too). `beside` says how long 1 and 2 engines were busy where it was
  // measured. Each busy engine runs a kernel at 1 - s.
  ModelParams p = quiet();
  const double s = 0.1, d_ms = 1.0;
  p.interference.gemm_slowdown_per_copy = s;
  auto run = [&](bool h2d, bool d2h, const std::string& beside) {
    std::string ops;
    if (h2d) ops += "      - {op: memcpy, kind: h2d, bytes: 2 MB, stream: c1}\n";
    if (d2h) ops += "      - {op: memcpy, kind: d2h, bytes: 2 MB, stream: c2}\n";
    ops += "      - {op: kernel, stream: k, duration: 1 ms" + (beside.empty() ? "" : ", beside_copies: " + beside) + "}\n";
    return Sim("name: m\nranks: 1\nstreams: [k, c1, c2]\nprograms:\n  - rank: 0\n    ops:\n" + ops, p);
  };
  auto kernel_ms = [](const Sim& sim) {
    const OpRecord& k = sim.res.ops[0].back();
    return (k.end - k.start).ms();
  };
  auto copy_ns = [](const Sim& sim) {
    const OpRecord& c = sim.op(0, 0);
    return (c.end - c.start).ps() / 1000;
  };
  const int64_t c = copy_ns(run(true, false, ""));  // one copy's time, whole ns
  REQUIRE(c > 1000);
  REQUIRE(c < 500'000);  // the kernel outlasts it
  const double c_ms = static_cast<double>(c) * 1e-6;
  const std::string one = fmt::format("[{} ns]", c);
  // Recorded as replayed: the measured 1 ms again (before, the copy slowed it twice: 1 ms + s * c).
  CHECK(kernel_ms(run(true, false, one)) == doctest::Approx(d_ms).epsilon(1e-9));
  CHECK(kernel_ms(run(true, false, "")) == doctest::Approx(d_ms + s * c_ms).epsilon(1e-9));
  // Replayed without the copy: its solo time, 1 ms - s * c.
  CHECK(kernel_ms(run(false, false, one)) == doctest::Approx(d_ms - s * c_ms).epsilon(1e-9));
  // Two engines: both copies from 0, 2 engines busy for the shorter, 1 for the rest.
  auto copy2_ns = [](const Sim& sim) {
    const OpRecord& d = sim.op(0, 1);
    return (d.end - d.start).ps() / 1000;
  };
  const Sim probe = run(true, true, "");
  const int64_t lo = std::min(copy_ns(probe), copy2_ns(probe)), hi = std::max(copy_ns(probe), copy2_ns(probe));
  const std::string two = fmt::format("[{} ns, {} ns]", hi - lo, lo);
  const Sim both = run(true, true, two);
  REQUIRE(std::min(copy_ns(both), copy2_ns(both)) == lo);
  REQUIRE(std::max(copy_ns(both), copy2_ns(both)) == hi);
  CHECK(kernel_ms(both) == doctest::Approx(d_ms).epsilon(1e-9));
  const double solo2 = d_ms - s * static_cast<double>(hi - lo) * 1e-6 - (1 - (1 - s) * (1 - s)) * static_cast<double>(lo) * 1e-6;
  CHECK(kernel_ms(run(false, false, two)) == doctest::Approx(solo2).epsilon(1e-9));
  // More beside it than its duration, or without a duration: refused.
  CHECK(error_of("name: m\nranks: 1\nstreams: [k]\nprograms:\n  - rank: 0\n    ops:\n      - {op: kernel, stream: k, duration: 1 us, beside_copies: "
                 "[800 ns, 300 ns]}\n")
            .find("more than the kernel's duration") != std::string::npos);
  CHECK(error_of("name: m\nranks: 1\nstreams: [k]\nprograms:\n  - rank: 0\n    ops:\n      - {op: kernel, stream: k, flops: 1e9, beside_copies: [8 ns]}\n")
            .find("give the kernel its duration") != std::string::npos);
}
