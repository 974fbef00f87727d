// Topology files: parsed, checked, then built (graph, routes, path matrix).
#include "fuzz_input.hpp"
#include "hw/fabric.hpp"
#include "hw/topology.hpp"

OSIM_FUZZ_TARGET({
  const osim::hw::Topology topo(osim::hw::parse_topology_string(text, "fuzz.yaml"));
  (void)topo.gpus();
})
