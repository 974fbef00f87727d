// Interference: the copy_collective rows (copies beside each collective kind)
// replayed with the ops the bench ran, and refused when malformed.
#include <doctest/doctest.h>

#include "calib/calibrate.hpp"
#include "gpu/params_io.hpp"

using namespace osim;

namespace {

const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

// A bench document of `rows` from `gpus` H200s on one host, P2P on or off.
nlohmann::json bench_doc(const nlohmann::json& rows, int gpus, bool p2p_off) {
  nlohmann::json env = nlohmann::json::object();
  if (p2p_off) env["NCCL_P2P_DISABLE"] = "1";
  nlohmann::json list = nlohmann::json::array();
  for (int g = 0; g < gpus; ++g) list.push_back({{"index", g}, {"name", "NVIDIA H200"}});
  return {{"schema", "overlapsim.bench/v1"}, {"environment", {{"env", env}, {"gpus", list}}}, {"results", rows}};
}

// A copy_collective row as copy_collective.cu writes it; the measured times
// are placeholders the replay scales (alone 1000 us, together 1500 us).
nlohmann::json row(const std::string& coll, double mib, const std::string& copy, bool every, int ranks) {
  const double bytes = mib * 1048576;
  return {{"key", "copy_collective"},
          {"collective", coll},
          {"bytes", bytes},
          {"ranks", ranks},
          {"reps", std::max(1, std::min(16, static_cast<int>(256 / mib)))},
          {"copy", copy},
          {"every", every},
          {"copy_bytes", 268435456},
          {"copy_count", 2},
          {"collective_alone_us", 1000.0},
          {"copy_alone_us", 1000.0},
          {"collective_together_us", 1500.0},
          {"copy_together_us", 1500.0},
          {"collective_slowdown", 1.5},
          {"copy_slowdown", 1.5}};
}

}  // namespace

TEST_CASE("copies beside a collective over NVLink share no resource in the model: their one coupling is nvlink_copy_latency per collective") {
  // P2P on, 4 H200s on NVSwitch: the collective's flows cross NVLink, the
  // copies each GPU's PCIe link, and nothing in the fabric joins the two.
  // What the model adds is NvlinkParams::nvlink_copy_latency: a collective
  // that starts while one of its ranks copies waits that long first. The
  // copies (2 x 256 MiB at ~55 GB/s, ~10 ms) outlast every collective, so
  // each of a row's `reps` collectives waits once: together = alone + reps x
  // latency. Without it each side's slowdown is 1 exactly, and the replay
  // gives back the measured time alone (1000 us); with it the collective's
  // extra time is linear in the latency, whatever the direction or which
  // GPUs copy.
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  ModelParams p = load_calibration(kSrc + "/configs/calibrations/h200x4-nvlink.yaml");
  REQUIRE(p.nvlink.nvlink_copy_latency > Time::zero());
  nlohmann::json rows = nlohmann::json::array();
  for (const char* coll : {"all_to_all", "all_gather", "reduce_scatter", "all_reduce"})
    for (const double mib : {8.0, 512.0})
      for (const char* copy : {"h2d", "d2h"})
        for (const bool every : {false, true}) rows.push_back(row(coll, mib, copy, every, 4));
  const auto replay_with = [&](Time latency) {
    p.nvlink.nvlink_copy_latency = latency;
    return compare_bench(bench_doc(rows, 4, false), topo, p);
  };
  const Time fitted = p.nvlink.nvlink_copy_latency;
  const std::vector<Comparison> none = replay_with(Time::zero()), once = replay_with(fitted), twice = replay_with(fitted + fitted);
  REQUIRE(none.size() == 2 * rows.size());
  REQUIRE(once.size() == none.size());
  REQUIRE(twice.size() == none.size());
  for (size_t i = 0; i < none.size(); ++i) {
    INFO(once[i].what);
    CHECK(none[i].key == "copy_collective");
    CHECK(none[i].measured_us == 1500.0);
    CHECK(none[i].simulated_us == doctest::Approx(1000.0).epsilon(1e-12));
    CHECK(none[i].cls.rfind("copy beside collective, ", 0) == 0);
    if (once[i].what.find(": the copy") != std::string::npos) {
      CHECK(once[i].simulated_us == doctest::Approx(1000.0).epsilon(1e-12));  // the copy never waits
      continue;
    }
    CHECK(once[i].simulated_us > 1000.0);
    CHECK(twice[i].simulated_us - 1000.0 == doctest::Approx(2 * (once[i].simulated_us - 1000.0)).epsilon(1e-9));
  }
  // The wait does not depend on the direction or on which GPUs copy: the
  // four rows of each collective and size (rows in the order built above,
  // two comparisons each) give one slowdown.
  for (size_t i = 0; i < once.size(); i += 8)
    for (size_t k = 2; k < 8; k += 2) CHECK(once[i + k].simulated_us == doctest::Approx(once[i].simulated_us).epsilon(1e-12));
}

