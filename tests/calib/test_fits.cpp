// Fits from synthetic bench rows whose answer is known: copies per gated
// burst, the GEMM shape model, NCCL tables, the hand-off's phase.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>

#include "calib/bench_replay.hpp"
#include "calib/calibrate.hpp"
#include "calib/families/gemm.hpp"
#include "core/errors.hpp"
#include "core/stats.hpp"
#include "io/text_file.hpp"

using namespace osim;

namespace {
const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

// The fit of that name in a calibration (required to be there).
const Fit& fit_named(const Calibration& c, const std::string& name) {
  const auto it = std::find_if(c.fits.begin(), c.fits.end(), [&](const Fit& f) { return f.name == name; });
  REQUIRE(it != c.fits.end());
  return *it;
}
std::map<std::string, double> values_of(const Fit& f) { return {f.values.begin(), f.values.end()}; }
}  // namespace

TEST_CASE("copy latency per direction: D2H's own where calibrated, else the one latency") {
  ModelParams p;
  p.copies.copy_latency.h2d = Time::from_us(1.8);
  CHECK(p.copies.copy_latency[Direction::D2H] == Time::from_us(1.8));  // not calibrated apart
  p.copies.copy_latency.d2h = Time::from_us(1.5);
  CHECK(p.copies.copy_latency[Direction::D2H] == Time::from_us(1.5));
  CHECK(p.copies.copy_latency[Direction::H2D] == Time::from_us(1.8));
  const std::filesystem::path f = std::filesystem::temp_directory_path() / "osim-d2h-latency.yaml";
  std::ofstream(f) << "schema: overlapsim.calibration/v1\nmodel:\n  copy_latency: 1.8 us\n  copy_latency_d2h: 1.6 us\n";
  const ModelParams q = load_calibration(f.string());
  CHECK(q.copies.copy_latency[Direction::D2H] == Time::from_us(1.6));
  CHECK(q.copies.copy_latency[Direction::H2D] == Time::from_us(1.8));
  std::filesystem::remove(f);
}

