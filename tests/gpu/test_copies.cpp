// Copies: engines, set-up, pageable staging, both ways at once, host bridges, P2P.
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

TEST_CASE("a pageable copy blocks the host, delaying the next kernel's launch") {
  ModelParams p = quiet();
  p.overheads.kernel_launch = Time::from_us(4);
  p.copies.pageable_bandwidth.h2d = Bandwidth::from_GBps(5);
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
  CHECK(pageable.op(0, 0).end == Time::from_ms(20));       // 100 MB at 5 GB/s
  CHECK(pageable.op(0, 1).issue == Time::from_ms(20));     // the host was blocked until then
  CHECK(pageable.op(0, 1).start == Time::from_us(20004));  // plus the launch overhead
  Sim pinned(with("pinned"), p);
  CHECK(pinned.op(0, 0).end == Time::from_ms(10));   // 100 MB at the link's 10 GB/s
  CHECK(pinned.op(0, 1).start == Time::from_us(4));  // overlaps the copy
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
  CHECK(s.op(0, 2).start == Time::zero());  // its own engine and link direction
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
  p.copies.copy_latency.h2d = Time::from_us(3);
  const Sim one(sched, p);
  CHECK(one.op(0, 0).end == Time::from_ms(10) + Time::from_us(3));
  CHECK(one.op(0, 1).end == Time::from_ms(10) + Time::from_us(3));  // one latency for both
  p.copies.copy_latency.d2h = Time::from_us(1);
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
  CHECK(Sim(copies(1), p, topo).op(0, 0).end.ms() == doctest::Approx(15.0));          // one GPU: its own 40 GB/s link, not 39
  CHECK(Sim(copies(2), p, topo).op(1, 0).end.ms() == doctest::Approx(600.0 / 35.0));  // 70 / 2 each
  CHECK(Sim(copies(3), p, topo).op(2, 0).end.ms() == doctest::Approx(20.0));          // 90 / 3 each
  CHECK(Sim(copies(4), p, topo).op(3, 0).end.ms() == doctest::Approx(25.0));          // 96 / 4 each
  // The topology's limit stays the ceiling.
  p.copies.host_h2d_aggregate = {Bandwidth::from_GBps(39), Bandwidth::from_GBps(150), Bandwidth::from_GBps(150)};
  CHECK(Sim(copies(3), p, topo).op(0, 0).end.ms() == doctest::Approx(18.0));  // min(150, 100) / 3
  // More GPUs than the list measured: it does not hold them (a smaller box
  // measured it), the bridge's limit does; 60 GB/s stretched flat would make it 30 ms.
  p.copies.host_h2d_aggregate = {Bandwidth::from_GBps(39), Bandwidth::from_GBps(60)};
  CHECK(Sim(copies(2), p, topo).op(0, 0).end.ms() == doctest::Approx(20.0));  // 60 / 2 each
  CHECK(Sim(copies(3), p, topo).op(0, 0).end.ms() == doctest::Approx(18.0));  // 100 / 3 each
  // A second copy on rank 0 after the others finish runs alone again: 600 MB
  // at 40 GB/s after 3 copies shared 60 GB/s (20 each) for 30 ms.
  p.copies.host_h2d_aggregate = {Bandwidth::from_GBps(39), Bandwidth::from_GBps(60), Bandwidth::from_GBps(60)};
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
)",
                p, topo);
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
  CHECK(Sim(bridge_copies(1, "d2h"), p, topo).op(0, 0).end.ms() == doctest::Approx(15.0));          // one GPU: its link
  CHECK(Sim(bridge_copies(2, "d2h"), p, topo).op(0, 0).end.ms() == doctest::Approx(600.0 / 35));    // 70 / 2
  CHECK(Sim(bridge_copies(3, "d2h"), p, topo).op(0, 0).end.ms() == doctest::Approx(30.0));          // 60 / 3
  CHECK(Sim(bridge_copies(4, "d2h"), p, topo).op(0, 0).end.ms() == doctest::Approx(600.0 / 22.5));  // more GPUs than measured: the bridge's 90 / 4
  p.copies.host_d2h_aggregate = {Bandwidth::from_GBps(39), Bandwidth::from_GBps(200)};
  CHECK(Sim(bridge_copies(3, "d2h"), p, topo).op(0, 0).end.ms() == doctest::Approx(20.0));  // never above the bridge's 90
  CHECK(Sim(bridge_copies(3, "h2d"), p, topo).op(0, 0).end.ms() == doctest::Approx(15.0));  // H2D: not held by it
}

