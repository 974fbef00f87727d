// Calibration on the committed measurements (validate/results/): fitted
// values, the calibration file round trip, and how closely the calibrated
// simulator replays each microbenchmark.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "calib/calibrate.hpp"
#include "calib/families/attention.hpp"
#include "calib/families/gemm.hpp"
#include "core/errors.hpp"

using namespace osim;

namespace {
const std::string kSrc = OVERLAPSIM_SOURCE_DIR;
const std::string kH200 = kSrc + "/validate/results/h200x4-nvswitch/";

nlohmann::json load(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// What every H200 calibration takes from other boxes of the kind: the single
// H200's SDPA and long-load / memory-kernel runs, and box e's all-to-alls
// with the clock down (both transports).
const std::vector<std::string> kH200Shared = {"validate/results/h200x1/attention.json", "validate/results/h200x1/bench-long-memory.json",
                                              "validate/results/h200x2-nvlink-e/bench-loaded-1.json",
                                              "validate/results/h200x2-nvlink-e/bench-loaded-p2p-disable.json"};

// A machine's bench runs (repo-relative paths) plus kH200Shared, named as
// `overlapsim calibrate` names them.
// A box that measured its own all-to-alls with the clock down (box f on)
// leaves box e's out (`shared` = the first two).
std::vector<std::pair<std::string, nlohmann::json>> h200_docs(const std::vector<std::string>& runs, size_t shared = kH200Shared.size()) {
  std::vector<std::pair<std::string, nlohmann::json>> docs;
  for (const auto& f : runs) docs.emplace_back(f, load(kSrc + "/" + f));
  for (size_t i = 0; i < shared; ++i) docs.emplace_back(kH200Shared[i], load(kSrc + "/" + kH200Shared[i]));
  return docs;
}

// A results folder's runs calibrated as `overlapsim calibrate` does (the
// H200 topology, the single-H200 box's runs added), checked against the
// committed calibration file.
struct Box {
  std::string dir;
  hw::Topology topo{hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml")};
  std::vector<std::pair<std::string, nlohmann::json>> docs;
  Calibration cal;
  explicit Box(const std::string& folder, const std::vector<std::string>& extra = {}, size_t shared = kH200Shared.size())
      : dir("validate/results/" + folder + "/") {
    std::vector<std::string> runs{dir + "bench-default.json", dir + "bench-p2p-disable.json"};
    for (const auto& e : extra) runs.push_back(dir + e);
    docs = h200_docs(runs, shared);
    cal = calibrate(docs, topo);
    CHECK(slurp(kSrc + "/" + dir + "calibration.yaml") == calibration_yaml(cal));
  }
};

// The host transport beside a copy, fitted by simulation (calibrate): a
// byte of the all-to-all costs a PCIe link more than a copy's byte, more so
// up (D2H) than down; the copy weighs `w_h2d` and `w_d2h` (+-0.2). The pairs
// it was fitted on (`fitted`: one GPU copying, every GPU copying, or both by
// least squares) replay within `fitted_bound` % (0.01: an exact solve); the
// other class, out of sample, within `other_bound` %.
enum class HostPairs { One, Every, Both };
void check_host_transport(const Calibration& cal, const nlohmann::json& off, const hw::Topology& topo, double w_h2d, double w_d2h, HostPairs fitted,
                          double fitted_bound, double other_bound) {
  const ModelParams& p = cal.params;
  CHECK(p.interference.copy_weight == doctest::Approx(w_h2d).epsilon(0.2 / w_h2d));
  CHECK(p.interference.copy_weight_d2h == doctest::Approx(w_d2h).epsilon(0.2 / w_d2h));
  CHECK(p.interference.host_transport_cost_h2d > 1.02);
  CHECK(p.interference.host_transport_cost_d2h > p.interference.host_transport_cost_h2d);
  CHECK(p.interference.host_transport_cost_d2h < 1.5);
  const Fit* fit = nullptr;
  for (const Fit& f : cal.fits)
    if (f.name == "NCCL through host memory beside a copy (simulated)") fit = &f;
  REQUIRE(fit != nullptr);
  CHECK(fit->points == (fitted == HostPairs::Both ? 8 : 4));
  CHECK(fit->values.back().first == "worst_residual_pct");
  CHECK(fit->values.back().second < fitted_bound);
  int pairs = 0, every = 0;
  for (const auto& c : compare_bench(off, topo, p)) {
    INFO(c.what);
    if (c.cls == "interference pairs") {
      CHECK(std::abs(c.error_pct()) < (fitted == HostPairs::Every ? other_bound : fitted_bound));
      ++pairs;
    }
    if (c.cls == "interference, every GPU copying") {
      CHECK(std::abs(c.error_pct()) < (fitted == HostPairs::One ? other_bound : fitted_bound));
      ++every;
    }
  }
  CHECK(pairs == 4);
  CHECK(every == (fitted == HostPairs::One ? every : 4));
  CHECK((every == 0 || every == 4));
}

struct H200 {
  hw::Topology topo{hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml")};
  nlohmann::json off = load(kH200 + "bench-p2p-disable.json");
  nlohmann::json attn = load(kSrc + "/validate/results/h200x1/attention.json");
  std::vector<std::pair<std::string, nlohmann::json>> docs = h200_docs(
      {"validate/results/h200x4-nvswitch/bench-default.json", "validate/results/h200x4-nvswitch/bench-p2p-disable.json", "validate/results/h200x4-nvswitch/bench-gemm-h2d.json"});
  Calibration cal = calibrate(docs, topo);
  // The defaults run with the re-measured GEMM table and host copies merged in.
  nlohmann::json def = merge_bench_runs(docs).front().second;
};
}  // namespace

TEST_CASE("fitting the 4xH200 measurements") {
  H200 h;
  const ModelParams& p = h.cal.params;
  CHECK(p.copies.copy_engine_bandwidth.GBps() == doctest::Approx(54.3).epsilon(0.02));
  CHECK(p.copies.copy_latency.us() > 0);
  CHECK(p.copies.copy_latency.us() < 5);
  CHECK(p.copies.pageable_bandwidth.GBps() == doctest::Approx(6.47).epsilon(0.02));
  // Random data, back to back (~0.70 of peak), scaled to the burst rate by the sustained-load fit.
  CHECK(p.gemm.gemm_efficiency > 0.75);
  CHECK(p.gemm.gemm_efficiency < 0.85);
  CHECK(p.gemm.gemm_shapes.size() == 48);
  // bench gemm_sustained: 1,270 us steady against 1,109 us cool at full duty, none at half.
  CHECK(p.power.sustained_slowdown == doctest::Approx(0.15).epsilon(0.05));
  CHECK(p.power.sustained_duty > 0.6);
  CHECK(p.power.sustained_duty < 0.75);
  CHECK(p.power.sustained_time_constant.ms() > 10);
  CHECK(p.power.sustained_time_constant.ms() < 100);
  CHECK(p.nccl.nccl_rank_bandwidth.GBps() == doctest::Approx(328.7).epsilon(0.01));
  CHECK(p.overheads.kernel_launch.us() == doctest::Approx(3.70).epsilon(0.01));
  // PyTorch SDPA (FlashAttention backend) reaches ~350 of 989 TFLOP/s on the H200.
  CHECK(p.attention.attention_efficiency == doctest::Approx(0.36 * (1 + p.power.sustained_slowdown)).epsilon(0.03));
  // GEMM slowed ~1-2.5 % by an all-to-all; the all-to-all 1.55x-1.71x by the GEMM.
  CHECK(p.interference.gemm_slowdown_base > 0.005);
  CHECK(p.interference.gemm_slowdown_base < 0.03);
  CHECK(p.interference.comm_slowdown_base + p.interference.comm_slowdown_per_channel * 24 == doctest::Approx(1.711).epsilon(0.01));
  CHECK(p.interference.comm_slowdown_base + p.interference.comm_slowdown_per_channel * 4 == doctest::Approx(1.547).epsilon(0.01));
}

TEST_CASE("the committed calibration files are what calibrate writes today") {
  H200 h;
  CHECK(slurp(kH200 + "calibration.yaml") == calibration_yaml(h.cal));
  const ModelParams loaded = load_calibration(kH200 + "calibration.yaml");
  CHECK(loaded.copies.copy_engine_bandwidth.GBps() == doctest::Approx(h.cal.params.copies.copy_engine_bandwidth.GBps()).epsilon(1e-6));
  CHECK(loaded.nccl.nccl_rank_bandwidth.GBps() == doctest::Approx(h.cal.params.nccl.nccl_rank_bandwidth.GBps()).epsilon(1e-6));
  CHECK(loaded.gemm.gemm_shapes.size() == 48);
  CHECK(loaded.power.sustained_slowdown == doctest::Approx(h.cal.params.power.sustained_slowdown).epsilon(1e-3));
  CHECK(loaded.gemm.gemm_shapes[5].efficiency == doctest::Approx(h.cal.params.gemm.gemm_shapes[5].efficiency).epsilon(1e-3));
  const hw::Topology dgx(hw::parse_topology_file(kSrc + "/configs/topologies/dgx-h100.yaml"));
  const auto h100 = load(kSrc + "/validate/results/h100x1/bench-default.json");
  CHECK(slurp(kSrc + "/validate/results/h100x1/calibration.yaml") ==
        calibration_yaml(calibrate({{"validate/results/h100x1/bench-default.json", h100}}, dgx)));
}

TEST_CASE("a second machine (2xH200): calibration file, and copies do not deepen the sustained-load clock drop") {
  const Box box("h200x2-nvlink");
  const Calibration& cal = box.cal;
  check_host_transport(cal, box.docs[1].second, box.topo, 3.24, 2.66, HostPairs::One, 0.01, 0);
  // Sustained GEMM at full duty: ~13 % over the low-duty time, plus the burst correction.
  CHECK(cal.params.power.sustained_slowdown == doctest::Approx(0.167).epsilon(0.02));
  const Fit* copies = nullptr;
  for (const Fit& f : cal.fits)
    if (f.name == "sustained load with copies") copies = &f;
  REQUIRE(copies != nullptr);
  REQUIRE(copies->values.size() == 4);  // h2d (this GPU) and h2d_all (both GPUs), duty 0.5 and 1
  for (const auto& [what, ratio] : copies->values) {
    INFO(what);
    CHECK(ratio > 1.0);   // a little slower with copies beside it ...
    CHECK(ratio < 1.02);  // ... but not the 6-10 % the validation runs' compute misses by
  }
}

TEST_CASE("the calibrated simulator replays the 4xH200 microbenchmarks") {
  H200 h;
  const auto rows = compare_bench(h.def, h.topo, h.cal.params);
  MESSAGE("\n" << format_comparison(rows));
  int checked = 0;
  for (const auto& c : rows) {
    if (c.cls == "pinned copy >= 16 MiB") CHECK(std::abs(c.error_pct()) < 5.0);
    // Every GPU count, 3 included since host_h2d_aggregate (10.6 % before).
    if (c.key == "multi_h2d_pinned") CHECK(std::abs(c.error_pct()) < 2.5);
    if (c.key == "nccl_all_to_all" && c.what.find("default channels, 1.00 GiB") != std::string::npos) CHECK(std::abs(c.error_pct()) < 5.0);
    // NVLink: no interaction, as measured. The all-to-all side is four 256 MiB
    // all-to-alls back to back: 4 x the table's single 256 MiB time is 2.80 ms,
    // measured back to back 2.63 ms on this box (box b: 2.72 against 2.75).
    if (c.cls == "interference pairs") CHECK(std::abs(c.error_pct()) < 7.5);
    // NCCL from 4 MiB up replays its own table: within 5 % since a
    // collective's table latency overlaps a transfer its links make longer
    // (it was 24.6 %: 4 ranks, 16 channels, 4 MiB, 47.5 us against 38.2).
    if (c.key.rfind("nccl_", 0) == 0 && (c.what.find(" MiB") != std::string::npos || c.what.find(" GiB") != std::string::npos)) {
      const double size = std::stod(c.what.substr(c.what.rfind(", ") + 2));
      if (c.what.find(" GiB") != std::string::npos || size >= 4) {
        INFO(c.key << " " << c.what);
        CHECK(std::abs(c.error_pct()) < 5.0);
      }
    }
    ++checked;
  }
  // Every copy (multi-GPU D2H included), GEMM, collective and interference
  // row of the run, and box e's four all-to-alls with the clock down (266
  // rows); since 2026-11-23 also every copy both ways at once, the two H2D
  // streams, the pageable copies, the 12 P2P pairs, the pipelined multi-GPU
  // copies and the memory-bound kernels.
  CHECK(checked == 423);
  int p2p = 0;
  for (const auto& c : rows) {
    // A P2P copy is held by the NVLink port at the measured P2P rate, not by
    // the copy engines' PCIe rate (it ran 7x slow before).
    if (c.cls == "P2P copy") {
      CHECK(std::abs(c.error_pct()) < 1.0);
      ++p2p;
    }
    // Both directions at once, fitted on the >= 64 MiB rows (the median share
    // each keeps): the D2H within 3 % down to 16 MiB; this box's H2D moved
    // from 0.82 to 0.96 of its rate between sizes and GPUs (-12.1 / +7.3 %).
    if (c.cls == "both directions at once >= 16 MiB") CHECK(std::abs(c.error_pct()) < (c.what.find("D2H") != std::string::npos ? 3.0 : 12.5));
    // Two H2D streams share one engine: twice one copy's time.
    if (c.cls == "two H2D copies on two streams (one engine)") CHECK(std::abs(c.error_pct()) < 1.5);
    if (c.cls == "memory-bound kernel >= 64 MiB") CHECK(std::abs(c.error_pct()) < 3.0);
  }
  CHECK(p2p == 12);
  int gemm_classes = 0;
  for (const auto& s : summarise(rows))
    if (s.cls == "GEMM (shape model fitted without the shape)") {
      // Each shape predicted by the shape model fitted on the other 47 (this
      // first box's table is back-to-back rates on random data: 0.65-0.79 of
      // peak before the burst scaling); measured shapes use the table.
      // Worst: 16384x15360x5120, +16.4 % (11.9 % before the power-of-two
      // term, which the fits without some shapes take): the shape this
      // constant-data table timed at 780 TFLOP/s where 16380 rows gave 674.
      CHECK(s.cases == 48);
      CHECK(s.median_abs_pct < 4.0);
      CHECK(s.worst_abs_pct < 17.0);
      ++gemm_classes;
    }
  CHECK(gemm_classes == 1);
}

TEST_CASE("the calibrated simulator replays attention") {
  H200 h;
  const auto rows = compare_bench(h.attn, h.topo, h.cal.params);
  CHECK(rows.size() == 16);
  for (const auto& c : rows)
    if (c.cls.rfind("attention, self", 0) == 0) CHECK(std::abs(c.error_pct()) < 5.0);
  // Cross-attention (512 keys) has its own efficiency, falling with the query
  // count: 0.3747 / (1 + 928 / seq_q) of peak at burst (SDPA back to back:
  // 0.26 at 4,095 queries, 0.31-0.32 from 32,760 on, vs 0.36 for
  // self-attention); the asymptote is scaled by 1 + the sustained slowdown.
  std::vector<std::pair<double, double>> sdpa;
  for (const auto& r : h.attn.at("results"))
    if (r.at("key") == "attention_sdpa" && r.value("kind", "self") == "cross") sdpa.emplace_back(r.at("seq_q").get<double>(), r.at("TFLOPs").get<double>() / 989.0);
  REQUIRE(sdpa.size() == 8);
  const auto measured = fit_cross_attention(sdpa);
  REQUIRE(measured.has_value());
  CHECK(measured->second == doctest::Approx(927.7).epsilon(0.01));
  CHECK(h.cal.params.attention.cross_attention_q0 == doctest::Approx(measured->second));
  CHECK(h.cal.params.attention.cross_attention_efficiency == doctest::Approx(measured->first * (1 + h.cal.params.power.sustained_slowdown)).epsilon(1e-6));
  CHECK(h.cal.params.attention.cross_attention_efficiency / (1 + h.cal.params.attention.cross_attention_q0 / 75600) < h.cal.params.attention.attention_efficiency);
  int cross = 0;
  for (const auto& s : summarise(rows))
    if (s.cls.rfind("attention, cross", 0) == 0) {
      // Each shape from the model fitted on the other seven: with one
      // (median) efficiency 4.7 % / 12.8 % (the smallest shape).
      CHECK(s.cls == "attention, cross (query-count model fitted without the shape)");
      CHECK(s.cases == 8);
      CHECK(s.median_abs_pct < 2.0);
      CHECK(s.worst_abs_pct < 5.0);  // 4.6 % with this box's burst scale, 3.8 % with box b's
      ++cross;
    }
  CHECK(cross == 1);
  // The fit recovers an exact curve; one length only, or too few points, gives none.
  std::vector<std::pair<double, double>> pts;
  for (double q : {4096.0, 8192.0, 32768.0, 75600.0}) pts.emplace_back(q, 0.35 / (1 + 800 / q));
  const auto g = fit_cross_attention(pts);
  REQUIRE(g.has_value());
  CHECK(g->first == doctest::Approx(0.35).epsilon(1e-9));
  CHECK(g->second == doctest::Approx(800).epsilon(1e-6));
  CHECK(!fit_cross_attention({{4096, 0.3}, {4096, 0.31}, {4096, 0.29}}).has_value());
  CHECK(!fit_cross_attention({{4096, 0.3}, {8192, 0.31}}).has_value());
}

TEST_CASE("the calibrated simulator replays the PCIe-like transport (NCCL_P2P_DISABLE=1)") {
  H200 h;
  CHECK(h.cal.params.nccl.nccl_host_rank_bandwidth.GBps() == doctest::Approx(26.8).epsilon(0.01));
  // A copy beside a 4-rank all-to-all: the pair rows replay exactly (one copy
  // weight for both directions, from the rates, missed them by 6.8 / 12.2 %).
  check_host_transport(h.cal, h.off, h.topo, 2.97, 3.36, HostPairs::One, 0.01, 0);
  const auto rows = compare_bench(h.off, h.topo, h.cal.params);
  MESSAGE("\n" << format_comparison(rows));
  for (const auto& c : rows) {
    if (c.key == "nccl_all_to_all" && c.what == "4 ranks, default channels, 1.00 GiB") CHECK(std::abs(c.error_pct()) < 5.0);
    // Out of sample: the table comes from the defaults run (14.2 % at 3 GPUs before it).
    if (c.key == "multi_h2d_pinned") CHECK(std::abs(c.error_pct()) < 5.0);
  }
}

TEST_CASE("bad calibration input") {
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  CHECK_THROWS_AS(calibrate({{"x.json", nlohmann::json{{"schema", "other"}}}}, topo), InputError);
  // A testcase row without a field a fit reads: an input error naming the file, not a JSON exception.
  nlohmann::json doc = load(kSrc + "/validate/results/h200x2-nvlink/bench-default.json");
  for (auto& r : doc["results"])
    if (r["key"] == "gemm_sustained_copy") r.erase("copy");
  try {
    calibrate({{"edited.json", doc}}, topo);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("edited.json") != std::string::npos);
    CHECK(std::string(e.what()).find("key 'copy' not found") != std::string::npos);
  }
  // No run to fit copies and collectives on: a GEMM-only (--filter) run, or only a P2P-off one.
  const nlohmann::json gemm_only = load(kSrc + "/validate/results/h100x1-c/bench-gemm-1.json");
  CHECK_THROWS_WITH_AS(calibrate({{"gemm.json", gemm_only}}, topo), doctest::Contains("needs a machine run"), InputError);
  const nlohmann::json off = load(kSrc + "/validate/results/h200x2-nvlink-c/bench-p2p-disable.json");
  CHECK_THROWS_WITH_AS(calibrate({{"off.json", off}, {"gemm.json", gemm_only}}, topo), doctest::Contains("add the bench run made without it"), InputError);
  const std::string path = std::string(OVERLAPSIM_SOURCE_DIR) + "/tests/data/bad-calibration.yaml";
  try {
    load_calibration(path);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("bad-calibration.yaml:4:") != std::string::npos);
    CHECK(std::string(e.what()).find("did you mean 'gemm_efficiency'?") != std::string::npos);
  }
  // host_h2d_aggregate: bandwidths, one per GPU count; a bad entry names its line.
  const std::filesystem::path bad = std::filesystem::temp_directory_path() / "osim-bad-aggregate.yaml";
  std::ofstream(bad) << "schema: overlapsim.calibration/v1\nmodel:\n  host_h2d_aggregate: [55 GB/s,\n    fast]\n";
  try {
    load_calibration(bad.string());
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("osim-bad-aggregate.yaml:4:") != std::string::npos);
    CHECK(std::string(e.what()).find("each entry is a bandwidth such as '55 GB/s'") != std::string::npos);
  }
  std::ofstream(bad) << "schema: overlapsim.calibration/v1\nmodel:\n  host_h2d_aggregate: [55 GB/s, 106 GB/s]\n";
  const ModelParams ok = load_calibration(bad.string());
  REQUIRE(ok.copies.host_h2d_aggregate.size() == 2);
  CHECK(ok.copies.host_h2d_aggregate[1].GBps() == doctest::Approx(106));
  CHECK(ok.copies.host_d2h_aggregate.empty());
  std::ofstream(bad) << "schema: overlapsim.calibration/v1\nmodel:\n  host_d2h_aggregate: [55 GB/s, 108 GB/s, 125 GB/s]\n";
  CHECK(load_calibration(bad.string()).copies.host_d2h_aggregate.at(2).GBps() == doctest::Approx(125));
  std::ofstream(bad) << "schema: overlapsim.calibration/v1\nmodel:\n  host_d2h_aggregate: []\n";
  CHECK_THROWS_WITH_AS(load_calibration(bad.string()), doctest::Contains("GPUs copying D2H at once"), InputError);
  std::filesystem::remove(bad);
}