TEST_CASE("copies per gated burst: the burst fitted from the one-way rows' reps or held from copy_reps, the hand-off, the file") {
  // Synthetic bench rows on GPU 0 (route latency 1 us on this topology),
  // timed as the bench does: reps copies per burst (20 below 1 MiB, 5 below
  // 64 MiB, 1 above), per copy latency + bytes / 55 GB/s + burst / reps;
  // H2D 2.7 us and a burst of 7 us, D2H 2.6 us and 7.5 us.
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  auto bench = [](double burst_h2d, double burst_d2h) {
    nlohmann::json doc = {
        {"schema", "overlapsim.bench/v1"}, {"environment", {{"env", nlohmann::json::object()}}}, {"results", nlohmann::json::array()}};
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
  CHECK(c.params.handoff.copy_after_kernel_latency.h2d.us() == doctest::Approx(7).epsilon(1e-4));
  CHECK(c.params.handoff.copy_after_kernel_latency.d2h.us() == doctest::Approx(7.5).epsilon(1e-4));
  CHECK(c.params.copies.copy_latency.h2d.us() == doctest::Approx(2.7 - 1.0).epsilon(1e-4));
  CHECK(c.params.copies.copy_latency.d2h.us() == doctest::Approx(2.6 - 1.0).epsilon(1e-4));
  CHECK(c.params.copies.copy_engine_bandwidth.h2d.GBps() == doctest::Approx(55).epsilon(1e-6));
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
  ev["results"].push_back(
      {{"key", "overhead_gpu_event_gap"}, {"op", "h2d"}, {"bytes", 1048576}, {"ops", 50}, {"plain_us", 21.7}, {"fenced_us", 23.0}, {"gap_us", 1.3}});
  const Calibration e = calibrate({{"ev.json", ev}}, topo);
  CHECK(e.params.overheads.event_gpu_time_copy.us() == doctest::Approx(1.3).epsilon(1e-6));
  CHECK(e.params.handoff.copy_after_kernel_latency.h2d.us() == doctest::Approx(7 - 1.3).epsilon(1e-4));
  CHECK(e.params.handoff.copy_after_kernel_latency.d2h.us() == doctest::Approx(7.5 - 1.3).epsilon(1e-4));
  // copy_reps after a spin kernel (per copy: steady + 6 us / reps): the
  // burst held from there, whatever the one-way rows' own say.
  nlohmann::json held = bench(7, 7.5);
  for (const int reps : {1, 2, 5, 20, 50})
    for (const char* gate : {"kernel", "kernel_wait"})
      held["results"].push_back({{"key", "copy_reps"},
                                 {"gpus", {0}},
                                 {"bytes", 262144},
                                 {"reps", reps},
                                 {"gate", gate},
                                 {"dir", "h2d"},
                                 {"h2d_time_us", 7.5 + 6.0 / reps}});
  const Calibration h = calibrate({{"held.json", held}}, topo);
  CHECK(h.params.handoff.copy_after_kernel_latency.h2d.us() == doctest::Approx(6).epsilon(1e-4));
  CHECK(h.params.handoff.copy_after_kernel_latency.d2h.us() == doctest::Approx(7.5).epsilon(1e-4));  // D2H: no copy_reps rows
  // All one reps (an old bench's rows all timed alike): no burst to tell.
  nlohmann::json one = bench(0, 0);
  for (auto& r : one["results"]) r["reps"] = 1;
  CHECK(calibrate({{"one.json", one}}, topo).params.handoff.copy_after_kernel_latency.h2d == Time::zero());
  // The file: written and read back; negative values refused with the field.
  const std::filesystem::path f = std::filesystem::temp_directory_path() / "osim-copy-burst.yaml";
  std::ofstream(f) << calibration_yaml(e);
  const ModelParams q = load_calibration(f.string());
  CHECK(q.handoff.copy_after_kernel_latency[Direction::H2D].us() == doctest::Approx(5.7).epsilon(1e-3));
  CHECK(q.handoff.copy_after_kernel_latency[Direction::D2H].us() == doctest::Approx(6.2).epsilon(1e-3));
  CHECK(q.overheads.event_gpu_time_copy.us() == doctest::Approx(1.3).epsilon(1e-3));
  for (const char* field : {"copy_after_kernel_latency", "copy_after_kernel_latency_d2h", "kernel_after_copy_latency", "event_gpu_time_copy"}) {
    std::ofstream(f) << "schema: overlapsim.calibration/v1\nmodel:\n  " << field << ": -1 us\n";
    CHECK_THROWS_WITH_AS(load_calibration(f.string()), doctest::Contains(field), InputError);
  }
  std::ofstream(f) << "schema: overlapsim.calibration/v1\nmodel:\n  copy_after_kernel_latency: 5 us\n";
  CHECK(load_calibration(f.string()).handoff.copy_after_kernel_latency[Direction::D2H] == Time::from_us(5));  // D2H: the same unless set
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

TEST_CASE("NCCL collective tables: interpolation, the nearest rank count, and sizes the table never saw") {
  ModelParams p;
  using TC = TableColl;
  p.nccl.nccl_tables.push_back({TC::AllToAll, 2, false, {{1e6, 20e-6}, {4e6, 80e-6}, {16e6, 200e-6}}});
  p.nccl.nccl_tables.push_back({TC::AllToAll, 4, false, {{1e6, 40e-6}}});
  const auto* t2 = p.nccl.nccl_table_for(TC::AllToAll, 2, false);
  REQUIRE(t2 != nullptr);
  CHECK(t2->time_at(1e3) == doctest::Approx(20e-6));                           // below the table: its latency
  CHECK(t2->time_at(2e6) == doctest::Approx(40e-6));                           // the line through (1e6, 20) and (4e6, 80)
  CHECK(t2->time_at(8e6) == doctest::Approx(120e-6));                          // through (4e6, 80) and (16e6, 200): not log-log's 126.5
  CHECK(t2->time_at(32e6) == doctest::Approx(200e-6 + 16e6 * 120e-6 / 12e6));  // past the end: the last segment's rate
  CHECK(p.nccl.nccl_table_for(TC::AllToAll, 3, false)->ranks == 4);            // tie between 2 and 4: the larger
  CHECK(p.nccl.nccl_table_for(TC::AllToAll, 8, false)->ranks == 4);
  CHECK(p.nccl.nccl_table_for(TC::AllToAllPairwise, 2, false) == nullptr);  // no pairwise table
  CHECK(p.nccl.nccl_table_for(TC::AllToAll, 2, true) == nullptr);           // no host-memory table
}

TEST_CASE("PyTorch's own all-to-alls: reported per way and rank count by size, the pairwise rows made the framework's tables, non-decreasing") {
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  nlohmann::json doc = {
      {"schema", "overlapsim.bench/v1"}, {"environment", {{"env", nlohmann::json::object()}}}, {"results", nlohmann::json::array()}};
  // A machine run (pinned copies), then PyTorch's rows out of size order,
  // two ways, two rank counts.
  for (const double b : {1048576.0, 16777216.0})
    doc["results"].push_back({{"key", "h2d_pinned"}, {"gpus", {0}}, {"bytes", b}, {"reps", 5}, {"time_us", 3 + b / 55e3}});
  for (const double mib : {16.0, 1.0})
    for (const int ranks : {4, 2}) {
      doc["results"].push_back({{"key", "framework_all_to_all"},
                                {"op", "all_to_all_pairwise"},
                                {"ranks", ranks},
                                {"bytes", mib * 1048576},
                                {"time_us", 100.0 * ranks + mib}});
      doc["results"].push_back({{"key", "framework_all_to_all"},
                                {"op", "all_to_all_single"},
                                {"ranks", ranks},
                                {"bytes", mib * 1048576},
                                {"time_us", 10.0 * ranks + mib}});
    }
  // Four ranks at 4 MiB measured faster than at 1 MiB (host noise): the two pool to their mean.
  doc["results"].push_back(
      {{"key", "framework_all_to_all"}, {"op", "all_to_all_pairwise"}, {"ranks", 4}, {"bytes", 4.0 * 1048576}, {"time_us", 397.0}});
  const Calibration c = calibrate({{"torch.json", doc}}, topo);
  std::map<std::string, std::vector<std::pair<std::string, double>>> reported;
  for (const Fit& f : c.fits)
    if (f.name.starts_with("all-to-all as PyTorch calls it")) reported[f.name] = f.values;
  REQUIRE(reported.size() == 4);
  const auto& pw4 = reported.at("all-to-all as PyTorch calls it (framework_all_to_all), all_to_all_pairwise, 4 ranks");
  REQUIRE(pw4.size() == 3);
  CHECK(pw4[0].first == "1.00MiB_us");
  CHECK(pw4[0].second == doctest::Approx(401));
  CHECK(pw4[1].second == doctest::Approx(397));  // as measured
  CHECK(pw4[2].first == "16.00MiB_us");
  CHECK(pw4[2].second == doctest::Approx(416));
  CHECK(reported.at("all-to-all as PyTorch calls it (framework_all_to_all), all_to_all_single, 2 ranks")[1].second == doctest::Approx(36));
  // The pairwise rows make one table per rank count (peer to peer, the run's
  // transport), made non-decreasing; nothing else in the NCCL model moves.
  REQUIRE(c.params.nccl.nccl_tables.size() == 2);
  const NcclTable* t4 = c.params.nccl.nccl_table_for(TableColl::FrameworkAllToAllPairwise, 4, false);
  REQUIRE(t4 != nullptr);
  CHECK(t4->ranks == 4);
  REQUIRE(t4->points.size() == 3);
  CHECK(t4->points[0].second == doctest::Approx(399e-6));  // (401 + 397) / 2
  CHECK(t4->points[1].second == doctest::Approx(399e-6));
  CHECK(t4->points[2].second == doctest::Approx(416e-6));
  CHECK(c.params.nccl.nccl_table_for(TableColl::FrameworkAllToAllPairwise, 2, false)->points[1].second == doctest::Approx(216e-6));
  CHECK(c.params.nccl.nccl_table_for(TableColl::AllToAllPairwise, 4, false) == nullptr);  // the runner's: not from these rows
  CHECK(c.params.nccl.nccl_latency == ModelParams{}.nccl.nccl_latency);
}

TEST_CASE("NCCL's buffers: a part per communicator and one per peer, per transport, fitted from vram_nccl rows") {
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  nlohmann::json doc = {
      {"schema", "overlapsim.bench/v1"}, {"environment", {{"env", nlohmann::json::object()}}}, {"results", nlohmann::json::array()}};
  for (const double b : {1048576.0, 16777216.0})
    doc["results"].push_back({{"key", "h2d_pinned"}, {"gpus", {0}}, {"bytes", b}, {"reps", 5}, {"time_us", 3 + b / 55e3}});
  constexpr double MiB = 1 << 20;
  // Peer to peer: 600 MiB + 300 MiB a peer; through host memory 400 MiB whatever the peers
  // (not the defaults); the rows after a pairwise exchange (other figures) are not the fit's.
  for (const int ranks : {2, 4}) {
    doc["results"].push_back(
        {{"key", "vram_nccl"}, {"ranks", ranks}, {"transport", "p2p"}, {"after", "all_to_all_single"}, {"bytes", (600 + 300.0 * (ranks - 1)) * MiB}});
    doc["results"].push_back({{"key", "vram_nccl"}, {"ranks", ranks}, {"transport", "host"}, {"after", "all_to_all_single"}, {"bytes", 400 * MiB}});
    doc["results"].push_back({{"key", "vram_nccl"}, {"ranks", ranks}, {"transport", "p2p"}, {"after", "pairwise"}, {"bytes", 9000 * MiB * ranks}});
  }
  const Calibration c = calibrate({{"nccl.json", doc}}, topo);
  const Fit& nccl = fit_named(c, "NCCL's buffers (vram_nccl)");
  const std::map<std::string, double> v = values_of(nccl);
  CHECK(v.at("p2p_per_communicator_MiB") == doctest::Approx(600));
  CHECK(v.at("p2p_per_peer_MiB") == doctest::Approx(300));
  CHECK(v.at("host_per_communicator_MiB") == doctest::Approx(400));
  CHECK(v.at("host_per_peer_MiB") == doctest::Approx(0).epsilon(1e-9));
  CHECK(nccl.points == 4);
  // No second communicator measured: the process's part stands (416 MiB), the communicator's is the rest.
  CHECK(c.params.vram.nccl_process == ModelParams{}.vram.nccl_process);
  CHECK(c.params.vram.nccl_communicator == (600 << 20) - ModelParams{}.vram.nccl_process);
  CHECK(c.params.vram.nccl_peer == 300 << 20);
  CHECK(c.params.vram.nccl_via_host == 0);  // 400 MiB in all, under the process's 416: none left
  // A second communicator (a pair: one peer) added 550 MiB peer to peer, 50 through host memory:
  // the communicator's own 250 / 50, the process's 350 both ways (the first's less them).
  for (const int ranks : {2, 4}) {
    doc["results"].push_back(
        {{"key", "vram_nccl"}, {"ranks", ranks}, {"transport", "p2p"}, {"after", "second_communicator"}, {"bytes", 9000 * MiB * ranks + 550 * MiB}});
    doc["results"].push_back({{"key", "vram_nccl"}, {"ranks", ranks}, {"transport", "host"}, {"after", "pairwise"}, {"bytes", 400 * MiB}});
    doc["results"].push_back({{"key", "vram_nccl"}, {"ranks", ranks}, {"transport", "host"}, {"after", "second_communicator"}, {"bytes", 450 * MiB}});
  }
  const Calibration two = calibrate({{"nccl.json", doc}}, topo);
  CHECK(two.params.vram.nccl_communicator == 250 << 20);
  CHECK(two.params.vram.nccl_peer == 300 << 20);
  CHECK(two.params.vram.nccl_via_host == 50 << 20);
  CHECK(two.params.vram.nccl_process == 350 << 20);
  CHECK(two.params.vram.nccl_collective == ModelParams{}.vram.nccl_collective);  // not measured: the default stands
  // Fresh communicators, one kind of call each, after the second: a ring exchange adds 560 MiB (reported), an
  // all-reduce 330 and an all-gather 310 at 2 ranks, 340 / 320 at 4 (peer to peer): collectives = median 325 less
  // the communicator's own 250; through host memory 30 each (reported only).
  for (const int ranks : {2, 4}) {
    const double second = 9000 * MiB * ranks + 550 * MiB, d = ranks == 4 ? 10 : 0;
    for (const auto& [after, bytes] : std::vector<std::pair<const char*, double>>{{"send_recv", second + 560 * MiB},
                                                                                  {"all_reduce", second + (560 + 330 + d) * MiB},
                                                                                  {"all_gather", second + (560 + 330 + 310 + 2 * d) * MiB}})
      doc["results"].push_back({{"key", "vram_nccl"}, {"ranks", ranks}, {"transport", "p2p"}, {"after", after}, {"bytes", bytes}});
    for (const auto& [after, bytes] :
         std::vector<std::pair<const char*, double>>{{"send_recv", 480 * MiB}, {"all_reduce", 510 * MiB}, {"all_gather", 540 * MiB}})
      doc["results"].push_back({{"key", "vram_nccl"}, {"ranks", ranks}, {"transport", "host"}, {"after", after}, {"bytes", bytes}});
  }
  const Calibration kinds = calibrate({{"nccl.json", doc}}, topo);
  CHECK(kinds.params.vram.nccl_collective == 75 << 20);
  CHECK(kinds.params.vram.nccl_communicator == 250 << 20);  // the rest as before
  CHECK(kinds.params.vram.nccl_via_host == 50 << 20);
  const std::map<std::string, double> kv = values_of(fit_named(kinds, "NCCL's buffers (vram_nccl)"));
  CHECK(kv.at("p2p_ring_exchange_MiB") == doctest::Approx(560));
  CHECK(kv.at("p2p_collectives_MiB") == doctest::Approx(325));
  CHECK(kv.at("host_collectives_MiB") == doctest::Approx(30));
}

TEST_CASE("the hand-off's phase: fitted from every sample, each row's times with the hand-off at either end, the file") {
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  // Synthetic: one-way copies (a machine run); kernel_reps bursts of one
  // kernel, 3 us after a host function, 3 us + k after a copy, k = 0..7
  // eight times each (64 samples): the 2nd and 98th percentiles are 0 and
  // 7 us; copy_after_idle bursts of one 256 KiB H2D copy to replay.
  nlohmann::json doc = {
      {"schema", "overlapsim.bench/v1"}, {"environment", {{"env", nlohmann::json::object()}}}, {"results", nlohmann::json::array()}};
  for (double b = 4096; b <= 1073741824.0; b *= 4)
    for (const char* key : {"h2d_pinned", "d2h_pinned"})
      doc["results"].push_back({{"key", key}, {"gpus", {0}}, {"bytes", b}, {"time_us", 2.7 + b / 55e3}});
  std::vector<double> host(64, 3.0), after;
  for (int i = 0; i < 64; ++i) after.push_back(3.0 + i / 8);
  const auto kernels = [&](const char* what, const std::vector<double>& samples) {
    return nlohmann::json{{"key", "kernel_reps"},   {"gpus", {0}},          {"bytes", 1048576}, {"reps", 1}, {"after", what},
                          {"time_us", samples[32]}, {"samples_us", samples}};
  };
  doc["results"].push_back(kernels("host", host));
  doc["results"].push_back(kernels("copy", after));
  for (const char* before : {"host", "kernel_done"})
    doc["results"].push_back(
        {{"key", "copy_after_idle"}, {"gpus", {0}}, {"bytes", 262144}, {"reps", 1}, {"before", before}, {"dir", "h2d"}, {"time_us", 10.0}});
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
  REQUIRE(p.handoff.copy_after_kernel_latency[Direction::D2H] == Time::zero());
  p.handoff.copy_after_kernel_latency.h2d = Time::from_us(4);
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

TEST_CASE("host aggregates both ways and of pageable copies: fitted from multi-GPU rows whose answer is known") {
  // On the 4xH200 topology: k GPUs each copying 1 GiB H2D and 1 GiB D2H at
  // once under a both-ways limit of L_k shared by 2k copies, nothing else
  // binding: each copy takes 1 GiB / (L_k / 2k).
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  const double bytes = 1073741824.0;
  const std::map<int, double> limit = {{2, 100}, {3, 120}, {4, 128}};
  nlohmann::json doc = {
      {"schema", "overlapsim.bench/v1"}, {"environment", {{"env", nlohmann::json::object()}}}, {"results", nlohmann::json::array()}};
  for (double b = 64.0 * 1048576; b <= bytes; b *= 4)  // the engines: 55 GB/s each way
    for (const char* key : {"h2d_pinned", "d2h_pinned"})
      doc["results"].push_back({{"key", key}, {"gpus", {0}}, {"bytes", b}, {"reps", 1}, {"time_us", 3 + b / 55e3}});
  doc["results"].push_back({{"key", "multi_bidir_pinned"},
                            {"gpus", 1},
                            {"bytes_per_gpu", bytes},
                            {"time_us", 2 * bytes / 90e3},
                            {"h2d_time_us", 2 * bytes / 90e3},
                            {"d2h_time_us", 2 * bytes / 90e3},
                            {"aggregate_GBps", 90.0}});
  for (const auto& [k, L] : limit) {
    const double t = bytes / (L / (2 * k) * 1e3);
    doc["results"].push_back({{"key", "multi_bidir_pinned"},
                              {"gpus", k},
                              {"bytes_per_gpu", bytes},
                              {"time_us", t},
                              {"h2d_time_us", t},
                              {"d2h_time_us", t},
                              {"aggregate_GBps", 2 * k * bytes / t * 1e-3}});
  }
  for (int k = 1; k <= 4; ++k)
    doc["results"].push_back(
        {{"key", "multi_h2d_pageable"}, {"gpus", k}, {"bytes_per_gpu", 268435456}, {"time_us", 1e5}, {"aggregate_GBps", 7.0 * k - k * k / 2.0}});
  const Calibration c = calibrate({{"multi.json", doc}}, topo);
  const auto& both = c.params.copies.host_bidir_aggregate;
  REQUIRE(both.size() == 4);
  CHECK(both[0].GBps() == doctest::Approx(90));
  for (const auto& [k, L] : limit) CHECK(both[static_cast<size_t>(k - 1)].GBps() == doctest::Approx(L).epsilon(1e-3));
  const auto& pageable = c.params.copies.pageable_h2d_aggregate;
  REQUIRE(pageable.size() == 4);
  CHECK(pageable[3].GBps() == doctest::Approx(20));  // 7 x 4 - 16 / 2
  CHECK(c.params.copies.pageable_d2h_aggregate.empty());
  // Replayed, each count's last copy ends when the run's did.
  for (const auto& cmp : compare_bench(doc, topo, c.params))
    if (cmp.key == "multi_bidir_pinned" && cmp.cls == "multi-GPU both ways" && cmp.what.rfind("1 GPUs", 0) != 0)
      CHECK(std::abs(cmp.error_pct()) < 0.1);
  // A topology whose host bridge has no throughput: no limit on both ways
  // together can bind there, so none is written (a bisection would have run
  // to its lower bound), and the fit says why.
  const hw::Topology open(
      hw::parse_topology_string("name: open\nnodes:\n  - {name: cpu0, kind: cpu}\n  - {name: rc0, kind: host_bridge}\n"
                                "  - {name: \"gpu{i}\", kind: gpu, model: H200, repeat: 4}\nlinks:\n  - {a: rc0, b: cpu0, kind: internal}\n"
                                "  - {a: \"gpu{i}\", b: rc0, pcie: gen5 x16, latency: 1 us, repeat: 4}\n",
                                "open.yaml"));
  const Calibration unbound = calibrate({{"multi.json", doc}}, open);
  CHECK(unbound.params.copies.host_bidir_aggregate.empty());
  bool said = false;
  for (const Fit& f : unbound.fits) said = said || (f.name == "host aggregate, both ways" && f.formula.find("not fitted") == 0);
  CHECK(said);
}

TEST_CASE("memory-bound kernels' load: fitted at the calibration's full-duty slowdown, whatever the box's") {
  // The H200's bench and its GEMMs between copy kernels. The same box
  // throttling half as hard (both slowdowns halved) fits the same load; the
  // row without its GEMMs alone is taken as measured and fits a lighter one
  // (this box's GEMMs alone slowed 1.17x, the calibration's replay 1.20x).
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  auto read = [](const std::string& name) {
    return nlohmann::json::parse(read_maybe_gzip(plain_or_gz(kSrc + "/validate/reference/h200", name)));
  };
  const nlohmann::json bench = read("bench-default.json"), memload = read("bench-memload-1.json");
  auto load_with = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json doc = memload;
    for (auto& r : doc["results"])
      if (r["key"] == "gemm_between_memory_bound") edit(r);
    const Calibration c = calibrate({{"bench-default.json", bench}, {"bench-memload-1.json", doc}}, topo);
    return std::pair{c.params.power.sustained_memory_load, values_of(fit_named(c, "sustained load, memory-bound kernels' share"))};
  };
  const auto [load, values] = load_with([](nlohmann::json&) {});
  CHECK(load > 0.3);
  CHECK(load < 0.7);
  CHECK(values.at("target") ==
        doctest::Approx(1 + (values.at("gemm_slowdown") - 1) * (values.at("replayed_as_gemm") - 1) / (values.at("gemm_alone_slowdown") - 1)));
  const auto [halved, halved_values] = load_with([](nlohmann::json& r) {
    r["slowdown"] = 1 + (r["slowdown"].get<double>() - 1) / 2;
    r["alone_slowdown"] = 1 + (r["alone_slowdown"].get<double>() - 1) / 2;
  });
  CHECK(halved == doctest::Approx(load).epsilon(1e-3));
  const auto [unscaled, unscaled_values] = load_with([](nlohmann::json& r) { r.erase("alone_slowdown"); });
  CHECK(unscaled_values.at("target") == doctest::Approx(unscaled_values.at("gemm_slowdown")));
  CHECK(unscaled < load - 0.02);
}

TEST_CASE("collectives' load: GEMMs between all-to-alls simulated at a known load fit that load back") {
  // The 2xH200 bench's sustained-load fit, then the gemm_between_all_to_all
  // testcase's cycles (300 ms idle; on both ranks two GEMMs and a 128 MiB
  // all-to-all, 400 times) simulated with the collectives' load at 0.6: the
  // row they make fits 0.6 back, and replays within 0.25 % (the clock moves in steps of 1/256). With the box's
  // GEMMs alone slowing less than the calibration's, the target scales.
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  const nlohmann::json bench = nlohmann::json::parse(read_maybe_gzip(kSrc + "/validate/reference/h200x2-nvlink/bench-default.json.gz"));
  const Calibration base = calibrate({{"bench-default.json", bench}}, topo);
  REQUIRE(base.params.power.sustained_slowdown > 0);
  CHECK(base.params.power.sustained_comm_load == 0);
  ModelParams p = base.params;
  p.power.sustained_comm_load = 0.6;
  p.power.straggler_share = 0;
  const Bytes bytes = Bytes(128) << 20;
  const int cycles = 400;
  std::vector<Op> prog{bench_idle(Time::from_ms(300))};
  for (int i = 0; i < cycles; ++i) {
    prog.push_back(bench_gemm(nlohmann::json::array({8192, 5120, 5120})));
    prog.push_back(bench_gemm(nlohmann::json::array({8192, 5120, 5120})));
    prog.push_back(bench_a2a(bytes));
  }
  const ExecResult res = replay_programs(bench_schedule(2), {prog, prog}, topo, p);
  std::vector<double> gemm_us, comm_us;
  for (size_t i = 0; i < static_cast<size_t>(cycles); ++i) {
    const auto& ops = res.ops[0];
    gemm_us.push_back((ops[2 + 3 * i].end - ops[1 + 3 * i].start).us() / 2);
    comm_us.push_back((ops[3 + 3 * i].end - ops[3 + 3 * i].start).us());
  }
  const auto tail = [](const std::vector<double>& v) { return median(std::vector<double>(v.begin() + static_cast<long>(v.size() / 2), v.end())); };
  nlohmann::json row = {{"key", "gemm_between_all_to_all"},
                        {"ranks", 2},
                        {"bytes", bytes},
                        {"m", 8192},
                        {"n", 5120},
                        {"k", 5120},
                        {"gemms_per_cycle", 2},
                        {"burst_time_us", gemm_us.front()},
                        {"comm_burst_time_us", comm_us.front()},
                        {"steady_time_us", tail(gemm_us)},
                        {"comm_steady_time_us", tail(comm_us)},
                        {"slowdown", tail(gemm_us) / gemm_us.front()},
                        {"comm_slowdown", tail(comm_us) / comm_us.front()},
                        {"time_us", gemm_us},
                        {"comm_time_us", comm_us}};
  REQUIRE(row["slowdown"].get<double>() > 1.02);
  auto fitted = [&](const nlohmann::json& r) {
    nlohmann::json doc = bench;
    doc["results"].push_back(r);
    const Calibration c = calibrate({{"bench-default.json", doc}}, topo);
    return std::pair{c, doc};
  };
  const auto [c, doc] = fitted(row);
  CHECK(c.params.power.sustained_comm_load == doctest::Approx(0.6).epsilon(0.01));
  int replayed = 0;
  for (const auto& cmp : compare_bench(doc, topo, c.params))
    if (cmp.cls == "GEMMs between all-to-alls (sustained-load clock)") {
      ++replayed;
      CHECK(std::abs(cmp.error_pct()) < 0.25);
    }
  CHECK(replayed == 1);
  row["alone_slowdown"] = 1 + (row["slowdown"].get<double>() - 1) * 1.5;
  const auto [scaled, scaled_doc] = fitted(row);
  const auto v = values_of(fit_named(scaled, "sustained load, collectives' share"));
  CHECK(v.at("target") == doctest::Approx(1 + (v.at("gemm_slowdown") - 1) * (v.at("replayed_as_gemm") - 1) / (v.at("gemm_alone_slowdown") - 1)));
  // A target under the measured slowdown is a lighter load, and over it a heavier one.
  if (v.at("target") < v.at("gemm_slowdown"))
    CHECK(scaled.params.power.sustained_comm_load < 0.59);
  else
    CHECK(scaled.params.power.sustained_comm_load > 0.61);
}

TEST_CASE("norms by row length: each row length's median per kind, a split view and the long-row shapes kept out of the table") {
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));  // HBM 4.8 TB/s
  nlohmann::json doc = {
      {"schema", "overlapsim.bench/v1"}, {"environment", {{"env", nlohmann::json::object()}}}, {"results", nlohmann::json::array()}};
  for (const double b : {1048576.0, 16777216.0})
    doc["results"].push_back({{"key", "h2d_pinned"}, {"gpus", {0}}, {"bytes", b}, {"reps", 5}, {"time_us", 3 + b / 55e3}});
  const auto row = [&](const char* op, double share, nlohmann::json extra) {
    nlohmann::json r = {{"key", "framework_elementwise"}, {"gpus", {0}}, {"op", op}, {"tokens", 6144}, {"hidden", 2560}, {"GBps", share * 4800}};
    r.update(extra);
    doc["results"].push_back(r);
  };
  // The [tokens, hidden] shapes: the norms' median, 0.5.
  row("layer_norm", 0.45, nlohmann::json::object());
  row("rms_norm", 0.55, nlohmann::json::object());
  for (const int r : {128, 512, 2048}) {
    row("layer_norm", 0.1 * r / 128, {{"row", r}});
    row("rms_norm", 0.1 * r / 64, {{"row", r}});
    row("rms_norm", 0.1 * r / 64 + 0.01, {{"row", r}});  // a second box: the median of the two
  }
  row("rms_norm", 0.05, {{"row", 128}, {"view", "split"}});  // not contiguous: reported apart, not in the table
  row("layer_norm", 0.3, {{"row", 64}});                     // one kind only: no table row
  const Calibration c = calibrate({{"eager.json", doc}}, topo);
  const MemoryParams& m = c.params.memory;
  CHECK(m.framework_norm_efficiency == doctest::Approx(0.5).epsilon(1e-9));
  REQUIRE(m.framework_norm_rows.size() == 3);
  CHECK(m.framework_norm_rows[0][0] == 128);
  CHECK(m.framework_norm_rows[0][1] == doctest::Approx(0.1).epsilon(1e-9));
  CHECK(m.framework_norm_rows[0][2] == doctest::Approx(0.205).epsilon(1e-9));
  CHECK(m.framework_norm_rows[2][1] == doctest::Approx(1.0).epsilon(1e-9));  // 1.6: held to the bandwidth
  // The line through 128 and 2048 at 512 (log-halfway): layer 0.55 against 0.4 measured.
  const auto v = values_of(fit_named(c, "framework norms by row length"));
  CHECK(v.at("layer_512") == doctest::Approx(0.4).epsilon(1e-9));
  CHECK(v.at("between_rows_worst_pct") == doctest::Approx(100 * (0.55 / 0.4 - 1)).epsilon(1e-6));
  CHECK(v.at("rms_128_split") == doctest::Approx(0.05).epsilon(1e-9));
}

