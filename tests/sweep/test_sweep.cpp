// Sweeps: point enumeration, running (ok and failed points, thread-count
// independence, agreement with a direct run), shards and merge, CSV, summary.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "calibrations/measured_defaults.hpp"
#include "gpu/executor.hpp"
#include "hw/fabric.hpp"
#include "report/metrics.hpp"
#include "sweep/sweep.hpp"
#include "workload/dit.hpp"

using namespace osim;
namespace fs = std::filesystem;

namespace {
const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

std::string write_sweep(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / "overlapsim-test-sweep";
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p) << text;
  return p.string();
}

// ACES 4x H100 PCIe, 1 step: prefetch 0..2 x SP {2, 4}, and one point that
// cannot run (prefetch_size past the model's 40 blocks).
std::string small_sweep(const std::string& file = "small.yaml") {
  return write_sweep(file, "name: small\nworkload: " + kSrc + "/configs/workloads/wan22-720p-aces-layerwise.yaml\n" +
                               "set: {steps: 1, memory.outside: none}\n"
                               "grid:\n  parallelism.ulysses: [2, 4]\n  offload.prefetch_size: [0, 1, 2]\n"
                               "points:\n  - {offload.prefetch_size: 99}\n");
}

std::string cell(const SweepTable& t, size_t row, const std::string& col) {
  const int c = t.column(col);
  REQUIRE(c >= 0);
  return t.rows[row][static_cast<size_t>(c)];
}
}  // namespace

TEST_CASE("sweep: grid then points, first key slowest, lists in a point sweep too") {
  const std::string f =
      write_sweep("enum.yaml", "name: e\nworkload: " + kSrc + "/configs/workloads/wan22-720p-aces-layerwise.yaml\n" +
                                   "set: {steps: 2}\n"
                                   "grid: {parallelism.ulysses: [1, 2, 4], offload.prefetch_size: [0, 3]}\n"
                                   "points:\n  - {offload.policy: block, offload.prefetch_size: null, topology: [a.yaml, b.yaml]}\n");
  const SweepSpec s = parse_sweep_file(f);
  CHECK(s.size() == 3 * 2 + 2);
  CHECK(s.parameters == std::vector<std::string>{"parallelism.ulysses", "offload.prefetch_size", "offload.policy", "topology"});
  const auto p3 = s.point(3);  // ulysses 2, prefetch 3
  REQUIRE(p3.size() == 3);
  CHECK(p3[0].first == "steps");
  CHECK(p3[1].second.text == "2");
  CHECK(p3[2].second.text == "3");
  const auto p7 = s.point(7);  // the point, second topology
  CHECK(p7.back().first == "topology");
  CHECK(p7.back().second.text == "b.yaml");
  CHECK_THROWS_AS((void)s.point(8), std::out_of_range);
}