TEST_CASE("a GEMM table with burst and under-load times (third 2xH200 box): burst rates, uniform load ratio, calibration file") {
  const Box box("h200x2-nvlink-b");
  const hw::Topology& topo = box.topo;
  const auto& docs = box.docs;
  const nlohmann::json& def = docs.front().second;
  const Calibration& cal = box.cal;
  // Each shape's efficiency is its burst rate, not scaled by the sustained-load fit.
  int checked = 0;
  for (const auto& r : def.at("results")) {
    if (r.at("key") != "gemm_bf16") continue;
    const double eff = 2.0 * r.at("m").get<double>() * r.at("n").get<double>() * r.at("k").get<double>() / (r.at("burst_time_us").get<double>() * 1e-6) / 989e12;
    CHECK(cal.params.gemm.gemm_efficiency_for(r.at("m"), r.at("n"), r.at("k")) == doctest::Approx(eff).epsilon(1e-9));
    ++checked;
  }
  CHECK(checked == 55);  // 48 DiT shapes and the 7 the validation set realises (attention as chunked GEMMs)
  // The realised self-attention at SP 1: 9 chunks of 16384 x 5120 x 7616.
  CHECK(cal.params.gemm.gemm_efficiency_for(16384, 5120, 7616) == doctest::Approx(0.807 / 0.989).epsilon(0.01));
  // Under load every shape slows about as much as the sustained-load fit says (1 + 0.167).
  const Fit* load_fit = nullptr;
  for (const Fit& f : cal.fits)
    if (f.name == "GEMM table under load") load_fit = &f;
  REQUIRE(load_fit != nullptr);
  for (const auto& [what, v] : load_fit->values) {
    INFO(what);
    CHECK(v > 1.10);
    CHECK(v < 1.20);
  }
  CHECK(cal.params.power.sustained_slowdown == doctest::Approx(0.167).epsilon(0.03));
  // The bench's all-to-all ran on this box's two GPUs (one flow per rank):
  // the copy weighs 3.16 H2D, 2.53 D2H (one weight, 2.66, missed the pair
  // rows by up to 8.1 %).
  check_host_transport(cal, merge_bench_runs(docs)[1].second, topo, 3.16, 2.53, HostPairs::One, 0.01, 0);
}

TEST_CASE("a second 4xH200 box (current bench): calibration file, burst table, sustained load, the host path's 1-4 GPU aggregate") {
  const Box box("h200x4-nvswitch-b", {"interference-all/bench-interference-all.json", "interference-all/bench-interference-all-p2p-disable.json"});
  const hw::Topology& topo = box.topo;
  const auto& docs = box.docs;
  const Calibration& cal = box.cal;
  // The same physics as the 2xH200 boxes: ~17 % slower GEMMs at full duty, none below ~2/3.
  CHECK(cal.params.power.sustained_slowdown == doctest::Approx(0.166).epsilon(0.03));
  CHECK(cal.params.power.sustained_duty > 0.6);
  CHECK(cal.params.power.sustained_duty < 0.75);
  // Every GPU copying 1 GiB beside a 4-rank all-to-all through host memory
  // (interference-all/): copies and the bounced all-to-all share the host
  // bridge's limit (149 GB/s for four GPUs), so the model tells the pair with
  // one GPU copying from the one with all four: both fitted, least squares,
  // every row within 5.9 % (the single pair alone fitted left the every-GPU
  // D2H rows 5.9 / 7.7 % off; one copy weight for both directions 14.4 %).
  check_host_transport(cal, merge_bench_runs(docs)[1].second, topo, 2.95, 3.71, HostPairs::Both, 5.9, 0);
  for (const auto& row : compare_bench(merge_bench_runs(docs)[1].second, topo, cal.params))
    if (row.cls == "interference, every GPU copying" && row.what.find("h2d_all") != std::string::npos) {
      INFO(row.what);
      CHECK(std::abs(row.error_pct()) < 3.5);
    }
  // 1-4 GPUs copying 1 GiB H2D at once (55 / 105 / 140 / 149 GB/s): the
  // measured aggregate per GPU count (host_h2d_aggregate) replays them; one
  // fixed bridge limit missed the 3-GPU row by 11 %.
  REQUIRE(cal.params.copies.host_h2d_aggregate.size() == 4);
  CHECK(cal.params.copies.host_h2d_aggregate[2].GBps() == doctest::Approx(139.69).epsilon(0.001));
  // The same for D2H (multi_d2h_pinned: 55 / 108 / 125 / 134 GB/s), the
  // bridge's to-host limit (129.2 GB/s in the topology) its ceiling.
  REQUIRE(cal.params.copies.host_d2h_aggregate.size() == 4);
  CHECK(cal.params.copies.host_d2h_aggregate[2].GBps() == doctest::Approx(125.27).epsilon(0.001));
  int multi = 0, multi_d2h = 0;
  for (const auto& row : compare_bench(merge_bench_runs(docs)[0].second, topo, cal.params))
    if (row.cls == "multi-GPU H2D") {
      INFO(row.what);
      CHECK(std::abs(row.error_pct()) < 1.0);
      ++multi;
    } else if (row.cls == "multi-GPU D2H") {
      INFO(row.what);
      CHECK(std::abs(row.error_pct()) < (row.what.rfind("4 GPUs", 0) == 0 ? 4.5 : 1.5));
      ++multi_d2h;
    }
  CHECK(multi == 4);
  CHECK(multi_d2h == 4);
  // From the 1xH200 long run: after ~1 s at full duty the clock dips again
  // about every second (mean 1.198 x burst over 1-7 s, against 1.166 before),
  // and the copy kernel moves 3.86 TB/s past the L2 cache (0.80 of 4.8 TB/s).
  CHECK(cal.params.power.sustained_slow_slowdown == doctest::Approx(0.034).epsilon(0.15));
  CHECK(cal.params.memory.hbm_efficiency == doctest::Approx(0.804).epsilon(0.02));
  CHECK(cal.params.memory.hbm_latency.us() == doctest::Approx(2.27).epsilon(0.2));
  // The realised SP 1 self-attention GEMM at its own burst rate, not the table's median.
  CHECK(cal.params.gemm.gemm_efficiency_for(16384, 5120, 7616) != doctest::Approx(cal.params.gemm.gemm_efficiency));
  // D2H has its own set-up latency (posted writes): fitted 0.22 us below
  // H2D's per copy (every size, relative least squares, each burst's one-off
  // cost apart; 0.15 with the step of the calibrations before 2026-11-24);
  // the small D2H copies (4-64 KiB) were 5-10 % slow with one latency for both.
  CHECK(cal.params.copies.copy_latency_d2h < cal.params.copies.copy_latency);
  CHECK((cal.params.copies.copy_latency - cal.params.copies.copy_latency_d2h).us() == doctest::Approx(0.225).epsilon(0.05));
  for (const auto& row : compare_bench(merge_bench_runs(docs)[0].second, topo, cal.params))
    if (row.key == "d2h_pinned" || row.key == "h2d_pinned") {
      INFO(row.key << " " << row.what);
      CHECK(std::abs(row.error_pct()) < 5.5);
    }
  // Shapes the table lacks: the shape model (0.876 / (1 + 60/m + 29/n +
  // 201/k + 0.027 [m a power of two]): 4096, 8192, 16384 rows run 2-3 %
  // slower than 4095, 8190, 16380 on every current box).
  CHECK(cal.params.gemm.gemm_model.efficiency == doctest::Approx(0.8762).epsilon(0.002));
  CHECK(cal.params.gemm.gemm_model.pow2_m == doctest::Approx(0.0269).epsilon(0.02));
  CHECK(cal.params.gemm.gemm_model.k0 > cal.params.gemm.gemm_model.m0);
  CHECK(cal.params.gemm.gemm_efficiency_for(1024, 5120, 5120) == doctest::Approx(cal.params.gemm.gemm_model.at(1024, 5120, 5120)));
  int gemm_classes = 0;
  for (const auto& s : summarise(compare_bench(merge_bench_runs(docs)[0].second, topo, cal.params)))
    if (s.cls.rfind("GEMM", 0) == 0) {
      INFO(s.cls);
      CHECK(s.cases == 55);
      ++gemm_classes;
      if (s.cls == "GEMM burst (shape model fitted without the shape)") {
        // Each of the 55 shapes at burst, predicted by the model fitted on
        // the other 54: median 0.5 %, worst 4.1 % (without the power-of-two
        // term 1.8 % / 6.0 %; the median efficiency: up to 12.2 %).
        CHECK(s.median_abs_pct < 1.0);
        CHECK(s.worst_abs_pct < 4.5);
      } else {
        // After >= 250 ms of the shape: the sustained-load model at the
        // shape's burst rate: 1.3 % / 3.6 %.
        CHECK(s.cls == "GEMM under load (sustained-load model, the shape's burst rate)");
        CHECK(s.median_abs_pct < 2.0);
        CHECK(s.worst_abs_pct < 4.0);
      }
    }
  CHECK(gemm_classes == 2);
  // The host-transport fit reads the merged P2P-off runs, like every other
  // fit: the later run's all-to-all || H2D row (interference-all/) replaces
  // the first's, so the fit follows it, not the first file's row (the two
  // runs' copies differ by 5 %: the link cost 1.26 against 1.44).
  {
    auto later_first = docs;
    std::swap(later_first[1], later_first[3]);  // the later P2P-off run given first: its row is replaced instead
    const double c_later = cal.params.interference.host_transport_cost_h2d, c_first = calibrate(later_first, topo).params.interference.host_transport_cost_h2d;
    CHECK(c_later == doctest::Approx(1.263).epsilon(0.005));
    CHECK(c_first == doctest::Approx(1.439).epsilon(0.005));
  }
  // Host aggregate, 1-4 GPUs: sub-linear beyond two GPUs (the fit reports it).
  const Fit* host = nullptr;
  for (const Fit& f : cal.fits)
    if (f.name == "host aggregate") host = &f;
  REQUIRE(host != nullptr);
  REQUIRE(host->values.size() == 4);
  CHECK(host->values[1].second == doctest::Approx(2 * host->values[0].second).epsilon(0.06));
  CHECK(host->values[3].second < 3 * host->values[0].second);
}

TEST_CASE("copy latency per direction: D2H's own where calibrated, else the one latency") {
  ModelParams p;
  p.copies.copy_latency = Time::from_us(1.8);
  CHECK(p.copies.copy_latency_for(true) == Time::from_us(1.8));  // not calibrated apart
  p.copies.copy_latency_d2h = Time::from_us(1.5);
  CHECK(p.copies.copy_latency_for(true) == Time::from_us(1.5));
  CHECK(p.copies.copy_latency_for(false) == Time::from_us(1.8));
  const std::filesystem::path f = std::filesystem::temp_directory_path() / "osim-d2h-latency.yaml";
  std::ofstream(f) << "schema: overlapsim.calibration/v1\nmodel:\n  copy_latency: 1.8 us\n  copy_latency_d2h: 1.6 us\n";
  const ModelParams q = load_calibration(f.string());
  CHECK(q.copies.copy_latency_for(true) == Time::from_us(1.6));
  CHECK(q.copies.copy_latency_for(false) == Time::from_us(1.8));
  std::filesystem::remove(f);
}

TEST_CASE("copies per gated burst: the burst fitted from the one-way rows' reps or held from copy_reps, the hand-off, the file") {
  // Synthetic bench rows on GPU 0 (route latency 1 us on this topology),
  // timed as the bench does: reps copies per burst (20 below 1 MiB, 5 below
  // 64 MiB, 1 above), per copy latency + bytes / 55 GB/s + burst / reps;
  // H2D 2.7 us and a burst of 7 us, D2H 2.6 us and 7.5 us.
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  auto bench = [](double burst_h2d, double burst_d2h) {
    nlohmann::json doc = {{"schema", "overlapsim.bench/v1"}, {"environment", {{"env", nlohmann::json::object()}}}, {"results", nlohmann::json::array()}};
    for (double b = 4096; b <= 1073741824.0; b *= 4)
      for (int d2h = 0; d2h < 2; ++d2h) {
        const int reps = b < 1048576 ? 20 : b < 64.0 * 1048576 ? 5 : 1;
        const double t = (d2h ? 2.6 : 2.7) + b / 55e3 + (d2h ? burst_d2h : burst_h2d) / reps;
        doc["results"].push_back({{"key", d2h ? "d2h_pinned" : "h2d_pinned"}, {"gpus", {0}}, {"bytes", b}, {"reps", reps}, {"time_us", t}});
      }
    return doc;
  };
  const Calibration c = calibrate({{"burst.json", bench(7, 7.5)}}, topo);
  // No event rows: the burst is all hand-off (no GPU time for the closing event).
  CHECK(c.params.handoff.copy_after_kernel_latency.us() == doctest::Approx(7).epsilon(1e-4));
  CHECK(c.params.handoff.copy_after_kernel_latency_d2h.us() == doctest::Approx(7.5).epsilon(1e-4));
  CHECK(c.params.copies.copy_latency.us() == doctest::Approx(2.7 - 1.0).epsilon(1e-4));
  CHECK(c.params.copies.copy_latency_d2h.us() == doctest::Approx(2.6 - 1.0).epsilon(1e-4));
  CHECK(c.params.copies.copy_engine_bandwidth.GBps() == doctest::Approx(55).epsilon(1e-6));
  // Every row replayed as the bench ran it (a spin kernel, an event, the burst, an event).
  int replayed = 0;
  for (const auto& cmp : compare_bench(bench(7, 7.5), topo, c.params))
    if (cmp.key == "h2d_pinned" || cmp.key == "d2h_pinned") {
      CHECK(std::abs(cmp.error_pct()) < 1e-3);
      ++replayed;
    }
  CHECK(replayed == 20);
  // The event after a copy measured (overhead_gpu_event_gap, H2D copies):
  // the hand-off is the burst less it.
  nlohmann::json ev = bench(7, 7.5);
  ev["results"].push_back({{"key", "overhead_gpu_event_gap"}, {"op", "h2d"}, {"bytes", 1048576}, {"ops", 50}, {"plain_us", 21.7}, {"fenced_us", 23.0}, {"gap_us", 1.3}});
  const Calibration e = calibrate({{"ev.json", ev}}, topo);
  CHECK(e.params.overheads.event_gpu_time_copy.us() == doctest::Approx(1.3).epsilon(1e-6));
  CHECK(e.params.handoff.copy_after_kernel_latency.us() == doctest::Approx(7 - 1.3).epsilon(1e-4));
  CHECK(e.params.handoff.copy_after_kernel_latency_d2h.us() == doctest::Approx(7.5 - 1.3).epsilon(1e-4));
  // copy_reps after a spin kernel (per copy: steady + 6 us / reps): the
  // burst held from there, whatever the one-way rows' own say.
  nlohmann::json held = bench(7, 7.5);
  for (const int reps : {1, 2, 5, 20, 50})
    for (const char* gate : {"kernel", "kernel_wait"})
      held["results"].push_back({{"key", "copy_reps"}, {"gpus", {0}}, {"bytes", 262144}, {"reps", reps}, {"gate", gate}, {"dir", "h2d"},
                                 {"h2d_time_us", 7.5 + 6.0 / reps}});
  const Calibration h = calibrate({{"held.json", held}}, topo);
  CHECK(h.params.handoff.copy_after_kernel_latency.us() == doctest::Approx(6).epsilon(1e-4));
  CHECK(h.params.handoff.copy_after_kernel_latency_d2h.us() == doctest::Approx(7.5).epsilon(1e-4));  // D2H: no copy_reps rows
  // All one reps (an old bench's rows all timed alike): no burst to tell.
  nlohmann::json one = bench(0, 0);
  for (auto& r : one["results"]) r["reps"] = 1;
  CHECK(calibrate({{"one.json", one}}, topo).params.handoff.copy_after_kernel_latency == Time::zero());
  // The file: written and read back; negative values refused with the field.
  const std::filesystem::path f = std::filesystem::temp_directory_path() / "osim-copy-burst.yaml";
  std::ofstream(f) << calibration_yaml(e);
  const ModelParams q = load_calibration(f.string());
  CHECK(q.handoff.copy_after_kernel_latency_for(false).us() == doctest::Approx(5.7).epsilon(1e-3));
  CHECK(q.handoff.copy_after_kernel_latency_for(true).us() == doctest::Approx(6.2).epsilon(1e-3));
  CHECK(q.overheads.event_gpu_time_copy.us() == doctest::Approx(1.3).epsilon(1e-3));
  for (const char* field : {"copy_after_kernel_latency", "copy_after_kernel_latency_d2h", "kernel_after_copy_latency", "event_gpu_time_copy"}) {
    std::ofstream(f) << "schema: overlapsim.calibration/v1\nmodel:\n  " << field << ": -1 us\n";
    CHECK_THROWS_WITH_AS(load_calibration(f.string()), doctest::Contains(field), InputError);
  }
  std::ofstream(f) << "schema: overlapsim.calibration/v1\nmodel:\n  copy_after_kernel_latency: 5 us\n";
  CHECK(load_calibration(f.string()).handoff.copy_after_kernel_latency_for(true) == Time::from_us(5));  // D2H: the same unless set
  // A retired key (the step the burst replaced) is refused with what to do.
  std::ofstream(f) << "schema: overlapsim.calibration/v1\nmodel:\n  copy_step_bytes: 1 MiB\n  copy_step_latency: 1 us\n";
  CHECK_THROWS_WITH_AS(load_calibration(f.string()), doctest::Contains("re-run overlapsim calibrate"), InputError);
  std::filesystem::remove(f);
}