TEST_CASE("the workloads' GEMM shapes alone and between SDPA kernels: replayed per shape, SDPA alone once, at the closed form's slowdown") {
  // An H200's gemm_sustained_shapes rows replayed on a sustained-load model
  // whose averages settle within the series (20 ms against 1.5 s): each
  // series' steady state is at full duty, so with SDPA counted as a GEMM
  // every replayed kernel takes 1 + sustained_slowdown its first time, the
  // first ones starting rested (1 s idle; two GEMMs before the first SDPA).
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  const nlohmann::json doc = nlohmann::json::parse(read_maybe_gzip(kSrc + "/validate/reference/h200/bench-sustained-shapes.json.gz"));
  ModelParams p;
  p.power.sustained_slowdown = 0.2;
  p.power.sustained_duty = 0.7;
  p.power.sustained_time_constant = Time::from_ms(20);
  auto replayed = [&](const ModelParams& q) {
    std::vector<Comparison> out;
    for (const Comparison& c : compare_bench(doc, topo, q))
      if (c.key == "gemm_sustained_shapes") out.push_back(c);
    return out;
  };
  const std::vector<Comparison> cmps = replayed(p);
  const auto& rs = doc.at("results");
  REQUIRE(rs.size() == 5);
  REQUIRE(cmps.size() == 3 * rs.size() + 1);
  size_t at = 0;
  for (size_t i = 0; i < rs.size(); ++i) {
    const auto& r = rs[i];
    CAPTURE(i);
    CHECK(cmps[at].cls == "GEMMs between SDPA kernels (sustained-load clock)");
    CHECK(cmps[at++].simulated_us == doctest::Approx(1.2 * r.at("burst_time_us").get<double>()).epsilon(1e-3));
    CHECK(cmps[at].cls == "SDPA between GEMMs (sustained-load clock)");
    CHECK(cmps[at++].simulated_us == doctest::Approx(1.2 * r.at("attention_burst_time_us").get<double>()).epsilon(1e-3));
    CHECK(cmps[at].cls == "GEMMs alone back to back (sustained-load clock)");
    CHECK(cmps[at].measured_us == doctest::Approx(r.at("alone_steady_time_us").get<double>()));
    CHECK(cmps[at++].simulated_us == doctest::Approx(1.2 * r.at("alone_burst_time_us").get<double>()).epsilon(1e-3));
    if (i == 0) {
      CHECK(cmps[at].cls == "SDPA alone back to back (sustained-load clock)");
      CHECK(cmps[at++].simulated_us == doctest::Approx(1.2 * r.at("attention_alone_burst_time_us").get<double>()).epsilon(1e-3));
    }
  }
  // SDPA at half a GEMM's load: the GEMMs between it slow less, and the
  // more of each cycle they take themselves, the further (the rows go from
  // 6 % to 55 % GEMM time).
  ModelParams half = p;
  half.power.sustained_attention_load = 0.5;
  const std::vector<Comparison> lighter = replayed(half);
  std::vector<double> gemm_slowdown;
  for (size_t i = 0; i < rs.size(); ++i)
    gemm_slowdown.push_back(lighter[3 * i + (i > 0 ? 1 : 0)].simulated_us / rs[i].at("burst_time_us").get<double>());
  CHECK(gemm_slowdown.front() < 1.05);
  CHECK(gemm_slowdown.back() > gemm_slowdown.front() + 0.03);
  CHECK(gemm_slowdown.back() < 1.2);
}

