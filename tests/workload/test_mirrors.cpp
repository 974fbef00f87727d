// Symmetric ranks (ExecOptions::symmetric_ranks): ranks that run one program
// on alike GPUs are simulated once, the others mirroring the first; their
// copies and collectives still run on the fabric and must end when the
// first's do, or the run is simulated again in full. Each case runs a
// schedule both ways and asserts the runs agree op by op, to the picosecond,
// and in every report figure.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "gpu/executor.hpp"
#include "gpu/sim_fixture.hpp"
#include "hw/fabric.hpp"
#include "report/metrics.hpp"
#include "schedule/schedule.hpp"
#include "workload/dit.hpp"

using namespace osim;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

ExecResult run(const Schedule& s, const hw::Topology& t, const ModelParams& p, bool symmetric, bool records = true) {
  ExecOptions o;
  o.symmetric_ranks = symmetric;
  o.keep_records = records;
  return execute(s, t, p, o);
}

// Runs both ways, checks they agree; returns how many ranks mirrored.
int64_t check_same(const Schedule& s, const hw::Topology& t, const ModelParams& p = {}, bool records = true) {
  const ExecResult a = run(s, t, p, false, records), b = run(s, t, p, true, records);
  CHECK(a.mirrored == 0);
  CHECK(a.makespan == b.makespan);
  REQUIRE(a.ranks.size() == b.ranks.size());
  for (size_t r = 0; r < a.ranks.size(); ++r) {
    CHECK(a.ranks[r].end == b.ranks[r].end);
    CHECK(a.ranks[r].peak_vram == b.ranks[r].peak_vram);
    CHECK(a.ranks[r].handoffs == b.ranks[r].handoffs);
    CHECK(a.final_load[r].duty == b.final_load[r].duty);
  }
  REQUIRE(a.ops.size() == b.ops.size());
  CHECK(test::differing_records(a, b, [](const std::string& m) { MESSAGE(m); }) == 0);
  REQUIRE(a.collective_bottlenecks.size() == b.collective_bottlenecks.size());
  for (size_t i = 0; i < a.collective_bottlenecks.size(); ++i) {
    CHECK(a.collective_bottlenecks[i].time == b.collective_bottlenecks[i].time);
    CHECK(a.copy_bottlenecks[i].time == b.copy_bottlenecks[i].time);
  }
  CHECK(a.copy_binding == b.copy_binding);
  CHECK(a.collective_binding == b.collective_binding);
  CHECK(a.resource_bytes == b.resource_bytes);
  // Every metric and the summary, from records or from the spans.
  const Metrics ma = records ? compute_metrics(s, t, a) : compute_metrics(s, t, a, *a.spans);
  const Metrics mb = records ? compute_metrics(s, t, b) : compute_metrics(s, t, b, *b.spans);
  CHECK(metrics_json(ma, t, a).dump() == metrics_json(mb, t, b).dump());
  CHECK(format_summary(ma, t, a, "") == format_summary(mb, t, b, ""));
  return b.mirrored;
}

}  // namespace

TEST_CASE("symmetric ranks: workloads mirror their ranks and run as every rank in full does") {
  struct Case {
    const char *workload, *topology;
    std::vector<std::string> set;
    int64_t mirrored;
  };
  const Case cases[] = {
      {"wan22-720p-dgx-sp8-layerwise.yaml", "dgx-h100.yaml", {"steps=2", "model.blocks=6"}, 7},
      {"wan22-720p-aces-layerwise.yaml", "aces-4xh100-pcie.yaml", {"steps=2", "model.blocks=6"}, 3},
      // Its pairwise rounds pair GPUs under one PCIe switch for some ranks and across for others: run again in full.
      {"wan21-480p-4090-block.yaml", "rtx4090x8-pcie.yaml", {"steps=2", "model.blocks=6"}, 0},
      {"wan22-720p-cluster-sp128.yaml", "h100-2node-ib.yaml", {"steps=1", "model.blocks=4", "parallelism.ring=2"}, 15},
  };
  for (const Case& c : cases) {
    CAPTURE(c.workload);
    const DitWorkload wl = parse_workload_file(kSrc + "/configs/workloads/" + c.workload, c.set);
    const Schedule s = generate_schedule(wl);
    const hw::Topology t(hw::parse_topology_file(kSrc + "/configs/topologies/" + c.topology));
    CHECK(check_same(s, t, wl.params) == c.mirrored);
    // Without records: the programs are generated as they run, the metrics come from spans.
    const Schedule g = generate_schedule_as_run(wl);
    CHECK(check_same(g, t, wl.params, false) == c.mirrored);
  }
}

TEST_CASE("symmetric ranks: a mirror whose copy ends at another time sends the run back to full simulation") {
  // Rank 1's PCIe link is half rank 0's: one program, alike GPUs, but its copy takes twice as long.
  const char* topo = R"(name: uneven
nodes:
  - {name: cpu0, kind: cpu, memory: 64 GiB}
  - {name: "gpu{i}", kind: gpu, memory: 1 GiB, hbm_bandwidth: 1000 GB/s, sms: 100, copy_engines: 3, peak_tflops: {bf16: 100}, repeat: 2}
links:
  - {a: gpu0, b: cpu0, kind: pcie, bandwidth: 10 GB/s, latency: 0 us}
  - {a: gpu1, b: cpu0, kind: pcie, bandwidth: 5 GB/s, latency: 0 us}
)";
  const std::string sched = R"(name: copies
ranks: 2
streams: [compute, copy]
programs:
  - rank: all
    ops:
      - {op: memcpy, kind: h2d, bytes: 100 MB, stream: copy}
      - {op: kernel, stream: compute, duration: 1 ms}
      - {op: device_sync}
)";
  const hw::Topology t(hw::parse_topology_string(topo, "uneven.yaml"));
  const Schedule s = parse_schedule_string(sched, "copies.yaml");
  CHECK(check_same(s, t, test::quiet()) == 0);  // simulated again in full
  const ExecResult r = run(s, t, test::quiet(), true);
  CHECK(r.ops[0][0].end.ms() == doctest::Approx(10.0));
  CHECK(r.ops[1][0].end.ms() == doctest::Approx(20.0));
  // The same node with even links: rank 1 mirrors rank 0.
  const hw::Topology even(hw::parse_topology_string(test::kTopo, "even.yaml"));
  CHECK(check_same(s, even, test::quiet()) == 1);
  // A trace's link samples: every rank in full.
  ExecOptions traced;
  traced.link_samples = true;
  CHECK(execute(s, even, test::quiet(), traced).mirrored == 0);
}

TEST_CASE("symmetric ranks: random schedules agree with every rank simulated in full") {
  // NCCL and pairwise all-to-alls, copies, kernels and GEMMs, host work and
  // syncs (test::random_schedule). Ring sends name their peers by rank: one
  // program a rank; the Ulysses x ring workload above mirrors them.
  int64_t mirrored = 0, full = 0;
  test::on_random_schedules(0x2545F4914F6CDD1Dull, 16, true, [&](const Schedule& s, const hw::Topology& t, int trial) {
    CAPTURE(trial);
    (check_same(s, t) > 0 ? mirrored : full) += 1;
  });
  MESSAGE(fmt::format("random schedules: {} runs mirrored, {} simulated again in full", mirrored, full));
  CHECK(mirrored >= 8);
}