TEST_CASE("GEMM shape model: closed form, the fit, precedence, the file") {
  ModelParams p;
  p.gemm.gemm_efficiency = 0.7;
  CHECK(p.gemm.gemm_efficiency_for(4096, 4096, 4096) == doctest::Approx(0.7));  // no model: the one efficiency
  p.gemm.gemm_model = {0.9, 100, 50, 200};
  // 0.9 / (1 + 100/1000 + 50/500 + 200/2000) = 0.9 / 1.3
  CHECK(p.gemm.gemm_efficiency_for(1000, 500, 2000) == doctest::Approx(0.9 / 1.3));
  p.gemm.gemm_shapes.push_back({1000, 500, 2000, 0.5});
  CHECK(p.gemm.gemm_efficiency_for(1000, 500, 2000) == doctest::Approx(0.5));  // a measured shape wins
  // The fit recovers a model from exact data, and leaves out what the table does not vary.
  std::vector<GemmShapeEfficiency> table;
  const GemmShapeModel truth{0.88, 80, 60, 240};
  for (int m : {512, 2048, 8192, 32768})
    for (int n : {1280, 5120, 15360})
      for (int k : {2176, 5120, 13824}) table.push_back({m, n, k, truth.at(m, n, k)});
  const auto fit = fit_gemm_model(table);
  REQUIRE(fit.has_value());
  CHECK(fit->efficiency == doctest::Approx(0.88).epsilon(1e-9));
  CHECK(fit->m0 == doctest::Approx(80).epsilon(1e-6));
  CHECK(fit->n0 == doctest::Approx(60).epsilon(1e-6));
  CHECK(fit->k0 == doctest::Approx(240).epsilon(1e-6));
  std::vector<GemmShapeEfficiency> one_k;
  for (const auto& g : table)
    if (g.k == 5120) one_k.push_back(g);
  const auto fk = fit_gemm_model(one_k);
  REQUIRE(fk.has_value());
  CHECK(fk->k0 == 0);  // k never varies: its loss is in the constant
  CHECK(fk->m0 == doctest::Approx(80 / (1 + 240.0 / 5120)).epsilon(1e-6));
  CHECK(fit->pow2_m == 0);  // every m of this table is a power of two: the term is the constant again
  // A power-of-two row count costs pow2_m more: 0.9 / (1 + 0.1 + 0.1 + 0.1 + 0.03) for m = 1024.
  GemmShapeModel p2{0.9, 102.4, 50, 200, 0.03};
  CHECK(p2.at(1024, 500, 2000) == doctest::Approx(0.9 / 1.33));
  CHECK(p2.at(1000, 500, 2000) == doctest::Approx(0.9 / (1.2 + 0.1024)));
  // ... and the fit recovers it from a table with both kinds of m.
  std::vector<GemmShapeEfficiency> mixed;
  const GemmShapeModel truth2{0.88, 80, 60, 240, 0.025};
  for (int m : {512, 2047, 4095, 4096, 8190, 8192, 30000})
    for (int n : {1280, 5120})
      for (int k : {2176, 13824}) mixed.push_back({m, n, k, truth2.at(m, n, k)});
  const auto f2 = fit_gemm_model(mixed);
  REQUIRE(f2.has_value());
  CHECK(f2->pow2_m == doctest::Approx(0.025).epsilon(1e-6));
  CHECK(f2->m0 == doctest::Approx(80).epsilon(1e-6));
  CHECK(!fit_gemm_model({table.begin(), table.begin() + 4}).has_value());  // too few shapes
  // Efficiency rising as m shrinks would need m0 < 0: dropped, the rest refitted.
  std::vector<GemmShapeEfficiency> odd;
  for (int m : {512, 2048, 8192})
    for (int k : {2176, 5120, 13824}) odd.push_back({m, 5120, k, 0.9 / (1 - 50.0 / m + 200.0 / k)});
  const auto fo = fit_gemm_model(odd);
  REQUIRE(fo.has_value());
  CHECK(fo->m0 == 0);
  CHECK(fo->k0 > 0);
  // The file: written and read back; a bad entry names its line.
  const std::filesystem::path f = std::filesystem::temp_directory_path() / "osim-gemm-model.yaml";
  std::ofstream(f) << "schema: overlapsim.calibration/v1\nmodel:\n  gemm_model: {efficiency: 0.88, m0: 77, k0: 241}\n";
  const ModelParams q = load_calibration(f.string());
  CHECK(q.gemm.gemm_model.efficiency == doctest::Approx(0.88));
  CHECK(q.gemm.gemm_model.n0 == 0);
  CHECK(q.gemm.gemm_model.k0 == doctest::Approx(241));
  CHECK(q.gemm.gemm_model.pow2_m == 0);  // files from before the term: none
  std::ofstream(f) << "schema: overlapsim.calibration/v1\nmodel:\n  gemm_model: {efficiency: 0.88, m0: 77, pow2_m: 0.027}\n";
  CHECK(load_calibration(f.string()).gemm.gemm_model.pow2_m == doctest::Approx(0.027));
  std::ofstream(f) << "schema: overlapsim.calibration/v1\nmodel:\n  gemm_model: {efficiency: 0.88, pow2_m: -0.1}\n";
  try {
    load_calibration(f.string());
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("osim-gemm-model.yaml:3:") != std::string::npos);
    CHECK(std::string(e.what()).find("power of two") != std::string::npos);
  }
  std::ofstream(f) << "schema: overlapsim.calibration/v1\nmodel:\n  gemm_efficiency: 0.8\n  gemm_model: {efficiency: 0.88,\n     m0: -3}\n";
  try {
    load_calibration(f.string());
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("osim-gemm-model.yaml:5:") != std::string::npos);
    CHECK(std::string(e.what()).find("must be >= 0") != std::string::npos);
  }
  std::filesystem::remove(f);
}

// Every NCCL row of a results folder's sweep (bench-nccl-sweep*.json) at a
// size its calibration's table lacks, from `min_bytes` up: |table / measured - 1|,
// sorted, by collective (" (4-16 channels)" for set channel counts).
std::map<std::string, std::vector<double>> sizes_between(const std::string& dir, const ModelParams& cal, double min_bytes) {
  using TC = TableColl;
  std::map<std::string, std::vector<double>> out;
  for (const auto& [file, host] : {std::pair{"bench-nccl-sweep.json", false}, std::pair{"bench-nccl-sweep-p2p-disable.json", true}}) {
    const nlohmann::json doc = load(dir + file);
    for (const auto& r : doc.at("results")) {
      const std::string key = r.at("key");
      if (key.rfind("nccl_", 0) != 0) continue;
      const int ch = r.at("channels").get<int>();
      const TC coll = key == "nccl_all_to_all" ? TC::AllToAll : key == "nccl_all_to_all_pairwise" ? TC::AllToAllPairwise
                      : key == "nccl_all_gather" ? TC::AllGather : key == "nccl_reduce_scatter" ? TC::ReduceScatter : TC::AllReduce;
      const auto* t = cal.nccl.nccl_table_for(coll, r.at("ranks"), host, ch);
      if (ch != 0 && t == nullptr) continue;  // a channel count the bench did not measure: the channel model
      REQUIRE(t != nullptr);
      const double bytes = r.at("bytes");
      bool seen = false;
      for (const auto& pt : t->points) seen = seen || pt.first == bytes;
      if (seen || t->ranks != r.at("ranks").get<int>() || bytes < min_bytes) continue;
      out[ch == 0 ? key : key + " (4-16 channels)"].push_back(std::abs(t->time_at(bytes) / (r.at("time_us").get<double>() * 1e-6) - 1));
    }
  }
  for (auto& [key, errs] : out) {
    std::sort(errs.begin(), errs.end());
    MESSAGE(dir.substr(dir.rfind("results/") + 8) << " " << key << " between the table's sizes (" << errs.size() << " rows): median "
                                                  << 100 * errs[errs.size() / 2] << " %, worst " << 100 * errs.back() << " %");
  }
  return out;
}

TEST_CASE("NCCL collective tables: interpolation, the nearest rank count, and sizes the table never saw") {
  ModelParams p;
  using TC = TableColl;
  p.nccl.nccl_tables.push_back({TC::AllToAll, 2, false, {{1e6, 20e-6}, {4e6, 80e-6}, {16e6, 200e-6}}});
  p.nccl.nccl_tables.push_back({TC::AllToAll, 4, false, {{1e6, 40e-6}}});
  const auto* t2 = p.nccl.nccl_table_for(TC::AllToAll, 2, false);
  REQUIRE(t2 != nullptr);
  CHECK(t2->time_at(1e3) == doctest::Approx(20e-6));             // below the table: its latency
  CHECK(t2->time_at(2e6) == doctest::Approx(40e-6));             // the line through (1e6, 20) and (4e6, 80)
  CHECK(t2->time_at(8e6) == doctest::Approx(120e-6));            // through (4e6, 80) and (16e6, 200): not log-log's 126.5
  CHECK(t2->time_at(32e6) == doctest::Approx(200e-6 + 16e6 * 120e-6 / 12e6));  // past the end: the last segment's rate
  CHECK(p.nccl.nccl_table_for(TC::AllToAll, 3, false)->ranks == 4);   // tie between 2 and 4: the larger
  CHECK(p.nccl.nccl_table_for(TC::AllToAll, 8, false)->ranks == 4);
  CHECK(p.nccl.nccl_table_for(TC::AllToAllPairwise, 2, false) == nullptr);  // no pairwise table
  CHECK(p.nccl.nccl_table_for(TC::AllToAll, 2, true) == nullptr);      // no host-memory table

  // The 4xH200 box b's tables come from its bench (sizes x4 apart); its NCCL
  // sweep (a separate run, sizes x2 apart) has the sizes in between.
  const std::string dir = kSrc + "/validate/results/h200x4-nvswitch-b/";
  const ModelParams cal = load_calibration(dir + "calibration.yaml");
  // {all-to-all, pairwise, all-gather, reduce-scatter, all-reduce} x {2, 4 ranks} x {p2p, host}
  // at NCCL's channels, and all-to-all and all-reduce at 4, 8 and 16 channels.
  REQUIRE(cal.nccl.nccl_tables.size() == 44);
  const auto big = sizes_between(dir, cal, 4 * 1048576.0);
  // The sweep has all-to-all (both), all-gather and all-reduce: 4 new sizes
  // >= 4 MiB each, at 2 and 4 ranks, over P2P and through host memory.
  REQUIRE(big.size() == 6);
  for (const auto& [key, errs] : big) {
    INFO(key);
    REQUIRE(errs.size() >= 16);
    // Achieved (sizes 4x apart in the table, the line through the two
    // around; NCCL switches algorithm and protocol with size, most visibly
    // for all-reduce). At explicit channel counts the bench measured sizes
    // 16x apart. Log-log between them had medians of 3.1-7.3 %.
    const bool explicit_ch = key.find("channels") != std::string::npos;
    CHECK(errs[errs.size() / 2] < 0.035);
    CHECK(errs.back() < (explicit_ch ? (key.rfind("nccl_all_reduce", 0) == 0 ? 0.5 : 0.25) : key == "nccl_all_reduce" ? 0.22 : 0.18));
  }

  // The 2xH200 box c timed its collectives gated (every rank's work queued
  // before the GPUs start): its sweep, the same way, at every size from 1 KiB.
  const std::string dir_c = kSrc + "/validate/results/h200x2-nvlink-c/";
  const auto all_c = sizes_between(dir_c, load_calibration(dir_c + "calibration.yaml"), 0);
  REQUIRE(all_c.size() == 6);
  for (const auto& [key, errs] : all_c) {
    INFO(key);
    REQUIRE(errs.size() >= 20);
    CHECK(errs[errs.size() / 2] < 0.025);  // achieved: 1.4-2.5 % (log-log: 1.0-8.8 %)
    CHECK(errs.back() < (key.rfind("nccl_all_reduce", 0) == 0 ? 0.45 : 0.25));
  }

  try {
    load_calibration(kSrc + "/tests/data/bad-nccl-table.yaml");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("bad-nccl-table.yaml:5:") != std::string::npos);
    CHECK(std::string(e.what()).find("bytes ascending") != std::string::npos);
  }
}

TEST_CASE("gated collective timing (2xH200 box c): calibration file, every replayed row, and a second run of the collectives") {
  const Box box("h200x2-nvlink-c");
  const std::string& dir = box.dir;
  const hw::Topology& topo = box.topo;
  const auto& docs = box.docs;
  const Calibration& cal = box.cal;
  // Every NCCL row of this box's runs was timed gated, and its samples kept.
  for (const auto& [name, doc] : docs)
    if (name.find("h200x2-nvlink-c/") != std::string::npos)
      for (const auto& r : doc.at("results"))
        if (r.at("key").get<std::string>().rfind("nccl_", 0) == 0) {
          INFO(name);
          REQUIRE(r.at("gated").get<bool>());
          CHECK(r.at("samples_us").size() >= 5);
        }
  const auto replay = [&](const nlohmann::json& doc) { return compare_bench(doc, topo, cal.params); };
  // The runs the calibration was fitted on. Gated, NCCL's time grows with the
  // size at every channel count, so its tables replay exactly (the ungated
  // boxes' pooled sizes missed by up to 30 %); NVLink interference pairs
  // within 1.2 % (ungated tables: 8 %).
  int nccl = 0, pairs = 0;
  for (const auto& c : replay(docs[0].second)) {
    INFO(c.key << " " << c.what);
    if (c.key.rfind("nccl_", 0) == 0) {
      CHECK(std::abs(c.error_pct()) < 0.1);
      ++nccl;
    }
    if (c.cls == "interference pairs" || c.cls == "interference, every GPU copying") {
      CHECK(std::abs(c.error_pct()) < 2.0);
      ++pairs;
    }
    if (c.cls == "pinned copy >= 16 MiB" || c.key.rfind("multi_", 0) == 0) CHECK(std::abs(c.error_pct()) < 2.0);
    if (c.cls == "pinned copy < 16 MiB") CHECK(std::abs(c.error_pct()) < 5.0);
  }
  CHECK(nccl == 91);
  CHECK(pairs == 8);
  // Through host memory: two GPUs copying get each copy its full rate (the
  // host side's 2-GPU aggregate is twice one), so the model gives the
  // all-to-all one time beside one copy or two; the every-GPU pairs (what a
  // prefetch beside Ulysses meets) are fitted, exactly; one GPU copying (out
  // of sample) within 4.2 % (measured 2-3 % quicker than beside both).
  check_host_transport(cal, docs[1].second, topo, 3.47, 2.66, HostPairs::Every, 0.01, 4.2);
  // Pinned copies: 20 per burst below 1 MiB, 5 below 64 MiB, 1 above, each
  // burst paying a one-off cost (the hand-off from the gate's kernel: no
  // event rows here, so the closing event's share too): 7.45 us H2D, 8.96
  // D2H, fits both directions: every copy row within 3.0 % (one line: 4.8 %,
  // 1 MiB 4-5 % fast, 1 GiB 1.2 % slow; the step from 1 MiB the calibrations
  // before 2026-11-24 had, +1.08 / +1.31 us: 3.0 % too).
  CHECK(cal.params.handoff.copy_after_kernel_latency.us() == doctest::Approx(7.45).epsilon(0.02));
  CHECK(cal.params.handoff.copy_after_kernel_latency_d2h.us() == doctest::Approx(8.96).epsilon(0.02));
  for (const auto& c : replay(docs[0].second))
    if (c.key == "h2d_pinned" || c.key == "d2h_pinned") {
      INFO(c.key << " " << c.what);
      CHECK(std::abs(c.error_pct()) < 3.0);
    }
  // Out of sample across machines: box c's calibration replays the same pairs
  // measured on boxes a and b within 3.4 % (the D2H copy; the rest 1.3 %).
  for (const char* other : {"h200x2-nvlink", "h200x2-nvlink-b"}) {
    int other_pairs = 0;
    for (const auto& c : replay(load(kSrc + "/validate/results/" + other + "/bench-p2p-disable.json")))
      if (c.cls == "interference pairs") {
        INFO(other << ": " << c.what);
        CHECK(std::abs(c.error_pct()) < 4.0);
        ++other_pairs;
      }
    CHECK(other_pairs == 4);
  }
  // The collectives measured again, minutes later, replayed with the
  // calibration of the first run: NVLink every row within 3 %; through host
  // memory a median of 2-3 % (a 16-channel all-reduce through host memory
  // varies run to run by up to 12 %).
  for (const auto& [file, median_bound, worst_bound] : {std::tuple{"bench-repeat.json", 0.6, 3.0}, std::tuple{"bench-repeat-p2p-disable.json", 3.0, 13.0}}) {
    const nlohmann::json doc = load(kSrc + "/" + dir + file);
    std::vector<double> errs;
    for (const auto& c : replay(doc))
      if (c.key.rfind("nccl_", 0) == 0) errs.push_back(std::abs(c.error_pct()));
    REQUIRE(errs.size() == 91);
    std::sort(errs.begin(), errs.end());
    MESSAGE(std::string(file) << ": " << errs.size() << " NCCL rows replayed, median " << errs[errs.size() / 2] << " %, worst " << errs.back() << " %");
    CHECK(errs[errs.size() / 2] < median_bound);
    CHECK(errs.back() < worst_bound);
  }
}

TEST_CASE("the current bench on one H100 (h100x1-b): calibration file, copies, the slow clock term, attention") {
  const std::string dir = "validate/results/h100x1-b/";
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/dgx-h100.yaml"));
  std::vector<std::pair<std::string, nlohmann::json>> docs;
  for (const char* f : {"bench-default.json", "bench-copies.json", "attention.json"}) docs.emplace_back(dir + f, load(kSrc + "/" + dir + f));
  const Calibration cal = calibrate(docs, topo);
  CHECK(slurp(kSrc + "/" + dir + "calibration.yaml") == calibration_yaml(cal));
  // The full bench's 1 GiB H2D took 33.5 ms (32 GB/s) once; the copies run
  // after it (bench-copies.json, merged over it) and its repeat give 19.5 ms:
  // a transient, which had pulled the H2D line to 52.1 GB/s.
  double first = 0, later = 0, repeat = 0;
  for (const auto& [file, out] : {std::pair{"bench-default.json", &first}, {"bench-copies.json", &later}, {"bench-copies-repeat.json", &repeat}}) {
    const nlohmann::json doc = load(kSrc + "/" + dir + file);
    for (const auto& r : doc.at("results"))
      if (r.at("key") == "h2d_pinned" && r.at("bytes").get<double>() == 1073741824.0) *out = r.at("time_us").get<double>();
  }
  CHECK(first > 30000);
  CHECK(later == doctest::Approx(19482).epsilon(0.001));
  CHECK(repeat == doctest::Approx(later).epsilon(0.01));
  CHECK(cal.params.copies.copy_engine_bandwidth.GBps() == doctest::Approx(54.5).epsilon(0.01));
  // The H100's clock under load: lowest at 0.1-0.3 s, back to ~1.10 at
  // 0.4-0.7 s, dips every second after; the slow term is held slower than
  // 250 ms (free, it took 100 ms and put the under-load replays 7 % slow).
  CHECK(cal.params.power.sustained_slowdown == doctest::Approx(0.102).epsilon(0.03));
  CHECK(cal.params.power.sustained_slow_time_constant.ms() >= 250);
  CHECK(cal.params.power.sustained_slow_slowdown == doctest::Approx(0.067).epsilon(0.05));
  const auto merged = merge_bench_runs(docs);
  for (const auto& s : summarise(compare_bench(merged[0].second, topo, cal.params))) {
    INFO(s.cls);
    if (s.cls.rfind("pinned copy", 0) == 0 || s.cls.rfind("multi-GPU", 0) == 0) CHECK(s.worst_abs_pct < 4.0);
    if (s.cls.rfind("GEMM", 0) == 0) CHECK(s.median_abs_pct < 3.0);  // out of sample and under load: worst 10.1 %
  }
  // PyTorch SDPA on the H100 reaches what it does on the H200 (0.36 of peak).
  CHECK(cal.params.attention.attention_efficiency == doctest::Approx(0.358 * (1 + cal.params.power.sustained_slowdown)).epsilon(0.01));
  for (const auto& s : summarise(compare_bench(merged[1].second, topo, cal.params))) {
    INFO(s.cls);
    if (s.cls.rfind("attention, self", 0) == 0) CHECK(s.worst_abs_pct < 4.0);
    if (s.cls.rfind("attention, cross", 0) == 0) CHECK(s.worst_abs_pct < 7.0);
  }
}

TEST_CASE("ungated collective rows (the 4xH200 boxes): the replay misses by less than the rows differ between two runs") {
  // The boxes measured before gated timing (2026-11-23) timed each NCCL row
  // < 64 MiB with the host's launches inside. Their dense sweep, minutes
  // later on the same lease, measured many of the same rows again: how far
  // apart the two runs are is what no model of these rows can beat.
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  struct Expect {
    const char* box;
    double run_median, run_worst;  // |sweep / bench - 1| over the shared rows < 64 MiB, NCCL defaults + P2P off
  };
  for (const Expect& e : {Expect{"h200x4-nvswitch-b", 0.0575, 0.544}, Expect{"h200x4-nvswitch", 0.111, 0.471}}) {
    INFO(e.box);
    const std::string dir = kSrc + "/validate/results/" + e.box + "/";
    const ModelParams cal = load_calibration(dir + "calibration.yaml");
    std::vector<double> run_to_run, replayed;
    for (const auto& [bench, sweep] : {std::pair{"bench-default.json", "bench-nccl-sweep.json"},
                                       std::pair{"bench-p2p-disable.json", "bench-nccl-sweep-p2p-disable.json"}}) {
      const nlohmann::json a = load(dir + bench), b = load(dir + sweep);
      std::map<std::tuple<std::string, int, int, int64_t>, double> again;
      for (const auto& r : b.at("results"))
        if (r.at("key").get<std::string>().rfind("nccl_", 0) == 0)
          again[{r.at("key"), r.at("ranks"), r.at("channels"), r.at("bytes")}] = r.at("time_us");
      for (const auto& r : a.at("results")) {
        if (r.at("key").get<std::string>().rfind("nccl_", 0) != 0 || r.at("bytes").get<int64_t>() >= (64 << 20)) continue;
        CHECK(!r.value("gated", false));
        const auto it = again.find({r.at("key"), r.at("ranks"), r.at("channels"), r.at("bytes")});
        if (it != again.end()) run_to_run.push_back(std::abs(it->second / r.at("time_us").get<double>() - 1));
      }
      for (const auto& c : compare_bench(a, topo, cal))
        if (c.cls.find("timed ungated") != std::string::npos) replayed.push_back(std::abs(c.error_pct()) / 100);
    }
    std::sort(run_to_run.begin(), run_to_run.end());
    std::sort(replayed.begin(), replayed.end());
    CHECK(run_to_run.size() == 224);
    REQUIRE(replayed.size() >= 100);
    // Measured: 4xH200 box b 5.75 % median, 54.4 % worst; the first box 11.1 % / 47.1 %.
    CHECK(std::abs(run_to_run[run_to_run.size() / 2] - e.run_median) < 0.001);
    CHECK(std::abs(run_to_run.back() - e.run_worst) < 0.001);
    // The replay (tables fitted on the first run): median 0.0 %, worst 20-30 %.
    CHECK(replayed[replayed.size() / 2] < 0.01);
    CHECK(replayed.back() < run_to_run.back());
  }
}

