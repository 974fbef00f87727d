// `nvidia-smi topo -m` captures: parsed, imported as a topology, that
// topology built and its matrix compared with the capture's.
#include "fuzz_input.hpp"
#include "hw/nvidia_smi.hpp"

OSIM_FUZZ_TARGET({
  const osim::hw::SmiMatrix m = osim::hw::parse_nvidia_smi_topo(text, "fuzz.txt");
  const std::string yaml = osim::hw::topology_yaml_from_smi(m, osim::hw::SmiImportOptions{});
  const osim::hw::Topology topo(osim::hw::parse_topology_string(yaml, "fuzz.yaml"));
  (void)osim::hw::compare_with_smi(topo, m);
})