TEST_CASE("PyTorch's return after a wait: replayed with the calibration's call costs, reported as not modelled") {
  // 100 items, the host waiting for each or not; the model's host goes on
  // at once after a wait, so the GPU idles per item what the next call
  // costs (the framework's dispatch and the CUDA call): 99 gaps over 100 items.
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  nlohmann::json doc = {
      {"schema", "overlapsim.bench/v1"}, {"environment", {{"env", nlohmann::json::object()}}}, {"results", nlohmann::json::array()}};
  for (const char* wait : {"kernel_sync", "copy_stream_sync", "blocking_to"})
    doc["results"].push_back({{"key", "overhead_framework_sync_return"},
                              {"wait", wait},
                              {"item_us", 1000.0},
                              {"waited_us", 1030.0},
                              {"gap_us", 30.0},
                              {"items", 100},
                              {"copy_mib", 64}});
  ModelParams p;
  p.overheads.kernel_launch = Time::from_us(4);
  p.overheads.memcpy_call = Time::from_us(2);
  p.overheads.framework_op_call = Time::from_us(10);
  std::vector<Comparison> cmps;
  for (const Comparison& c : compare_bench(doc, topo, p))
    if (c.key == "overhead_framework_sync_return") cmps.push_back(c);
  REQUIRE(cmps.size() == 3);
  CHECK(cmps[0].simulated_us == doctest::Approx(14.0 * 99 / 100).epsilon(1e-6));  // kernel: launch + dispatch
  CHECK(cmps[1].simulated_us == doctest::Approx(12.0 * 99 / 100).epsilon(1e-6));  // copy: its call + dispatch
  CHECK(cmps[2].simulated_us == doctest::Approx(12.0 * 99 / 100).epsilon(1e-6));
  for (const Comparison& c : cmps) {
    CHECK(c.measured_us == 30.0);
    CHECK_FALSE(c.outside.empty());
  }
  // A row of another kind of wait is refused, not replayed as one of these (the CLI names the file).
  nlohmann::json bad = doc;
  bad["results"][1]["wait"] = "bogus";
  CHECK_THROWS_WITH_AS(compare_bench(bad, topo, p), doctest::Contains("wait 'bogus'"), std::invalid_argument);
}

