// The schedule format: parse errors, the round trip through to_yaml, checks.
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

TEST_CASE("bad schedules name file:line and what to do") {
  auto err = [](const std::string& ops, const std::string& extra = "") {
    return error_of("name: bad\nranks: 2\nstreams: [s]\n" + extra + "programs:\n  - rank: all\n    ops:\n" + ops);
  };
  CHECK(err("      - {op: kernel, stream: t, duration: 1 us}\n").find("s.yaml:7:") == 0);
  CHECK(err("      - {op: kernel, stream: t, duration: 1 us}\n").find("unknown stream 't'") != std::string::npos);
  CHECK(
      err("      - {op: collective, kind: all_gather, group: wrld, bytes: 1 MB, stream: s}\n").find("unknown group 'wrld' (did you mean 'world'?)") !=
      std::string::npos);
  CHECK(err("      - {op: stream_wait_event, stream: s, event: e}\n").find("before any event_record of it") != std::string::npos);
  CHECK(err("      - {op: memcpy, kind: h2d, bytes: -5 MB, stream: s}\n").find("negative") != std::string::npos);
  CHECK(err("      - {op: kernal, stream: s}\n").find("unknown op 'kernal' (did you mean 'kernel'?)") != std::string::npos);
  CHECK(err("      - {op: kernel, stream: s}\n").find("give the work one way") != std::string::npos);
  CHECK(err("      - {op: kernel, stream: s, duration: 1 us, views: 256}\n").find("'views': is how many framework calls that launch nothing") !=
        std::string::npos);
  CHECK(err("      - {op: event_record, event: e, stream: s, views: 1}\n").find("unknown key 'views'") != std::string::npos);
  CHECK(err("      - {op: kernel, stream: s, duration: 1 us, launches: 0}\n").find("'launches': is how many kernel launches the host issues") !=
        std::string::npos);
  CHECK(err("      - {op: memcpy, kind: h2d, bytes: 1 MB, stream: s, launches: 2}\n").find("unknown key 'launches'") != std::string::npos);
  CHECK(err("      - {op: kernel, stream: s, gemm: {m: 1, n: 1, k: 1}, bytes: 1 MB}\n").find("give the work one way") != std::string::npos);
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
      - {op: kernel, name: a, stream: compute, attention: {heads: 2, seq: 64, head_dim: 64}, views: 6, launches: 3}
      - {op: kernel, name: f, stream: compute, flops: 1e9, bytes: 1 MB, efficiency: 0.5}
      - {op: kernel, name: measured, stream: compute, duration: 7 us, gemm: {m: 8, n: 8, k: 8}}
      - {op: kernel, name: measured bytes, stream: compute, duration: 2 us, bytes: 4 MB}
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
  CHECK((*b.programs[1].ops)[12].label == "layer 1");
  // A measured duration beside a shape: both kept.
  const Op& measured = (*b.programs[0].ops)[8];
  CHECK(measured.duration == Time::from_us(7));
  CHECK(measured.gemm->k == 8);
  CHECK((*b.programs[0].ops)[9].hbm_bytes == 4e6);
  CHECK(*(*b.programs[0].ops)[9].duration == Time::from_us(2));
  CHECK((*b.programs[0].ops)[2].host_span == 64'000'000);
  CHECK((*b.programs[0].ops)[1].host_span == 0);
  CHECK(y1.find("host_span: 64000000") != std::string::npos);
  CHECK(b.runtime.device_max_connections == 1);
  CHECK(b.streams[1].priority == 1);
  CHECK((*b.programs[0].ops)[6].views == 6);
  CHECK((*b.programs[0].ops)[6].launches == 3);
  CHECK((*b.programs[0].ops)[5].launches == 1);
  CHECK((*b.programs[0].ops)[5].views == 0);
}

TEST_CASE("host_span: at least the copy's bytes, on h2d and d2h copies only") {
  const auto e = [](const std::string& op) {
    return error_of("name: s\nranks: 2\nstreams: [a]\nprograms:\n  - rank: all\n    ops:\n      - " + op + "\n");
  };
  CHECK(e("{op: memcpy, kind: h2d, bytes: 4 MB, stream: a, host_span: 1 MB}").find("at least the copy's 4000000 bytes") != std::string::npos);
  CHECK(e("{op: memcpy, kind: p2p, bytes: 4 MB, stream: a, peer: 1, host_span: 1 GB}").find("applies only to h2d and d2h copies") !=
        std::string::npos);
  CHECK(e("{op: memcpy, kind: h2d, bytes: 4 MB, stream: a, host_span: 1 GB}") == "");
}

TEST_CASE("a barrier is an all-reduce of one fp32 value, and a rank's barrier ends when the last rank arrives") {
  const Sim s(R"(name: barrier
ranks: 2
streams: [s]
programs:
  - rank: 0
    ops:
      - {op: collective, kind: barrier, group: world, stream: s}
  - rank: 1
    ops:
      - {op: kernel, stream: s, duration: 3 ms}
      - {op: collective, kind: barrier, group: world, stream: s}
)");
  // Rank 0 arrives at 0 and waits for rank 1, which arrives at 3 ms; the 4 bytes take no time to speak of.
  CHECK(s.end_ms(0, 0) == doctest::Approx(3.0).epsilon(1e-3));
  CHECK(s.end_ms(0, 0) >= 3.0);
  const Op& b = (*s.sched.programs[0].ops)[0];
  CHECK(b.coll == CollKind::AllReduce);
  CHECK(b.bytes == 4);
  CHECK(b.dtype == DType::FP32);
  CHECK(b.label == "barrier");
  CHECK(
      error_of(
          "name: b\nranks: 1\nstreams: [s]\nprograms:\n  - rank: 0\n    ops: [{op: collective, kind: barrier, group: world, bytes: 8, stream: s}]\n")
          .find("leave bytes out") != std::string::npos);
}
