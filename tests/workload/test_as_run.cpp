// Programs generated as a run reaches them (generate_schedule_as_run): the
// run's results are the whole schedule's to the byte, for every offload
// policy and kind of parallelism, and memory stays with the ops in flight.
#include <doctest/doctest.h>

#include "gpu/executor.hpp"
#include "report/metrics.hpp"
#include "workload/dit.hpp"

using namespace osim;

namespace {
const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

struct Both {
  ExecResult whole, as_run;
  size_t ops = 0;  // rank 0's program
};

Both run_both(const std::string& workload, const std::vector<std::string>& sets) {
  const DitWorkload w = parse_workload_file(kSrc + "/configs/workloads/" + workload + ".yaml", sets);
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/workloads/" + w.topology));
  ExecOptions o;
  o.keep_records = false;
  const Schedule whole = generate_schedule(w), as_run = generate_schedule_as_run(w);
  CHECK_FALSE(whole.generated_as_run());
  REQUIRE(as_run.generated_as_run());
  Both b{execute(whole, topo, w.params, o), execute(as_run, topo, w.params, o), whole.programs[0].ops->size()};
  const Metrics a = compute_metrics(whole, topo, b.whole), c = compute_metrics(as_run, topo, b.as_run);
  CHECK(b.whole.makespan == b.as_run.makespan);
  CHECK(metrics_json(a, topo, b.whole).dump() == metrics_json(c, topo, b.as_run).dump());
  CHECK(format_summary(a, topo, b.whole, "x") == format_summary(c, topo, b.as_run, "x"));
  REQUIRE(b.whole.final_load.size() == b.as_run.final_load.size());
  for (size_t r = 0; r < b.whole.final_load.size(); ++r) {
    CHECK(b.whole.final_load[r].duty == b.as_run.final_load[r].duty);
    CHECK(b.whole.final_load[r].attention_duty_slow == b.as_run.final_load[r].attention_duty_slow);
  }
  CHECK(b.whole.most_ops_held == 0);
  CHECK(b.as_run.most_ops_held > 0);
  return b;
}
}  // namespace

TEST_CASE("a program generated as it runs gives the whole program's results") {
  // Layerwise prefetch at depths whose weight events take turns in few slots
  // (1 to 3 over 5 blocks: groups that do not divide a forward), the
  // blocking path, block and phase offload, resident weights; CFG in
  // parallel, ring attention, tensor parallelism in line and overlapped.
  for (const auto& [wl, sets] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"wan22-720p-aces-layerwise", {"steps=2", "model.blocks=5", "offload.prefetch_size=1"}},
           {"wan22-720p-aces-layerwise", {"steps=2", "model.blocks=5", "offload.prefetch_size=2"}},
           {"wan22-720p-aces-layerwise", {"steps=2", "model.blocks=5", "offload.prefetch_size=3", "offload.host_memory=pageable"}},
           {"wan22-720p-aces-layerwise", {"steps=3", "model.blocks=4", "cfg=parallel", "parallelism.ulysses=2"}},
           {"wan22-720p-aces-blocking", {"steps=1", "model.blocks=4"}},
           {"wan21-480p-4090-block", {"steps=2"}},
           {"wan21-480p-4090-block", {"steps=1", "offload.policy=phase"}},
           {"wan22-720p-aces-layerwise", {"steps=2", "model.blocks=4", "offload.policy=none", "offload.prefetch_size=null"}},
           {"wan22-720p-dgx-sp8-layerwise", {"steps=1", "model.blocks=4", "parallelism.ulysses=2", "parallelism.ring=4"}},
           {"llama3-70b-prefill-dgx-tp8", {}},
           {"llama3-70b-prefill-dgx-tp8", {"parallelism.tp_overlap=chunked"}},
           {"llama3-70b-prefill-dgx-tp8", {"parallelism.tp_overlap=ring_exchange"}}}) {
    const std::string workload = wl, last_set = sets.empty() ? "" : sets.back();  // clang 14 cannot capture a structured binding
    CAPTURE(workload);
    CAPTURE(last_set);
    (void)run_both(wl, sets);
  }
}

TEST_CASE("a program generated as it runs holds the ops in flight, not every step") {
  // Layerwise offload: the host runs ahead only as far as the launch queues
  // and the prefetched weights' memory let it; ten times the steps hold no
  // more ops (but for where the chunks of 4,096 fall).
  const Both few = run_both("wan22-720p-aces-layerwise", {"steps=40", "model.blocks=10"});
  const Both many = run_both("wan22-720p-aces-layerwise", {"steps=400", "model.blocks=10"});
  MESSAGE("ops held at 40 and 400 steps: ", few.as_run.most_ops_held, ", ", many.as_run.most_ops_held);
  CHECK(many.as_run.most_ops_held <= few.as_run.most_ops_held + 4096);
  CHECK(static_cast<size_t>(many.as_run.most_ops_held) * 20 < many.ops);
  CHECK(many.as_run.makespan.ps() > 9 * few.as_run.makespan.ps());
  // Weights resident: the launch queues hold the host back (launch_queue_depth).
  const std::vector<std::string> resident{"model.blocks=4", "offload.policy=none", "offload.prefetch_size=null"};
  auto with_steps = [&](const char* steps) {
    std::vector<std::string> sets = resident;
    sets.emplace_back(steps);
    return run_both("wan22-720p-aces-layerwise", sets);
  };
  const Both r_few = with_steps("steps=40"), r_many = with_steps("steps=400");
  MESSAGE("resident: ops held at 40 and 400 steps: ", r_few.as_run.most_ops_held, ", ", r_many.as_run.most_ops_held, " of ", r_many.ops);
  CHECK(r_many.as_run.most_ops_held <= r_few.as_run.most_ops_held + 4096);
  CHECK(static_cast<size_t>(r_many.as_run.most_ops_held) * 10 < r_many.ops);
}
