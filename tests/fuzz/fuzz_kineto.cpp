// torch.profiler (Kineto) traces: imported as a one-rank schedule with its
// measured records. What the import accepts must be a schedule that reads
// back (to_yaml, then parsed and checked): an import that succeeds and
// writes a schedule `run` refuses is a finding, as is anything but an
// InputError escaping the import.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "fuzz_input.hpp"
#include "kineto/import.hpp"
#include "schedule/schedule.hpp"

OSIM_FUZZ_TARGET({
  // The importer reads files (gzipped or not): the input goes to one of this process's own.
  static const std::string path = "/tmp/fuzz_kineto." + std::to_string(getpid()) + ".json";
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  const osim::kineto::ImportedTrace t = osim::kineto::import_traces({path});
  const std::string yaml = osim::to_yaml(t.schedule);
  try {
    (void)osim::parse_schedule_string(yaml, "imported.yaml");
  } catch (const osim::InputError& e) {
    std::cerr << "the import wrote a schedule that does not read back: " << e.what() << "\n" << yaml.substr(0, 4000) << "\n";
    std::abort();
  }
})
