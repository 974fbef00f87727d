// The framework's per-request costs (request:): the blocking first
// prefetch of each forward and the outside models moved in and out.
#include <doctest/doctest.h>

#include <algorithm>

#include "gpu/sim_fixture.hpp"
#include "workload/dit.hpp"

using namespace osim;

namespace {
const char* kJob = R"(name: w
model:
  dims: {hidden: 1000}
  blocks:
    - {name: b, count: 4, params: hidden*hidden, ops: [{gemm: g, m: tokens, n: hidden, k: hidden}]}
  outside:
    - {name: te, params: 1000000, runs: before}
tokens: 1000
steps: 2
cfg: none
offload: {policy: layerwise, prefetch_size: 2}
)";
int64_t count(const Schedule& s, OpKind kind, int stream) {
  const auto& ops = *s.programs[0].ops;
  return std::count_if(ops.begin(), ops.end(), [&](const Op& op) { return op.kind == kind && op.stream == stream; });
}
}  // namespace

TEST_CASE("request.first_prefetch_blocking: each forward copies its first layer in on the compute stream, then prefetches its own") {
  const hw::Topology topo(hw::parse_topology_string(test::kTopo, "topo.yaml"));
  // 20,000 tokens: a block's GEMM (0.4 ms at 100 TFLOP/s) outlasts a layer's copy (2 MB at 10 GB/s, 0.2 ms).
  const std::string job = std::string(kJob).replace(std::string(kJob).find("tokens: 1000"), 12, "tokens: 20000");
  const DitWorkload base = parse_workload_string(job, "w.yaml");
  const DitWorkload blocking = parse_workload_string(job + "request: {first_prefetch_blocking: true}\n", "w.yaml");
  const Schedule a = generate_schedule(base), b = generate_schedule(blocking);
  constexpr int kCompute = 0, kCopy = 1;
  CHECK(count(a, OpKind::Memcpy, kCopy) == 8);     // every layer of both forwards, once
  CHECK(count(b, OpKind::Memcpy, kCompute) == 2);  // one a forward, blocking
  CHECK(count(b, OpKind::Memcpy, kCopy) == 6);
  // The second forward's first layer no longer comes in under the first's last blocks: one layer's copy more at least.
  CHECK(execute(b, topo, blocking.params).makespan - execute(a, topo, base.params).makespan >= Time::from_s(2e6 / 10e9));
  CHECK_THROWS_AS(parse_workload_string("name: w\nmodel: {preset: wan2.1-14b}\ntokens: 32760\nrequest: {first_prefetch_blocking: true}\n", "w.yaml"),
                  InputError);
}

TEST_CASE("request.move_outside: an offloaded outside model is copied in before it runs and out after, blocking") {
  const hw::Topology topo(hw::parse_topology_string(test::kTopo, "topo.yaml"));
  const DitWorkload base = parse_workload_string(kJob, "w.yaml");
  const DitWorkload moved = parse_workload_string(std::string(kJob) + "request: {move_outside: true}\n", "w.yaml");
  const Schedule a = generate_schedule(base), b = generate_schedule(moved);
  constexpr int kCompute = 0;
  CHECK(count(b, OpKind::Memcpy, kCompute) - count(a, OpKind::Memcpy, kCompute) == 2);
  // 2 MB in and 2 MB out over the 10 GB/s link, at most at its rate.
  CHECK(execute(b, topo, moved.params).makespan - execute(a, topo, base.params).makespan >= Time::from_s(2 * 2e6 / 10e9));
}
