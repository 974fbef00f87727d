// A transfer list on a topology's fabric, timed (the max-min core on a plain
// flow set, `overlapsim flows` without its report), and optionally written out
// as a bare instance another simulator can run: the SimGrid side of the
// comparison in docs/performance.md reads it (sim/bench/simgrid/).
//
//   overlapsim_bench_flows SCENARIO TOPOLOGY [--runs N] [--instance FILE [--force]]
//
// Prints the scenario's parse time, each run's wall time and the makespan to
// the picosecond. The instance (text, one line per item):
//   overlapsim-flow-instance 1
//   resources R            then R lines: capacity (bytes/s)
//   flows F                then F lines: start_s latency_s bytes rate_cap src dst n res coef ... (rate_cap 0: none)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <vector>

#include <sys/resource.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "core/errors.hpp"
#include "fabric/transfers.hpp"
#include "hw/topology.hpp"
#include "io/text_file.hpp"

using namespace osim;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The process's peak resident memory so far, MB.
double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

void write_instance(const std::string& path, const hw::Topology& topo, const Scenario& sc) {
  std::string out = "overlapsim-flow-instance 1\n";
  out += fmt::format("resources {}\n", topo.resources().size());
  for (const hw::Resource& r : topo.resources()) out += fmt::format("{:.17g}\n", r.capacity);
  out += fmt::format("flows {}\n", sc.transfers.size());
  for (const TransferSpec& t : sc.transfers) {
    const hw::Route& route = topo.route(t.src, t.dst, sc.route_options);
    out += fmt::format("{:.17g} {:.17g} {} {:.17g} {} {} {}", t.start.s(), route.latency.s(), t.bytes, t.rate_cap, t.src, t.dst, route.uses.size());
    for (const hw::ResourceUse& u : route.uses) out += fmt::format(" {} {:.17g}", u.resource, u.coefficient);
    out += '\n';
  }
  write_file(path, out);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Time a transfer list on a topology's fabric; optionally write it as a bare flow instance"};
  std::string scenario_path, topology_path, instance_path;
  int runs = 3;
  bool force = false;
  app.add_option("scenario", scenario_path, "scenario YAML (docs/formats/scenario.md)")->required();
  app.add_option("topology", topology_path, "topology YAML")->required();
  app.add_option("--runs", runs, "timed runs")->check(CLI::Range(1, 100));
  app.add_option("--instance", instance_path, "write the flow instance (resources, flows and their routes) to this file");
  app.add_flag("--force", force, "overwrite an existing instance file");
  CLI11_PARSE(app, argc, argv);
  try {
    if (!instance_path.empty()) refuse_overwrite(instance_path, force);
    const hw::Topology topo(hw::parse_topology_file(topology_path));
    auto t0 = std::chrono::steady_clock::now();
    const Scenario sc = parse_scenario_file(scenario_path, topo);
    std::cout << fmt::format("{} flows, {} resources; scenario parsed in {:.3f} s (peak memory {:.0f} MB)\n", sc.transfers.size(),
                             topo.resources().size(), seconds_since(t0), peak_rss_mb());
    if (!instance_path.empty()) {
      write_instance(instance_path, topo, sc);
      std::cout << "instance written to " << instance_path << '\n';
    }
    std::vector<double> walls;
    Time makespan;
    for (int i = 0; i < runs; ++i) {
      t0 = std::chrono::steady_clock::now();
      const FabricRun run = run_transfers(topo, sc);
      walls.push_back(seconds_since(t0));
      makespan = run.makespan;
      std::cout << fmt::format("run {}: {:.3f} s (peak memory {:.0f} MB)\n", i + 1, walls.back(), peak_rss_mb());
    }
    std::sort(walls.begin(), walls.end());
    std::cout << fmt::format("makespan {} ps ({:.12f} s); fastest run {:.3f} s, median {:.3f} s\n", makespan.ps(), makespan.s(), walls.front(),
                             walls[walls.size() / 2]);
    return 0;
  } catch (const InputError& e) {
    std::cerr << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 2;
  }
}
