// Memory-bound kernels: the fit that recovers hbm_latency and hbm_efficiency
// from bench memory_kernel rows.
#include <doctest/doctest.h>

#include "calib/calibrate.hpp"

using namespace osim;

TEST_CASE("calibrate recovers hbm_latency and hbm_efficiency from memory_kernel rows past the L2, and replays them") {
  // Synthetic rows on an H200 (4.8 TB/s): 3 us + bytes / (0.8 x 4.8 TB/s) from
  // 64 MiB up; the smaller ones (in the L2) twice as fast, which the fit leaves
  // out. Calibration needs a machine run: pinned copies beside them.
  const hw::Topology topo(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/h200x4-nvlink.yaml"));
  nlohmann::json doc = {
      {"schema", "overlapsim.bench/v1"}, {"environment", {{"env", nlohmann::json::object()}}}, {"results", nlohmann::json::array()}};
  for (double b = 1048576; b <= 1073741824.0; b *= 4) {
    const double t = 3 + b / (0.8 * 4.8e6);
    doc["results"].push_back({{"key", "memory_kernel"}, {"hbm_bytes", b}, {"time_us", b < 64.0 * 1048576 ? t / 2 : t}});
    doc["results"].push_back({{"key", "h2d_pinned"}, {"gpus", {0}}, {"bytes", b}, {"reps", 1}, {"time_us", 3 + b / 55e3}});
  }
  const Calibration c = calibrate({{"memory.json", doc}}, topo);
  CHECK(c.params.memory.hbm_latency.us() == doctest::Approx(3).epsilon(1e-6));
  CHECK(c.params.memory.hbm_efficiency == doctest::Approx(0.8).epsilon(1e-6));
  int held = 0, in_l2 = 0;
  for (const auto& cmp : compare_bench(doc, topo, c.params)) {
    if (cmp.key != "memory_kernel") continue;
    if (!cmp.outside.empty()) {
      ++in_l2;
      CHECK(cmp.outside == "the GPU's L2 cache holds the buffers");
      continue;
    }
    ++held;
    CHECK(cmp.simulated_us == doctest::Approx(cmp.measured_us).epsilon(1e-4));
  }
  CHECK(held == 3);   // 64 MiB, 256 MiB, 1 GiB
  CHECK(in_l2 == 3);  // 1, 4, 16 MiB
}
