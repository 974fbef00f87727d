// overlapsim topo, overlapsim flows: a topology's routes, and a list of
// transfers on its fabric.
#include <iostream>
#include <memory>

#include "cli/common.hpp"
#include "fabric/transfers.hpp"
#include "hw/fabric.hpp"

namespace osim::cli {

namespace {
struct TopoOptions {
  std::string topology, scenario;
  bool p2p_disable = false;
};
}  // namespace

Command add_topo(CLI::App& app) {
  auto o = std::make_shared<TopoOptions>();
  auto* c = app.add_subcommand("topo", "Show a topology: nodes, GPU path types, and every GPU's routes with bottleneck bandwidth and latency");
  c->add_option("topology", o->topology, "topology YAML")->required();
  c->add_flag("--p2p-disable", o->p2p_disable, "route GPU<->GPU traffic as with NCCL_P2P_DISABLE=1");
  return {c, [o] {
            const hw::Topology topo(hw::parse_topology_file(o->topology));
            hw::RouteOptions opt;
            opt.p2p_disabled = o->p2p_disable;
            std::cout << format_topology_report(topo, opt);
            return 0;
          }};
}

Command add_flows(CLI::App& app) {
  auto o = std::make_shared<TopoOptions>();
  auto* c = app.add_subcommand("flows", "Simulate a list of transfers on a topology's fabric");
  c->add_option("scenario", o->scenario, "scenario YAML (transfers: src, dst, bytes, start)")->required();
  c->add_option("--topology,-t", o->topology, "topology YAML")->required();
  c->add_flag("--p2p-disable", o->p2p_disable, "route GPU<->GPU traffic as with NCCL_P2P_DISABLE=1");
  return {c, [o] {
            const hw::Topology topo(hw::parse_topology_file(o->topology));
            Scenario sc = parse_scenario_file(o->scenario, topo);
            if (o->p2p_disable) sc.route_options.p2p_disabled = true;
            const FabricRun run = run_transfers(topo, sc);
            std::cout << format_fabric_report(topo, sc, run);
            return 0;
          }};
}

}  // namespace osim::cli