TEST_CASE("another H100 (h100x1-c), GEMM table and SDPA twice in a row: what repeats, and box b's calibration on it") {
  const std::string dir = kSrc + "/validate/results/h100x1-c/";
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/dgx-h100.yaml"));
  const nlohmann::json g1 = load(dir + "bench-gemm-1.json"), g2 = load(dir + "bench-gemm-2.json");
  using Shape = std::tuple<int, int, int>;
  std::map<Shape, const nlohmann::json*> first;
  for (const auto& r : g1.at("results")) first[{r.at("m"), r.at("n"), r.at("k")}] = &r;
  std::vector<double> burst, loaded;
  for (const auto& r : g2.at("results")) {
    const auto& a = *first.at({r.at("m"), r.at("n"), r.at("k")});
    burst.push_back(std::abs(r.at("burst_time_us").get<double>() / a.at("burst_time_us").get<double>() - 1));
    loaded.push_back(std::abs(r.at("time_us").get<double>() / a.at("time_us").get<double>() - 1));
  }
  REQUIRE(burst.size() == 55);
  std::sort(burst.begin(), burst.end());
  std::sort(loaded.begin(), loaded.end());
  // A rested GPU's GEMM repeats to 0.8 %; the same shape after >= 250 ms
  // of load moved by up to 8.4 % between the two runs (median 0.6 %).
  CHECK(burst.back() < 0.008);
  CHECK(std::abs(loaded[loaded.size() / 2] - 0.0061) < 0.001);
  CHECK(std::abs(loaded.back() - 0.0837) < 0.001);
  // SDPA cross-attention (short kernels) moves more: up to 10.3 % (4,095 queries).
  const nlohmann::json a1 = load(dir + "attention-1.json"), a2 = load(dir + "attention-2.json");
  double cross_worst = 0;
  for (size_t i = 0; i < a1.at("results").size(); ++i) {
    const auto &x = a1.at("results")[i], &y = a2.at("results")[i];
    REQUIRE(x.at("seq_q") == y.at("seq_q"));
    if (x.value("kind", "self") == "cross") cross_worst = std::max(cross_worst, std::abs(y.at("time_us").get<double>() / x.at("time_us").get<double>() - 1));
  }
  CHECK(std::abs(cross_worst - 0.103) < 0.002);
  // Box b's calibration (another H100) on this box's tables, out of sample
  // across machines: at burst 1.4-1.5 % median, 3.9-4.2 % worst (the shape
  // model without the shape); under load 3.0-3.1 % / 7.4-7.5 % (on box b's
  // own table: 2.1 % / 10.0 %).
  const ModelParams cal = load_calibration(kSrc + "/validate/results/h100x1-b/calibration.yaml");
  int classes = 0;
  for (const auto* doc : {&g1, &g2})
    for (const auto& s : summarise(compare_bench(*doc, topo, cal))) {
      INFO(s.cls);
      CHECK(s.cases == 55);
      ++classes;
      if (s.cls == "GEMM burst (shape model fitted without the shape)") {
        CHECK(s.median_abs_pct < 2.0);
        CHECK(s.worst_abs_pct < 4.5);
      } else {
        CHECK(s.cls == "GEMM under load (sustained-load model, the shape's burst rate)");
        CHECK(s.median_abs_pct < 3.5);
        CHECK(s.worst_abs_pct < 8.0);
      }
    }
  CHECK(classes == 4);
}

TEST_CASE("NCCL with the clock down (box e): the share of the GEMM's slowdown a collective takes, its replay, the file") {
  const std::string dir = kSrc + "/validate/results/h200x2-nvlink-e/";
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  // After >= 300 ms of GEMMs on both GPUs (the GEMM 1.17-1.20x its rested
  // time), the 2-rank all-to-all took 1.08-1.15x its rested time over NVLink
  // and 1.07-1.10x through host memory (NCCL_P2P_DISABLE=1).
  for (const char* f : {"bench-loaded-1.json", "bench-loaded-2.json", "bench-loaded-p2p-disable.json"}) {
    const nlohmann::json doc = load(dir + f);  // kept: the loop runs over its rows
    for (const auto& r : doc.at("results")) {
      INFO(f << " " << r.at("bytes").get<double>());
      CHECK(r.at("gemm_ratio").get<double>() > 1.15);
      CHECK(r.at("gemm_ratio").get<double>() < 1.21);
      if (std::string(f) != "bench-loaded-2.json" || r.at("bytes") != 4194304) CHECK(r.at("ratio").get<double>() > 1.06);  // loaded-2's 4 MiB: 0.97 (rested samples 29.5-36.4 us)
    }
  }
  // Every H200 calibration takes the first defaults run and the P2P-off one:
  // median share 0.574 over NVLink, 0.483 through host memory.
  const ModelParams cal = load_calibration(kSrc + "/validate/results/h200x2-nvlink-d/calibration.yaml");
  CHECK(cal.power.comm_clock_share == doctest::Approx(0.5736).epsilon(1e-3));
  CHECK(cal.power.comm_clock_share_host == doctest::Approx(0.4829).epsilon(1e-3));
  // Replayed as the bench ran it (the GEMMs for the load time, then the
  // all-to-alls), scored on the slowdown: the fitted run within 4.3 %
  // (64 MiB), through host memory 2.5 %; the second run (not fitted) within
  // 3.7 % but for its 4 MiB row (+13.0 %: it measured 0.97x).
  struct Expect {
    const char* file;
    double worst;
    int cases;
  };
  for (const Expect& e : {Expect{"bench-loaded-1.json", 4.5, 4}, Expect{"bench-loaded-p2p-disable.json", 2.7, 4}}) {
    INFO(e.file);
    int n = 0;
    for (const auto& c : compare_bench(load(dir + e.file), topo, cal)) {
      if (c.key != "nccl_all_to_all_loaded") continue;
      ++n;
      CHECK(std::abs(c.error_pct()) < e.worst);
    }
    CHECK(n == e.cases);
  }
  int worst_row = 0;
  for (const auto& c : compare_bench(load(dir + "bench-loaded-2.json"), topo, cal))
    if (c.key == "nccl_all_to_all_loaded") {
      INFO(c.what);
      if (std::abs(c.error_pct()) > 4.0) {
        CHECK(c.what.find("4.00 MiB") != std::string::npos);
        ++worst_row;
      }
    }
  CHECK(worst_row == 1);
  // Without the share the model would have them at their rested time: 7-15 % fast.
  ModelParams none = cal;
  none.power.comm_clock_share = 0;
  for (const auto& c : compare_bench(load(dir + "bench-loaded-1.json"), topo, none))
    if (c.key == "nccl_all_to_all_loaded") CHECK(c.error_pct() < -7.0);
  // The file: both shares, written and read back; out of [0, 1] refused.
  const std::filesystem::path f = std::filesystem::temp_directory_path() / "osim-clock-share.yaml";
  std::ofstream(f) << "schema: overlapsim.calibration/v1\nmodel:\n  comm_clock_share: 0.57\n  comm_clock_share_host: 0.48\n";
  const ModelParams q = load_calibration(f.string());
  CHECK(q.power.comm_clock_share == doctest::Approx(0.57));
  CHECK(q.power.comm_clock_share_host == doctest::Approx(0.48));
  std::ofstream(f) << "schema: overlapsim.calibration/v1\nmodel:\n  comm_clock_share: 1.5\n";
  CHECK_THROWS_WITH_AS(load_calibration(f.string()), doctest::Contains("osim-clock-share.yaml:3:"), InputError);
  std::filesystem::remove(f);
}

TEST_CASE("a box measured whole on one lease (2xH200 box f): its own clock shares, every replayed microbenchmark within 5 %") {
  // Gated bench with the all-to-all with the clock down, P2P-off bench,
  // validation runs, one lease; the single H200's SDPA and long-load runs
  // as for every H200 calibration, not box e's all-to-alls.
  const Box box("h200x2-nvlink-f", {}, 2);
  const ModelParams& p = box.cal.params;
  // This box's own shares: 0.51 over NVLink (box e: 0.57), 0.30 through host memory (box e: 0.48).
  CHECK(p.power.comm_clock_share == doctest::Approx(0.506).epsilon(0.01));
  CHECK(p.power.comm_clock_share_host == doctest::Approx(0.301).epsilon(0.01));
  int rows = 0, outside = 0;
  double worst = 0;
  std::string worst_what;
  std::set<std::string> outside_classes;
  for (const auto& doc : merge_bench_runs(box.docs))
    for (const auto& c : compare_bench(doc.second, box.topo, p)) {
      ++rows;
      if (!c.outside.empty()) {
        ++outside;
        outside_classes.insert(c.cls);
        continue;
      }
      if (std::abs(c.error_pct()) > worst) {
        worst = std::abs(c.error_pct());
        worst_what = c.key + " " + c.what;
      }
    }
  INFO(worst_what);
  // Copies one way, both ways at once (>= 16 MiB), two streams, P2P,
  // multi-GPU and pipelined, GEMMs at burst (out of sample) and under load,
  // every collective, the all-to-alls with the clock down, interference,
  // memory-bound kernels past the L2, SDPA: the worst is a GEMM under load,
  // 4.3 %.
  CHECK(rows == 440);
  CHECK(worst < 5.0);
  CHECK(worst > 4.0);
  // The rows of effects the model leaves out, reported apart: the pageable
  // copies from one host buffer (the CPU's caches), the small bidirectional
  // copies of this older bench (one per sample behind its own gate), the
  // memory-bound kernels below 64 MiB (the L2; the events timing them).
  CHECK(outside == 50);
  CHECK(outside_classes == std::set<std::string>{"pageable copy, the same host buffer every time (the CPU's caches)",
                                                 "both directions at once < 16 MiB, one copy per sample behind two gates (the bench before 2026-11-23)",
                                                 "memory-bound kernel < 64 MiB, back to back (in the L2 cache)",
                                                 "memory-bound kernel < 64 MiB between GEMMs, timed by events"});
}

TEST_CASE("the NVLink all-to-all after the GPU idled 150 ms (box g), against back to back and the gated tables") {
  // nccl_all_to_all_loaded with a third mode: "warm", the rested sample
  // without the 150 ms idle before it (samples back to back, as the gated
  // tables run). Over NVLink the warm times are the gated tables' (box f's:
  // 12.9 / 19.8 / 48.8 / 138.5 us at 1 / 4 / 16 / 64 MiB); after 150 ms idle
  // and a 2 ms wake-up of the SMs the same all-to-all takes 10-47 us longer
  // (the GPU's state, not the links': box i). Through host memory (PCIe)
  // idling costs nothing.
  const std::string dir = kSrc + "/validate/results/h200x2-nvlink-g/";
  const std::map<int64_t, double> table_f = {{1 << 20, 12.9}, {4 << 20, 19.8}, {16 << 20, 48.8}, {64 << 20, 138.5}};
  int rows = 0;
  const nlohmann::json nvlink = load(dir + "bench-loaded-warm.json");
  for (const auto& r : nvlink.at("results")) {
    const double warm = r.at("warm_time_us"), rested = r.at("rested_time_us");
    INFO(r.at("bytes").get<int64_t>());
    CHECK(std::abs(warm / table_f.at(r.at("bytes").get<int64_t>()) - 1) < 0.03);
    CHECK(rested - warm > 9.0);
    CHECK(rested / warm > 1.3);
    // The clock's own effect is measured against the rested time (the
    // loaded sample had no collective for 300 ms either): 1.08-1.14x.
    CHECK(r.at("ratio").get<double>() > 1.07);
    CHECK(r.at("ratio").get<double>() < 1.15);
    ++rows;
  }
  CHECK(rows == 4);
  const nlohmann::json warm_host = load(dir + "bench-loaded-warm-p2p-disable.json");
  for (const auto& r : warm_host.at("results")) {
    INFO(r.at("bytes").get<int64_t>());
    CHECK(std::abs(r.at("rested_time_us").get<double>() / r.at("warm_time_us").get<double>() - 1) < 0.01);
  }
}

TEST_CASE("how long the GPU may idle before its NVLink all-to-all is slow (box h): between 20 and 50 ms") {
  // nccl_all_to_all_loaded's rested sample after 5, 10, 20 and 50 ms idle
  // (each plus the 2 ms wake-up of the SMs): up to 20 ms the all-to-all
  // runs at its back-to-back time (within 8 %), from 50 ms it takes 1.4-2.1x.
  const nlohmann::json doc = load(kSrc + "/validate/results/h200x2-nvlink-h/bench-idle-sweep.json");
  int rows = 0;
  for (const auto& r : doc.at("results")) {
    const double warm = r.at("warm_time_us");
    INFO(r.at("bytes").get<int64_t>());
    REQUIRE(r.at("idle_sweep").size() == 4);
    for (const auto& s : r.at("idle_sweep")) {
      const int idle = s.at("idle_ms");
      const double t = s.at("time_us");
      INFO(idle);
      if (idle <= 20) CHECK(t / warm < 1.08);
      else CHECK(t / warm > 1.35);
    }
    ++rows;
  }
  CHECK(rows == 4);
}

TEST_CASE("the slow all-to-all after idle is the GPU's state, not the links' (box i)") {
  // Box i kept the links busy through the 150 ms idle (a 1-element
  // all-reduce every 10 ms) and through the load (one every 16 GEMMs): the
  // rested all-to-all is as slow as without (within 5 %), and loaded / rested
  // stays 1.12-1.16 (1.10-1.13 without). Loaded against warm: 1.50-1.95x
  // over NVLink (the GEMM: 1.19-1.20x), 1.09-1.11x through host memory.
  const std::string dir = kSrc + "/validate/results/h200x2-nvlink-i/";
  for (const auto& [file, host] : {std::pair{"bench-awake.json", false}, std::pair{"bench-awake-p2p-disable.json", true}}) {
    const nlohmann::json doc = load(dir + file);
    int rows = 0;
    for (const auto& r : doc.at("results")) {
      INFO(file << " " << r.at("bytes").get<int64_t>());
      const double awake = r.at("awake_rested_time_us"), asleep = r.at("rested_time_us"), warm = r.at("warm_time_us");
      CHECK(std::abs(awake / asleep - 1) < 0.05);
      CHECK(r.at("awake_ratio").get<double>() > 1.08);
      CHECK(r.at("awake_ratio").get<double>() < 1.17);
      const double loaded_over_warm = r.at("awake_time_us").get<double>() / warm;
      if (host) {
        CHECK(loaded_over_warm > 1.08);
        CHECK(loaded_over_warm < 1.12);
      } else {
        CHECK(loaded_over_warm > 1.45);
        CHECK(loaded_over_warm < 2.0);
      }
      ++rows;
    }
    CHECK(rows == 4);
  }
}

// Two runs of the GEMM table (bench documents): per shape (m, n, k, chunks)
// of the second, |second / first - 1| of the 3-op medians (time_us) and of
// the window means (loaded_mean_us), each sorted.
struct TableRepeat {
  std::vector<double> three, window;
};
TableRepeat gemm_table_repeat(const nlohmann::json& first_doc, const nlohmann::json& second_doc) {
  using Shape = std::tuple<int, int, int, int>;
  std::map<Shape, const nlohmann::json*> first;
  for (const auto& r : first_doc.at("results"))
    if (r.at("key") == "gemm_bf16") first[{r.at("m"), r.at("n"), r.at("k"), r.at("chunks")}] = &r;
  TableRepeat t;
  for (const auto& r : second_doc.at("results")) {
    if (r.at("key") != "gemm_bf16") continue;
    const auto& a = *first.at({r.at("m"), r.at("n"), r.at("k"), r.at("chunks")});
    t.three.push_back(std::abs(r.at("time_us").get<double>() / a.at("time_us").get<double>() - 1));
    t.window.push_back(std::abs(r.at("loaded_mean_us").get<double>() / a.at("loaded_mean_us").get<double>() - 1));
  }
  std::sort(t.three.begin(), t.three.end());
  std::sort(t.window.begin(), t.window.end());
  return t;
}

TEST_CASE("GEMMs and SDPA under load timed as a 200 ms mean (h100x1-d): what repeats, the full-duty slowdown from the table, every row") {
  const std::string dir = "validate/results/h100x1-d/";
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/dgx-h100.yaml"));
  std::vector<std::pair<std::string, nlohmann::json>> docs;
  for (const char* f : {"bench-default.json", "attention-1.json"}) docs.emplace_back(dir + f, load(kSrc + "/" + dir + f));
  const Calibration cal = calibrate(docs, topo);
  CHECK(slurp(kSrc + "/" + dir + "calibration.yaml") == calibration_yaml(cal));
  const ModelParams& p = cal.params;
  // Two runs of the GEMM table on one lease: the window means
  // (loaded_mean_us) against the 3-op medians (time_us) taken just before.
  const nlohmann::json g2 = load(kSrc + "/" + dir + "bench-gemm-2.json");
  const auto [three, window] = gemm_table_repeat(docs[0].second, g2);
  REQUIRE(window.size() == 55);
  // Window means: median 0.62 %, worst 5.6 % (75600x15360x5120, whose 14 ms
  // ops put the window 0.6-0.8 s in, where the H100's clock dips); the
  // 3-op medians: 0.92 % / 4.2 %.
  CHECK(std::abs(window[27] - 0.0062) < 0.0005);
  CHECK(std::abs(window.back() - 0.0559) < 0.0005);
  CHECK(std::abs(three[27] - 0.0092) < 0.0005);
  // SDPA twice: the window means against the synchronised single calls.
  const nlohmann::json a2 = load(kSrc + "/" + dir + "attention-2.json");
  double win_worst = 0, sync_worst = 0;
  for (size_t i = 0; i < a2.at("results").size(); ++i) {
    const auto &x = docs[1].second.at("results")[i], &y = a2.at("results")[i];
    REQUIRE(x.at("seq_q") == y.at("seq_q"));
    CHECK(x.at("timing") == "window");
    win_worst = std::max(win_worst, std::abs(y.at("time_us").get<double>() / x.at("time_us").get<double>() - 1));
    sync_worst = std::max(sync_worst, std::abs(y.at("sync_median_us").get<double>() / x.at("sync_median_us").get<double>() - 1));
  }
  // Window means repeat within 3.7 %; single calls moved by up to 33 % (cross-attention, 18,900 queries).
  CHECK(std::abs(win_worst - 0.0369) < 0.0005);
  CHECK(sync_worst > 0.3);
  // The full-duty slowdown from the 55 windows: 0.104, where this run's
  // single series (gemm_sustained) sat on the clock's other plateau, 0.144;
  // the slow term, refitted with it: 0.070 over 373 ms.
  CHECK(p.power.sustained_slowdown == doctest::Approx(0.1040).epsilon(0.005));
  CHECK(p.power.sustained_slow_slowdown == doctest::Approx(0.0704).epsilon(0.01));
  CHECK(p.power.sustained_slow_time_constant.ms() == doctest::Approx(373.3).epsilon(0.001));
  double series = 0;
  for (const Fit& f : cal.fits)
    for (const auto& [k, v] : f.values)
      if (k == "series_slowdown_at_full_duty") series = v;
  CHECK(series == doctest::Approx(0.1438).epsilon(0.005));
  // SDPA keeps 342-354 TFLOP/s whether its window ran 0.3 s or 3 s into the
  // load: it takes none of the slow term (attention_slow_share 0; as a GEMM,
  // its rows' efficiencies would spread 3.4 % rms, not 1.25 %).
  CHECK(p.attention.attention_slow_share == 0.0);
  // Every replayed row: median 0.6 %; two over 5 %: the 1 GiB H2D of the
  // multi-GPU test (21.0 ms where the single-copy test took 20.2 ms minutes
  // before: the model gives both one rate) and the chunked 16384x5120x7616
  // under load (its window 0.5-0.8 s in, -5.9 %). Taking the slow term as a
  // GEMM, the two longest self-attentions were 5.9 % and 5.0 % slow too.
  std::vector<double> errs;
  std::vector<std::string> over;
  std::map<std::string, ClassSummary> cls;
  // Since 2026-11-23 also the copies both ways at once, P2P-less two-stream
  // and pageable copies and the memory-bound kernels: 191 rows, of which 28
  // measure effects the model leaves out (the CPU's caches, the L2, the
  // older bench's start per small bidirectional copy). Of the rest, four
  // more over 5 %: this H100's H2D both ways at once loses more at 1 GiB
  // (0.83 of its rate) than at 16-64 MiB (+11.1 / +9.2 %, -5.9 % at 1 GiB),
  // and its 64 MiB memory-bound kernel ran 12 % faster between GEMMs than
  // back to back (+13.0 %).
  int rows = 0;
  for (const auto& doc : merge_bench_runs(docs)) {
    const auto cmp = compare_bench(doc.second, topo, p);
    for (const auto& c : cmp) {
      ++rows;
      if (!c.outside.empty()) continue;
      errs.push_back(std::abs(c.error_pct()));
      if (errs.back() > 5.0) over.push_back(c.key + " " + c.what);
    }
    for (const auto& s : summarise(cmp)) cls[s.cls] = s;
  }
  std::sort(errs.begin(), errs.end());
  CHECK(rows == 191);
  CHECK(errs.size() == 163);
  CHECK(errs[errs.size() / 2] < 0.7);
  CHECK(errs.back() < 13.5);
  CHECK(over == std::vector<std::string>{"bidir_pinned GPU 0, 16.00 MiB, H2D", "bidir_pinned GPU 0, 64.00 MiB, H2D", "bidir_pinned GPU 0, 1.00 GiB, H2D",
                                         "multi_h2d_pinned 1 GPUs x 1.00 GiB", "gemm_bf16 16384x5120x7616 under load",
                                         "memory_kernel 64.00 MiB between GEMMs"});
  CHECK(cls.at("attention, self (median self-attention efficiency)").worst_abs_pct < 2.5);
  ModelParams as_gemm = p;
  as_gemm.attention.attention_slow_share = 1;
  int slow_rows = 0;
  for (const auto& c : compare_bench(docs[1].second, topo, as_gemm))
    if (c.what.rfind("self", 0) == 0 && c.error_pct() > 5.0) ++slow_rows;
  CHECK(slow_rows == 2);
  const auto& loaded = cls.at("GEMM under load, 200 ms mean (sustained-load model fitted without the shape, its burst rate)");
  CHECK(loaded.cases == 55);
  CHECK(loaded.median_abs_pct < 0.6);
  CHECK(cls.at("attention, cross (query-count model fitted without the shape)").worst_abs_pct < 2.5);
  // With the series' slowdown the under-load rows would be 3-4 % slow.
  ModelParams q = p;
  q.power.sustained_slowdown = series;
  std::vector<double> signed_err;
  for (const auto& c : compare_bench(docs[0].second, topo, q))
    if (c.what.find("under load") != std::string::npos) signed_err.push_back(c.error_pct());
  std::sort(signed_err.begin(), signed_err.end());
  REQUIRE(signed_err.size() == 55);
  CHECK(signed_err[27] > 3.0);
  // The second run, out of sample: under load median 0.5 %, worst 8.7 %
  // (75600x15360x5120 again: the dip); SDPA self within 3 %, cross 3.8 %.
  std::map<std::string, ClassSummary> again;
  for (const auto* doc : {&g2, &a2})
    for (const auto& s : summarise(compare_bench(*doc, topo, p))) again[s.cls] = s;
  CHECK(again.at("GEMM under load, 200 ms mean (sustained-load model, the shape's burst rate)").median_abs_pct < 0.6);
  CHECK(again.at("GEMM under load, 200 ms mean (sustained-load model, the shape's burst rate)").worst_abs_pct < 9.0);
  CHECK(again.at("attention, self (median self-attention efficiency)").worst_abs_pct < 3.0);
  CHECK(again.at("attention, cross (query-count model fitted without the shape)").worst_abs_pct < 4.0);
}