TEST_CASE("PyTorch's calls that launch nothing: framework_view_call the median over them, contiguous() and the sized ops reported") {
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  nlohmann::json doc = {
      {"schema", "overlapsim.bench/v1"}, {"environment", {{"env", nlohmann::json::object()}}}, {"results", nlohmann::json::array()}};
  doc["results"].push_back({{"key", "h2d_pinned"}, {"gpus", {0}}, {"bytes", 1048576.0}, {"reps", 5}, {"time_us", 3 + 1048576.0 / 55e3}});
  // The median of 2, 3, 4, 9 (split, returning 3 tensors) is 3.5; contiguous() of a contiguous tensor (0.2) is no call the model charges.
  for (const auto& [op, us] :
       std::vector<std::pair<const char*, double>>{{"slice", 2}, {"view", 3}, {"transpose", 4}, {"split", 9}, {"contiguous", 0.2}})
    doc["results"].push_back({{"key", "overhead_framework_view"}, {"op", op}, {"host_us", us}, {"tensors", std::string(op) == "split" ? 3 : 1}});
  doc["results"].push_back({{"key", "overhead_framework_op_sized"}, {"op", "linear"}, {"tokens", 4096}, {"hidden", 3072}, {"host_us", 30.0}});
  const Calibration c = calibrate({{"torch.json", doc}}, topo);
  CHECK(c.params.overheads.framework_view_call == Time::from_us(3.5));
  CHECK(values_of(fit_named(c, "framework views")).at("framework_view_call_us") == doctest::Approx(3.5));
  // Replayed: each call's host time against the model's (a split: three
  // views); the sized op's against a launch and the dispatch.
  ModelParams p = c.params;
  p.overheads.kernel_launch = Time::from_us(4);
  p.overheads.framework_op_call = Time::from_us(10);
  std::map<std::string, Comparison> by_what;
  for (const Comparison& cmp : compare_bench(doc, topo, p))
    if (cmp.key.starts_with("overhead_framework_")) by_what[cmp.what] = cmp;
  REQUIRE(by_what.size() == 6);
  CHECK(by_what.at("slice: host time per call").simulated_us == doctest::Approx(3.5).epsilon(1e-9));
  CHECK(by_what.at("split: host time per call").simulated_us == doctest::Approx(10.5).epsilon(1e-9));
  CHECK(by_what.at("slice: host time per call").outside.empty());
  CHECK_FALSE(by_what.at("contiguous: host time per call").outside.empty());
  const Comparison& sized = by_what.at("linear over [4096, 3072]: host time per call");
  CHECK(sized.simulated_us == doctest::Approx(14).epsilon(1e-9));
  CHECK_FALSE(sized.outside.empty());
  // What the calibration says it was fitted from: the sized ops are reported only.
  const std::string yaml = calibration_yaml(c);
  CHECK(yaml.find("# overheads: fitted from overhead_framework_view\n") != std::string::npos);
  CHECK(yaml.find("overhead_framework_op_sized") == std::string::npos);
}

