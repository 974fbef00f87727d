// Transfer scenarios: a list of point-to-point transfers (src, dst, bytes,
// start time) replayed on a topology's fabric. This is `overlapsim flows`.
#pragma once

#include <string>
#include <vector>

#include "core/units.hpp"
#include "hw/fabric.hpp"

namespace osim {

struct TransferSpec {
  std::string name;
  int src = -1;  // node index
  int dst = -1;
  Bytes bytes = 0;
  Time start;
  double rate_cap = 0;  // bytes/s; 0 = none
  SourceLocation where;
};

struct Scenario {
  std::string name;
  std::string description;
  hw::RouteOptions route_options;
  std::vector<TransferSpec> transfers;
};

/// Parses a scenario against a topology (node names are resolved; `host`
/// means the other end's nearest host memory). Throws InputError.
Scenario parse_scenario_file(const std::string& path, const hw::Topology& topo);
Scenario parse_scenario_string(const std::string& yaml, const std::string& name, const hw::Topology& topo);

struct TransferResult {  // (a scenario may hold a million: no padding)
  const TransferSpec* spec = nullptr;
  Time first_byte, end;
  Bandwidth achieved;        // bytes / (end - start)
  int main_bottleneck = -1;  // resource index; -1 = its own cap
  hw::RouteKind route_kind = hw::RouteKind::Local;
};

struct FabricRun {
  std::vector<TransferResult> transfers;  // in scenario order
  std::vector<double> resource_bytes;     // coefficient-weighted bytes per resource
  Time makespan;
};

FabricRun run_transfers(const hw::Topology& topo, const Scenario& sc);

/// The text `overlapsim flows` prints (deterministic; golden-tested).
std::string format_fabric_report(const hw::Topology& topo, const Scenario& sc, const FabricRun& run);
/// The text `overlapsim topo` prints.
std::string format_topology_report(const hw::Topology& topo, const hw::RouteOptions& opt);

}  // namespace osim
