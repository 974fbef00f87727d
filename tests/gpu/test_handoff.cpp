// Hand-offs between the copy engines and the SMs.
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

TEST_CASE("hand-offs between engines: a copy that waited on a kernel, a kernel that waited on a copy, the event after a copy") {
  // 10 GB/s PCIe, no other latency: a 1 MB copy takes 100 us.
  ModelParams p = quiet();
  p.handoff.copy_after_kernel_latency.h2d = Time::from_us(6);
  p.handoff.copy_after_kernel_latency.d2h = Time::from_us(7);
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
    std::string sched =
        "name: overlap\nranks: 1\nstreams: [a, b]\nprograms:\n  - rank: 0\n    ops:\n"
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
  CHECK(l.op(0, 6).end == Time::from_us(1206));    // no hand-off of its own
  const Sim off(late, quiet());
  CHECK(off.op(0, 4).end == Time::from_us(1100));
  CHECK(off.op(0, 6).end == Time::from_us(1200));
}