TEST_CASE("the calls beside a prefetch are replayed against what the model charges them, not fitted") {
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  nlohmann::json doc = {
      {"schema", "overlapsim.bench/v1"}, {"environment", {{"env", nlohmann::json::object()}}}, {"results", nlohmann::json::array()}};
  for (const char* op : {"stream_context", "event_record", "wait_event", "wait_stream", "record_stream", "empty", "copy_pinned"})
    doc["results"].push_back({{"key", "overhead_framework_stream_call"}, {"op", op}, {"host_us", 5.0}});
  ModelParams p;
  p.overheads.event_call = Time::from_us(1.5);
  p.overheads.alloc_call = Time::from_us(2);
  p.overheads.free_call = Time::from_us(1);
  p.overheads.memcpy_call = Time::from_us(2.5);
  p.overheads.framework_op_call = Time::from_us(9);
  std::map<std::string, Comparison> by_op;
  for (const Comparison& cmp : compare_bench(doc, topo, p)) by_op[cmp.what.substr(0, cmp.what.find(':'))] = cmp;
  REQUIRE(by_op.size() == 7);
  for (const char* op : {"event_record", "wait_event", "wait_stream"}) CHECK(by_op.at(op).simulated_us == doctest::Approx(1.5));
  CHECK(by_op.at("empty").simulated_us == doctest::Approx(3));
  CHECK(by_op.at("copy_pinned").simulated_us == doctest::Approx(11.5));
  for (const char* op : {"stream_context", "record_stream"}) {
    CHECK(by_op.at(op).simulated_us == 0);
    CHECK_FALSE(by_op.at(op).outside.empty());
  }
  CHECK(by_op.at("empty").outside.empty());
  CHECK(by_op.at("empty").measured_us == 5.0);
  // Nothing is fitted from them (a machine run for the calibration to start from: one pinned copy).
  doc["results"].push_back({{"key", "h2d_pinned"}, {"gpus", {0}}, {"bytes", 1048576.0}, {"reps", 5}, {"time_us", 3 + 1048576.0 / 55e3}});
  const std::string yaml = calibration_yaml(calibrate({{"torch.json", doc}}, topo));
  CHECK(yaml.find("overhead_framework_stream_call") == std::string::npos);
}

