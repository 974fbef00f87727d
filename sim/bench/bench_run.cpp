// Wall time of whole simulated runs (Google Benchmark), the performance
// targets of docs/performance.md:
// - the full Wan2.2 720p run on a DGX H100 (40 steps x 2 CFG forwards x 40
//   layers, Ulysses 8, layerwise offload), one core;
// - one all-to-all across 1,024 GPUs (128 DGX H100 nodes, InfiniBand);
// - the 1,000-point sweep configs/sweeps/bench-1000.yaml on 2 threads.
// Prints figures; not a timed test. Run: ./build/bin/overlapsim_bench_run
#include <benchmark/benchmark.h>

#include <string>

#include "gpu/executor.hpp"
#include "sweep/sweep.hpp"
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
    osim::ExecOptions opts;
    opts.keep_records = false;  // as `overlapsim run` without --out
    const osim::ExecResult r = osim::execute(s, topo, w.params, opts);
    const osim::Metrics m = osim::compute_metrics(s, topo, r);
    benchmark::DoNotOptimize(m.makespan);
    ops = 0;
    for (const auto& p : s.programs) ops += p.ops->size();
  }
  state.counters["ops"] = static_cast<double>(ops);
  state.counters["ops/s"] = benchmark::Counter(static_cast<double>(ops) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Wan22_720p_DgxH100_SP8_Layerwise)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_AllToAll_1024Gpu(benchmark::State& state) {
  const osim::hw::Topology topo(osim::hw::parse_topology_file(kSrc + "/configs/topologies/h100-128node-ib.yaml"));
  for (auto _ : state) {
    const osim::Schedule s = osim::parse_schedule_file(kSrc + "/configs/schedules/a2a-1024gpu.yaml");
    const osim::ExecResult r = osim::execute(s, topo);
    benchmark::DoNotOptimize(r.makespan);
    state.counters["simulated_ms"] = r.makespan.s() * 1e3;
  }
  state.counters["flows"] = 1024.0 * 1023.0;
}
BENCHMARK(BM_AllToAll_1024Gpu)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_Sweep1000_2Threads(benchmark::State& state) {
  const osim::SweepSpec spec = osim::parse_sweep_file(kSrc + "/configs/sweeps/bench-1000.yaml");
  osim::SweepOptions o;
  o.threads = 2;
  for (auto _ : state) {
    const osim::SweepTable t = osim::run_sweep(spec, o);
    benchmark::DoNotOptimize(t.rows.size());
  }
  state.counters["points"] = static_cast<double>(spec.size());
}
BENCHMARK(BM_Sweep1000_2Threads)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
