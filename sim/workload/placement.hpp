// Which GPU of the topology each rank runs on: the workload's `placement:`,
// GPU names one per rank or a rule, resolved once the topology is known
// (docs/formats/workload.md, "Placement").
#pragma once

#include <string>
#include <vector>

#include "core/errors.hpp"
#include "hw/fabric.hpp"

namespace osim {

struct Placement {
  enum class Rule {
    Pack,            // GPUs by socket, then PCIe switch: as few of each as the ranks need (the default)
    SpreadSwitches,  // rank r on the next PCIe switch in turn
    SpreadSockets,   // rank r on the next CPU socket in turn
    Named,           // `gpus`, one per rank
  };
  Rule rule = Rule::Pack;
  std::vector<std::string> gpus;  // Named
  bool given = false;             // the workload says one (else ranks take the topology's GPUs in order)
  SourceLocation where;           // its line, for errors found on the topology
};

/// `pack`, `spread_switches`, `spread_sockets`, or a list of GPU names.
std::string to_string(Placement::Rule r);

/// The GPU names of `ranks` ranks placed on `topo`; InputError at the
/// placement's line for an unknown or repeated GPU name, or too few GPUs.
std::vector<std::string> place_ranks(const Placement& p, const hw::Topology& topo, int ranks);

}  // namespace osim