TEST_CASE("a 2xH200 box whole on one lease with window means (box j): the table's slowdown agrees with the series, every row") {
  // Its own SDPA, long series and memory kernels: nothing from other boxes.
  const Box box("h200x2-nvlink-j", {"attention-1.json"}, 0);
  const ModelParams& p = box.cal.params;
  // On the H200 the clock does not sit on two plateaus: the table's windows
  // give 0.138, the single series 0.1376.
  double series = 0;
  for (const Fit& f : box.cal.fits)
    for (const auto& [k, v] : f.values)
      if (k == "series_slowdown_at_full_duty") series = v;
  CHECK(series == doctest::Approx(0.1376).epsilon(0.005));
  CHECK(p.power.sustained_slowdown == doctest::Approx(0.1380).epsilon(0.005));
  // SDPA takes none of the slow term here either.
  CHECK(p.attention.attention_slow_share == 0.0);
  // Two GEMM tables on the lease: window means repeat within 1.8 % (median
  // 0.35 %), the 3-op medians within 4.4 % (0.95 %).
  const nlohmann::json g2 = load(kSrc + "/" + box.dir + "bench-gemm-2.json");
  const auto [three, window] = gemm_table_repeat(box.docs[0].second, g2);
  REQUIRE(window.size() == 55);
  CHECK(std::abs(window[27] - 0.0035) < 0.0005);
  CHECK(std::abs(window.back() - 0.0178) < 0.0005);
  CHECK(std::abs(three.back() - 0.0439) < 0.0005);
  // Every replayed row: two over 5 %. The 2-GPU 1 GiB H2D of the P2P-off run
  // took 21.7 ms where the defaults run's took 19.4 ms (the host's copies;
  // the transport is NCCL's only): -10.7 %. 75600x15360x5120 under load,
  // whose 14 ms ops put its window 0.6-0.85 s in, at the clock's first dip
  // (1.26x its burst time, the table's median 1.16x): -6.6 %.
  // (Since 2026-11-23 440 rows: 50 of them effects the model leaves out.)
  std::vector<std::string> over;
  int rows = 0;
  for (const auto& doc : merge_bench_runs(box.docs))
    for (const auto& c : compare_bench(doc.second, box.topo, p)) {
      if (!c.outside.empty()) continue;
      ++rows;
      if (std::abs(c.error_pct()) > 5.0) over.push_back(c.key + " " + c.what);
      if (c.cls.rfind("attention", 0) == 0) CHECK(std::abs(c.error_pct()) < 2.5);
    }
  CHECK(rows == 390);
  CHECK(over == std::vector<std::string>{"gemm_bf16 75600x15360x5120 under load", "multi_h2d_pinned 2 GPUs x 1.00 GiB"});
}

TEST_CASE("the clock's dips under sustained load come at the same times on every box (6 s series: 2 H100s, 4 H200s)") {
  // gemm_sustained_long: one GEMM back to back for 6 s from rest, in 100 ms
  // bins. Each box's plateau (0.2-0.8 s) sits at 1.12-1.17x the burst time;
  // the clock dips hardest in the bin at 0.8-1.0 s (1.26-1.39x), then again
  // about every 0.97 s (peaks at 1.8-1.9, 2.7-2.9, 3.7-3.9, 4.7-5.0 s). The
  // model's slow term is their smooth average: GEMM table windows that land
  // on the first dip replay 6-9 % fast (README).
  struct Expect {
    const char* file;
    double plateau, dip;
  };
  for (const Expect& e : {Expect{"h100x1-d/bench-default.json", 0.116, 0.380}, Expect{"h100x1-b/bench-default.json", 0.128, 0.380},
                          Expect{"h200x2-nvlink-j/bench-default.json", 0.158, 0.284}, Expect{"h200x2-nvlink-f/bench-default.json", 0.158, 0.263},
                          Expect{"h200x2-nvlink-d/bench-default.json", 0.171, 0.387}, Expect{"h200x1/bench-long-memory.json", 0.167, 0.338}}) {
    INFO(std::string(e.file));
    const nlohmann::json doc = load(kSrc + "/validate/results/" + e.file);
    const nlohmann::json* L = nullptr;
    for (const auto& r : doc.at("results"))
      if (r.at("key") == "gemm_sustained_long") L = &r;
    REQUIRE(L != nullptr);
    const double burst = L->at("burst_time_us").get<double>();
    std::map<int, std::pair<double, int>> bins;  // 100 ms bin -> (sum of time / burst, count)
    for (size_t i = 0; i < L->at("time_us").size(); ++i) {
      auto& b = bins[static_cast<int>(L->at("start_ms")[i].get<double>() / 100)];
      b.first += L->at("time_us")[i].get<double>() / burst;
      ++b.second;
    }
    auto excess = [&](int k) { return bins.at(k).first / bins.at(k).second - 1; };
    double plateau = 0;
    for (int k = 2; k < 8; ++k) plateau += excess(k) / 6;
    CHECK(plateau == doctest::Approx(e.plateau).epsilon(0.01));
    CHECK(std::max(excess(8), excess(9)) == doctest::Approx(e.dip).epsilon(0.01));
    // The hardest bin of each second: at 0.8-0.9, 1.8-1.9, 2.7-2.9 s on
    // every box, then 3.7-3.9 and 4.7-5.0 s.
    for (int s = 0; s < 5; ++s) {
      int peak = 3 + 10 * s;
      for (int k = 3 + 10 * s; k < 13 + 10 * s; ++k)
        if (excess(k) > excess(peak)) peak = k;
      CHECK(peak >= (s < 3 ? 8 + 10 * s - (s == 2) : 7 + 10 * s));
      CHECK(peak <= (s < 3 ? 9 + 10 * s : 9 + 10 * s + (s == 4)));
    }
  }
}

TEST_CASE("the all-to-all as a Ulysses layer meets it (box k): the NVLink wake-up after compute, the clock share without it, copies beside") {
  // Box j's runs plus box k's nccl_all_to_all_insitu (another 2xH200 lease):
  // the 2-rank all-to-all after 2, 8, 30, 100 ms of GEMMs, with and without
  // H2D copies on both GPUs, 16 and 80 MiB, NCCL defaults and P2P off.
  const std::string j = "validate/results/h200x2-nvlink-j/", k = "validate/results/h200x2-nvlink-k/";
  const std::vector<std::pair<std::string, nlohmann::json>> docs =
      h200_docs({j + "bench-default.json", j + "bench-p2p-disable.json", j + "attention-1.json", k + "bench-insitu.json", k + "bench-insitu-p2p-disable.json"}, 0);
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  const Calibration cal = calibrate(docs, topo);
  CHECK(slurp(kSrc + "/validate/results/h200x2-nvlink-k/calibration.yaml") == calibration_yaml(cal));
  const ModelParams& p = cal.params;
  // Over NVLink: after 2 or 8 ms of GEMMs 52 / 165 us, after 30 or 100 ms
  // 149-151 / 283-294 us: a step of 98 and 123 us (median 110.6), of which
  // the replay as run gives 4 and 15 us by the clock (comm_clock_share): the
  // latency 93.7 and 107.7 us, 100.7 fitted (the raw step counted the clock
  // twice); through host memory no step (1.00-1.02x, the clock's 1.04-1.10x
  // at 100 ms).
  CHECK(p.nvlink.nvlink_wake_latency.us() == doctest::Approx(100.7).epsilon(0.005));
  // Quiet for 28-35 ms (the bench's 20 ms sleep, the copies' drain, 2-8 ms
  // of GEMMs) it had not gone to sleep; for >= 50 ms it had (boxes g, h: not
  // after 20 ms idle, yes after 50).
  CHECK(p.nvlink.nvlink_wake_after.ms() == doctest::Approx(40.0));
  // With the wake-up taken out of the rested and loaded times (paid once per
  // `iters`), the NVLink all-to-all takes the whole of the GEMM's clock slowdown.
  CHECK(p.power.comm_clock_share == doctest::Approx(1.0));
  CHECK(p.power.comm_clock_share_host == doctest::Approx(0.459).epsilon(0.01));
  std::map<std::string, ClassSummary> cls;
  for (const auto& doc : merge_bench_runs(docs))
    for (const auto& s : summarise(compare_bench(doc.second, topo, p))) cls[s.cls] = s;
  // The testcase replayed as it ran (each case's seven samples, the 20 ms
  // sleeps between them, the clock state carried from one to the next). No
  // copies beside: within 6.7 % (NVLink: 16 MiB 6-7 % fast after 2-8 ms,
  // 1.8-3.8 % slow after 30-100 ms, 80 MiB within 3 %; with the raw step as
  // the latency 16 MiB was 8.5-10.4 % slow after 30-100 ms) and 6.2 %
  // (through host memory); the loaded rows, scored with the wake-up in
  // both modes, within 4.5 %.
  CHECK(cls.at("NCCL all-to-all after GEMMs").cases == 8);
  CHECK(cls.at("NCCL all-to-all after GEMMs").worst_abs_pct < 7.0);
  CHECK(cls.at("NCCL all-to-all after GEMMs, through host memory").worst_abs_pct < 6.5);
  CHECK(cls.at("NCCL all-to-all with the clock down (slowdown)").worst_abs_pct < 4.5);
  // Copies beside: over NVLink the all-to-all takes 9-15 us longer beside H2D
  // copies after a short compute (1.09x at 80 MiB, 1.2x at 16 MiB):
  // nvlink_copy_latency 12.4 us, the median (without it those rows replay
  // 7-22 % fast; with it the interference pairs' all-to-all, which measured
  // 0.91x beside a copy, replays 2.8-3.6 % slow). Through host memory
  // 1.84-2.0x: with the host path fitted on both GPUs copying (as here),
  // within 6.1 % (fitted on one GPU copying: 8-12.5 % fast).
  CHECK(p.nvlink.nvlink_copy_latency.us() == doctest::Approx(12.38).epsilon(0.005));
  CHECK(cls.at("NCCL all-to-all after GEMMs, copies beside").median_abs_pct < 2.0);
  CHECK(cls.at("NCCL all-to-all after GEMMs, copies beside").worst_abs_pct < 4.5);
  CHECK(cls.at("interference pairs").worst_abs_pct < 4.0);
  CHECK(cls.at("NCCL all-to-all after GEMMs, copies beside, through host memory").worst_abs_pct < 6.5);
  // After 100 ms the first bench's copies (queued for the GEMMs at burst +
  // 5 ms) end about when the all-to-all starts; on the GPUs they had ended
  // (through host memory the all-to-all took its time without copies). The
  // samples replayed from rest had the GEMMs ~2 % quicker and the copies
  // still running (+28 / +58 %); replayed as run, within 6.4 % and 4.2 %.
  CHECK(cls.at("NCCL all-to-all after GEMMs, copies ending about its start, through host memory").worst_abs_pct < 6.5);
  CHECK(cls.at("NCCL all-to-all after GEMMs, copies ending about its start").worst_abs_pct < 4.5);
  // Without the wake-up the 30 and 100 ms rows over NVLink are 34.6-66 % fast.
  ModelParams awake = p;
  awake.nvlink.nvlink_wake_latency = Time::zero();
  int fast = 0;
  for (const auto& c : compare_bench(merge_bench_runs(docs)[0].second, topo, awake))
    if (c.key == "nccl_all_to_all_insitu" && (c.what.find("after 30 ms") != std::string::npos || c.what.find("after 100 ms") != std::string::npos) &&
        c.what.find("copies") == std::string::npos && c.error_pct() < -34.0)
      ++fast;
  CHECK(fast == 4);
  // Box l, another lease, the same testcase (and the loaded one) again: each
  // in-situ case within 3.9 % of box k's over NVLink, 3.3 % through host
  // memory; box k's calibration replays its cases without copies within
  // 10 % over NVLink and 8 % through host memory (out of sample).
  const std::string l = kSrc + "/validate/results/h200x2-nvlink-l/";
  for (const auto& [again, first] : {std::pair{"bench-a2a.json", "bench-insitu.json"}, std::pair{"bench-a2a-p2p-disable.json", "bench-insitu-p2p-disable.json"}}) {
    const nlohmann::json x = load(l + again), y = load(kSrc + "/" + k + first);
    const bool host = std::string(again).find("p2p") != std::string::npos;
    std::map<double, const nlohmann::json*> by_bytes;
    for (const auto& r : y.at("results")) by_bytes[r.at("bytes").get<double>()] = &r;
    int cases = 0;
    for (const auto& r : x.at("results")) {
      if (r.at("key") != "nccl_all_to_all_insitu") continue;
      const auto& ya = by_bytes.at(r.at("bytes").get<double>())->at("cases");
      for (size_t i = 0; i < r.at("cases").size(); ++i) {
        CHECK(r.at("cases")[i].at("gemm_ms") == ya[i].at("gemm_ms"));
        CHECK(std::abs(r.at("cases")[i].at("time_us").get<double>() / ya[i].at("time_us").get<double>() - 1) < (host ? 0.035 : 0.04));
        ++cases;
      }
    }
    CHECK(cases == 16);
    for (const auto& c : compare_bench(x, topo, p))
      if (c.key == "nccl_all_to_all_insitu" && c.what.find("copies") == std::string::npos) {
        INFO(c.what);
        CHECK(std::abs(c.error_pct()) < (host ? 8.0 : 10.0));
      }
  }
}

TEST_CASE("box p, a fresh lease, out of sample: box m's calibration on the in-situ all-to-all at 4-80 MiB, and the GEMMs' span before it") {
  // The in-situ testcase again with copies that outlast the GEMMs under load
  // (`ncopies`), the GEMMs' span and the copies' margin recorded, at 4, 16,
  // 40 and 80 MiB, NCCL defaults and P2P off; replayed as run with box m's
  // calibration (fitted on boxes j, k, m: nothing from this lease).
  const std::string pdir = kSrc + "/validate/results/h200x2-nvlink-p/";
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  const ModelParams m = load_calibration(kSrc + "/validate/results/h200x2-nvlink-m/calibration.yaml");
  for (const std::string f : {"bench-insitu.json", "bench-insitu-p2p-disable.json"}) {
    INFO(f);
    const bool host = f.find("p2p") != std::string::npos;
    const nlohmann::json doc = load(pdir + f);
    std::vector<double> steps;
    int rows = 0;
    for (const auto& r : doc.at("results")) {
      if (r.at("key") != "nccl_all_to_all_insitu") continue;
      ++rows;
      std::map<int, double> without;  // gemm_ms -> time, no copies
      for (const auto& k : r.at("cases")) {
        if (k.at("copies").get<bool>()) {
          // Every copies case ran beside the all-to-all: its copies ended
          // 7.3-19.4 ms after the all-to-all began, on both GPUs.
          CHECK(k.at("ncopies").get<int>() >= 8);
          CHECK(k.at("copy_margin_us").get<double>() > 5000.0);
        } else {
          without[k.at("gemm_ms").get<int>()] = k.at("time_us").get<double>();
        }
      }
      // Over NVLink the wake-up step (after 30 / 100 ms less after 2 / 8 ms)
      // is 94-128 us at every size, 4 to 80 MiB: a latency, not a rate.
      // Through host memory there is none: 0.4-10.2 % longer (the clock).
      for (const int slow : {30, 100})
        for (const int fast : {2, 8}) steps.push_back(host ? without.at(slow) / without.at(fast) - 1 : without.at(slow) - without.at(fast));
    }
    CHECK(rows == 4);
    for (const double st : steps) {
      if (host) CHECK((st > 0.0 && st < 0.11));
      else CHECK((st > 90.0 && st < 130.0));
    }
    std::map<std::string, ClassSummary> cls;
    for (const auto& c : summarise(compare_bench(doc, topo, m))) cls[c.cls] = c;
    // The GEMMs' span (the sustained-load model in situ, from the state the
    // samples before left): 1.8-3.4 % median, within 6.4 %, the model quicker
    // (after the 20 ms sleep the GEMMs run 3-8 % over their warm time even
    // for 2-8 ms, which no duty-cycle term gives; after 100 ms 1.12-1.17x;
    // not the GPU returning from idle, which gemm_after_idle rules out, but
    // the first submission after the host's sleep).
    const std::string span = "GEMMs in situ (their span)";
    CHECK(cls.at(span).cases == 16);
    CHECK(cls.at(span).median_abs_pct < 3.5);
    CHECK(cls.at(span).worst_abs_pct < 6.5);
    CHECK(cls.at(span + ", H2D copies beside").median_abs_pct < 3.5);
    CHECK(cls.at(span + ", H2D copies beside").worst_abs_pct < 6.5);
    if (host) {
      // Through host memory: 2.8 % median without copies (within 7.5 %),
      // 4.4 % beside them (the 4 MiB rows 11-16 % fast).
      CHECK(cls.at("NCCL all-to-all after GEMMs, through host memory").median_abs_pct < 3.0);
      CHECK(cls.at("NCCL all-to-all after GEMMs, through host memory").worst_abs_pct < 7.6);
      CHECK(cls.at("NCCL all-to-all after GEMMs, copies beside, through host memory").median_abs_pct < 4.5);
    } else {
      // Over NVLink, 16-80 MiB within 10.2 % (16 MiB 10 % fast after 2-8 ms,
      // the rest within 7.1 %); after 30-100 ms every size within 3.7 %
      // (with the raw step as the wake-up latency, 4-16 MiB were 4-9 %
      // slow); the 4 MiB rows after 2-8 ms 20-22 % fast (24.6 us against
      // the gated table's 19.6: ~5 us of in-stream start after the
      // line-up, which the gated tables leave out).
      CHECK(cls.at("NCCL all-to-all after GEMMs").median_abs_pct < 2.5);
      for (const auto& c : compare_bench(doc, topo, m))
        if (c.key == "nccl_all_to_all_insitu") {
          INFO(c.what);
          if (c.what.find("4.00 MiB") == std::string::npos) CHECK(std::abs(c.error_pct()) < 10.5);
          if (c.what.find("after 30 ms") != std::string::npos || c.what.find("after 100 ms") != std::string::npos)
            CHECK(std::abs(c.error_pct()) < 4.0);
        }
    }
  }
}

