// Wall time of whole simulated runs (Google Benchmark): the full Wan2.2 720p
// run on a DGX H100 (40 steps x 2 CFG forwards x 40 layers, Ulysses 8,
// layerwise offload). Prints figures; not a timed test.
// Run: ./build/bin/overlapsim_bench_run
#include <benchmark/benchmark.h>

#include <string>

#include "exec/executor.hpp"
#include "report/metrics.hpp"
#include "workload/dit.hpp"

namespace {
const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

void BM_Wan22_720p_DgxH100_SP8_Layerwise(benchmark::State& state) {
  const osim::hw::Topology topo(osim::hw::parse_topology_file(kSrc + "/configs/topologies/dgx-h100.yaml"));
  size_t ops = 0;
  for (auto _ : state) {
    const osim::DitWorkload w = osim::parse_workload_file(kSrc + "/configs/workloads/wan22-720p-dgx-sp8-layerwise.yaml");
    const osim::Schedule s = osim::generate_schedule(w);
    const osim::ExecResult r = osim::execute(s, topo, w.params);
    const osim::Metrics m = osim::compute_metrics(s, topo, r);
    benchmark::DoNotOptimize(m.makespan);
    ops = 0;
    for (const auto& p : s.programs) ops += p.ops->size();
  }
  state.counters["ops"] = static_cast<double>(ops);
  state.counters["ops/s"] = benchmark::Counter(static_cast<double>(ops) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Wan22_720p_DgxH100_SP8_Layerwise)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
