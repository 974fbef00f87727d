// Interference: the copy_collective rows (copies beside each collective kind)
// replayed with the ops the bench ran, and refused when malformed; the copy
// weights against a collective through host memory from one GPU's kernels
// that read and write host memory beside copies.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "calib/calibrate.hpp"
#include "calib/families/steps.hpp"
#include "gpu/nccl_model.hpp"
#include "gpu/params_io.hpp"

using namespace osim;
namespace fi = osim::families::interference;

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

// A copy_beside_host_memory_kernel row (copy_beside_kernels.py --host-memory):
// a kernel of `ctas` CTAs loading from (`kind` load) or storing to (store)
// pinned host memory beside a 512 MiB pinned copy, rates in GB/s.
nlohmann::json host_row(const std::string& kind, int ctas, const std::string& copy, double kernel_alone, double kernel_beside, double copy_alone) {
  return {{"key", "copy_beside_host_memory_kernel"},
          {"gpus", {0}},
          {"kernel", fmt::format("host_{}_{}", kind, ctas)},
          {"ctas", ctas},
          {"kernel_bytes", 67108864},
          {"copy", copy},
          {"copy_bytes", 536870912},
          {"copy_alone_GBps", copy_alone},
          {"copy_beside_GBps", copy_alone / 2},
          {"kernel_alone_GBps", kernel_alone},
          {"kernel_beside_GBps", kernel_beside}};
}

// One host's rows: a CTA's loads 20 GB/s alone, beside an H2D copy 8 (one
// CTA) and 20 of 40 (two); beside a D2H copy 16 and 25 of 40; stores beside
// a D2H copy at `store_beside` GB/s; the copies 50 GB/s alone.
nlohmann::json host_doc(double store_beside) {
  nlohmann::json rows = nlohmann::json::array();
  rows.push_back(host_row("load", 1, "h2d", 20, 8, 50));
  rows.push_back(host_row("load", 2, "h2d", 40, 20, 50));
  rows.push_back(host_row("load", 1, "d2h", 20, 16, 50));
  rows.push_back(host_row("load", 2, "d2h", 40, 25, 50));
  rows.push_back(host_row("store", 1, "d2h", 45, store_beside, 50));
  rows.push_back(host_row("store", 2, "d2h", 50, store_beside, 50));
  return {{"schema", "overlapsim.bench/v1"}, {"environment", {{"gpu", "NVIDIA H100 80GB HBM3"}, {"host_memory", true}}}, {"results", rows}};
}

// A host measured to 8 CTAs: loads beside an H2D copy 8 / 16 / 22 / 25 GB/s
// at 1 / 2 / 4 / 8 CTAs (20 / 40 / 50 / 50 alone), beside a D2H copy 16 /
// 24 / 30 / 30; stores beside a D2H copy at `store_beside`; copies 50 alone.
nlohmann::json host_doc_to_8(double store_beside) {
  nlohmann::json rows = nlohmann::json::array();
  const double alone[] = {20, 40, 50, 50}, h2d[] = {8, 16, 22, 25}, d2h[] = {16, 24, 30, 30};
  const int ctas[] = {1, 2, 4, 8};
  for (int i = 0; i < 4; ++i) {
    rows.push_back(host_row("load", ctas[i], "h2d", alone[i], h2d[i], 50));
    rows.push_back(host_row("load", ctas[i], "d2h", alone[i], d2h[i], 50));
    rows.push_back(host_row("store", ctas[i], "d2h", 50, store_beside, 50));
  }
  return {{"schema", "overlapsim.bench/v1"}, {"environment", {{"gpu", "NVIDIA H100 80GB HBM3"}, {"host_memory", true}}}, {"results", rows}};
}

}  // namespace

