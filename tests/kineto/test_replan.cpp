// Re-planning the layer-weight prefetch of an imported program (--prefetch):
// the pattern found, where each depth issues the copies, the makespan it
// gives in closed form, the memory it holds, and programs refused.
#include <doctest/doctest.h>

#include <string>

#include "core/errors.hpp"
#include "gpu/executor.hpp"
#include "hw/fabric.hpp"
#include "kineto/import.hpp"
#include "kineto/replan.hpp"
#include "schedule/builder.hpp"

using namespace osim;

namespace {

constexpr Bytes kBlockBytes = 100'000'000;

// A program as import-trace writes dit_offload.py's at depth P (P = 0: a
// blocking copy per block): B blocks of one kernel of `k`, each block's
// weights one H2D copy on stream20 closed by a record the compute stream
// waits on; every P blocks the copy stream waits for the compute stream
// and the next P blocks' copies are issued.
Schedule offload_program(int B, int P, Time k) {
  ScheduleBuilder b("offload", 1);
  const int c = b.stream("compute"), cs = b.stream("stream20");
  auto hw = [&] { b.add(0, ops::host_work(Time::from_us(10))); };
  b.add(0, ops::marker(c, "step 0 (step 0)"));
  std::vector<int> ready(static_cast<size_t>(B), -1);
  std::vector<bool> fetched(static_cast<size_t>(B), false);
  auto fetch = [&](int j) {
    if (j >= B || fetched[static_cast<size_t>(j)]) return;
    fetched[static_cast<size_t>(j)] = true;
    hw();
    b.add(0, ops::copy(cs, CopyKind::H2D, kBlockBytes));
    ready[static_cast<size_t>(j)] = b.event("ready" + std::to_string(j));
    b.add(0, ops::record(cs, ready[static_cast<size_t>(j)]));
  };
  for (int j = 0; j < P; ++j) fetch(j);
  for (int g = 0; g < B; ++g) {
    if (P == 0) {
      hw();
      b.add(0, ops::copy(c, CopyKind::H2D, kBlockBytes));
      b.add(0, ops::stream_sync(c));
    } else {
      if (g % P == 0) {
        const int e = b.event("batch" + std::to_string(g));
        b.add(0, ops::record(c, e));
        b.add(0, ops::wait_event(cs, e));
        for (int j = g + P; j < g + 2 * P; ++j) fetch(j);
      }
      hw();
      b.add(0, ops::wait_event(c, ready[static_cast<size_t>(g)]));
    }
    hw();
    b.add(0, ops::busy(c, k, "block"));
  }
  b.add(0, ops::marker(c, kStepsEndMarker));
  return b.build();
}

struct Sim {
  hw::Topology topo{hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/dgx-h100.yaml")};
  ModelParams params;
  Sim() { params.interference.gemm_slowdown_per_copy = 0; }  // kernels beside copies keep their time: the closed forms hold exactly
  ExecResult run(const Schedule& s) const {
    ExecOptions o;
    o.keep_records = true;
    return execute(s, topo, params, o);
  }
  // How long one block's copy takes alone.
  Time copy_alone() const {
    ScheduleBuilder b("one copy", 1);
    const int c = b.stream("compute");
    b.add(0, ops::copy(c, CopyKind::H2D, kBlockBytes));
    const ExecResult r = run(b.build());
    const OpRecord& rec = r.ops[0][0];
    return rec.end - rec.start;
  }
};

kineto::ReplanSummary replan(const Schedule& s, int depth, Schedule* out = nullptr) {
  kineto::ReplanSummary sum;
  Schedule r = kineto::replan_prefetch(s, {depth, 0}, "test.json", &sum);
  if (out) *out = std::move(r);
  return sum;
}

std::string refusal(const Schedule& s, int depth) {
  try {
    kineto::replan_prefetch(s, {depth, 0}, "test.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

double ms(Time t) { return t.s() * 1e3; }
Time times(Time t, double f) { return Time::from_ps(static_cast<int64_t>(static_cast<double>(t.ps()) * f)); }

}  // namespace

TEST_CASE("the prefetch pattern found: its depth, blocks, copies and the buffers it holds") {
  for (int P : {0, 1, 2, 3}) {
    CAPTURE(P);
    const kineto::ReplanSummary s = replan(offload_program(8, P, Time::from_ms(1)), P);
    CHECK(s.found == P);
    CHECK(s.blocks == 8);
    CHECK(s.copies == 8);
    CHECK(s.block_bytes == kBlockBytes);
    CHECK(s.resident_found == std::max(1, 2 * P));  // depth P: the block running and up to 2P - 1 ahead
    CHECK(s.resident_asked == s.resident_found);
    CHECK(s.moved == 0);  // the same depth: every block's copies where they were
  }
  // Depth 1 asked of depth 2: blocks 2..7 issued a block later or earlier; block 0 and 1 before the first.
  const kineto::ReplanSummary s = replan(offload_program(8, 2, Time::from_ms(1)), 1);
  CHECK(s.found == 2);
  CHECK(s.resident_asked == 2);
  // Issued before block: depth 2 {0, 0, 0, 0, 2, 2, 4, 4}, depth 1 {0, 0, 1, 2, 3, 4, 5, 6}: blocks 2 to 7 move.
  CHECK(s.moved == 6);
}

TEST_CASE("each depth issues the copies where dit_offload.py does, with the host time that issued them") {
  Schedule s;
  replan(offload_program(6, 1, Time::from_ms(1)), 2, &s);
  const int c = s.find_stream("compute"), cs = s.find_stream("stream20");
  // Copies before each block's wait: 2 (the first two) + 2 (batch at block 0), none at 1, 2 at block 2 ...
  std::vector<int> copies_before_wait;
  int copies = 0, allocs = 0, frees = 0;
  Time host;
  for (const Op& op : *s.programs[0].ops) {
    if (op.kind == OpKind::Memcpy) {
      ++copies;
      CHECK(op.stream == cs);
    }
    if (op.kind == OpKind::StreamWaitEvent && op.stream == c) copies_before_wait.push_back(copies);
    if (op.kind == OpKind::Alloc) {
      ++allocs;
      CHECK(op.bytes == kBlockBytes);
    }
    if (op.kind == OpKind::Free) {
      ++frees;
      CHECK(op.stream == c);
    }
    if (op.kind == OpKind::HostWork) host += *op.duration;
  }
  CHECK(copies_before_wait == std::vector<int>{4, 4, 6, 6, 6, 6});
  CHECK(allocs == 6);
  CHECK(frees == 6);
  CHECK(ms(host) == doctest::Approx(ms(times(Time::from_us(10), 18))));  // each copy's host work and each wait's: measured, moved, none lost
  // Depth 0: on the compute stream, each followed by a synchronize of it.
  replan(offload_program(6, 1, Time::from_ms(1)), 0, &s);
  const auto& p = *s.programs[0].ops;
  int synced = 0;
  for (size_t i = 0; i + 2 < p.size(); ++i)
    if (p[i].kind == OpKind::Memcpy) {
      CHECK(p[i].stream == c);
      CHECK(p[i + 1].kind == OpKind::HostWork);  // the host time before the block's wait, before its synchronize
      synced += p[i + 2].kind == OpKind::StreamSync && p[i + 2].stream == c;
    }
  CHECK(synced == 6);
}

TEST_CASE("re-planned makespans in closed form: compute-bound and copy-bound blocks") {
  const Sim sim;
  const Time tc = sim.copy_alone();
  const int B = 6;
  REQUIRE(ms(tc) > 1.0);  // 100 MB over PCIe: ~2 ms
  auto makespan = [&](const Schedule& s) { return sim.run(s).makespan; };
  // Compute-bound (a block computes 3 copies' time): ahead, only the first copy shows, T = tc + B k;
  // blocking, every copy does, T = B (tc + k). Re-planned from depth 1 to 0 the makespan grows by (B - 1) tc.
  {
    const Time k = times(tc, 3);
    const Schedule d1 = offload_program(B, 1, k);
    Schedule d0, d2;
    replan(d1, 0, &d0);
    replan(d1, 2, &d2);
    const double t1 = ms(makespan(d1)), t0 = ms(makespan(d0)), t2 = ms(makespan(d2));
    CHECK(t1 == doctest::Approx(ms(tc + times(k, B))).epsilon(0.005));
    CHECK(t0 - t1 == doctest::Approx(ms(times(tc, B - 1))).epsilon(0.01));
    CHECK(t2 == doctest::Approx(t1).epsilon(0.002));  // deeper changes nothing where the copies already hide
    // Re-planned the same depth: the program as imported, to the free calls' time.
    Schedule same;
    replan(d1, 1, &same);
    CHECK(ms(makespan(same)) == doctest::Approx(t1).epsilon(0.001));
    // And back: depth 0 re-planned to 1 gives the depth-1 program's makespan.
    Schedule back;
    replan(offload_program(B, 0, k), 1, &back);
    CHECK(ms(makespan(back)) == doctest::Approx(t1).epsilon(0.002));
  }
  // Copy-bound (a block computes a third of a copy): ahead, the copies run back to back, T = B tc + k;
  // blocking, T = B (tc + k): re-planning to 0 adds (B - 1) k.
  {
    const Time k = times(tc, 1.0 / 3);
    const Schedule d2 = offload_program(B, 2, k);
    Schedule d0;
    replan(d2, 0, &d0);
    const double t2 = ms(makespan(d2)), t0 = ms(makespan(d0));
    CHECK(t2 == doctest::Approx(ms(times(tc, B) + k)).epsilon(0.005));
    CHECK(t0 - t2 == doctest::Approx(ms(times(k, B - 1))).epsilon(0.03));
  }
}

TEST_CASE("re-planned peak VRAM: the blocks' buffers resident at once") {
  const Sim sim;
  for (int N : {0, 1, 2, 3}) {
    CAPTURE(N);
    Schedule s;
    const kineto::ReplanSummary sum = replan(offload_program(8, 2, Time::from_ms(1)), N, &s);
    const ExecResult r = sim.run(s);
    // Allocated as the host sees it (PyTorch's peak allocated): depth N holds 2N (the N blocks of the
    // last batch and the N issued at this one), blocking 1. The measured programs' peak allocated
    // (validate/reference/h200/programs-run-10/): 697, 937, 1417, 1897 MiB at depth 0 to 3, 1, 2, 4, 6 blocks of 240 MiB apart.
    CHECK(r.ranks[0].peak_vram == kBlockBytes * static_cast<Bytes>(std::max(1, 2 * N)));
    CHECK(sum.resident_asked == std::max(1, 2 * N));
  }
}

TEST_CASE("programs without the pattern are refused, saying what was found") {
  // No copies at all: a resident program.
  {
    ScheduleBuilder b("resident", 1);
    const int c = b.stream("compute");
    b.add(0, ops::busy(c, Time::from_ms(1)));
    b.add(0, ops::busy(c, Time::from_ms(1)));
    const std::string e = refusal(b.build(), 1);
    CHECK(e.find("test.json") != std::string::npos);
    CHECK(e.find("--prefetch: rank 0: no host-to-device copies: there is no weight prefetch to re-plan") != std::string::npos);
  }
  // Copies on a copy stream that nothing waits for.
  {
    ScheduleBuilder b("unwaited", 1);
    const int c = b.stream("compute"), cs = b.stream("stream20");
    for (int j = 0; j < 3; ++j) {
      b.add(0, ops::copy(cs, CopyKind::H2D, kBlockBytes));
      b.add(0, ops::record(cs, b.event("e" + std::to_string(j))));
      b.add(0, ops::busy(c, Time::from_ms(1)));
    }
    CHECK(refusal(b.build(), 1)
              .find("3 blocks' copies (3 host-to-device copies, each block's closed by a record on 'stream20') but 0 waits of "
                    "the compute stream on them") != std::string::npos);
  }
  // Copies on two streams besides the compute stream: which are the weights is ambiguous.
  {
    ScheduleBuilder b("two streams", 1);
    const int c = b.stream("compute"), s1 = b.stream("stream20"), s2 = b.stream("stream21");
    b.add(0, ops::copy(s1, CopyKind::H2D, kBlockBytes));
    b.add(0, ops::copy(s2, CopyKind::H2D, kBlockBytes));
    b.add(0, ops::copy(s2, CopyKind::H2D, kBlockBytes));
    b.add(0, ops::busy(c, Time::from_ms(1)));
    CHECK(refusal(b.build(), 1).find("host-to-device copies on 2 streams besides the compute stream (1 on 'stream20', 2 on 'stream21')") !=
          std::string::npos);
  }
  // Copies on the compute stream that nothing synchronizes: neither pattern.
  {
    ScheduleBuilder b("async on compute", 1);
    const int c = b.stream("compute");
    b.add(0, ops::copy(c, CopyKind::H2D, kBlockBytes));
    b.add(0, ops::busy(c, Time::from_ms(1)));
    b.add(0, ops::copy(c, CopyKind::H2D, kBlockBytes));
    b.add(0, ops::busy(c, Time::from_ms(1)));
    CHECK(refusal(b.build(), 0).find("2 host-to-device copies, all on the compute stream and none followed by a synchronize") != std::string::npos);
  }
  // One block: nothing to issue ahead.
  CHECK(refusal(offload_program(1, 1, Time::from_ms(1)), 2).find("1 block's copies found (1 host-to-device copies): nothing to issue ahead") !=
        std::string::npos);
}

TEST_CASE("the reference program's traces: depth 2 and depth 0 found, 16 blocks") {
  const std::string root = std::string(OVERLAPSIM_SOURCE_DIR) + "/validate/reference/h100-sxm/";
  for (const auto& c : {std::tuple{"traces/", "dit-4096-layerwise-pf2-pinned", 2}, std::tuple{"traces/", "dit-16384-layerwise-pf0-pinned", 0},
                        std::tuple{"traces-default/", "dit-16384-layerwise-pf2-pageable", 2}}) {
    const auto& [dir, name, depth] = c;
    CAPTURE(std::get<1>(c));  // clang: a lambda cannot capture a structured binding
    const kineto::ImportedTrace t = kineto::import_traces({root + dir + name + ".trace.json.gz"});
    kineto::ReplanSummary sum;
    const Schedule same = kineto::replan_prefetch(t.schedule, {depth, 8}, name, &sum);
    CHECK(sum.found == depth);
    CHECK(sum.blocks == 16);
    CHECK(sum.copies == 16);
    CHECK(sum.block_bytes == 251658240);  // 120 M bf16 weights per block
    CHECK(sum.moved == 0);
    // Every op but the pattern's kept: the same kernels and host time.
    auto count = [](const Schedule& s, OpKind k) {
      int64_t n = 0;
      for (const Op& op : *s.programs[0].ops) n += op.kind == k;
      return n;
    };
    CHECK(count(same, OpKind::Kernel) == count(t.schedule, OpKind::Kernel));
    CHECK(count(same, OpKind::Memcpy) == count(t.schedule, OpKind::Memcpy));
  }
  // The resident program has no copies to re-plan.
  const kineto::ImportedTrace r = kineto::import_traces({root + "traces/dit-16384-none.trace.json.gz"});
  CHECK(refusal(r.schedule, 2).find("no host-to-device copies") != std::string::npos);
}