TEST_CASE("the GPU's return from idle (gemm_after_idle, an H200 and an H100 lease): none when gated, and the sustained-load model out of sample") {
  // GEMMs after a gap with the GPU idle, with copies only, or with a sleep
  // kernel resident, queued behind a host-function gate (no kernel holds the
  // GPU): after >= 30 ms the first GEMM runs within 9 us of warm (1.7 % of
  // the 2048-row GEMM, 0.5 % of the 8192-row one). The same leases' ungated
  // gemm_sustained series, whose first GEMM is enqueued straight after a
  // 300 ms host sleep, start 101-203 us slow: the submission after the
  // host's idle, not the GPU's clock.
  struct Lease {
    std::string dir, cal, topo;
    double median_max, worst_max;
  };
  for (const Lease& l : {Lease{"h200x1-b", "h200x2-nvlink-d", "h200x4-nvlink", 0.6, 5.7}, Lease{"h100x1-e", "h100x1-d", "dgx-h100", 1.2, 6.0}}) {
    INFO(std::string(l.dir));
    const std::string dir = kSrc + "/validate/results/" + l.dir + "/";
    for (const auto& r : load(dir + "bench-sustained.json").at("results")) CHECK(r.at("time_us")[0].get<double>() - r.at("burst_time_us").get<double>() > 95.0);
    const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/" + l.topo + ".yaml"));
    const ModelParams p = load_calibration(kSrc + "/validate/results/" + l.cal + "/calibration.yaml");
    for (const std::string f : {"bench-idle-1.json", "bench-idle-2.json"}) {
      INFO(f);
      const nlohmann::json doc = load(dir + f);
      int rows = 0, loaded = 0;
      for (const auto& r : doc.at("results")) {
        ++rows;
        const double warm = r.at("warm_time_us").get<double>(), gap = r.at("gap_ms").get<double>();
        if (gap >= 30) CHECK(r.at("time_us")[0].get<double>() - warm < 9.0);
        // 6.3 ms of GEMMs per sample with 0.3-1 ms between (duty >= 0.8):
        // the clock down, 2-15 % slow; the 12 small GEMMs (1.6 ms) not.
        if (r.at("m") == 8192 && (gap == 0.3 || gap == 1.0)) {
          double mean = 0;
          for (const auto& x : r.at("time_us")) mean += x.get<double>() / 12;
          CHECK(mean / warm - 1 > 0.01);
          CHECK(mean / warm - 1 < 0.16);
          loaded += mean / warm - 1 > 0.06;
        }
      }
      CHECK(rows == 48);
      CHECK(loaded >= 5);
      // Replayed as run with another lease's calibration (its sustained-load
      // fit from that lease's gemm_sustained and GEMM windows), scored on
      // the slowdown at the row's own warm time.
      const auto cls = summarise(compare_bench(doc, topo, p));
      REQUIRE(cls.size() == 1);
      CHECK(cls[0].cls == "GEMMs after a gap (sustained-load clock)");
      CHECK(cls[0].cases == 48);
      CHECK(cls[0].median_abs_pct < l.median_max);
      CHECK(cls[0].worst_abs_pct < l.worst_max);
    }
  }
}

// Box j's runs, one lease's in-situ runs (the results folder `insitu`) and
// box m's barrier skew, calibrated as `overlapsim calibrate` does them;
// checked against the calibration committed in the folder `committed`.
Calibration calibrate_j_insitu_m(const std::string& insitu, const std::string& committed, const hw::Topology& topo) {
  const std::string j = "validate/results/h200x2-nvlink-j/", m = "validate/results/h200x2-nvlink-m/";
  const auto docs = h200_docs({j + "bench-default.json", j + "bench-p2p-disable.json", j + "attention-1.json", insitu + "bench-insitu.json",
                               insitu + "bench-insitu-p2p-disable.json", m + "bench-skew-1.json", m + "bench-skew-2.json"},
                              0);
  Calibration cal = calibrate(docs, topo);
  CHECK(slurp(kSrc + "/" + committed + "calibration.yaml") == calibration_yaml(cal));
  return cal;
}

TEST_CASE("ranks drift apart under the power cap (box m): the straggler share from the barrier skew, box m's calibration") {
  // nccl_barrier_skew twice on one lease: the mean arrival skew of two GPUs
  // after 2, 8, 30 ms of GEMMs, as a share of the segment (halved: the wait
  // it adds), loaded 1.0-6.2 % (the clock dips on each GPU on its own),
  // rested 0.14-0.36 %; straggler_share is the loaded rows' median, 2.17 %.
  const std::string k = "validate/results/h200x2-nvlink-k/", m = "validate/results/h200x2-nvlink-m/";
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  const Calibration cal = calibrate_j_insitu_m(k, m, topo);
  CHECK(cal.params.power.straggler_share == doctest::Approx(0.02174).epsilon(0.005));
  for (const char* f : {"bench-skew-1.json", "bench-skew-2.json"}) {
    const nlohmann::json doc = load(kSrc + "/" + m + f);
    for (const auto& r : doc.at("results")) {
      const double share = r.at("mean_skew_us").get<double>() / (2 * r.at("gemms").get<double>() * r.at("gemm_us").get<double>());
      INFO(f << " " << r.at("mode").get<std::string>() << " " << r.at("segment_ms").get<int>());
      if (r.at("mode") == "loaded") CHECK((share > 0.0095 && share < 0.063));
      else CHECK((share > 0.0013 && share < 0.0037));
    }
  }
  // Box n, another lease, the same testcase twice: loaded 0.6-3.1 %, median
  // 1.43 % (what the share would be from it); rested 0.50-0.72 % (one GPU
  // ~1.3 % faster than the other there, loaded or not).
  std::vector<double> loaded_n;
  for (const char* f : {"bench-skew-1.json", "bench-skew-2.json"}) {
    const nlohmann::json doc = load(kSrc + "/validate/results/h200x2-nvlink-n/" + f);
    for (const auto& r : doc.at("results")) {
      const double share = r.at("mean_skew_us").get<double>() / (2 * r.at("gemms").get<double>() * r.at("gemm_us").get<double>());
      if (r.at("mode") == "loaded") loaded_n.push_back(share);
      else CHECK((share > 0.0049 && share < 0.0073));
    }
  }
  REQUIRE(loaded_n.size() == 6);
  std::sort(loaded_n.begin(), loaded_n.end());
  CHECK((loaded_n[2] + loaded_n[3]) / 2 == doctest::Approx(0.0143).epsilon(0.01));
  // The rest is box k's calibration (the wake-up, the clock share) unchanged.
  const ModelParams box_k = load_calibration(kSrc + "/" + k + "calibration.yaml");
  CHECK(cal.params.nvlink.nvlink_wake_latency.us() == doctest::Approx(box_k.nvlink.nvlink_wake_latency.us()).epsilon(1e-3));
  CHECK(cal.params.power.comm_clock_share == doctest::Approx(box_k.power.comm_clock_share));
  CHECK(box_k.power.straggler_share == 0.0);
  // What the share does to the SP 2 validation runs: CTest validation.h200x2j_runs_box_m
  // (box j's runs, 1.3 % / 4.0 %; without it 1.3 % / 4.6 %).
}

TEST_CASE("compute beside an awake NVLink (box p's calibration): fitted on the in-situ GEMM spans, the SP 2 runs' compute") {
  // Box m's sources with box p's in-situ runs (which record the GEMMs'
  // span) in place of box k's: after 2-8 ms the same GEMMs took 1.4-3.0 %
  // longer before an NVLink all-to-all (the link awake: the last one 28-35
  // ms before) than before one through host memory, the replay without the
  // term giving both the same: nvlink_awake_slowdown 2.2 %, the median.
  const std::string p = "validate/results/h200x2-nvlink-p/", m = "validate/results/h200x2-nvlink-m/";
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  const Calibration cal = calibrate_j_insitu_m(p, p, topo);
  CHECK(load_calibration(kSrc + "/" + p + "calibration.yaml").nvlink.nvlink_awake_slowdown == doctest::Approx(cal.params.nvlink.nvlink_awake_slowdown).epsilon(1e-3));
  CHECK(cal.params.nvlink.nvlink_awake_slowdown == doctest::Approx(0.02196).epsilon(0.005));
  const Fit* fit = nullptr;
  for (const Fit& f : cal.fits)
    if (f.name == "compute beside an awake NVLink") fit = &f;
  REQUIRE(fit != nullptr);
  CHECK(fit->points == 8);
  CHECK(fit->values[1].second > 0.013);  // every size and case: NVLink slower
  CHECK(fit->values[2].second < 0.031);
  // Its wake-up from box p's four sizes, net of the clock: 97.9 us.
  CHECK(cal.params.nvlink.nvlink_wake_latency.us() == doctest::Approx(97.88).epsilon(0.005));
  // The spans over NVLink now 2.1 % median, within 4.0 % (box m's
  // calibration, without the term: 3.0 % / 6.1 %); through host memory as before.
  std::map<std::string, ClassSummary> nv;
  for (const auto& c : summarise(compare_bench(load(kSrc + "/" + p + "bench-insitu.json"), topo, cal.params))) nv[c.cls] = c;
  CHECK(nv.at("GEMMs in situ (their span)").median_abs_pct < 2.2);
  CHECK(nv.at("GEMMs in situ (their span)").worst_abs_pct < 4.1);
  // Without a calibration carrying spans in both transports the term stays
  // off: every committed calibration before box p's.
  CHECK(load_calibration(kSrc + "/" + m + "calibration.yaml").nvlink.nvlink_awake_slowdown == 0.0);
  // On the runs (out of sample: the runs are no input): CTest
  // validation.h200x2*_runs_box_p; the SP 2 runs with prefetching over NVLink
  // were 2-5 % fast on every lease (compute ~2 % quicker than measured
  // where P2P-off runs of the same shapes matched within 1 %).
}

TEST_CASE("one GPU's copies measured twice (1xH200 c and d, 1xH100 f): both ways at once, pageable copies from a cold host buffer, P2P-less streams") {
  // Per lease: the fitted shares and pageable rates; the cold pageable
  // rows' worst error in sample (below) and out of sample (above); the
  // pageable H2D's fixed cost (above); the memory-bound kernels' worst out of sample.
  struct Lease {
    const char* dir;
    const char* topo;
    double h2d_share, d2h_share, pageable_h2d_GBps, pageable_d2h_GBps, pageable_in_below, pageable_out_above, pageable_latency_above, memory_out_below;
    double small_h2d_share, small_d2h_share;
  };
  // Lease d: the bench carrying its rotating buffer's offset from row to
  // row; its rows no steadier than c's (one 64 MiB H2D at 6.9 GB/s between
  // 8.3 and 8.4 in run 1: 22.5 % in sample).
  for (const Lease& l : {Lease{"h200x1-c", "h200x4-nvlink.yaml", 0.819, 0.931, 7.34, 11.23, 6.0, 25, 20, 1.5, 0.690, 0.703},
                         Lease{"h100x1-f", "dgx-h100.yaml", 0.844, 0.948, 8.90, 14.07, 6.0, 25, 20, 1.5, 0.713, 0.710},
                         Lease{"h200x1-d", "h200x4-nvlink.yaml", 0.919, 0.921, 7.94, 13.49, 23.0, 20, 15, 2.0, 0.722, 0.711}}) {
    INFO(std::string(l.dir));
    const std::string dir = std::string("validate/results/") + l.dir + "/";
    const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/" + l.topo));
    const nlohmann::json run1 = load(kSrc + "/" + dir + "bench-copies-1.json"), run2 = load(kSrc + "/" + dir + "bench-copies-2.json");
    const Calibration cal = calibrate({{dir + "bench-copies-1.json", run1}}, topo);
    CHECK(slurp(kSrc + "/" + dir + "calibration.yaml") == calibration_yaml(cal));
    const ModelParams& p = cal.params;
    // Both ways at once an H2D keeps 0.82-0.84 of its rate, a D2H 0.93-0.95
    // (the same run's >= 64 MiB rows, the median).
    CHECK(p.copies.copy_bidir_factor == doctest::Approx(l.h2d_share).epsilon(0.002));
    CHECK(p.copies.copy_bidir_factor_d2h == doctest::Approx(l.d2h_share).epsilon(0.002));
    // Pageable, from (to) a 2 GiB host buffer in slices: latency + rate, the
    // D2H faster than the H2D on both machines.
    CHECK(p.copies.pageable_bandwidth.GBps() == doctest::Approx(l.pageable_h2d_GBps).epsilon(0.002));
    CHECK(p.copies.pageable_bandwidth_d2h.GBps() == doctest::Approx(l.pageable_d2h_GBps).epsilon(0.002));
    CHECK(p.copies.pageable_latency.us() > l.pageable_latency_above);
    CHECK(p.copies.pageable_latency_d2h.us() < 50);
    // In sample (run 1) and out of sample (run 2, seconds later): per class,
    // the worst error.
    auto worst = [&](const nlohmann::json& doc) {
      std::map<std::string, double> w;
      for (const auto& c : compare_bench(doc, topo, p)) w[c.cls] = std::max(w[c.cls], std::abs(c.error_pct()));
      return w;
    };
    const auto w1 = worst(run1), w2 = worst(run2);
    // One-way copies, every size; the two H2D streams on one engine.
    CHECK(w1.at("pinned copy >= 16 MiB") < 2.0);
    CHECK(w2.at("pinned copy >= 16 MiB") < 2.0);
    CHECK(w2.at("two H2D copies on two streams (one engine)") < 1.5);
    // The cold pageable rows in sample within 5.6 %; the second run, on the
    // same lease, moved by up to 53 % (the CPU's copy): no model holds them.
    CHECK(w1.at("pageable copy, host buffer not in the CPU's caches") < l.pageable_in_below);
    CHECK(w2.at("pageable copy, host buffer not in the CPU's caches") > l.pageable_out_above);
    // The memory-bound kernel past the L2, back to back and between GEMMs.
    CHECK(w2.at("memory-bound kernel >= 64 MiB") < l.memory_out_below);
    // Both ways at once, >= 16 MiB: within 11.5 % in sample, 15.5 % out of
    // sample (box c's second run kept 0.92 where its first kept 0.82, which
    // the table holds at 256 MiB-1 GiB); 1-16 MiB within 14 / 16 %.
    CHECK(w1.at("both directions at once >= 16 MiB") < 11.5);
    CHECK(w2.at("both directions at once >= 16 MiB") < 15.5);
    CHECK(w1.at("both directions at once 1-16 MiB") < 14);
    CHECK(w2.at("both directions at once 1-16 MiB") < 16);
    // Below 1 MiB a D2H takes as long as the H2D beside it: the longer set-up
    // and ~0.7 of the rate (the table's 256 KiB share), ~0.9 from 4 MiB.
    // Within 10 % in sample, 7.5 % out of sample; without the table (each
    // direction its own set-up, the large share) the small copies replay
    // 30-38 % fast.
    REQUIRE(p.copies.copy_bidir_tabled());
    CHECK(p.copies.copy_bidir_factor_for(false, 262144) == doctest::Approx(l.small_h2d_share).epsilon(0.002));
    CHECK(p.copies.copy_bidir_factor_for(true, 262144) == doctest::Approx(l.small_d2h_share).epsilon(0.002));
    CHECK(p.copies.copy_bidir_factor_for(false, 4194304) > 0.94);
    CHECK(p.copies.copy_bidir_factor_for(true, 4194304) > 0.89);
    CHECK(w1.at("both directions at once < 1 MiB") < 10);
    CHECK(w2.at("both directions at once < 1 MiB") < 7.5);
    {
      ModelParams without = p;
      without.copies.copy_bidir_table.clear();
      std::map<std::string, double> w;
      for (const auto& c : compare_bench(run1, topo, without)) w[c.cls] = std::max(w[c.cls], std::abs(c.error_pct()));
      CHECK(w.at("both directions at once < 1 MiB") > 30);
    }
    // The file reads back to the same terms.
    const ModelParams q = load_calibration(kSrc + "/" + dir + "calibration.yaml");
    CHECK(q.copies.copy_bidir_factor == doctest::Approx(p.copies.copy_bidir_factor).epsilon(1e-3));
    CHECK(q.copies.copy_bidir_factor_d2h == doctest::Approx(p.copies.copy_bidir_factor_d2h).epsilon(1e-3));
    REQUIRE(q.copies.copy_bidir_table.size() == p.copies.copy_bidir_table.size());
    // Between two measured sizes, the share interpolated in log(bytes); below the smallest, held.
    CHECK(q.copies.copy_bidir_factor_for(true, 524288) ==
          doctest::Approx(0.5 * (p.copies.copy_bidir_factor_for(true, 262144) + p.copies.copy_bidir_factor_for(true, 1048576))).epsilon(1e-3));
    CHECK(q.copies.copy_bidir_factor_for(true, 4096) == doctest::Approx(p.copies.copy_bidir_table.front()[2]).epsilon(1e-3));
    CHECK(q.copies.pageable_bandwidth_for(true).GBps() == doctest::Approx(p.copies.pageable_bandwidth_d2h.GBps()).epsilon(1e-3));
    CHECK(q.copies.pageable_latency_for(false).us() == doctest::Approx(p.copies.pageable_latency.us()).epsilon(1e-3));
  }
  // Out of range: refused with the file, line and field.
  const std::filesystem::path f = std::filesystem::temp_directory_path() / "osim-bidir.yaml";
  std::ofstream(f) << "schema: overlapsim.calibration/v1\nmodel:\n  copy_bidir_factor: 1.5\n";
  CHECK_THROWS_WITH_AS(load_calibration(f.string()), doctest::Contains("osim-bidir.yaml:3:"), InputError);
  CHECK_THROWS_WITH_AS(load_calibration(f.string()), doctest::Contains("must be in [0.05, 1]"), InputError);
  std::ofstream(f) << "schema: overlapsim.calibration/v1\nmodel:\n  pageable_latency_d2h: -5 us\n";
  CHECK_THROWS_WITH_AS(load_calibration(f.string()), doctest::Contains("pageable_latency_d2h"), InputError);
  std::ofstream(f) << "schema: overlapsim.calibration/v1\nmodel:\n  copy_bidir_factr: 0.9\n";
  CHECK_THROWS_WITH_AS(load_calibration(f.string()), doctest::Contains("did you mean 'copy_bidir_factor'"), InputError);
  // The retired small-copy tier is refused, naming what to do.
  std::ofstream(f) << "schema: overlapsim.calibration/v1\nmodel:\n  copy_bidir_small_bytes: 1 MiB\n  copy_bidir_factor_small: 0.7\n";
  CHECK_THROWS_WITH_AS(load_calibration(f.string()), doctest::Contains("'copy_bidir_small_bytes' is a retired term"), InputError);
  // The per-size table: sizes increasing, shares in (0, 1], three numbers an entry.
  const auto head = std::string("schema: overlapsim.calibration/v1\nmodel:\n  copy_bidir_table:\n");
  for (const char* bad : {"    - [1048576, 0.9, 0.9]\n    - [65536, 0.7, 0.7]\n", "    - [65536, 1.2, 0.7]\n", "    - [65536, 0.7]\n", "    - [65536, x, 0.7]\n"}) {
    const std::string entries = bad;
    CAPTURE(entries);
    std::ofstream(f) << head << entries;
    CHECK_THROWS_WITH_AS(load_calibration(f.string()), doctest::Contains("'copy_bidir_table': must be a list of [bytes, H2D share, D2H share] by bytes"), InputError);
  }
  std::ofstream(f) << head << "    - [65536, 0.6, 0.7]\n    - [4194304, 0.9, 0.95]\n";
  const ModelParams t = load_calibration(f.string());
  CHECK(t.copies.copy_bidir_factor_for(false, 4096) == doctest::Approx(0.6));                   // below: the first entry
  CHECK(t.copies.copy_bidir_factor_for(true, 524288) == doctest::Approx(0.7 + 0.5 * 0.25));      // halfway in log(bytes)
  CHECK(t.copies.copy_bidir_factor_for(false, Bytes{1} << 30) == doctest::Approx(0.9));          // above: the last
  std::filesystem::remove(f);
}