TEST_CASE("through host memory the all-to-all and every GPU's copies share the PCIe links: both slow down") {
  // NCCL_P2P_DISABLE=1: the all-to-all's bytes go up and down the same PCIe
  // links as the copies, so each side takes longer together than alone
  // (the fitted copy weight and link cost set by how much).
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  const ModelParams p = load_calibration(kSrc + "/configs/calibrations/h200x4-nvlink.yaml");
  const nlohmann::json rows = {row("all_to_all", 64, "h2d", true, 4), row("all_to_all", 64, "d2h", true, 4)};
  const std::vector<Comparison> out = compare_bench(bench_doc(rows, 4, true), topo, p);
  REQUIRE(out.size() == 4);
  for (const Comparison& c : out) {
    INFO(c.what);
    CHECK(c.what.find("P2P off") != std::string::npos);
    CHECK(c.simulated_us > 1000.0 * 1.01);
  }
}

TEST_CASE("a copy_collective row is refused when a field is missing or outside its cases, and skipped past the topology's GPUs") {
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  const ModelParams p = load_calibration(kSrc + "/configs/calibrations/h200x4-nvlink.yaml");
  for (const char* field : {"collective", "bytes", "reps", "copy", "every", "copy_bytes", "copy_count", "ranks", "collective_alone_us", "copy_together_us"}) {
    INFO(field);
    nlohmann::json r = row("all_gather", 64, "h2d", false, 4);
    r.erase(field);
    CHECK_THROWS_AS(compare_bench(bench_doc(nlohmann::json::array({r}), 4, false), topo, p), nlohmann::json::exception);
  }
  nlohmann::json bad = row("all_gather", 64, "h2d", false, 4);
  bad["collective"] = "broadcast";
  CHECK_THROWS_WITH_AS(compare_bench(bench_doc(nlohmann::json::array({bad}), 4, false), topo, p), doctest::Contains("collective 'broadcast': expected one of"),
                       std::invalid_argument);
  bad = row("all_gather", 64, "h2d", false, 4);
  bad["copy"] = "p2p";
  CHECK_THROWS_WITH_AS(compare_bench(bench_doc(nlohmann::json::array({bad}), 4, false), topo, p), doctest::Contains("copy 'p2p': expected one of"), std::invalid_argument);
  bad = row("all_gather", 64, "h2d", false, 4);
  bad["copy_count"] = 0;
  CHECK_THROWS_WITH_AS(compare_bench(bench_doc(nlohmann::json::array({bad}), 4, false), topo, p), doctest::Contains("must be above 0"), std::invalid_argument);
  // Eight ranks on a four-GPU topology: nothing to replay.
  CHECK(compare_bench(bench_doc(nlohmann::json::array({row("all_gather", 64, "h2d", false, 8)}), 8, false), topo, p).empty());
}
