// Workloads: parsed (model presets, blocks, expressions) and their schedule generated.
#include "fuzz_input.hpp"
#include "workload/dit.hpp"

OSIM_FUZZ_TARGET({
  const osim::DitWorkload w = osim::parse_workload_string(text, "fuzz.yaml");
  (void)osim::generate_schedule(w);
})