TEST_CASE("a P2P copy to a higher rank runs on the NVLink at its rate, not capped by the copy engines' host rate") {
  // Rank 0 copies to rank 1 and rank 1 to rank 0, 1 GB each: the NVLink's
  // 100 GB/s each way, 10 ms: the route to a higher rank is looked up once
  // that rank has its GPU, and a calibrated copy_engine_bandwidth (the PCIe
  // rate) does not hold P2P copies (1 GB at 5 GB/s would take 200 ms).
  ModelParams p = quiet();
  p.copies.copy_engine_bandwidth.h2d = Bandwidth::from_GBps(5);
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
  p.copies.copy_engine_bandwidth.h2d = Bandwidth::from_GBps(8);
  p.copies.copy_bidir_factor.h2d = 0.75;  // H2D: 6 GB/s while a D2H runs
  p.copies.copy_bidir_factor.d2h = 0.5;   // D2H: 4 GB/s while an H2D runs
  // 120 MB H2D beside 40 MB D2H: both at once until the D2H ends at 10 ms
  // (40 MB at 4 GB/s; the H2D has moved 60 MB at 6), then the H2D alone at
  // 8 GB/s: 60 MB more, 7.5 ms. A pageable D2H after it: 50 us + 10 MB at
  // 2 GB/s = 5.05 ms; a pageable H2D (no D2H rate or latency of its own: the
  // pinned set-up, 0, and pageable_bandwidth) 10 MB at 1 GB/s = 10 ms.
  p.copies.pageable_bandwidth.h2d = Bandwidth::from_GBps(1);
  p.copies.pageable_bandwidth.d2h = Bandwidth::from_GBps(2);
  p.copies.pageable_latency.d2h = Time::from_us(50);
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
  q.copies.copy_bidir_factor.h2d = q.copies.copy_bidir_factor.d2h = 1;
  const Sim t(sched, q);
  CHECK(t.end_ms(0, 0) == doctest::Approx(15.0));
  CHECK(t.end_ms(0, 1) == doctest::Approx(5.0));
}

