// Solver and flow-model throughput (Google Benchmark). Prints figures; it is
// not a timed test. Run: ./build/bin/overlapsim_bench
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "core/flows.hpp"
#include "core/maxmin.hpp"

using namespace osim;

namespace {

// 10,000 flows over 2,000 link directions, each crossing 4 of them (a fabric
// of ~250 GPUs with 8 resources a route) — one connected component.
struct Instance {
  MaxMinSystem sys;
  std::vector<ConstraintId> cons;
  std::vector<VariableId> vars;
  std::mt19937_64 rng{42};
  void add_flow() {
    const VariableId v = sys.add_variable(1.0, rng() % 10 == 0 ? 5e9 : MaxMinSystem::kUnbounded);
    for (int k = 0; k < 4; ++k) sys.expand(cons[rng() % cons.size()], v);
    vars.push_back(v);
  }
  Instance(int n_cons, int n_flows) {
    for (int c = 0; c < n_cons; ++c) cons.push_back(sys.add_constraint(25e9 + static_cast<double>(rng() % 100) * 1e9));
    for (int f = 0; f < n_flows; ++f) add_flow();
  }
};

void BM_FullSolve10k(benchmark::State& state) {
  for (auto _ : state) {
    state.PauseTiming();
    Instance inst(2000, 10000);
    state.ResumeTiming();
    benchmark::DoNotOptimize(inst.sys.solve().size());
  }
  state.counters["flows/s"] = benchmark::Counter(10000.0 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FullSolve10k)->Unit(benchmark::kMillisecond);

// One flow ends and another starts, then a re-solve: the incremental path a
// simulation takes at every flow event, on a 10,000-flow system.
void BM_ChurnSolve10k(benchmark::State& state) {
  Instance inst(2000, 10000);
  inst.sys.solve();
  size_t k = 0;
  for (auto _ : state) {
    const size_t victim = (k++ * 7919) % inst.vars.size();
    inst.sys.remove_variable(inst.vars[victim]);
    inst.vars[victim] = inst.vars.back();
    inst.vars.pop_back();
    inst.add_flow();
    benchmark::DoNotOptimize(inst.sys.solve().size());
  }
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ChurnSolve10k)->Unit(benchmark::kMicrosecond);

// Many small components (e.g. 10,000 independent H2D copies, one link each):
// incremental solves touch one component.
void BM_ChurnIndependent10k(benchmark::State& state) {
  MaxMinSystem sys;
  std::vector<ConstraintId> cons;
  std::vector<VariableId> vars;
  for (int c = 0; c < 10000; ++c) {
    cons.push_back(sys.add_constraint(50e9));
    vars.push_back(sys.add_variable());
    sys.expand(cons.back(), vars.back());
  }
  sys.solve();
  size_t k = 0;
  for (auto _ : state) {
    const size_t i = (k++ * 7919) % vars.size();
    sys.remove_variable(vars[i]);
    vars[i] = sys.add_variable();
    sys.expand(cons[i], vars[i]);
    benchmark::DoNotOptimize(sys.solve().size());
  }
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ChurnIndependent10k)->Unit(benchmark::kMicrosecond);

// End to end through the engine and the flow model: N flows arriving over
// 1 ms on 2,000 shared resources, so most are in one component and every
// arrival or completion re-solves it (the worst case for a flow-level model).
void BM_FlowModel(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  for (auto _ : state) {
    Engine engine;
    MaxMinSystem sys;
    FlowModel flows(engine, sys);
    std::mt19937_64 rng(7);
    std::vector<ConstraintId> cons;
    for (int c = 0; c < 2000; ++c) cons.push_back(sys.add_constraint(50e9));
    for (int f = 0; f < n; ++f) {
      FlowSpec s;
      for (int k = 0; k < 4; ++k) s.route.push_back({cons[rng() % cons.size()], 1.0});
      s.bytes = 1e6 * static_cast<double>(1 + rng() % 100);
      engine.at(Time::from_us(static_cast<double>(rng() % 1000)), [&flows, s]() mutable { flows.start(std::move(s)); });
    }
    engine.run();
    benchmark::DoNotOptimize(engine.events_processed());
  }
  state.counters["flows/s"] = benchmark::Counter(static_cast<double>(n) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FlowModel)->Arg(500)->Arg(2000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
