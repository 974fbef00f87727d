// overlapsim command line. Subcommands parse their inputs, run the library
// and print; all errors surface here as one line "file:line:col: error: ..."
// and exit code 2 (input) or 3 (simulation).
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>

#include <filesystem>

#include "core/errors.hpp"
#include "exec/executor.hpp"
#include "fabric/transfers.hpp"
#include "hw/fabric.hpp"

int main(int argc, char** argv) {
  CLI::App app{"overlapsim: a discrete-event simulator of offload and communication scheduling on GPU nodes"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "overlapsim 0.1.0");

  std::string topo_path;
  bool p2p_disable = false;
  auto* topo_cmd = app.add_subcommand("topo", "Show a topology: nodes, GPU path types, and every GPU's routes with bottleneck bandwidth and latency");
  topo_cmd->add_option("topology", topo_path, "topology YAML")->required();
  topo_cmd->add_flag("--p2p-disable", p2p_disable, "route GPU<->GPU traffic as with NCCL_P2P_DISABLE=1");

  std::string scenario_path;
  auto* flows_cmd = app.add_subcommand("flows", "Simulate a list of transfers on a topology's fabric");
  flows_cmd->add_option("scenario", scenario_path, "scenario YAML (transfers: src, dst, bytes, start)")->required();
  flows_cmd->add_option("--topology,-t", topo_path, "topology YAML")->required();
  flows_cmd->add_flag("--p2p-disable", p2p_disable, "route GPU<->GPU traffic as with NCCL_P2P_DISABLE=1");

  std::string schedule_path, run_topo;
  auto* run_cmd = app.add_subcommand("run", "Simulate a schedule (per-rank CUDA/NCCL-level programs) and print every op's start and end");
  run_cmd->add_option("schedule", schedule_path, "schedule YAML")->required();
  run_cmd->add_option("--topology,-t", run_topo, "topology YAML (default: the schedule's 'topology:', relative to the schedule)");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*run_cmd) {
      const osim::Schedule sched = osim::parse_schedule_file(schedule_path);
      if (run_topo.empty()) {
        if (sched.topology.empty())
          throw osim::InputError(osim::SourceLocation{schedule_path, 0, 0},
                                 "no topology: pass --topology FILE or add 'topology: FILE' to the schedule");
        run_topo = (std::filesystem::path(schedule_path).parent_path() / sched.topology).string();
      }
      osim::hw::Topology topo(osim::hw::parse_topology_file(run_topo));
      const osim::ExecResult res = osim::execute(sched, topo);
      std::cout << osim::format_exec_report(sched, res);
      return 0;
    }
    osim::hw::Topology topo(osim::hw::parse_topology_file(topo_path));
    if (*topo_cmd) {
      osim::hw::RouteOptions opt;
      opt.p2p_disabled = p2p_disable;
      std::cout << osim::format_topology_report(topo, opt);
    } else if (*flows_cmd) {
      osim::Scenario sc = osim::parse_scenario_file(scenario_path, topo);
      if (p2p_disable) sc.route_options.p2p_disabled = true;
      const osim::FabricRun run = osim::run_transfers(topo, sc);
      std::cout << osim::format_fabric_report(topo, sc, run);
    }
  } catch (const osim::InputError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const osim::SimulationError& e) {
    std::cerr << "simulation error: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