TEST_CASE("copy weights against a collective through host memory, from one GPU's kernels that read and write host memory") {
  // A rank moving R = 25 GB/s through host memory keeps n = 25 / 20 = 1.25
  // CTAs' loads in flight. Beside an H2D copy loads slow by 2.5 (one CTA)
  // and 2.0 (two): at n, 2.375; the flow keeps R / 2.375 when the copy's
  // weight is w = 50 x 2.375 / 25 - 1 = 3.75 (max-min: C / (1 + w)). Beside
  // a D2H copy: 1.25 and 1.6, at n 1.3375: w = 50 x 1.3375 / 25 - 1 = 1.675,
  // while the rank's stores keep more than R beside the copy (30 GB/s).
  const fi::HostReaderWeights w = fi::copy_weights_beside_host_reader(host_doc(30), 25);
  CHECK(w.points == 4);
  CHECK(w.one_cta_GBps == doctest::Approx(20));
  CHECK(w.ctas == doctest::Approx(1.25));
  CHECK(w.slowdown_h2d == doctest::Approx(2.375));
  CHECK(w.slowdown_d2h == doctest::Approx(1.3375));
  CHECK(w.h2d == doctest::Approx(3.75));
  CHECK(w.d2h == doctest::Approx(1.675));
  // Stores held to 10 GB/s beside the copy (writes share the way up by
  // injection) bind the rank instead: 25 / 10 = 2.5, w = 50 x 2.5 / 25 - 1 = 4.
  const fi::HostReaderWeights held = fi::copy_weights_beside_host_reader(host_doc(10), 25);
  CHECK(held.slowdown_d2h == doctest::Approx(2.5));
  CHECK(held.d2h == doctest::Approx(4.0));
  CHECK(held.h2d == doctest::Approx(3.75));
  // A rank beyond the CTA counts measured takes the last one's slowdown.
  CHECK(fi::copy_weights_beside_host_reader(host_doc(30), 60).slowdown_h2d == doctest::Approx(2.0));

  // Through calibrate (beside a machine run of one pinned copy): R is NCCL's
  // SHM rate on the topology's PCIe link (no NCCL measured); two files, the
  // median of their weights.
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/dgx-h100.yaml"));
  const double rank = exec::NcclModel(topo).shm_rank_bandwidth() / 1e9;
  REQUIRE(rank > 0);
  const nlohmann::json machine = {
      {"schema", "overlapsim.bench/v1"},
      {"environment", {{"env", nlohmann::json::object()}}},
      {"results", {{{"key", "h2d_pinned"}, {"gpus", {0}}, {"bytes", 1048576.0}, {"reps", 5}, {"time_us", 3 + 1048576.0 / 55e3}}}}};
  const Calibration cal = calibrate({{"machine.json", machine}, {"host.json", host_doc(30)}, {"host-2.json", host_doc(30)}}, topo);
  const fi::HostReaderWeights one = fi::copy_weights_beside_host_reader(host_doc(30), rank);
  CHECK(cal.params.interference.copy_weight.h2d == doctest::Approx(one.h2d));
  CHECK(cal.params.interference.copy_weight.d2h == doctest::Approx(one.d2h));
  CHECK(cal.params.interference.copy_weight.h2d != doctest::Approx(ModelParams{}.interference.copy_weight.h2d));
  const auto from_rows = [](const Fit& f) { return f.name.find("host-memory kernels") != std::string::npos; };
  const auto fit = std::find_if(cal.fits.begin(), cal.fits.end(), from_rows);
  REQUIRE(fit != cal.fits.end());
  CHECK(fit->points == 8);
  // The 4-rank weights are reported beside the 2-rank ones, not taken.
  const auto value = [&](const std::string& name) {
    const auto v = std::find_if(fit->values.begin(), fit->values.end(), [&](const auto& kv) { return kv.first == name; });
    REQUIRE(v != fit->values.end());
    return v->second;
  };
  const fi::HostReaderWeights four = fi::copy_weights_beside_host_reader(host_doc(30), rank, 4);
  CHECK(value("copy_weight_h2d_4_ranks") == doctest::Approx(four.h2d));
  CHECK(value("copy_weight_d2h_4_ranks") == doctest::Approx(four.d2h));
  CHECK(four.h2d != doctest::Approx(one.h2d));

  // An all-to-all measured beside copies through host memory wins: the
  // weights come from its pair (fit by simulation), not from these rows.
  nlohmann::json off = machine;
  off["environment"]["env"]["NCCL_P2P_DISABLE"] = "1";
  off["environment"]["gpus"] = {{{"index", 0}, {"name", "NVIDIA H100 80GB HBM3"}}, {{"index", 1}, {"name", "NVIDIA H100 80GB HBM3"}}};
  off["results"].push_back({{"key", "interference"},
                            {"a", "all_to_all"},
                            {"b", "h2d"},
                            {"channels", 0},
                            {"a_alone_us", 40000.0},
                            {"b_alone_us", 20000.0},
                            {"a_together_us", 60000.0},
                            {"b_together_us", 24000.0},
                            {"a_slowdown", 1.5},
                            {"b_slowdown", 1.2}});
  const Calibration measured = calibrate({{"machine.json", machine}, {"off.json", off}, {"host.json", host_doc(30)}}, topo);
  CHECK(std::none_of(measured.fits.begin(), measured.fits.end(), from_rows));
  CHECK(measured.params.interference.copy_weight.h2d != doctest::Approx(one.h2d));

  // A row whose kernel is none of the kinds is refused, naming it.
  nlohmann::json bad = host_doc(30);
  bad["results"][0]["kernel"] = "device_load_1";
  CHECK_THROWS_WITH_AS(fi::copy_weights_beside_host_reader(bad, 25), doctest::Contains("kernel 'device_load_1'"), std::invalid_argument);
  bad = host_doc(30);
  bad["results"][1]["kernel_beside_GBps"] = 0;
  CHECK_THROWS_AS(fi::copy_weights_beside_host_reader(bad, 25), std::invalid_argument);
}