TEST_CASE("the GPU time of an event record (1xH200 c and d, 1xH100 f): fitted per op, replayed as the bench ran it, beside an H2D copy") {
  for (const auto& [dir_name, topo_name, event_us] : {std::tuple{"h200x1-c", "h200x4-nvlink.yaml", 1.912}, std::tuple{"h100x1-f", "dgx-h100.yaml", 1.875},
                                                      std::tuple{"h200x1-d", "h200x4-nvlink.yaml", 1.885}}) {
    INFO(std::string(dir_name));
    const std::string dir = std::string("validate/results/") + dir_name + "/";
    const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/" + topo_name));
    nlohmann::json run1 = load(kSrc + "/" + dir + "bench-copies-1.json");
    const Calibration cal = calibrate({{dir + "bench-copies-1.json", run1}}, topo);
    const ModelParams& p = cal.params;
    // 50 1 MiB kernels with an event after each, less the same without, per op.
    CHECK(p.overheads.event_gpu_time.us() == doctest::Approx(event_us).epsilon(0.002));
    CHECK(p.overheads.event_gpu_time_h2d == Time::zero());  // no row beside a copy: none fitted
    // Replayed: the fenced rows take the plain ones' time plus one event per
    // op, after a copy its own (event_gpu_time_copy: the copies' measured
    // gap, 1.2-1.5 us).
    std::map<std::string, double> sim, meas;
    for (const auto& c : compare_bench(run1, topo, p))
      if (c.key == "overhead_gpu_event_gap") sim[c.what] = c.simulated_us, meas[c.what] = c.measured_us;
    REQUIRE(sim.size() == 4);
    const double copy_gap = meas.at("1.00 MiB H2D copies, an event after each") - meas.at("1.00 MiB H2D copies");
    CHECK(copy_gap > 1.2);
    CHECK(copy_gap < 1.5);
    CHECK(p.overheads.event_gpu_time_copy.us() == doctest::Approx(copy_gap).epsilon(1e-6));
    CHECK(sim.at("1.00 MiB memory kernels, an event after each") - sim.at("1.00 MiB memory kernels") == doctest::Approx(event_us).epsilon(0.01));
    CHECK(sim.at("1.00 MiB H2D copies, an event after each") - sim.at("1.00 MiB H2D copies") == doctest::Approx(copy_gap).epsilon(0.01));
    CHECK(std::abs(sim.at("1.00 MiB H2D copies") / meas.at("1.00 MiB H2D copies") - 1) < 0.055);
    // A row beside an H2D copy (the bench's `beside: h2d`, 3 us more per
    // event here): the extra term, and its replay with the copy in flight.
    nlohmann::json beside;
    for (const auto& r : run1.at("results"))
      if (r.at("key") == "overhead_gpu_event_gap" && r.at("op") == "memory_kernel") beside = r;
    beside["beside"] = "h2d";
    beside["copy_bytes"] = 512 << 20;
    beside["fenced_us"] = beside.at("fenced_us").get<double>() + 3.0;
    beside["gap_us"] = beside.at("gap_us").get<double>() + 3.0;
    run1["results"].push_back(beside);
    nlohmann::json all = beside;  // every GPU copying: 2 GPUs
    all["beside"] = "h2d_all";
    all["gpus"] = 2;
    run1["results"].push_back(all);
    const Calibration with = calibrate({{"beside.json", run1}}, topo);
    CHECK(with.params.overheads.event_gpu_time_h2d.us() == doctest::Approx(3.0).epsilon(0.001));
    std::map<std::string, double> s2;
    for (const auto& c : compare_bench(run1, topo, with.params))
      if (c.key == "overhead_gpu_event_gap") s2[c.what] = c.simulated_us;
    REQUIRE(s2.size() == 8);
    CHECK(s2.at("1.00 MiB memory kernels, an event after each, an H2D copy beside") - s2.at("1.00 MiB memory kernels, an H2D copy beside") ==
          doctest::Approx(event_us + 3.0).epsilon(0.01));
    // Every GPU copying: GPU 0's events take the same (the term is its own copy's).
    CHECK(s2.at("1.00 MiB memory kernels, an event after each, every GPU copying H2D") - s2.at("1.00 MiB memory kernels, every GPU copying H2D") ==
          doctest::Approx(event_us + 3.0).epsilon(0.01));
    // The file carries both and reads back.
    const std::string yaml = calibration_yaml(with);
    CHECK(yaml.find("event_gpu_time_h2d: 3.0000 us") != std::string::npos);
  }
  const std::filesystem::path f = std::filesystem::temp_directory_path() / "osim-event.yaml";
  std::ofstream(f) << "schema: overlapsim.calibration/v1\nmodel:\n  event_gpu_time: 1.9 us\n  event_gpu_time_h2d: 4 us\n";
  const ModelParams q = load_calibration(f.string());
  CHECK(q.overheads.event_gpu_time.us() == doctest::Approx(1.9));
  CHECK(q.overheads.event_gpu_time_h2d.us() == doctest::Approx(4.0));
  std::ofstream(f) << "schema: overlapsim.calibration/v1\nmodel:\n  event_gpu_time: -2 us\n";
  CHECK_THROWS_WITH_AS(load_calibration(f.string()), doctest::Contains("event_gpu_time"), InputError);
  std::ofstream(f) << "schema: overlapsim.calibration/v1\nmodel:\n  event_gpu_tme: 2 us\n";
  CHECK_THROWS_WITH_AS(load_calibration(f.string()), doctest::Contains("did you mean 'event_gpu_time'"), InputError);
  std::filesystem::remove(f);
}

TEST_CASE("copies per gated burst (copy_reps): the burst held from the spin-kernel rows, the step at equal reps reported, replayed as the bench ran it") {
  // Rows made from a known truth on top of 1xH200 c's measured copies:
  // per copy = 2.4 us + bytes / 54.7 GB/s + 6 us / reps (after a spin
  // kernel) or 3 us / reps (after a host function), no step at 1 MiB.
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  nlohmann::json doc = load(kSrc + "/validate/results/h200x1-c/bench-copies-1.json");
  const Calibration base = calibrate({{"c.json", doc}}, topo);
  const double bw_us_per_byte = 1e6 / base.params.copies.copy_engine_bandwidth.bytes_per_s;  // 54.7 GB/s
  for (const double bytes : {262144.0, 1048576.0, 4194304.0})
    for (const int reps : {1, 2, 5, 20, 50})
      for (const char* gate : {"kernel", "host"})
        for (const char* dir : {"h2d", "d2h", "both"}) {
          const double t = 2.4 + bytes * bw_us_per_byte + (gate[0] == 'k' ? 6.0 : 3.0) / reps;
          nlohmann::json r = {{"key", "copy_reps"}, {"gpus", {0}}, {"bytes", bytes}, {"reps", reps}, {"gate", gate}, {"dir", dir}};
          if (dir[0] != 'd') r["h2d_time_us"] = t;
          if (dir[0] != 'h') r["d2h_time_us"] = t;
          doc["results"].push_back(r);
        }
  const Calibration cal = calibrate({{"reps.json", doc}}, topo);
  std::map<std::string, std::map<std::string, double>> fits;
  for (const auto& f : cal.fits)
    for (const auto& [k, v] : f.values) fits[f.name][k] = v;
  // The burst after a spin kernel, fitted over the sizes (steady per size):
  // 6 us both ways, exactly; the hand-off is that less the GPU time of the
  // event after a copy this lease measured (overhead_gpu_event_gap).
  const ModelParams& p = cal.params;
  CHECK(fits.at("burst of copies after a kernel (copy_reps), H2D").at("burst_us") == doctest::Approx(6.0).epsilon(1e-6));
  CHECK(fits.at("burst of copies after a kernel (copy_reps), D2H").at("burst_us") == doctest::Approx(6.0).epsilon(1e-6));
  CHECK(p.overheads.event_gpu_time_copy.us() == doctest::Approx(1.41).epsilon(0.01));
  CHECK(p.handoff.copy_after_kernel_latency.us() == doctest::Approx(6.0 - p.overheads.event_gpu_time_copy.us()).epsilon(1e-6));
  CHECK(p.handoff.copy_after_kernel_latency_d2h.us() == doctest::Approx(6.0 - p.overheads.event_gpu_time_copy.us()).epsilon(1e-6));
  // The one-way rows' own burst (base, fitted from how their reps change
  // with the size) differs; held at 6 us here, the rate and latency refit.
  CHECK(base.params.handoff.copy_after_kernel_latency.us() != doctest::Approx(p.handoff.copy_after_kernel_latency.us()).epsilon(0.01));
  // The reported per-gate fits (the latency, the burst and a step at 1 MiB
  // over the engine's rate): near the truth, no step.
  const auto& k = fits.at("copies per gated burst (copy_reps), H2D, after a spin kernel");
  CHECK(k.at("burst_us") == doctest::Approx(6.0).epsilon(0.01));
  CHECK(std::abs(k.at("step_us")) < 0.05);
  CHECK(fits.at("copies per gated burst (copy_reps), H2D, after a host function").at("burst_us") == doctest::Approx(3.0).epsilon(0.01));
  // Replayed as the bench ran them (the gate, an event, the burst, an
  // event): one way after a spin kernel, per copy the set-up + bytes / rate
  // + (hand-off + the closing event) / reps; after a host function the
  // closing event alone (the rows' 3 us are not the model's: these are made up).
  std::map<std::string, double> sim;
  for (const auto& c : compare_bench(doc, topo, p))
    if (c.key == "copy_reps") sim[c.what] = c.simulated_us;
  REQUIRE(sim.size() == 3 * 5 * 2 * 4);
  const double setup = p.copies.copy_latency.us() + 1.0;  // + the route's 1 us
  const double us_per_byte = 1e6 / p.copies.copy_engine_bandwidth.bytes_per_s, event = p.overheads.event_gpu_time_copy.us();
  CHECK(sim.at("GPU 0, 256.00 KiB x 20 after a kernel, H2D") == doctest::Approx(setup + 262144 * us_per_byte + 6.0 / 20).epsilon(1e-6));
  CHECK(sim.at("GPU 0, 256.00 KiB x 1 after a kernel, H2D") == doctest::Approx(setup + 262144 * us_per_byte + 6.0).epsilon(1e-6));
  CHECK(sim.at("GPU 0, 256.00 KiB x 1 after a host function, H2D") == doctest::Approx(setup + 262144 * us_per_byte + event).epsilon(1e-6));
  CHECK(sim.at("GPU 0, 4.00 MiB x 5 after a kernel, H2D") == doctest::Approx(setup + 4194304 * us_per_byte + 6.0 / 5).epsilon(1e-6));
  // Both ways at once: the longer set-up, the table's share at the size
  // (fitted on the both-ways rows behind the spin kernel with more than 5
  // per burst, here 20 and 50).
  const double longer = std::max(setup, p.copies.copy_latency_d2h.us() + 1.0);
  REQUIRE(p.copies.copy_bidir_tabled());
  const double share = p.copies.copy_bidir_factor_for(true, 262144);
  CAPTURE(share);
  CHECK(share > 0.5);
  CHECK(share < 0.99);
  CHECK(sim.at("GPU 0, 256.00 KiB x 20 after a kernel, D2H beside H2D") ==
        doctest::Approx(longer + 262144 / (share * p.copies.copy_engine_bandwidth_d2h.bytes_per_s) * 1e6 + 6.0 / 20).epsilon(1e-3));
}

TEST_CASE("the all-to-all per gated burst (nccl_reps): the burst's one-off cost fitted over sizes, each op replayed at the table's time") {
  // Rows made from a known truth on top of 2xH200 box j's defaults run: per
  // op = steady(size) + 5 us / iters.
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  nlohmann::json doc = load(kSrc + "/validate/results/h200x2-nvlink-j/bench-default.json");
  const std::map<double, double> steady = {{262144.0, 9.0}, {1048576.0, 11.5}, {4194304.0, 19.0}, {16777216.0, 48.0}};
  for (const auto& [bytes, t] : steady)
    for (const int iters : {1, 2, 5, 20})
      doc["results"].push_back({{"key", "nccl_reps"}, {"ranks", 2}, {"channels", 0}, {"bytes", bytes}, {"iters", iters}, {"time_us", t + 5.0 / iters}, {"gated", true}});
  const Calibration cal = calibrate({{"reps.json", doc}}, topo);
  std::map<std::string, double> fit;
  for (const auto& f : cal.fits)
    if (f.name == "all-to-all per gated burst (nccl_reps), 2 ranks")
      for (const auto& [k, v] : f.values) fit[k] = v;
  REQUIRE(fit.size() == 5);
  CHECK(fit.at("burst_us") == doctest::Approx(5.0).epsilon(1e-6));
  CHECK(fit.at("steady_256.00KiB_us") == doctest::Approx(9.0).epsilon(1e-6));
  CHECK(fit.at("steady_4.00MiB_us") == doctest::Approx(19.0).epsilon(1e-6));
  // Replayed: every burst size at the table's time for the size (the model
  // has no per-burst cost), the same as the table row's replay.
  std::map<std::string, double> sim;
  for (const auto& c : compare_bench(doc, topo, cal.params))
    if (c.key == "nccl_reps" || c.key == "nccl_all_to_all") sim[c.key + " " + c.what] = c.simulated_us;
  CHECK(sim.at("nccl_reps 2 ranks, default channels, 4.00 MiB x 1") == doctest::Approx(sim.at("nccl_all_to_all 2 ranks, default channels, 4.00 MiB")));
  CHECK(sim.at("nccl_reps 2 ranks, default channels, 4.00 MiB x 20") == doctest::Approx(sim.at("nccl_all_to_all 2 ranks, default channels, 4.00 MiB")));
  CHECK(sim.at("nccl_reps 2 ranks, default channels, 16.00 MiB x 5") == doctest::Approx(sim.at("nccl_all_to_all 2 ranks, default channels, 16.00 MiB")));
}

TEST_CASE("copies per gated burst and events beside a copy, measured (1xH200 e, 1xH100 g): the burst after a kernel, after a host function, the step at equal reps") {
  for (const auto& [dir_name, topo_name, h2d_after_kernel, h2d_after_host, event_h2d_us] :
       {std::tuple{"h200x1-e", "h200x4-nvlink.yaml", 7.24, 1.28, 5.47}, std::tuple{"h100x1-g", "dgx-h100.yaml", 6.46, 1.24, 5.51}}) {
    INFO(std::string(dir_name));
    const std::string dir = std::string("validate/results/") + dir_name + "/";
    const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/" + topo_name));
    const Calibration cal = calibrate({{dir + "bench-reps-1.json", load(kSrc + "/" + dir + "bench-reps-1.json")}}, topo);
    CHECK(slurp(kSrc + "/" + dir + "calibration.yaml") == calibration_yaml(cal));
    std::map<std::string, std::map<std::string, double>> fits;
    for (const auto& f : cal.fits)
      for (const auto& [k, v] : f.values) fits[f.name][k] = v;
    // A burst's one-off cost: ~6 us more after the gate's spin kernel (the
    // hand-off to the copy engine) than after a host function (~ one event).
    CHECK(fits.at("copies per gated burst (copy_reps), H2D, after a spin kernel").at("burst_us") == doctest::Approx(h2d_after_kernel).epsilon(0.01));
    CHECK(fits.at("copies per gated burst (copy_reps), H2D, after a host function").at("burst_us") == doctest::Approx(h2d_after_host).epsilon(0.01));
    // At equal reps the step at 1 MiB is a fraction of what the one-way rows
    // showed (1.1-1.5 us: their 20 copies per burst below 1 MiB, 5 from it);
    // the model has none.
    for (const char* f : {"copies per gated burst (copy_reps), H2D, after a spin kernel", "copies per gated burst (copy_reps), D2H, after a host function"})
      CHECK(fits.at(f).at("step_us") < 0.46);
      // The hand-off from a kernel: the burst after a spin kernel (on the
    // stream or waited on) less the event after a copy, 5.2-6.3 us.
    const ModelParams& p = cal.params;
    CHECK(p.handoff.copy_after_kernel_latency.us() ==
          doctest::Approx(fits.at("burst of copies after a kernel (copy_reps), H2D").at("burst_us") - p.overheads.event_gpu_time_copy.us()).epsilon(1e-6));
    CHECK(p.handoff.copy_after_kernel_latency.us() > 5.1);
    CHECK(p.handoff.copy_after_kernel_latency_d2h.us() < 6.4);
    // Replayed as the bench ran them: every one-way burst within 3.0 % (H200)
    // and 7.8 % (H100: 256 KiB x 2 D2H); before the hand-off up to 53 % fast.
    std::map<std::string, double> worst;
    for (const auto& c : compare_bench(load(kSrc + "/" + dir + "bench-reps-1.json"), topo, p)) worst[c.cls] = std::max(worst[c.cls], std::abs(c.error_pct()));
    CHECK(worst.at("copies per gated burst, one way (copy_reps)") < (dir_name == std::string("h200x1-e") ? 3.1 : 7.9));
    // Events: 1.8 us, 5.5 us more beside the GPU's own H2D copy.
    CHECK(cal.params.overheads.event_gpu_time.us() == doctest::Approx(1.79).epsilon(0.01));
    CHECK(cal.params.overheads.event_gpu_time_h2d.us() == doctest::Approx(event_h2d_us).epsilon(0.01));
  }
}

TEST_CASE("kernels per gated burst after what (kernel_reps, 1xH200 g): a copy before them costs the burst a hand-off, a kernel or host function one closing event") {
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  const std::string dir = "validate/results/h200x1-g/";
  const Calibration cal = calibrate({{dir + "bench-reps-1.json", load(kSrc + "/" + dir + "bench-reps-1.json")}}, topo);
  CHECK(slurp(kSrc + "/" + dir + "calibration.yaml") == calibration_yaml(cal));
  std::map<std::string, std::map<std::string, double>> fits;
  for (const auto& f : cal.fits)
    for (const auto& [k, v] : f.values) fits[f.name][k] = v;
  const auto burst = [&](const std::string& after) { return fits.at("kernels per gated burst (kernel_reps), after a " + after).at("burst_us"); };
  CHECK(burst("host function") == doctest::Approx(1.34).epsilon(0.02));
  CHECK(burst("spin kernel") == doctest::Approx(1.32).epsilon(0.02));
  CHECK(burst("4 KiB H2D copy on its stream") > burst("spin kernel") + 2.5);
  CHECK(burst("4 KiB H2D copy on another stream, waited on") > burst("spin kernel") + 2.5);
}

TEST_CASE("copies after a kernel done long before (copy_after_idle, 1xH200 h and 1xH100 h): the hand-off follows the stream, not the wait") {
  for (const auto& [dir_name, topo_name] : {std::pair{"h200x1-h", "h200x4-nvlink.yaml"}, std::pair{"h100x1-h", "dgx-h100.yaml"}}) {
    INFO(std::string(dir_name));
    const std::string dir = std::string("validate/results/") + dir_name + "/";
    const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/" + topo_name));
    const nlohmann::json run1 = load(kSrc + "/" + dir + "bench-reps-1.json");
    const Calibration cal = calibrate({{dir + "bench-reps-1.json", run1}}, topo);
    CHECK(slurp(kSrc + "/" + dir + "calibration.yaml") == calibration_yaml(cal));
    const ModelParams& p = cal.params;
    // Measured, one copy per burst: after a kernel on the copies' own
    // stream, done and synchronised before they were issued, 5-7 us more
    // than after a host function alone; after an event on another stream's
    // kernel, done before, nothing more.
    std::map<std::string, double> meas, sim;
    for (const auto& c : compare_bench(run1, topo, p))
      if (c.key == "copy_after_idle") meas[c.what] = c.measured_us, sim[c.what] = c.simulated_us;
    REQUIRE(meas.size() == 48);
    for (const char* size : {"256.00 KiB", "1.00 MiB"})
      for (const bool d2h : {false, true}) {
        const auto what = [&](const char* before) { return std::string("GPU 0, ") + size + " x 1 after " + before + (d2h ? ", D2H" : ", H2D"); };
        const std::string host = what("a host function alone"), stream = what("a kernel done before, on the stream"),
                          waited = what("a kernel done before, waited on");
        INFO(stream);
        CHECK(meas.at(stream) - meas.at(host) > 4.5);
        CHECK(meas.at(stream) - meas.at(host) < 7.5);
        CHECK(std::abs(meas.at(waited) - meas.at(host)) < 0.5);
        // The model: the stream's last op a kernel pays the hand-off; the
        // wait on a kernel done before the copy was issued does not.
        CHECK(sim.at(stream) - sim.at(host) == doctest::Approx(p.handoff.copy_after_kernel_latency_for(d2h).us()).epsilon(1e-6));
        CHECK(sim.at(waited) == doctest::Approx(sim.at(host)).epsilon(1e-9));
      }
  }
  // On the H200 (a steady lease) every such row replays within 11.4 %, the
  // median 1.6 %; the H100 lease's large copies wandered (30-36 GB/s on four
  // of its 16 large one-way rows, 55 on the rest).
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  const nlohmann::json run = load(kSrc + "/validate/results/h200x1-h/bench-reps-1.json");
  std::vector<double> err;
  for (const auto& c : compare_bench(run, topo, load_calibration(kSrc + "/validate/results/h200x1-h/calibration.yaml")))
    if (c.key == "copy_after_idle") err.push_back(std::abs(c.error_pct()));
  std::sort(err.begin(), err.end());
  CHECK(err.back() < 11.5);
  CHECK(0.5 * (err[23] + err[24]) < 1.7);
}

