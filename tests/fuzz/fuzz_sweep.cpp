// Sweep files: parsed and every point's keys checked. The input is written
// to <tmp>/sweeps/fuzz.yaml beside links to the shipped workloads,
// topologies and calibrations, so the seeds' relative paths resolve.
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "fuzz_input.hpp"
#include "sweep/sweep.hpp"

namespace {
std::filesystem::path input_path() {
  static const std::filesystem::path p = [] {
    namespace fs = std::filesystem;
    const fs::path root = fs::temp_directory_path() / ("overlapsim-fuzz-sweep-" + std::to_string(::getpid()));
    fs::create_directories(root / "sweeps");
    for (const char* d : {"workloads", "topologies", "calibrations", "schedules"})
      if (!fs::exists(root / d)) fs::create_directory_symlink(fs::path(OVERLAPSIM_SOURCE_DIR) / "configs" / d, root / d);
    return root / "sweeps" / "fuzz.yaml";
  }();
  return p;
}
}  // namespace

OSIM_FUZZ_TARGET({
  std::ofstream(input_path(), std::ios::binary | std::ios::trunc) << text;
  const osim::SweepSpec s = osim::parse_sweep_file(input_path().string());
  for (size_t i = 0; i < s.size() && i < 64; ++i) (void)s.point(i);
})
