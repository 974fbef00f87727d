// The shipped Wan sweep over the machine catalogue (configs/sweeps/
// wan-catalogue.yaml): every point runs on every catalogue machine, and the
// machines rank as their datasheets say they must.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "sweep/sweep.hpp"

using namespace osim;

namespace {
const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

std::string cell(const SweepTable& t, size_t row, const std::string& col) {
  const int c = t.column(col);
  REQUIRE(c >= 0);
  return t.rows[row][static_cast<size_t>(c)];
}
}  // namespace

TEST_CASE("sweep: Wan2.2 runs on each catalogue machine (8x H100 PCIe, 8x L40S, 4x GH200, GB200 NVL72)") {
  SweepOptions o;
  o.threads = 2;
  const SweepTable t = run_sweep(parse_sweep_file(kSrc + "/configs/sweeps/wan-catalogue.yaml"), o);
  REQUIRE(t.rows.size() == 8);  // 4 machines x Ulysses {2, 4}
  std::map<std::string, double> step4;  // Ulysses 4's step time by machine
  for (size_t r = 0; r < t.rows.size(); ++r) {
    INFO(cell(t, r, "topology_name") << " ulysses " << cell(t, r, "parallelism.ulysses") << ": " << cell(t, r, "error"));
    CHECK(cell(t, r, "status") == "ok");
    CHECK(cell(t, r, "ranks") == cell(t, r, "parallelism.ulysses"));
    const double step = std::stod(cell(t, r, "step_ms"));
    CHECK(step > 0);
    if (cell(t, r, "parallelism.ulysses") == "4") step4[cell(t, r, "topology_name")] = step;
  }
  REQUIRE(step4.size() == 4);
  // Dense BF16: L40S 362 < H100 PCIe 756 < GH200 990 < GB200 2,500 TFLOP/s,
  // and the step is compute-bound: the step times fall in that order.
  CHECK(step4["l40sx8-pcie"] > step4["h100x8-pcie"]);
  CHECK(step4["h100x8-pcie"] > step4["gh200x4-c2c"]);
  CHECK(step4["gh200x4-c2c"] > step4["gb200-nvl72"]);
}