TEST_CASE("sweep: bad sweep files name the line and what to do") {
  const std::string wl = kSrc + "/configs/workloads/wan22-720p-aces-layerwise.yaml";
  auto msg = [](const std::string& f) {
    try {
      (void)parse_sweep_file(f);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(msg(write_sweep("b1.yaml", "name: b\nworkload: " + wl + "\ngrid:\n  paralelism.ulysses: [1, 2]\n"))
            .find("b1.yaml:4:3: error: 'paralelism.ulysses' is not a workload key; did you mean 'parallelism'?") != std::string::npos);
  CHECK(msg(write_sweep("b2.yaml", "name: b\nworkload: " + wl + "\ngrid:\n  steps: 4\n")).find("needs a list of values") != std::string::npos);
  CHECK(msg(write_sweep("b3.yaml", "name: b\n")).find("either 'workload: FILE'") != std::string::npos);
  CHECK(msg(write_sweep("b4.yaml", "name: b\nschedule: " + wl + "\n")).find("use 'workload:'") != std::string::npos);
  CHECK(msg(write_sweep("b5.yaml", "name: b\nworkload: nope.yaml\n")).find("no such file") != std::string::npos);
}

TEST_CASE("sweep: every point runs as `overlapsim run` would, and a failing point reports in its row") {
  const SweepSpec s = parse_sweep_file(small_sweep());
  SweepOptions o;
  o.threads = 2;
  size_t calls = 0;
  o.progress = [&](size_t done, size_t total) {
    ++calls;
    CHECK(done <= total);
  };
  const SweepTable t = run_sweep(s, o);
  REQUIRE(t.rows.size() == 7);
  CHECK(calls == 7);
  for (size_t r = 0; r < 6; ++r) CHECK(cell(t, r, "status") == "ok");
  CHECK(cell(t, 6, "status") == "error");
  CHECK(cell(t, 6, "error").find("prefetch_size") != std::string::npos);
  CHECK(cell(t, 6, "step_ms").empty());
  // Row 4 is SP 4, prefetch 1: the same as a direct run.
  DitWorkload w = parse_workload_file(kSrc + "/configs/workloads/wan22-720p-aces-layerwise.yaml",
                                      {"steps=1", "parallelism.ulysses=4", "offload.prefetch_size=1"});
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/aces-4xh100-pcie.yaml"));
  set_base_params(w, base_params("", topo).params);  // no calibration: the measured defaults of its H100s
  const Schedule sched = generate_schedule(w);
  const ExecResult res = execute(sched, topo, w.params);
  const Metrics m = compute_metrics(sched, topo, res);
  CHECK(cell(t, 4, "makespan_ms") == fmt::format("{:.4f}", m.makespan.s() * 1e3));
  CHECK(cell(t, 4, "topology_name") == "aces-4xh100-pcie");
  CHECK(cell(t, 4, "ranks") == "4");
  // Physics: blocking copies (prefetch 0) expose the copy; SP 4 needs a quarter of SP 1's... at least less time than SP 2.
  CHECK(std::stod(cell(t, 3, "step_ms")) > std::stod(cell(t, 4, "step_ms")));
  CHECK(std::stod(cell(t, 0, "step_ms")) > std::stod(cell(t, 3, "step_ms")));
  CHECK(std::stod(cell(t, 5, "peak_vram_GiB")) > std::stod(cell(t, 4, "peak_vram_GiB")));
  // The same CSV whatever the thread count.
  SweepOptions one;
  one.threads = 1;
  CHECK(to_csv(run_sweep(s, one)) == to_csv(t));
}

TEST_CASE("sweep: points that differ only in topology share one schedule and each equals its own run") {
  // Topology is the slowest key, so points sharing a schedule are far apart
  // in the table; the sweep runs them one after another and builds it once.
  const std::string f = write_sweep("topos.yaml", "name: topos\nworkload: " + kSrc + "/configs/workloads/wan22-720p-aces-layerwise.yaml\n" +
                                                      "set: {steps: 1}\n"
                                                      "grid:\n  topology: [" +
                                                      kSrc + "/configs/topologies/aces-4xh100-pcie.yaml, " + kSrc +
                                                      "/configs/topologies/dgx-h100.yaml]\n  offload.prefetch_size: [1, 2]\n");
  SweepOptions o;
  o.threads = 2;
  const SweepTable t = run_sweep(parse_sweep_file(f), o);
  REQUIRE(t.rows.size() == 4);
  const char* topos[] = {"aces-4xh100-pcie", "dgx-h100"};
  for (size_t r = 0; r < 4; ++r) {
    const std::string prefetch = r % 2 == 0 ? "1" : "2";
    DitWorkload w = parse_workload_file(kSrc + "/configs/workloads/wan22-720p-aces-layerwise.yaml", {"steps=1", "offload.prefetch_size=" + prefetch});
    const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/" + topos[r / 2] + ".yaml"));
    set_base_params(w, base_params("", topo).params);
    const Schedule sched = generate_schedule(w);
    const Metrics m = compute_metrics(sched, topo, execute(sched, topo, w.params));
    CHECK(cell(t, r, "topology_name") == topos[r / 2]);
    CHECK(cell(t, r, "makespan_ms") == fmt::format("{:.4f}", m.makespan.s() * 1e3));
  }
  CHECK(cell(t, 0, "makespan_ms") != cell(t, 2, "makespan_ms"));  // the machines differ
  SweepOptions one;
  one.threads = 1;
  CHECK(to_csv(run_sweep(parse_sweep_file(f), one)) == to_csv(t));
}

TEST_CASE("sweep: shards merge into the unsharded table, and merge refuses duplicates, gaps and mixed sweeps") {
  const SweepSpec s = parse_sweep_file(small_sweep());
  const SweepTable whole = run_sweep(s);
  std::vector<std::pair<std::string, SweepTable>> shards;
  for (int i = 0; i < 3; ++i) {
    SweepOptions o;
    o.shard = i;
    o.shards = 3;
    shards.emplace_back(fmt::format("s{}.csv", i), parse_csv(to_csv(run_sweep(s, o)), fmt::format("s{}.csv", i)));
  }
  CHECK(shards[0].second.rows.size() == 3);  // points 0, 3, 6
  CHECK(to_csv(merge_sweep_tables(shards, s.size())) == to_csv(whole));
  auto dup = shards;
  dup.push_back(shards[1]);
  CHECK_THROWS_WITH_AS(merge_sweep_tables(dup), doctest::Contains("is also in s1.csv"), InputError);
  auto gap = shards;
  gap.erase(gap.begin() + 1);
  CHECK_THROWS_WITH_AS(merge_sweep_tables(gap), doctest::Contains("point 1 is in no shard"), InputError);
  auto tail = shards;
  tail.pop_back();  // points 2 and 5 are missing: a gap as well
  CHECK_THROWS_AS(merge_sweep_tables(tail, s.size()), InputError);
  auto mixed = shards;
  mixed[2].second.header[1] = "other";
  CHECK_THROWS_WITH_AS(merge_sweep_tables(mixed), doctest::Contains("columns differ"), InputError);
  std::vector<std::pair<std::string, SweepTable>> first_two{shards[0], shards[1]};
  first_two[1].second.rows.pop_back();  // 0,1,3,4 and 6 but the sweep has 7
  CHECK_THROWS_AS(merge_sweep_tables(first_two, s.size()), InputError);
}

TEST_CASE("sweep: an interrupted sweep resumes from its journal into the table an uninterrupted run writes") {
  const std::string file = small_sweep("journal.yaml");  // its own file: the test edits it
  const SweepSpec s = parse_sweep_file(file);
  const SweepTable whole = run_sweep(s);
  const std::string journal = file + ".csv.journal";
  {
    SweepJournal j(journal, s, SweepOptions{}, false);
    for (size_t i : {0, 2, 5}) j.add(whole.rows[i]);
  }
  std::ofstream(journal, std::ios::app) << "3,4,1,ok,,aces";  // the row being written when the sweep was killed
  SweepOptions o;
  o.finished = SweepJournal::read(journal, s, o);
  REQUIRE(o.finished.size() == 3);
  CHECK(o.finished.at(5) == whole.rows[5]);
  // The journal's rows are taken as they are, the rest run and reported.
  o.finished.at(2).back() = "from the journal";
  std::vector<std::string> ran;
  o.on_row = [&](const std::vector<std::string>& row) { ran.push_back(row[0]); };
  const SweepTable resumed = run_sweep(s, o);
  CHECK(resumed.rows[2].back() == "from the journal");
  std::sort(ran.begin(), ran.end());
  CHECK(ran == std::vector<std::string>{"1", "3", "4", "6"});
  o.finished = SweepJournal::read(journal, s, SweepOptions{});
  CHECK(to_csv(run_sweep(s, o)) == to_csv(whole));

  // Going on drops the cut row and appends after the last whole one.
  {
    SweepJournal j(journal, s, SweepOptions{}, true);
    j.add(whole.rows[1]);
  }
  const auto again = SweepJournal::read(journal, s, SweepOptions{});
  CHECK(again.size() == 4);
  CHECK(again.at(1) == whole.rows[1]);

  // A journal of another shard, of an edited sweep, or with a row of another point is refused.
  SweepOptions shard;
  shard.shards = 2;
  CHECK_THROWS_WITH_AS(SweepJournal::read(journal, s, shard), doctest::Contains("another shard's"), InputError);
  std::string text;
  {
    std::ifstream in(journal);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t row1 = text.find("\n1,");
  REQUIRE(row1 != std::string::npos);
  std::string swapped = text;
  swapped[row1 + 3] = swapped[row1 + 3] == '2' ? '4' : '2';  // point 1's SP degree
  std::ofstream(journal) << swapped;
  CHECK_THROWS_WITH_AS(SweepJournal::read(journal, s, SweepOptions{}), doctest::Contains("point 1 is not this sweep's"), InputError);
  std::ofstream(file, std::ios::app) << "# edited\n";
  CHECK_THROWS_WITH_AS(SweepJournal::read(journal, parse_sweep_file(file), SweepOptions{}), doctest::Contains("has changed since"), InputError);
}

TEST_CASE("sweep: CSV quoting round-trips, and damaged files are refused") {
  SweepTable t;
  t.header = {"point", "a", "status", "error"};
  t.rows = {{"0", "x,y", "error", "a \"quoted\"\nline"}, {"1", "", "ok", ""}};
  const std::string csv = to_csv(t);
  CHECK(csv == "point,a,status,error\n0,\"x,y\",error,\"a \"\"quoted\"\"\nline\"\n1,,ok,\n");
  const SweepTable back = parse_csv(csv, "t.csv");
  CHECK(back.header == t.header);
  CHECK(back.rows == t.rows);
  CHECK_THROWS_WITH_AS(parse_csv("point,a,status\n0,1\n", "d.csv"), doctest::Contains("d.csv:2"), InputError);
  CHECK_THROWS_WITH_AS(parse_csv("a,b\n", "d.csv"), doctest::Contains("not a sweep CSV"), InputError);
  CHECK_THROWS_AS(parse_csv("point,status\n0,\"ok\n", "d.csv"), InputError);
}

TEST_CASE("sweep: summary picks the best, the Pareto front and the least-VRAM point within tolerance") {
  SweepTable t;
  t.header = {"point", "offload.prefetch_size", "status", "error", "topology_name", "step_ms", "peak_vram_GiB"};
  t.rows = {{"0", "0", "ok", "", "pcie", "130.0", "1.0"},  // least VRAM, slow
            {"1", "1", "ok", "", "pcie", "100.5", "2.0"},  // within 1 % of the best
            {"2", "2", "ok", "", "pcie", "100.0", "3.4"},  // best
            {"3", "3", "ok", "", "pcie", "100.2", "4.8"},  // dominated by point 2
            {"4", "9", "error", "bad", "", "", ""},       {"5", "0", "ok", "", "nvlink", "80.0", "1.0"}};
  const std::string sum = sweep_summary(t, 0.01);
  CHECK(sum.find("6 points: 5 ran, 1 failed") != std::string::npos);
  CHECK(sum.find("point 4 (offload.prefetch_size=9) failed: bad") != std::string::npos);
  CHECK(sum.find("best: point 2, 100.00 ms/step, peak VRAM 3.40 GiB") != std::string::npos);
  CHECK(sum.find("Pareto front, peak VRAM vs step time (3 points)") != std::string::npos);
  CHECK(sum.find("offload.prefetch_size=1 is within 0.5 % of the best (offload.prefetch_size=2, 100.00 ms/step) and needs 1.40 GiB less peak VRAM") !=
        std::string::npos);
  CHECK(sum.find("on nvlink, run offload.prefetch_size=0: it is the fastest (80.00 ms/step)") != std::string::npos);
  // With no tolerance the best itself is recommended.
  CHECK(sweep_summary(t, 0.0).find("on pcie, run offload.prefetch_size=2: it is the fastest") != std::string::npos);
  // Groups come in topology-name order: nvlink before pcie.
  CHECK(sum.find("on nvlink") < sum.find("on pcie"));
}

TEST_CASE("sweep: topology.* keys edit the topology, and calibration: none drops the default") {
  const std::string f =
      write_sweep("topo.yaml", "name: t\nworkload: " + kSrc + "/configs/workloads/wan22-720p-aces-layerwise.yaml\n" +
                                   "set: {steps: 1, parallelism.ulysses: 1}\n"
                                   "grid:\n  topology.nodes.gpu{i}.memory: [80 GiB, 1 GiB]\n  topology.links.gpu_pcie.pcie: [gen5 x16, gen4 x16]\n");
  const SweepTable t = run_sweep(parse_sweep_file(f));
  REQUIRE(t.rows.size() == 4);
  CHECK(cell(t, 0, "status") == "ok");
  // Gen4 halves the H2D rate: the same bytes take longer to copy.
  CHECK(std::stod(cell(t, 1, "copy_ms")) > 1.9 * std::stod(cell(t, 0, "copy_ms")));
  // 1 GiB of VRAM cannot hold two 0.65 GiB layers.
  CHECK(cell(t, 2, "status") == "error");
  CHECK(cell(t, 2, "error").find("runs out of GPU memory") != std::string::npos);

  // calibration: none = the model's defaults; a file changes the rates.
  const std::string cal = kSrc + "/configs/calibrations/h200x4-nvlink.yaml";
  const std::string c = write_sweep("cal.yaml", "name: c\nworkload: " + kSrc + "/configs/workloads/wan22-720p-h200-layerwise.yaml\n" +
                                                    "calibration: " + cal + "\nset: {steps: 1}\ngrid:\n  calibration: [none, " + cal + "]\n");
  const SweepTable ct = run_sweep(parse_sweep_file(c));
  REQUIRE(ct.rows.size() == 2);
  CHECK(cell(ct, 0, "status") == "ok");
  CHECK(cell(ct, 1, "status") == "ok");
  const DitWorkload w = parse_workload_file(kSrc + "/configs/workloads/wan22-720p-h200-layerwise.yaml", {"steps=1"});
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  const Schedule sched = generate_schedule(w);
  CHECK(cell(ct, 0, "makespan_ms") == fmt::format("{:.4f}", execute(sched, topo, w.params).makespan.s() * 1e3));
  CHECK(cell(ct, 1, "makespan_ms") != cell(ct, 0, "makespan_ms"));
}

TEST_CASE("sweep: the point count is known before enumeration and refused past the limit") {
  std::string axes;
  for (int k = 0; k < 10; ++k) axes += fmt::format("  model.blocks{}: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n", k);
  const SweepSpec big =
      parse_sweep_file(write_sweep("big.yaml", "name: big\nworkload: " + kSrc + "/configs/workloads/wan22-720p-aces-layerwise.yaml\ngrid:\n" + axes));
  CHECK(big.size() == 10000000000u);
  CHECK_THROWS_WITH_AS(run_sweep(big), doctest::Contains("10000000000 points (10 model.blocks0 x 10 model.blocks1"), InputError);
  CHECK_THROWS_WITH_AS(run_sweep(big), doctest::Contains("more than the limit of 100000 a run. Pass --max-points 10000000000"), InputError);
  // Past size_t: saturated, not wrapped round to a small count.
  std::string many;
  for (int k = 0; k < 25; ++k) many += fmt::format("  model.blocks{}: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n", k);
  const SweepSpec huge = parse_sweep_file(
      write_sweep("huge.yaml", "name: huge\nworkload: " + kSrc + "/configs/workloads/wan22-720p-aces-layerwise.yaml\ngrid:\n" + many));
  CHECK(huge.size() == SIZE_MAX);
  CHECK_THROWS_WITH_AS(check_sweep_points(huge, SweepOptions{}), doctest::Contains("more than 10^19 points"), InputError);
  // The limit is on the points a shard runs: 7 points are 3, 2 and 2 in three shards.
  const SweepSpec s = parse_sweep_file(small_sweep());
  SweepOptions o;
  o.max_points = 3;
  CHECK_THROWS_WITH_AS(check_sweep_points(s, o), doctest::Contains("7 points (2 parallelism.ulysses x 3 offload.prefetch_size + 1)"), InputError);
  o.shards = 3;
  CHECK(check_sweep_points(s, o) == 3);
  o.shard = 2;
  CHECK(check_sweep_points(s, o) == 2);
  o.max_points = 1;
  CHECK_THROWS_WITH_AS(check_sweep_points(s, o), doctest::Contains("7 points (2 parallelism.ulysses x 3 offload.prefetch_size + 1), 2 in shard 3/3"),
                       InputError);
}

TEST_CASE("sweep: failed points are counted, and merge refuses shards of different sweeps") {
  const std::string file = small_sweep("identity.yaml");
  const SweepSpec s = parse_sweep_file(file);
  const SweepTable whole = run_sweep(s);
  CHECK(failed_points(whole) == 1);  // prefetch_size 99
  CHECK(!whole.origin);
  CHECK(to_csv(whole).rfind("point,", 0) == 0);  // an unsharded CSV has no origin line
  auto shards_of = [](const SweepSpec& sp, int n) {
    std::vector<std::pair<std::string, SweepTable>> out;
    for (int i = 0; i < n; ++i) {
      SweepOptions o;
      o.shard = i;
      o.shards = n;
      out.emplace_back(fmt::format("{}.s{}.csv", sp.name, i), parse_csv(to_csv(run_sweep(sp, o)), fmt::format("s{}.csv", i)));
    }
    return out;
  };
  const auto shards = shards_of(s, 2);
  REQUIRE(shards[1].second.origin);
  CHECK(shards[1].second.origin->shard == 1);
  CHECK(shards[1].second.origin->shards == 2);
  CHECK(shards[1].second.origin->sweep == sweep_identity(s));
  CHECK(to_csv(shards[1].second).rfind("# overlapsim sweep shard 2/2 of " + sweep_identity(s) + "\npoint,", 0) == 0);
  CHECK(to_csv(merge_sweep_tables(shards, s.size(), sweep_identity(s))) == to_csv(whole));
  // The same columns and points, another sweep (two steps a point).
  const SweepSpec edited =
      parse_sweep_file(write_sweep("identity2.yaml", "name: small\nworkload: " + kSrc + "/configs/workloads/wan22-720p-aces-layerwise.yaml\n" +
                                                         "set: {steps: 2, memory.outside: none}\n"
                                                         "grid:\n  parallelism.ulysses: [2, 4]\n  offload.prefetch_size: [0, 1, 2]\n"
                                                         "points:\n  - {offload.prefetch_size: 99}\n"));
  CHECK(sweep_identity(edited) != sweep_identity(s));
  auto mixed = shards;
  mixed[1] = shards_of(edited, 2)[1];
  CHECK_THROWS_WITH_AS(merge_sweep_tables(mixed),
                       doctest::Contains("these are shards of different sweeps (or the sweep's files changed between their runs): merge "
                                         "only the shards of one sweep"),
                       InputError);
  CHECK_THROWS_WITH_AS(merge_sweep_tables(shards, s.size(), sweep_identity(edited)), doctest::Contains("not of the --sweep file's"), InputError);
  // Shards of another shard count, and a shard beside an unsharded CSV.
  auto counts = shards;
  counts[1] = shards_of(s, 3)[1];
  CHECK_THROWS_WITH_AS(merge_sweep_tables(counts), doctest::Contains("shard 2/3 of sweep"), InputError);
  std::vector<std::pair<std::string, SweepTable>> plain{shards[0], {"whole.csv", whole}};
  CHECK_THROWS_WITH_AS(merge_sweep_tables(plain), doctest::Contains("whole.csv:1:1: error: not a shard's CSV"), InputError);
  // A damaged origin line names the file's first line; rows' lines count it.
  CHECK_THROWS_WITH_AS(parse_csv("# overlapsim sweep shard 3/2 of 0123456789abcdef\npoint,status\n", "o.csv"), doctest::Contains("o.csv:1:1"),
                       InputError);
  CHECK_THROWS_WITH_AS(parse_csv("# overlapsim sweep shard 1/2 of 0123456789abcdef\npoint,status\n0\n", "o.csv"), doctest::Contains("o.csv:3"),
                       InputError);
}