TEST_CASE("copies both ways at once keep copy_bidir_table's share for their size, and a copy beside the other direction takes the longer set-up") {
  ModelParams p = quiet();
  p.copies.copy_engine_bandwidth.h2d = Bandwidth::from_GBps(8);
  p.copies.copy_latency.h2d = Time::from_us(20);
  p.copies.copy_latency.d2h = Time::from_us(5);
  p.copies.copy_bidir_factor.h2d = 0.75;  // without the table: H2D 6 GB/s, D2H 4 GB/s while the other way copies
  p.copies.copy_bidir_factor.d2h = 0.5;
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

TEST_CASE("host_bidir_aggregate: a host bridge's limit on both directions together follows how many GPUs copy") {
  // Four GPUs under one bridge (200 GB/s each way), 40 GB/s links each way.
  const std::string bridge = bridge_topo("throughput_from_host: 200 GB/s, throughput_to_host: 200 GB/s");
  const char* topo = bridge.c_str();
  // Ranks 0..n-1 copy 600 MB H2D and 600 MB D2H at once; rank `one_way` (if any) H2D only.
  auto both_ways = [](int ranks, int one_way = -1) {
    std::string y = fmt::format("name: both\nranks: {}\nstreams: [up, down]\nprograms:\n", ranks);
    for (int r = 0; r < ranks; ++r) {
      y += fmt::format("  - rank: {}\n    ops:\n      - {{op: memcpy, kind: h2d, bytes: 600 MB, stream: up}}\n", r);
      if (r != one_way) y += "      - {op: memcpy, kind: d2h, bytes: 600 MB, stream: down}\n";
    }
    return y;
  };
  ModelParams p = quiet();
  CHECK(Sim(both_ways(3), p, topo).op(0, 1).end.ms() == doctest::Approx(15.0));  // no table: each link's 40 GB/s
  p.copies.host_bidir_aggregate = {Bandwidth::from_GBps(80), Bandwidth::from_GBps(100), Bandwidth::from_GBps(120)};
  CHECK(Sim(both_ways(1), p, topo).op(0, 1).end.ms() == doctest::Approx(15.0));  // one GPU: its links, not 80
  CHECK(Sim(both_ways(2), p, topo).op(1, 0).end.ms() == doctest::Approx(24.0));  // 4 copies share 100: 25 GB/s each
  CHECK(Sim(both_ways(3), p, topo).op(2, 1).end.ms() == doctest::Approx(30.0));  // 6 share 120: 20 each
  CHECK(Sim(both_ways(4), p, topo).op(3, 0).end.ms() == doctest::Approx(15.0));  // more GPUs than measured: each link's 40, not 120 / 8
  // GPUs count, not copies: rank 1 copying one way still counts once; 3 copies share 100.
  CHECK(Sim(both_ways(2, 1), p, topo).op(1, 0).end.ms() == doctest::Approx(18.0));
  // It binds only while both directions copy: a host may move less both ways
  // at once than one way alone (4xH200: 150 GB/s together, 164 H2D alone).
  p.copies.host_bidir_aggregate = {Bandwidth::from_GBps(80), Bandwidth::from_GBps(60)};
  CHECK(Sim(bridge_copies(2, "h2d"), p, topo).op(0, 0).end.ms() == doctest::Approx(15.0));  // each link's 40, not 60 / 2
  CHECK(Sim(both_ways(2), p, topo).op(0, 0).end.ms() == doctest::Approx(40.0));             // 4 copies share 60: 15 each
}

TEST_CASE("pageable_h2d_aggregate: the host's limit on pageable copies of several GPUs at once") {
  const std::string bridge = bridge_topo("throughput_from_host: 1000 GB/s");
  const char* topo = bridge.c_str();
  auto pageable = [](int ranks, const char* kind) {
    std::string y = bridge_copies(ranks, kind);
    y.replace(y.find("stream: copy}"), 13, "stream: copy, host: pageable}");
    return y;
  };
  ModelParams p = quiet();
  p.copies.pageable_bandwidth.h2d = Bandwidth::from_GBps(10);
  p.copies.pageable_bandwidth.d2h = Bandwidth::from_GBps(10);
  CHECK(Sim(pageable(3, "h2d"), p, topo).op(0, 0).end.ms() == doctest::Approx(60.0));  // no table: each at its 10 GB/s
  p.copies.pageable_h2d_aggregate = {Bandwidth::from_GBps(9), Bandwidth::from_GBps(16), Bandwidth::from_GBps(18)};
  CHECK(Sim(pageable(1, "h2d"), p, topo).op(0, 0).end.ms() == doctest::Approx(60.0));   // one GPU: its own rate, not 9
  CHECK(Sim(pageable(2, "h2d"), p, topo).op(1, 0).end.ms() == doctest::Approx(75.0));   // 16 / 2 each
  CHECK(Sim(pageable(3, "h2d"), p, topo).op(2, 0).end.ms() == doctest::Approx(100.0));  // 18 / 3 each
  // More GPUs than measured: each keeps the last entry's share (18 / 3), never more than fewer got.
  CHECK(Sim(pageable(4, "h2d"), p, topo).op(0, 0).end.ms() == doctest::Approx(100.0));
  p.copies.pageable_h2d_aggregate = {Bandwidth::from_GBps(9), Bandwidth::from_GBps(16)};
  CHECK(Sim(pageable(3, "h2d"), p, topo).op(2, 0).end.ms() == doctest::Approx(75.0));  // 16 / 2 each
  p.copies.pageable_h2d_aggregate = {Bandwidth::from_GBps(9)};                         // one GPU measured: nothing shared
  CHECK(Sim(pageable(3, "h2d"), p, topo).op(2, 0).end.ms() == doctest::Approx(60.0));  // each at its own 10
  p.copies.pageable_h2d_aggregate = {Bandwidth::from_GBps(9), Bandwidth::from_GBps(16), Bandwidth::from_GBps(18)};
  // Pinned copies and the other direction are not held by it.
  CHECK(Sim(bridge_copies(4, "h2d"), p, topo).op(0, 0).end.ms() == doctest::Approx(15.0));
  CHECK(Sim(pageable(4, "d2h"), p, topo).op(0, 0).end.ms() == doctest::Approx(60.0));
  p.copies.pageable_d2h_aggregate = {Bandwidth::from_GBps(9), Bandwidth::from_GBps(12), Bandwidth::from_GBps(12), Bandwidth::from_GBps(12)};
  CHECK(Sim(pageable(4, "d2h"), p, topo).op(0, 0).end.ms() == doctest::Approx(200.0));  // 12 / 4 each
}

TEST_CASE("the copy engine's cap is the host link's kind's: NVLink-C2C's own, PCIe's unchanged") {
  // gpu0 reaches its CPU over NVLink-C2C (a GH200), gpu1 over PCIe Gen5.
  const char* topo = R"(name: gh200-and-pcie
nodes:
  - {name: "cpu{i}", kind: cpu, memory: 480 GB, repeat: 2}
  - {name: "gpu{i}", kind: gpu, model: GH200, memory: 96 GB, copy_engines: 3, peak_tflops: {bf16: 100}, repeat: 2}
links:
  - {a: gpu0, b: cpu0, kind: nvlink_c2c, bandwidth: 450 GB/s, latency: 0.5 us}
  - {a: gpu1, b: cpu1, kind: pcie, bandwidth: 64 GB/s, latency: 1 us}
  - {a: cpu0, b: cpu1, kind: inter_socket, bandwidth: 100 GB/s, latency: 1 us}
)";
  const std::string sched = R"(name: c2c
ranks: 2
streams: [up, down]
programs:
  - rank: 0
    ops:
      - {op: memcpy, kind: h2d, bytes: 1 GB, stream: up}
      - {op: memcpy, kind: d2h, bytes: 1 GB, stream: down}
  - rank: 1
    ops:
      - {op: memcpy, kind: h2d, bytes: 1 GB, stream: up}
      - {op: memcpy, kind: d2h, bytes: 1 GB, stream: down}
)";
  ModelParams p = quiet();
  p.copies.copy_latency.h2d = Time::from_us(2);
  p.copies.copy_engine_bandwidth = {Bandwidth::from_GBps(54), Bandwidth::from_GBps(55)};  // measured over PCIe
  const double n = 1e9;
  // latency (set-up + route) + N / min(link, engine cap of the link's kind), in ms.
  auto expect_ms = [&](double latency_us, double link_GBps, double cap_GBps) { return latency_us * 1e-3 + n / (std::min(link_GBps, cap_GBps) * 1e6); };
  const Sim s(sched, p, topo);
  const CopyParams defaults;
  CHECK(defaults.copy_engine_bandwidth_c2c.h2d.GBps() == doctest::Approx(346));  // the public GH200 figures
  CHECK(defaults.copy_engine_bandwidth_c2c.d2h.GBps() == doctest::Approx(300));
  CHECK(s.end_ms(0, 0) == doctest::Approx(expect_ms(2.5, 450, 346)));  // 2.8927 ms, not 1 GB / 54 GB/s = 18.5 ms
  CHECK(s.end_ms(0, 1) == doctest::Approx(expect_ms(2.5, 450, 300)));
  CHECK(s.end_ms(1, 0) == doctest::Approx(expect_ms(3, 64, 54)));  // PCIe: the measured cap, as before
  CHECK(s.end_ms(1, 1) == doctest::Approx(expect_ms(3, 64, 55)));
  // A GH200's own calibration overrides the public figure; a cap above the link leaves the link's rate.
  p.copies.copy_engine_bandwidth_c2c.h2d = Bandwidth::from_GBps(400);
  p.copies.copy_engine_bandwidth_c2c.d2h = Bandwidth::from_GBps(500);
  const Sim own(sched, p, topo);
  CHECK(own.end_ms(0, 0) == doctest::Approx(expect_ms(2.5, 450, 400)));
  CHECK(own.end_ms(0, 1) == doctest::Approx(expect_ms(2.5, 450, 500)));
  CHECK(own.end_ms(1, 0) == doctest::Approx(s.end_ms(1, 0)));
  // Both ways at once (copy_bidir_factor): the share applies to the C2C cap too
  // (equal caps both ways, so that both directions end together).
  p.copies.copy_engine_bandwidth = {Bandwidth::from_GBps(54), Bandwidth::from_GBps(54)};
  p.copies.copy_engine_bandwidth_c2c = {Bandwidth::from_GBps(400), Bandwidth::from_GBps(400)};
  p.copies.copy_bidir_factor = {0.5, 0.5};
  const Sim both(sched, p, topo);
  CHECK(both.end_ms(0, 0) == doctest::Approx(expect_ms(2.5, 450, 200)));  // 400 x 0.5 while D2H runs
  CHECK(both.end_ms(0, 1) == doctest::Approx(expect_ms(2.5, 450, 200)));
  CHECK(both.end_ms(1, 0) == doctest::Approx(expect_ms(3, 64, 27)));  // 54 x 0.5
}