TEST_CASE("copy weights against a 4-rank all-to-all through host memory: the rank's loading CTAs grow with its peers") {
  // R = 25 GB/s, r1 = 20: a 2-rank all-to-all keeps n = 1.25 CTAs' loads in
  // flight, a 4-rank one (two channels for each of 3 peers) 3 x 1.25 = 3.75.
  const nlohmann::json doc = host_doc_to_8(30);
  const fi::HostReaderWeights two = fi::copy_weights_beside_host_reader(doc, 25, 2);
  const fi::HostReaderWeights four = fi::copy_weights_beside_host_reader(doc, 25, 4);
  CHECK(two.ctas == doctest::Approx(1.25));
  CHECK(four.ctas == doctest::Approx(3.75));
  CHECK(four.ranks == 4);
  // H2D, 2 ranks: s = 2.5 at 1 and 2 CTAs, so at 1.25; the flow keeps
  // X = 25 / 2.5 = 10, w = 50 / 10 - 1 = 4.
  CHECK(two.slowdown_h2d == doctest::Approx(2.5));
  CHECK(two.h2d == doctest::Approx(4.0));
  // 4 ranks: the loads beside the copy grow from 10 GB/s at 1.25 CTAs
  // (8 + 0.25 x 8) to 16 + 0.875 x 6 = 21.25 at 3.75, so X = 10 x 21.25 / 10
  // = 21.25; three flows of weight 1/sqrt(3) weigh sqrt(3) together:
  // w = sqrt(3) (50 / 21.25 - 1) = 2.343.
  CHECK(four.slowdown_h2d == doctest::Approx(25 / 21.25));
  CHECK(four.h2d == doctest::Approx(std::sqrt(3.0) * (50 / 21.25 - 1)));
  CHECK(four.h2d == doctest::Approx(2.3433).epsilon(1e-4));
  // D2H, 2 ranks: s = 1.25 + 0.25 x (40/24 - 1.25) = 1.3542 at 1.25 CTAs,
  // X = 25 / 1.3542 = 18.46, w = 50 x 1.3542 / 25 - 1 = 1.708 (the stores
  // keep 30 > X). 4 ranks: 18.46 x (24 + 0.875 x 6) / (16 + 0.25 x 8) = 30.0,
  // more than the rank moves alone: X = R = 25, w = sqrt(3) (50 / 25 - 1).
  CHECK(two.d2h == doctest::Approx(50 * (1.25 + 0.25 * (40.0 / 24 - 1.25)) / 25 - 1));
  CHECK(four.slowdown_d2h == doctest::Approx(1.0));
  CHECK(four.d2h == doctest::Approx(std::sqrt(3.0)));
  // Stores held to 20 GB/s beside the D2H copy bind the 4-rank flows:
  // w = sqrt(3) (50 / 20 - 1) = 2.598; the 2-rank ones keep 18.46 < 20.
  CHECK(fi::copy_weights_beside_host_reader(host_doc_to_8(20), 25, 4).d2h == doctest::Approx(std::sqrt(3.0) * 1.5));
  CHECK(fi::copy_weights_beside_host_reader(host_doc_to_8(20), 25, 2).d2h == doctest::Approx(two.d2h));
  // Fewer than two ranks is refused.
  CHECK_THROWS_WITH_AS(fi::copy_weights_beside_host_reader(doc, 25, 1), doctest::Contains("1 ranks"), std::invalid_argument);
}

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
