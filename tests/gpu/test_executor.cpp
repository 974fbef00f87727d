// The executor's mechanics: streams, events and hardware queues, memory, deadlock reports, a golden run.
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

TEST_CASE("two streams joined by an event") {
  Sim s(kJoin);
  CHECK(s.op(0, 3).start == Time::from_us(100));
  CHECK(s.op(0, 3).end == Time::from_us(150));
  CHECK(s.res.makespan == Time::from_us(150));
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
  CHECK(eight.op(0, 4).start == Time::zero());  // own queue: runs beside k1
  CHECK(eight.op(0, 3).start == Time::from_ms(1));
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
  const std::string e = error_of("name: many\nranks: 1\nstreams: [" + streams +
                                 "]\nprograms:\n  - rank: 0\n    ops:\n      - {op: kernel, stream: s0, duration: 1 us}\n");
  CHECK(e.find("declares 32768 streams; the simulator takes at most 32767: share streams between ops") != std::string::npos);
}