TEST_CASE("a block loop's waits: framework_wait_return is what the model's calls leave out of the GPU's idle per block, fitted back") {
  // The one-H200 bench, then framework.py's block loops (copy-bound and
  // compute-bound) measured 50 us idler per block than the model's calls
  // make them: the fit gives 50 us, and the loops replay as measured. The
  // bare waits are replayed, not fitted, and reported as not modelled.
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  nlohmann::json doc = nlohmann::json::parse(read_maybe_gzip(kSrc + "/validate/reference/h200/bench-default.json.gz"));
  const Calibration base = calibrate({{"bench-default.json", doc}}, topo);
  CHECK(base.params.overheads.framework_wait_return == Time::zero());
  std::vector<nlohmann::json> loops;
  for (const auto& [wait, compute_us, item_us] : {std::tuple{"block_loop", 0.0, 1240.0}, std::tuple{"block_loop_compute", 2000.0, 2050.0}})
    loops.push_back({{"key", "overhead_framework_sync_return"},
                     {"wait", wait},
                     {"item_us", item_us},
                     {"gap_us", 0.0},
                     {"items", 100},
                     {"copy_mib", 64},
                     {"ops", 10},
                     {"views", 14},
                     {"compute_us", compute_us}});
  nlohmann::json probe = {{"schema", "overlapsim.bench/v1"}, {"environment", {{"env", nlohmann::json::object()}}}, {"results", loops}};
  std::vector<double> model_us;
  for (const Comparison& c : compare_bench(probe, topo, base.params)) model_us.push_back(c.simulated_us);
  REQUIRE(model_us.size() == 2);
  // Copy-bound: the next copy's call after each copy (99 gaps over 100
  // items); compute-bound: the views and the first op's call too.
  CHECK(model_us[0] == doctest::Approx(base.params.overheads.memcpy_call.us() * 99 / 100).epsilon(1e-6));
  CHECK(model_us[1] > model_us[0]);
  for (size_t i = 0; i < 2; ++i) {
    loops[i]["gap_us"] = model_us[i] + 50;
    doc["results"].push_back(loops[i]);
  }
  doc["results"].push_back(
      {{"key", "overhead_framework_sync_return"}, {"wait", "kernel_sync"}, {"item_us", 1000.0}, {"gap_us", 500.0}, {"items", 100}, {"copy_mib", 64}});
  const Calibration c = calibrate({{"bench-default.json", doc}}, topo);
  CHECK(c.params.overheads.framework_wait_return.us() == doctest::Approx(50).epsilon(0.01));
  int loops_replayed = 0;
  for (const Comparison& cmp : compare_bench(doc, topo, c.params)) {
    if (cmp.key != "overhead_framework_sync_return") continue;
    if (cmp.what.rfind("kernel_sync", 0) == 0) {
      CHECK_FALSE(cmp.outside.empty());
      continue;
    }
    ++loops_replayed;
    CHECK(cmp.outside.empty());
    CHECK(std::abs(cmp.simulated_us - cmp.measured_us) < 1.0);
  }
  CHECK(loops_replayed == 2);
  // A loop row whose views no op can carry is refused, not wrapped around.
  probe["results"][0]["views"] = 300;
  CHECK_THROWS_WITH_AS(compare_bench(probe, topo, c.params), doctest::Contains("views 300"), std::invalid_argument);
}

