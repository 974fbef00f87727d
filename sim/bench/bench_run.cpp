// Wall time of whole simulated runs (Google Benchmark), the performance
// targets of docs/performance.md:
// - the full Wan2.2 720p run on a DGX H100 (40 steps x 2 CFG forwards x 40
//   layers, Ulysses 8, layerwise offload), one core;
// - one all-to-all across 1,024 GPUs (128 DGX H100 nodes, InfiniBand);
// - Wan2.2 720p at SP 128 (Ulysses 8 x ring 16) on that cluster, 40 steps, one core;
// - the same at pure Ulysses 128 (an all-to-all over InfiniBand every layer,
//   128 heads of 40), 2 steps: a step's cost;
// - the 1,000-point sweep configs/sweeps/bench-1000.yaml on 2 threads;
// - a torch.profiler trace of ~100,000 events imported and simulated, one core;
// - `overlapsim report` of the full DGX run's folder (a 70 MB schedule.yaml
//   and its records): its peak memory.
// Prints figures; not a timed test. Run: ./build/bin/overlapsim_bench_run
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "gpu/executor.hpp"
#include "io/text_file.hpp"
#include "kineto/import.hpp"
#include "report/metrics.hpp"
#include "report/trace.hpp"
#include "schedule/records.hpp"
#include "sweep/sweep.hpp"
#include "workload/dit.hpp"

