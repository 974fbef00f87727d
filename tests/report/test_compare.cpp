// Records (overlapsim.records/v1) and the measured-vs-simulated comparison.
#include <doctest/doctest.h>

#include <array>

#include "gpu/executor.hpp"
#include "hw/fabric.hpp"
#include "report/compare.hpp"

using namespace osim;

namespace {
const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

// Rank 0: a step marker, a 10 ms kernel, a copy that overlaps it, then a
// 4 ms kernel alone. Times in ns; `scale` stretches the kernels.
nlohmann::json records(double scale, const std::string& source) {
  nlohmann::json j;
  j["schema"] = "overlapsim.records/v1";
  j["source"] = source;
  j["name"] = "t";
  j["makespan_ns"] = (10e6 + 4e6) * scale;
  j["ranks"] = nlohmann::json::array();
  j["ranks"].push_back(
      {{"rank", 0},
       {"gpu", "gpu0"},
       {"ops", nlohmann::json::array({nlohmann::json::array({0, "marker", "step 0 cond", 0, 0, 0, 0}),
                                      nlohmann::json::array({1, "gemm", "l0 qkv", 0, 4e3, 0, 10e6 * scale}),
                                      nlohmann::json::array({2, "h2d", "h2d e0.f0.l1", 4e3, 14e3, 1e6, 9e6}),
                                      nlohmann::json::array({3, "gemm", "l1 out", 14e3, 18e3, 10e6 * scale, (10e6 + 4e6) * scale})})}});
  j["meta"] = nlohmann::json::object();
  return j;
}
}  // namespace

TEST_CASE("compare: errors per class, window, layer and step, in closed form") {
  const Records m = parse_records(records(1.0, "measured"), "m.json");
  const Records s = parse_records(records(1.1, "simulated"), "s.json");
  const RecordComparison c = compare_records(m, s);
  CHECK(c.makespan_error() == doctest::Approx(0.10));
  REQUIRE(c.steps.size() == 1);
  CHECK(c.steps[0].error() == doctest::Approx(0.10));
  // gemm: 14 ms measured, 15.4 simulated; the copy is unchanged.
  bool gemm = false, copy = false;
  for (const auto& r : c.classes) {
    if (r.key == "gemm") {
      gemm = true;
      CHECK(r.count == 2);
      CHECK(r.measured_s == doctest::Approx(0.014));
      CHECK(r.error() == doctest::Approx(0.10));
    }
    if (r.key == "h2d") {
      copy = true;
      CHECK(r.error() == doctest::Approx(0.0));
    }
  }
  CHECK(gemm);
  CHECK(copy);
  // Windows: the first GEMM ran beside the copy for 8 of its 10 ms; the copy beside compute; the last GEMM alone.
  std::vector<std::string> keys;
  for (const auto& w : c.windows) keys.push_back(w.key);
  CHECK(keys == std::vector<std::string>{"gemm alone", "gemm || h2d", "h2d || compute"});
  CHECK(c.layer_summary.count == 2);
  CHECK(c.layer_summary.median_op_error == doctest::Approx(0.10));
}

TEST_CASE("compare refuses runs of different schedules") {
  Records m = parse_records(records(1.0, "measured"), "m.json");
  nlohmann::json other = records(1.0, "simulated");
  other["ranks"][0]["ops"][1][2] = "l0 ffn";
  CHECK_THROWS_AS(compare_records(m, parse_records(other, "s.json")), InputError);
  CHECK_THROWS_AS(parse_records(nlohmann::json{{"schema", "overlapsim.metrics/v1"}}, "x.json"), InputError);
}

TEST_CASE("which run the validate runner recorded: warm-up + the timed runs before the median") {
  nlohmann::json j = records(1.0, "measured");
  CHECK(runs_before_recorded(parse_records(j, "m.json")) == 0);  // no runner meta: a lone run
  j["meta"] = {{"warmup", 1}, {"repeat", 3}, {"makespans_s", {0.0141, 0.0139, 0.014}}};
  CHECK(runs_before_recorded(parse_records(j, "m.json")) == 3);  // the third timed run, after 1 + 2
  j["meta"]["makespans_s"] = {0.014, 0.0141, 0.0139};
  CHECK(runs_before_recorded(parse_records(j, "m.json")) == 1);
  j["meta"]["warmup"] = 2;
  CHECK(runs_before_recorded(parse_records(j, "m.json")) == 2);
  j["meta"]["makespans_s"] = {0.0141, 0.0139};  // the recorded makespan is not among them
  CHECK_THROWS_WITH_AS(runs_before_recorded(parse_records(j, "m.json")), doctest::Contains("m.json"), InputError);
  j["meta"]["makespans_s"] = "0.014";
  CHECK_THROWS_AS(runs_before_recorded(parse_records(j, "m.json")), InputError);
  j["meta"]["makespans_s"] = {0.014};
  j["meta"]["warmup"] = -1;
  CHECK_THROWS_AS(runs_before_recorded(parse_records(j, "m.json")), InputError);
}