TEST_CASE("fp8 GEMMs: gemm_fp8_ratio the median of the two dtypes' shares of their peaks, rowwise rows reported, the fp8 rows replayed") {
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));  // bf16 989, fp8 1979 TFLOP/s
  nlohmann::json doc = {
      {"schema", "overlapsim.bench/v1"}, {"environment", {{"env", nlohmann::json::object()}}}, {"results", nlohmann::json::array()}};
  // bf16 at 0.70 of its peak; fp8 at 0.63, 0.56 and 0.70 of its own: ratios 0.9, 0.8, 1.0, median 0.9.
  doc["results"].push_back(
      {{"key", "h2d_pinned"}, {"gpus", {0}}, {"bytes", 1048576.0}, {"reps", 5}, {"time_us", 3 + 1048576.0 / 55e3}});  // a machine run
  const double peak_bf16 = 989, peak_fp8 = 1979;
  int i = 0;
  for (const double share : {0.63, 0.56, 0.70}) {
    const int m = 4096 << i++, n = 5120, k = 5120;
    const double flops = 2.0 * m * n * k;
    for (const char* scaling : {"tensorwise", "rowwise"})
      doc["results"].push_back({{"key", "gemm_fp8"},
                                {"gpus", {0}},
                                {"m", m},
                                {"n", n},
                                {"k", k},
                                {"scaling", scaling},
                                {"time_us", flops / (peak_fp8 * 1e6 * share * (std::string(scaling) == "rowwise" ? 0.5 : 1.0))},
                                {"TFLOPs", peak_fp8 * share * (std::string(scaling) == "rowwise" ? 0.5 : 1.0)},
                                {"bf16_time_us", flops / (peak_bf16 * 1e6 * 0.70)},
                                {"bf16_TFLOPs", peak_bf16 * 0.70}});
  }
  const Calibration c = calibrate({{"gemm.json", doc}}, topo);
  CHECK(c.params.gemm.fp8_efficiency_ratio == doctest::Approx(0.9).epsilon(1e-9));
  CHECK(values_of(fit_named(c, "GEMM fp8")).at("ratio") == doctest::Approx(0.9).epsilon(1e-9));
  CHECK(calibration_yaml(c).find("gemm_fp8_ratio: 0.9000") != std::string::npos);
  // Replayed: with the bf16 rate 0.70 at every shape, the ratio's shape (0.9) comes back exactly, the others by their own ratio.
  ModelParams p = c.params;
  p.gemm.gemm_shapes.clear();
  p.gemm.gemm_model = {};
  p.gemm.gemm_efficiency = 0.70;
  p.power = PowerParams{};  // no sustained-load slowdown: back to back as alone
  std::vector<Comparison> fp8, rowwise, bf16;
  for (const Comparison& cmp : compare_bench(doc, topo, p))
    if (cmp.key == "gemm_fp8") (cmp.what.ends_with("tensorwise") ? fp8 : cmp.what.ends_with("rowwise") ? rowwise : bf16).push_back(cmp);
  REQUIRE(fp8.size() == 3);
  REQUIRE(rowwise.size() == 3);
  REQUIRE(bf16.size() == 3);
  CHECK(fp8[0].error_pct() == doctest::Approx(0).epsilon(1e-6));
  CHECK(fp8[1].error_pct() == doctest::Approx(100 * (0.56 / 0.63 - 1)).epsilon(1e-6));
  for (const Comparison& r : bf16) CHECK(r.error_pct() == doctest::Approx(0).epsilon(1e-6));
  for (const Comparison& r : rowwise) CHECK_FALSE(r.outside.empty());
  CHECK(fp8[0].outside.empty());
}
