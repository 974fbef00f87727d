// `nvidia-smi topo -m` captures: parsed, imported as a topology, that
// topology built and its matrix compared with the capture's. The same text
// read as `nvidia-smi c2c -s` output gives the import its C2C links.
#include "fuzz_input.hpp"
#include "hw/nvidia_smi.hpp"

OSIM_FUZZ_TARGET({
  osim::hw::SmiImportOptions o;
  try {
    o.c2c_GBps = osim::hw::parse_nvidia_smi_c2c(text, "fuzz-c2c.txt");
  } catch (const osim::InputError&) {
  }
  const osim::hw::SmiMatrix m = osim::hw::parse_nvidia_smi_topo(text, "fuzz.txt");
  const std::string yaml = osim::hw::topology_yaml_from_smi(m, o);
  const osim::hw::Topology topo(osim::hw::parse_topology_string(yaml, "fuzz.yaml"));
  (void)osim::hw::compare_with_smi(topo, m);
})