namespace {
const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

// A shipped workload generated, simulated and its metrics computed, as
// `overlapsim run` without --out does.
// `overrides` as `--set` gives them.
void run_workload(benchmark::State& state, const std::string& workload, const std::string& topology, const std::vector<std::string>& overrides = {},
                  bool reserve = true) {
  const osim::hw::Topology topo(osim::hw::parse_topology_file(kSrc + "/configs/topologies/" + topology));
  size_t ops = 0;  // per rank, shared programs counted for each
  for (const auto& p : osim::generate_schedule(osim::parse_workload_file(kSrc + "/configs/workloads/" + workload, overrides)).programs)
    ops += p.ops->size();
  for (auto _ : state) {
    const osim::DitWorkload w = osim::parse_workload_file(kSrc + "/configs/workloads/" + workload, overrides);
    const osim::Schedule s = osim::generate_schedule_as_run(w);  // as `overlapsim run` without --out
    osim::ExecOptions opts;
    opts.keep_records = false;
    opts.closed_form_reserve = reserve;
    const osim::ExecResult r = osim::execute(s, topo, w.params, opts);
    const osim::Metrics m = osim::compute_metrics(s, topo, r);
    benchmark::DoNotOptimize(m.makespan);
  }
  state.counters["ops"] = static_cast<double>(ops);
  state.counters["ops/s"] = benchmark::Counter(static_cast<double>(ops) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_Wan22_720p_DgxH100_SP8_Layerwise(benchmark::State& state) { run_workload(state, "wan22-720p-dgx-sp8-layerwise.yaml", "dgx-h100.yaml"); }
BENCHMARK(BM_Wan22_720p_DgxH100_SP8_Layerwise)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_Wan22_720p_Cluster_SP128(benchmark::State& state) { run_workload(state, "wan22-720p-cluster-sp128.yaml", "h100-128node-ib.yaml"); }
BENCHMARK(BM_Wan22_720p_Cluster_SP128)->Unit(benchmark::kMillisecond)->Iterations(1);

// Pure Ulysses 128 across nodes (issue 82): every layer's all-to-alls cross
// InfiniBand, whose receiving PCIe links carry the layerwise prefetch copies.
void BM_Wan22_720p_Cluster_Ulysses128_2Steps(benchmark::State& state) {
  run_workload(state, "wan22-720p-cluster-sp128.yaml", "h100-128node-ib.yaml",
               {"parallelism.ulysses=128", "parallelism.ring=1", "model.heads=128", "model.head_dim=40", "steps=2"});
}
BENCHMARK(BM_Wan22_720p_Cluster_Ulysses128_2Steps)->Unit(benchmark::kMillisecond)->Iterations(1);
// The same without links reserved (ExecOptions::closed_form_reserve off):
// the all-to-alls beside the copies run flow by flow, as before the
// reservation; what it saves.
void BM_Wan22_720p_Cluster_Ulysses128_2Steps_NoReserve(benchmark::State& state) {
  run_workload(state, "wan22-720p-cluster-sp128.yaml", "h100-128node-ib.yaml",
               {"parallelism.ulysses=128", "parallelism.ring=1", "model.heads=128", "model.head_dim=40", "steps=2"}, false);
}
BENCHMARK(BM_Wan22_720p_Cluster_Ulysses128_2Steps_NoReserve)->Unit(benchmark::kMillisecond)->Iterations(1);

// The process's resident memory now and its peak since the last reset, in
// bytes (Linux /proc; 0 elsewhere). Writing 5 to clear_refs resets the peak.
double rss_bytes(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string key = std::string(field) + ":";
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return std::stod(line.substr(key.size())) * 1024.0;  // "  123 kB"
  return 0;
}
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

void BM_AllToAll_1024Gpu(benchmark::State& state) {
  const osim::hw::Topology topo(osim::hw::parse_topology_file(kSrc + "/configs/topologies/h100-128node-ib.yaml"));
  const double flows = 1024.0 * 1023.0;
  for (auto _ : state) {
    reset_peak_rss();
    const double before = rss_bytes("VmRSS");
    const osim::Schedule s = osim::parse_schedule_file(kSrc + "/configs/schedules/a2a-1024gpu.yaml");
    const osim::ExecResult r = osim::execute(s, topo);
    benchmark::DoNotOptimize(r.makespan);
    state.counters["simulated_ms"] = r.makespan.s() * 1e3;
    // The run's peak over what the process held before, per flow: every
    // flow is in flight at once. Alone (--benchmark_filter=AllToAll), as
    // memory an earlier benchmark freed is reused and not counted.
    state.counters["bytes/flow"] = (rss_bytes("VmHWM") - before) / flows;
  }
  state.counters["flows"] = flows;
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

// A reference program's trace (6,677 events) repeated back to back, its
// correlation and External ids shifted each time, to ~100,000 events.
std::string long_trace() {
  using nlohmann::json;
  json doc = json::parse(osim::read_maybe_gzip(kSrc + "/validate/reference/h100-sxm/traces/dit-4096-layerwise-pf2-pinned.trace.json.gz"));
  const json events = doc["traceEvents"];
  double t0 = 1e300, t1 = -1e300;
  for (const json& e : events)
    if (e.contains("ts") && e["ts"].is_number()) {
      t0 = std::min(t0, e["ts"].get<double>());
      t1 = std::max(t1, e["ts"].get<double>() + e.value("dur", 0.0));
    }
  json all = json::array();
  for (int rep = 0; all.size() < 100000; ++rep) {
    for (json e : events) {
      if (e.value("ph", "") != "X") continue;
      e["ts"] = e["ts"].get<double>() + rep * (t1 - t0);
      if (e.contains("args") && e["args"].is_object())
        for (const char* k : {"correlation", "External id"})
          if (e["args"].contains(k) && e["args"][k].is_number_integer()) e["args"][k] = e["args"][k].get<int64_t>() + rep * 10'000'000;
      all.push_back(std::move(e));
    }
  }
  doc["traceEvents"] = all;
  const std::string path = (std::filesystem::temp_directory_path() / "overlapsim-bench-trace.json").string();
  std::ofstream(path) << doc.dump();
  return path;
}

void BM_ImportTrace_100k(benchmark::State& state) {
  const std::string path = long_trace();
  const osim::hw::Topology topo(osim::hw::parse_topology_file(kSrc + "/configs/topologies/dgx-h100.yaml"));
  size_t ops = 0;
  int64_t events = 0;
  for (auto _ : state) {
    const osim::kineto::ImportedTrace t = osim::kineto::import_traces({path});
    osim::ExecOptions opts;
    opts.keep_records = false;
    const osim::ExecResult r = osim::execute(t.schedule, topo, {}, opts);
    const osim::Metrics m = osim::compute_metrics(t.schedule, topo, r);
    benchmark::DoNotOptimize(m.makespan);
    ops = t.schedule.programs[0].ops->size();
    events = t.summary.events;
  }
  state.counters["events"] = static_cast<double>(events);
  state.counters["ops"] = static_cast<double>(ops);
  std::filesystem::remove(path);
}
BENCHMARK(BM_ImportTrace_100k)->Unit(benchmark::kMillisecond)->Iterations(3);

// `overlapsim report` of the full Wan2.2 DGX run's folder, as `run --out
// --records --schedule-out` writes it (8 ranks x 40 steps, ~630,000 ops):
// the schedule and the records read back, the metrics and the trace made.
// peak_MB: the process's peak RSS while it does so, as `/usr/bin/time -v
// overlapsim report` reports it; schedule_s: the seconds schedule.yaml takes to read.
void BM_Report_Wan22_720p_DgxH100_SP8(benchmark::State& state) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "overlapsim-bench-report";
  fs::create_directories(dir);
  const std::string topo_path = kSrc + "/configs/topologies/dgx-h100.yaml";
  const osim::hw::Topology topo(osim::hw::parse_topology_file(topo_path));
  // The run folder written by a child process: the run's memory, freed and
  // kept by the allocator, would otherwise be reused and hide the peak.
  if (const pid_t pid = ::fork(); pid == 0) {
    const osim::DitWorkload w = osim::parse_workload_file(kSrc + "/configs/workloads/wan22-720p-dgx-sp8-layerwise.yaml");
    osim::Schedule s = osim::generate_schedule(w);
    const osim::ExecResult r = osim::execute(s, topo, w.params);
    osim::write_file(dir / "records.json", osim::records_text(osim::records_json(s, r, topo.name(), "simulated")));
    s.topology = topo_path;
    osim::write_file(dir / "schedule.yaml", osim::to_yaml(s));
    std::_Exit(0);
  } else {
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  for (auto _ : state) {
    reset_peak_rss();
    const auto t0 = std::chrono::steady_clock::now();
    const osim::Schedule s = osim::parse_schedule_file((dir / "schedule.yaml").string());
    state.counters["schedule_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const osim::Records rec = osim::read_records((dir / "records.json").string());
    const osim::RunRecord run = osim::run_record_of(s, rec);
    const osim::Metrics m = osim::compute_metrics(s, topo, run);
    osim::write_trace_file(dir / "trace.json", s, topo, run);
    benchmark::DoNotOptimize(m.makespan);
    state.counters["peak_MB"] = rss_bytes("VmHWM") / 1e6;
  }
  state.counters["schedule_MB"] = static_cast<double>(fs::file_size(dir / "schedule.yaml")) / 1e6;
  fs::remove_all(dir);
}
BENCHMARK(BM_Report_Wan22_720p_DgxH100_SP8)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
