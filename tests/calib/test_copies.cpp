// The copies family's fit by kind of host link: pinned copies measured over a
// Grace Hopper's nvlink_c2c fit copy_engine_bandwidth_c2c (_c2c_d2h) and leave
// PCIe's fields as they were; the same rows over PCIe fit PCIe's.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "calib/calibrate.hpp"

using namespace osim;

namespace {
// One GPU and its CPU over a host link of `kind`, 450 GB/s and 0.5 us: above
// the rates below, so a replayed copy is held by the engine's cap alone.
hw::Topology one_gpu(const std::string& kind) {
  return hw::Topology(hw::parse_topology_string("name: one-" + kind + R"(
nodes:
  - {name: cpu0, kind: cpu, memory: 480 GB}
  - {name: gpu0, kind: gpu, model: GH200, memory: 96 GB, copy_engines: 3, peak_tflops: {bf16: 100}}
links:
  - {a: gpu0, b: cpu0, kind: )" + kind + ", bandwidth: 450 GB/s, latency: 0.5 us}\n"));
}

// Pinned copies on GPU 0 as the bench times them: per copy latency + bytes /
// rate + burst / reps (20 reps below 1 MiB, 5 below 64 MiB, 1 above); H2D
// 2.7 us, 320 GB/s, a burst of 7 us; D2H 2.6 us, 280 GB/s, 7.5 us. Both ways
// at once (bidir_pinned, 256 MiB and 1 GiB, one per burst): each direction
// at 0.8 (H2D) and 0.7 (D2H) of its one-way rate.
nlohmann::json bench() {
  nlohmann::json doc = {
      {"schema", "overlapsim.bench/v1"}, {"environment", {{"env", nlohmann::json::object()}}}, {"results", nlohmann::json::array()}};
  const double lat[2] = {2.7, 2.6}, gbps[2] = {320, 280}, burst[2] = {7, 7.5}, share[2] = {0.8, 0.7};
  for (double b = 4096; b <= 1073741824.0; b *= 4)
    for (int d2h = 0; d2h < 2; ++d2h) {
      const int reps = b < 1048576 ? 20 : b < 64.0 * 1048576 ? 5 : 1;
      doc["results"].push_back({{"key", d2h ? "d2h_pinned" : "h2d_pinned"},
                                {"gpus", {0}},
                                {"bytes", b},
                                {"reps", reps},
                                {"time_us", lat[d2h] + b / (gbps[d2h] * 1e3) + burst[d2h] / reps}});
    }
  // The set-up the fit takes off (copy_latency, without the route's 0.5 us).
  const auto both = [&](int d2h, double b) { return lat[d2h] - 0.5 + burst[d2h] + b / (share[d2h] * gbps[d2h] * 1e3); };
  for (const double b : {268435456.0, 1073741824.0})
    doc["results"].push_back(
        {{"key", "bidir_pinned"}, {"gpus", {0}}, {"bytes", b}, {"reps", 1}, {"h2d_time_us", both(0, b)}, {"d2h_time_us", both(1, b)}});
  return doc;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("pinned copies over nvlink_c2c fit the C2C engine caps, PCIe's stay, and the same rows over PCIe fit PCIe's") {
  const CopyParams defaults;
  const Calibration c2c = calibrate({{"c2c.json", bench()}}, one_gpu("nvlink_c2c"));
  const Calibration pcie = calibrate({{"pcie.json", bench()}}, one_gpu("pcie"));
  // Over nvlink_c2c: the closed form's rates in the C2C fields, PCIe's unlimited as before.
  CHECK(c2c.params.copies.copy_engine_bandwidth_c2c.h2d.GBps() == doctest::Approx(320).epsilon(1e-6));
  CHECK(c2c.params.copies.copy_engine_bandwidth_c2c.d2h.GBps() == doctest::Approx(280).epsilon(1e-6));
  CHECK(c2c.params.copies.copy_engine_bandwidth == defaults.copy_engine_bandwidth);
  CHECK(c2c.params.copies.copy_engine_bandwidth.h2d.is_unlimited());
  // Over PCIe: the same rates in PCIe's fields, the C2C ones the public GH200 figures.
  CHECK(pcie.params.copies.copy_engine_bandwidth.h2d.GBps() == doctest::Approx(320).epsilon(1e-6));
  CHECK(pcie.params.copies.copy_engine_bandwidth.d2h.GBps() == doctest::Approx(280).epsilon(1e-6));
  CHECK(pcie.params.copies.copy_engine_bandwidth_c2c == defaults.copy_engine_bandwidth_c2c);
  CHECK(pcie.params.copies.copy_engine_bandwidth_c2c.h2d.GBps() == doctest::Approx(346));
  // The rest of the line and the steps that read the cap alike on both links:
  // set-up less the route's 0.5 us, the burst, the share both ways.
  for (const Calibration* c : {&c2c, &pcie}) {
    CHECK(c->params.copies.copy_latency.h2d.us() == doctest::Approx(2.2).epsilon(1e-4));
    CHECK(c->params.copies.copy_latency.d2h.us() == doctest::Approx(2.1).epsilon(1e-4));
    CHECK(c->params.handoff.copy_after_kernel_latency.h2d.us() == doctest::Approx(7).epsilon(1e-4));
    CHECK(c->params.copies.copy_bidir_factor.h2d == doctest::Approx(0.8).epsilon(1e-6));
    CHECK(c->params.copies.copy_bidir_factor.d2h == doctest::Approx(0.7).epsilon(1e-6));
  }
  // The report names the fields the rate went to.
  const auto formula = [](const Calibration& c, const std::string& name) {
    const auto it = std::find_if(c.fits.begin(), c.fits.end(), [&](const Fit& f) { return f.name == name; });
    REQUIRE(it != c.fits.end());
    return it->formula;
  };
  CHECK(has(formula(c2c, "h2d_pinned (GPU 0)"), "nvlink_c2c: the rate is copy_engine_bandwidth_c2c,"));
  CHECK(has(formula(c2c, "d2h_pinned (GPU 0)"), "the rate is copy_engine_bandwidth_c2c_d2h,"));
  CHECK(!has(formula(pcie, "h2d_pinned (GPU 0)"), "c2c"));
  // Each pinned row replayed on its topology as the bench ran it: the fitted cap holds it.
  const auto replayed = [](const Calibration& c, const hw::Topology& topo) {
    int n = 0;
    for (const auto& cmp : compare_bench(bench(), topo, c.params))
      if (cmp.key == "h2d_pinned" || cmp.key == "d2h_pinned") {
        CHECK(std::abs(cmp.error_pct()) < 1e-3);
        ++n;
      }
    return n;
  };
  CHECK(replayed(c2c, one_gpu("nvlink_c2c")) == 20);
  CHECK(replayed(pcie, one_gpu("pcie")) == 20);
  // The file: the C2C fields written and read back, PCIe's absent (unlimited).
  const std::filesystem::path f = std::filesystem::temp_directory_path() / ("osim-c2c-fit-" + std::to_string(getpid()) + ".yaml");
  std::ofstream(f) << calibration_yaml(c2c);
  const ModelParams q = load_calibration(f.string());
  std::filesystem::remove(f);
  CHECK(q.copies.copy_engine_bandwidth_c2c.h2d.GBps() == doctest::Approx(320).epsilon(1e-4));
  CHECK(q.copies.copy_engine_bandwidth_c2c.d2h.GBps() == doctest::Approx(280).epsilon(1e-4));
  CHECK(q.copies.copy_engine_bandwidth.h2d.is_unlimited());
}

TEST_CASE("pageable copies from several processes: a 1-GPU box's limit from its CPU's side, each file's shares, their median") {
  // Two files of the CPU's side alone (processes_host_to_pinned): aggregates
  // 5, 9, 12, 16 and 6, 12, 15, 19.2 GB/s for 1-4 processes, each process's
  // share of its rate alone 1, 0.9, 0.8, 0.8 and 1, 1, 0.8333, 0.8: medians
  // 1, 0.95, 0.81667, 0.8. One pageable H2D alone at the default 10 GB/s (no
  // h2d_pageable rows), so the limit is k x share x 10; D2H's one-copy rate is
  // unlimited by default, so no D2H limit. The rows of k processes on the one
  // GPU (processes_h2d_pageable) fit nothing.
  const auto file = [](std::vector<double> agg) {
    nlohmann::json doc = {
        {"schema", "overlapsim.bench/v1"}, {"environment", {{"env", nlohmann::json::object()}}}, {"results", nlohmann::json::array()}};
    for (size_t k = 1; k <= agg.size(); ++k) {
      doc["results"].push_back({{"key", "processes_host_to_pinned"}, {"processes", k}, {"gpus", 1}, {"bytes_per_gpu", 268435456},
                                {"time_us", 1e4}, {"aggregate_GBps", agg[k - 1]}});
      doc["results"].push_back({{"key", "processes_h2d_pageable"}, {"processes", k}, {"gpus", 1}, {"bytes_per_gpu", 268435456},
                                {"time_us", 1e4}, {"aggregate_GBps", 3.0}});
    }
    return doc;
  };
  const Calibration c = calibrate({{"bench.json", bench()}, {"a.json", file({5, 9, 12, 16})}, {"b.json", file({6, 12, 15, 19.2})}},
                                  one_gpu("pcie"));
  const auto& h2d = c.params.copies.pageable_h2d_aggregate;
  REQUIRE(h2d.size() == 4);
  const double want[] = {10, 19, 24.5, 32};
  for (size_t k = 0; k < 4; ++k) CHECK(h2d[k].GBps() == doctest::Approx(want[k]).epsilon(1e-9));
  CHECK(c.params.copies.pageable_d2h_aggregate.empty());
  // Only the rows on one GPU: nothing to fit from.
  const Calibration none = calibrate({{"bench.json", bench()}, {"p.json", [&] {
                                        nlohmann::json d = file({5, 9});
                                        nlohmann::json kept = nlohmann::json::array();
                                        for (const auto& r : d["results"])
                                          if (r["key"] == "processes_h2d_pageable") kept.push_back(r);
                                        d["results"] = kept;
                                        return d;
                                      }()}},
                                     one_gpu("pcie"));
  CHECK(none.params.copies.pageable_h2d_aggregate.empty());
}