TEST_CASE("the hand-off against workload kernels (handoff_wait, 1xH200 j): reported, below copy_reps' spin gate, its rows counted apart") {
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  const hw::Topology dgx(hw::parse_topology_file(kSrc + "/configs/topologies/dgx-h100.yaml"));
  for (const char* lease : {"h200x1-i", "h200x1-j", "h100x1-i"}) {
    INFO(lease);
    const std::string dir = std::string("validate/results/") + lease + "/";
    const Calibration cal =
        calibrate({{dir + "bench-handoff.json", load(kSrc + "/" + dir + "bench-handoff.json")}}, std::string(lease).starts_with("h100") ? dgx : topo);
    CHECK(slurp(kSrc + "/" + dir + "calibration.yaml") == calibration_yaml(cal));
    // The host's API overheads measured on the same lease (the hand-off set's runs issue ~1,200 calls).
    CHECK(cal.params.overheads.memcpy_call.us() < 3);
    CHECK(cal.params.overheads.event_call.us() < 2);
  }
  const std::string dir = "validate/results/h200x1-j/";
  const nlohmann::json doc = load(kSrc + "/" + dir + "bench-handoff.json");
  const Calibration cal = calibrate({{dir + "bench-handoff.json", doc}}, topo);
  std::map<std::string, double> handoff;
  for (const auto& f : cal.fits)
    for (const auto& [k, v] : f.values)
      if (k == "handoff_us") handoff[f.name] = v;
  REQUIRE(handoff.size() == 4);
  // After a kernel on every SM of 5 us-3 ms, one copy pays 2.5-4.7 us on
  // average, 0.5-2.6 less than after copy_reps' one-thread spin gate.
  for (const auto& [name, us] : handoff) {
    INFO(name);
    CHECK(us > 2.4);
    CHECK(us < 4.8);
    CHECK(us < cal.params.handoff.copy_after_kernel_latency_for(name.find("D2H") != std::string::npos).us());
  }
  // Its rows move by 5 us from row to row (the phase): counted apart.
  int rows = 0;
  for (const auto& c : compare_bench(doc, topo, cal.params))
    if (c.key == "handoff_wait") {
      CHECK(!c.outside.empty());
      ++rows;
    }
  CHECK(rows == 32);
}

TEST_CASE("the hand-off's phase: fitted from every sample, each row's times with the hand-off at either end, the file") {
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  // Synthetic: one-way copies (a machine run); kernel_reps bursts of one
  // kernel, 3 us after a host function, 3 us + k after a copy, k = 0..7
  // eight times each (64 samples): the 2nd and 98th percentiles are 0 and
  // 7 us; copy_after_idle bursts of one 256 KiB H2D copy to replay.
  nlohmann::json doc = {{"schema", "overlapsim.bench/v1"}, {"environment", {{"env", nlohmann::json::object()}}}, {"results", nlohmann::json::array()}};
  for (double b = 4096; b <= 1073741824.0; b *= 4)
    for (const char* key : {"h2d_pinned", "d2h_pinned"}) doc["results"].push_back({{"key", key}, {"gpus", {0}}, {"bytes", b}, {"time_us", 2.7 + b / 55e3}});
  std::vector<double> host(64, 3.0), after;
  for (int i = 0; i < 64; ++i) after.push_back(3.0 + i / 8);
  const auto kernels = [&](const char* what, const std::vector<double>& samples) {
    return nlohmann::json{{"key", "kernel_reps"}, {"gpus", {0}}, {"bytes", 1048576}, {"reps", 1}, {"after", what}, {"time_us", samples[32]}, {"samples_us", samples}};
  };
  doc["results"].push_back(kernels("host", host));
  doc["results"].push_back(kernels("copy", after));
  for (const char* before : {"host", "kernel_done"})
    doc["results"].push_back({{"key", "copy_after_idle"}, {"gpus", {0}}, {"bytes", 262144}, {"reps", 1}, {"before", before}, {"dir", "h2d"}, {"time_us", 10.0}});
  const Calibration c = calibrate({{"phase.json", doc}}, topo);
  REQUIRE(c.params.handoff.has_handoff_phase());
  CHECK(c.params.handoff.handoff_phase_min == Time::zero());
  CHECK(c.params.handoff.handoff_phase_max.us() == doctest::Approx(7).epsilon(1e-9));
  // Fewer than 50 samples (or none kept): no phase.
  nlohmann::json few = doc;
  few["results"][21]["samples_us"] = std::vector<double>(after.begin(), after.begin() + 40);
  CHECK(!calibrate({{"few.json", few}}, topo).params.handoff.has_handoff_phase());
  few["results"][21].erase("samples_us");
  CHECK(!calibrate({{"few.json", few}}, topo).params.handoff.has_handoff_phase());
  // The replay: a row with a hand-off gets the times at either end of the
  // phase, one burst of one copy exactly the phase's width apart around
  // the model's (the latency its mean); a row without none. The one-way
  // rows' bursts follow the bench's spin gate (a hand-off each), per copy
  // the width / reps (20 below 1 MiB, 5 below 64 MiB, 1 above).
  ModelParams p = c.params;
  REQUIRE(p.handoff.copy_after_kernel_latency_for(true) == Time::zero());
  p.handoff.copy_after_kernel_latency = Time::from_us(4);
  int rows = 0;
  for (const auto& row : compare_bench(doc, topo, p)) {
    INFO(row.what);
    ++rows;
    if (row.key == "d2h_pinned") {
      CHECK(!row.has_phase());  // the D2H hand-off fitted 0 (these rows have no burst): none to move
      continue;
    }
    if (row.key == "h2d_pinned") {
      REQUIRE(row.has_phase());
      const double width = row.simulated_hi_us - row.simulated_lo_us;
      CHECK((std::abs(width - 7.0 / 20) < 1e-9 || std::abs(width - 7.0 / 5) < 1e-9 || std::abs(width - 7.0) < 1e-9));
      CHECK(row.simulated_us - row.simulated_lo_us == doctest::Approx(width * 4 / 7).epsilon(1e-9));
      continue;
    }
    if (row.what.find("host function") != std::string::npos) {
      CHECK(!row.has_phase());
      continue;
    }
    REQUIRE(row.has_phase());
    CHECK(row.simulated_hi_us - row.simulated_lo_us == doctest::Approx(7).epsilon(1e-9));
    CHECK(row.simulated_us - row.simulated_lo_us == doctest::Approx(4).epsilon(1e-9));
  }
  CHECK(rows == 22);
  // within_phase: some time between the two ends within 5 % of the measurement.
  Comparison r{"cls", "key", "what", 10.0, 14.0, ""};
  r.simulated_lo_us = 10.6, r.simulated_hi_us = 16;
  CHECK(!r.within_phase());  // 10.6 > 10 x 1.05
  r.simulated_lo_us = 10.4;
  CHECK(r.within_phase());
  r.simulated_lo_us = 8, r.simulated_hi_us = 9.4;
  CHECK(!r.within_phase());  // 9.4 < 10 x 0.95
  // The file: written and read back; one end alone, or the ends swapped, refused.
  const std::filesystem::path f = std::filesystem::temp_directory_path() / "osim-phase.yaml";
  std::ofstream(f) << calibration_yaml(c);
  const ModelParams q = load_calibration(f.string());
  CHECK(q.handoff.handoff_phase_min == c.params.handoff.handoff_phase_min);
  CHECK(q.handoff.handoff_phase_max.us() == doctest::Approx(7).epsilon(1e-6));
  std::ofstream(f) << "schema: overlapsim.calibration/v1\nmodel:\n  handoff_phase_min: 0.3 us\n";
  CHECK_THROWS_WITH_AS(load_calibration(f.string()), doctest::Contains("together"), InputError);
  std::ofstream(f) << "schema: overlapsim.calibration/v1\nmodel:\n  handoff_phase_min: 7 us\n  handoff_phase_max: 0.3 us\n";
  CHECK_THROWS_WITH_AS(load_calibration(f.string()), doctest::Contains("handoff_phase_max"), InputError);
  std::filesystem::remove(f);
}

TEST_CASE("a memory-bound kernel after what (memory_after, 1xH100 p): faster only after a GEMM, not after the same kernel, spinning SMs or idle") {
  // Measured (not modelled): >= 64 MiB memory kernels ran up to 15 % faster
  // between GEMMs than back to back on the H100s (memory_kernel); not the L2
  // holding back the previous kernel's writes: after 200 us of spinning SMs
  // or of one sleeping thread the kernel takes its back-to-back time too.
  for (const std::string run : {"bench-memory-1.json", "bench-memory-2.json"}) {
    INFO(run);
    std::map<std::pair<double, std::string>, double> t;
    const nlohmann::json doc = load(kSrc + "/validate/results/h100x1-p/" + run);
    for (const auto& r : doc.at("results"))
      if (r.at("key") == "memory_after") t[{r.at("hbm_bytes").get<double>(), r.at("before").get<std::string>()}] = r.at("time_us").get<double>();
    REQUIRE(t.size() == 12);
    for (const double bytes : {64.0 * 1048576, 256.0 * 1048576, 1024.0 * 1048576}) {
      const double kernel = t.at({bytes, "kernel"});
      CHECK(t.at({bytes, "busy"}) == doctest::Approx(kernel).epsilon(0.01));
      CHECK(t.at({bytes, "sleep"}) == doctest::Approx(kernel).epsilon(0.01));
      CHECK(kernel - t.at({bytes, "gemm"}) > 4.0);  // 4.0-4.4 us at 64 MiB, 8-9 at 256 MiB, 11-12 at 1 GiB
    }
    CHECK(t.at({64.0 * 1048576, "gemm"}) < 0.85 * t.at({64.0 * 1048576, "kernel"}));
  }
}

TEST_CASE("one GPU measured whole with the hand-off's phase (1xH100 o, 1xH200 p, q): the held rows over 5 % outside it, and the worst") {
  // H100 o: 7 of 501, the 64 MiB memory kernel between GEMMs the worst. H200 p:
  // 14, its small H2D copies in the phase runs (after SDPA) 1.4 us slower per
  // copy than in its full bench minutes before (both phase runs alike). H200 q:
  // 2, a GEMM under load the fit left out (-6.6 %) and 4 MiB both ways
  // walking 1 GiB (-6.3 %).
  for (const auto& [lease, topo_name, within_n, outside_n, worst_pct, worst_what] :
       {std::tuple{"h100x1-o", "dgx-h100.yaml", 28, 7, 13.6, "memory_kernel 64.00 MiB between GEMMs"},
        std::tuple{"h200x1-p", "h200x4-nvlink.yaml", 37, 14, 17.6, "copy_reps GPU 0, 256.00 KiB x 5 after a host function, H2D"},
        std::tuple{"h200x1-q", "h200x4-nvlink.yaml", 29, 2, 6.6, "gemm_bf16 75600x15360x5120 under load"}}) {
    INFO(std::string(lease));
    const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/" + topo_name));
    const std::string dir = std::string("validate/results/") + lease + "/";
    std::vector<std::pair<std::string, nlohmann::json>> docs;
    for (const char* f : {"bench-default.json", "attention-1.json", "bench-phase-1.json"}) docs.emplace_back(dir + f, load(kSrc + "/" + dir + f));
    const Calibration cal = calibrate(docs, topo);
    CHECK(slurp(kSrc + "/" + dir + "calibration.yaml") == calibration_yaml(cal));
    REQUIRE(cal.params.handoff.has_handoff_phase());
    int held = 0, within = 0, outside = 0;
    double worst = 0;
    std::string worst_row;
    for (const auto& [name, doc] : merge_bench_runs(docs))
      for (const auto& c : compare_bench(doc, topo, cal.params)) {
        if (!c.outside.empty()) continue;
        ++held;
        if (std::abs(c.error_pct()) <= 5) continue;
        if (c.within_phase()) {
          ++within;
        } else {
          ++outside;
          if (std::abs(c.error_pct()) > worst) worst = std::abs(c.error_pct()), worst_row = c.key + " " + c.what;
        }
      }
    CHECK(held == 501);
    CHECK(within == within_n);
    CHECK(outside == outside_n);
    CHECK(worst == doctest::Approx(worst_pct).epsilon(0.01));
    CHECK(worst_row == worst_what);
  }
}

TEST_CASE("the hand-off's phase on leases that kept every sample (1xH200 n, o, 1xH100 m, n): 0.2-7.9 us, the H200s' held rows over 5 % all within it") {
  for (const auto& [lease, topo_name] : {std::pair{"h200x1-n", "h200x4-nvlink.yaml"}, std::pair{"h200x1-o", "h200x4-nvlink.yaml"},
                                         std::pair{"h100x1-m", "dgx-h100.yaml"}, std::pair{"h100x1-n", "dgx-h100.yaml"}}) {
    INFO(lease);
    const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/" + topo_name));
    const std::string dir = std::string("validate/results/") + lease + "/";
    const Calibration cal = calibrate({{dir + "bench-rest.json", load(kSrc + "/" + dir + "bench-rest.json")},
                                       {dir + "bench-phase-1.json", load(kSrc + "/" + dir + "bench-phase-1.json")}},
                                      topo);
    CHECK(slurp(kSrc + "/" + dir + "calibration.yaml") == calibration_yaml(cal));
    const ModelParams& p = cal.params;
    REQUIRE(p.handoff.has_handoff_phase());
    CHECK(p.handoff.handoff_phase_min.us() > 0.1);
    CHECK(p.handoff.handoff_phase_min.us() < 0.4);
    CHECK(p.handoff.handoff_phase_max.us() > 7.5);
    CHECK(p.handoff.handoff_phase_max.us() < 8.0);
  }
  // The quiet H200 leases, each run with its own calibration and the other
  // lease's (run 1 of its own in sample, the rest out of sample): every held
  // row the simulator misses by > 5 % has a hand-off and a time its phase
  // allows within 5 %; the rest within 5 %, but one row of lease o's run 1
  // with lease n's calibration (9.8 %).
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  for (const auto& [lease, cal_lease, run] : {std::tuple{"h200x1-n", "h200x1-n", "bench-phase-1.json"}, std::tuple{"h200x1-n", "h200x1-n", "bench-phase-2.json"},
                                              std::tuple{"h200x1-o", "h200x1-o", "bench-phase-1.json"}, std::tuple{"h200x1-o", "h200x1-o", "bench-phase-2.json"},
                                              std::tuple{"h200x1-n", "h200x1-o", "bench-phase-1.json"}, std::tuple{"h200x1-o", "h200x1-n", "bench-phase-1.json"}}) {
    const std::string which = std::string(lease) + " " + run + " with " + cal_lease + "'s calibration";
    INFO(which);
    const std::string dir = kSrc + "/validate/results/" + lease + "/";
    const ModelParams p = load_calibration(kSrc + "/validate/results/" + cal_lease + "/calibration.yaml");
    const auto docs = merge_bench_runs({{"rest", load(dir + "bench-rest.json")}, {run, load(dir + run)}});
    REQUIRE(docs.size() == 1);
    int held = 0, over = 0, phased = 0, outside = 0;
    for (const auto& c : compare_bench(docs[0].second, topo, p)) {
      if (!c.outside.empty()) continue;
      ++held;
      phased += c.has_phase();
      if (std::abs(c.error_pct()) > 5) {
        ++over;
        if (!c.within_phase()) {
          ++outside;
          CHECK(std::abs(c.error_pct()) < 10);
        }
      }
    }
    CHECK(outside == (std::string(lease) == "h200x1-o" && std::string(cal_lease) == "h200x1-n" ? 1 : 0));
    CHECK(held == 308);
    CHECK(phased == 232);
    CHECK(over > 20);  // the rows' medians land anywhere in the phase
  }
}

TEST_CASE("a hand-off bench row with a value outside its testcase's cases is refused, not read as another case") {
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  const ModelParams p = load_calibration(kSrc + "/validate/results/h200x1-j/calibration.yaml");
  const nlohmann::json good = load(kSrc + "/validate/results/h200x1-j/bench-handoff.json");
  for (const auto& [key, field, value] : {std::tuple{"copy_reps", "gate", "kernl"}, std::tuple{"copy_reps", "dir", "up"},
                                          std::tuple{"copy_after_idle", "before", "kernel_dne"}, std::tuple{"handoff_wait", "mode", "other"}}) {
    INFO(key << " " << field);
    nlohmann::json bad = good;
    for (auto& r : bad["results"])
      if (r.at("key") == key) {
        r[field] = value;
        break;
      }
    const std::string expected = std::string(field) + " '" + value + "': expected one of";
    CHECK_THROWS_WITH_AS(compare_bench(bad, topo, p), doctest::Contains(expected.c_str()), std::invalid_argument);
  }
}

TEST_CASE("calibrate recovers the share both ways per size from rows the model made with a known table") {
  // h100x1-k's bench (one-way rows, set-ups, bursts as measured), with its
  // both-ways rows (bidir_pinned, copy_span, copy_reps) replaced by what the
  // model gives them with a known table: 0.6 / 0.7 at 256 KiB, 0.85 / 0.95
  // at 4 MiB, 0.75 / 0.9 at 1 GiB (between, interpolated in log(bytes)).
  // calibrate must find each measured size's share back.
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/dgx-h100.yaml"));
  const std::string f = "validate/results/h100x1-k/bench-span-1.json";
  const nlohmann::json doc = load(kSrc + "/" + f);
  ModelParams made = calibrate({{f, doc}}, topo).params;
  made.copies.copy_bidir_table = {{262144, 0.6, 0.7}, {4194304, 0.85, 0.95}, {1073741824, 0.75, 0.9}};
  // compare_bench replays a testcase's rows in order, H2D before D2H on each.
  nlohmann::json synth = doc;
  std::map<std::string, std::vector<double>> sim;
  for (const Comparison& c : compare_bench(doc, topo, made)) sim[c.key].push_back(c.simulated_us);
  std::map<std::string, size_t> at;
  for (auto& r : synth.at("results")) {
    const std::string key = r.at("key");
    if (key != "bidir_pinned" && key != "copy_span" && key != "copy_reps") continue;
    for (const char* t : {"h2d_time_us", "d2h_time_us"})
      if (r.contains(t)) r[t] = sim.at(key).at(at[key]++);
  }
  for (const char* key : {"bidir_pinned", "copy_span", "copy_reps"}) CHECK(at[key] == sim[key].size());
  const ModelParams p = calibrate({{f, synth}}, topo).params;
  REQUIRE(p.copies.copy_bidir_tabled());
  CHECK(p.copies.copy_bidir_table.front()[0] == 65536);  // the bytes take >= 1 us from 64 KiB
  CHECK(p.copies.copy_bidir_table.back()[0] == 1073741824);
  // Each size within 1.5 % of the share that made it (the bench's first copy
  // of a burst starts before the other direction's and keeps its own set-up:
  // the fit charges every copy the longer one).
  for (const auto& e : p.copies.copy_bidir_table) {
    CAPTURE(e[0]);
    CHECK(e[1] == doctest::Approx(made.copies.copy_bidir_factor_for(false, static_cast<Bytes>(e[0]))).epsilon(0.015));
    CHECK(e[2] == doctest::Approx(made.copies.copy_bidir_factor_for(true, static_cast<Bytes>(e[0]))).epsilon(0.015));
  }
}