TEST_CASE("records round-trip: what run --records writes, compare reads, and a run compared with itself has no error") {
  const Schedule s = parse_schedule_file(kSrc + "/configs/schedules/prefetch-overlap-2gpu.yaml");
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/aces-4xh100-pcie.yaml"));
  const ExecResult r = execute(s, topo);
  const std::string text = records_text(records_json(s, r, topo.name(), "simulated"));
  const Records a = parse_records(nlohmann::json::parse(text), "a.json");
  CHECK(a.ranks.size() == 2);
  CHECK(a.ranks[0].ops.size() == s.programs[0].ops->size());
  CHECK(a.makespan_ns == doctest::Approx(static_cast<double>(r.makespan.ps()) * 1e-3));
  const RecordComparison c = compare_records(a, a);
  CHECK(c.makespan_error() == 0);
  for (const auto& row : c.classes) CHECK(row.error() == 0);
  CHECK(records_text(records_json(s, r, topo.name(), "simulated")) == text);  // deterministic
}

TEST_CASE("records of some ranks hold those alone, and reading them as a run says what the writer left out") {
  const Schedule s = parse_schedule_file(kSrc + "/configs/schedules/prefetch-overlap-2gpu.yaml");
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/aces-4xh100-pcie.yaml"));
  const ExecResult r = execute(s, topo);
  const std::vector<char> kept = {0, 1};
  nlohmann::ordered_json meta;
  meta["left_out"] = "records.json holds rank 1 of 2: --records-all for every rank";
  const Records a = parse_records(nlohmann::json::parse(records_text(records_json(s, r, topo.name(), "simulated", meta, &kept))), "a.json");
  REQUIRE(a.ranks.size() == 1);
  CHECK(a.ranks[0].rank == 1);
  CHECK(a.ranks[0].ops.size() == s.programs[1].ops->size());
  CHECK_THROWS_WITH_AS(
      run_record_of(s, a),
      doctest::Contains("a.json: error: 1 ranks recorded, the schedule has 2: records.json holds rank 1 of 2: --records-all for every rank"),
      InputError);
}

TEST_CASE("compare: the gaps between adjacent compute ops, by whether the rank's own H2D ran across them") {
  // Program: an H2D (50-150 us), a GEMM (0-100), a memory kernel (107-200:
  // 7 us after the GEMM, the copy running), a GEMM (203-300: 3 us, no
  // copy). Simulated: the same ops back to back.
  auto run = [](const std::vector<std::array<double, 2>>& t, const std::string& source) {
    nlohmann::json j;
    j["schema"] = "overlapsim.records/v1";
    j["source"] = source;
    j["name"] = "g";
    j["makespan_ns"] = t.back()[1];
    const char* cls[] = {"h2d", "gemm", "memory kernel", "gemm"};
    const char* label[] = {"h2d e0.f0.l1", "l0 qkv", "l0 norm", "l0 out"};
    nlohmann::json ops = nlohmann::json::array();
    for (size_t i = 0; i < t.size(); ++i) ops.push_back(nlohmann::json::array({i, cls[i], label[i], 0, 0, t[i][0], t[i][1]}));
    j["ranks"] = nlohmann::json::array({{{"rank", 0}, {"gpu", "gpu0"}, {"ops", ops}}});
    return parse_records(j, source + ".json");
  };
  const Records m = run({{{50e3, 150e3}, {0, 100e3}, {107e3, 200e3}, {203e3, 300e3}}}, "measured");
  const Records s = run({{{50e3, 150e3}, {0, 100e3}, {100e3, 193e3}, {193e3, 290e3}}}, "simulated");
  const RecordComparison c = compare_records(m, s);
  REQUIRE(c.gaps.size() == 2);
  CHECK(c.gaps[0].key == "alone");
  CHECK(c.gaps[0].count == 1);
  CHECK(c.gaps[0].median_measured_us == doctest::Approx(3.0));
  CHECK(c.gaps[0].simulated_s == 0);
  CHECK(c.gaps[1].key == "|| h2d");
  CHECK(c.gaps[1].measured_s == doctest::Approx(7e-6));
  CHECK(format_record_comparison(c).find("gap to the next compute op") != std::string::npos);
}
