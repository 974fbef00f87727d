// NCCL collectives: arrival, tables, algorithms, payloads, send/recv.
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
  CHECK(s.op(0, 0).start == Time::zero());  // rank 0's kernel is up, spinning
  CHECK(s.op(1, 1).start == Time::from_ms(1));
  // Each rank sends 100 MB over the 100 GB/s NVLink: 1 ms once both are there.
  CHECK(s.op(0, 0).end == Time::from_ms(2));
  CHECK(s.op(1, 1).end == Time::from_ms(2));
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
  for (size_t at = four.find("stream: comm}"); at != std::string::npos; at = four.find("stream: comm}", at + 1))
    four.replace(at, 13, "stream: comm, channels: 4}");
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
    Schedule s = parse_schedule_string(
        "name: c\nranks: 4\nstreams: [comm]\nprograms:\n  - rank: all\n    ops:\n"
        "      - {op: collective, kind: " +
            coll + ", algorithm: " + algo + ", group: world, bytes: 600 MB, stream: comm}\n",
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

TEST_CASE("sends in flight together end out of order, and a later send still meets its own recv") {
  // Send #1 ends before #0, and #2 starts while #0 still runs: each must meet
  // the recv of its number (a wrong match is a size mismatch error).
  Sim s(R"(name: sr
ranks: 2
streams: [a, b]
programs:
  - rank: 0
    ops:
      - {op: collective, kind: send, peer: 1, bytes: 100 MB, stream: a}
      - {op: collective, kind: send, peer: 1, bytes: 10 MB, stream: b}
      - {op: collective, kind: send, peer: 1, bytes: 5 MB, stream: b}
  - rank: 1
    ops:
      - {op: collective, kind: recv, peer: 0, bytes: 100 MB, stream: a}
      - {op: collective, kind: recv, peer: 0, bytes: 10 MB, stream: b}
      - {op: collective, kind: recv, peer: 0, bytes: 5 MB, stream: b}
)");
  // NVLink's 100 GB/s shared by two flows: #1's 10 MB by 0.2 ms, then #2's
  // 5 MB by 0.3 ms beside #0, whose last 85 MB take 0.85 ms alone.
  for (int r = 0; r < 2; ++r) {
    CHECK(s.end_ms(r, 1) == doctest::Approx(0.2));
    CHECK(s.end_ms(r, 2) == doctest::Approx(0.3));
    CHECK(s.end_ms(r, 0) == doctest::Approx(1.15));
  }
}
