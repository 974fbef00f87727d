// NVLink's power states: the wake-up, the wait beside copies, compute while awake.
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

TEST_CASE(
    "an NVLink collective after nvlink_wake_after without NVLink collective traffic pays the wake-up first, and beside a host copy "
    "nvlink_copy_latency") {
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

TEST_CASE(
    "compute runs nvlink_awake_slowdown slower while the rank's NVLink is awake: after an NVLink collective, not before one, not through host "
    "memory") {
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
