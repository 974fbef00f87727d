// Reference programs' results (overlapsim.program/v1): the measured host
// issue time read from the median run, and the twin's against a closed form.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "workload/program.hpp"

using namespace osim;

namespace {
const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

// A single-GPU twin with every weight resident: its host issues kernels only.
nlohmann::json program_doc() {
  return {{"schema", "overlapsim.program/v1"},
          {"name", "tiny-none"},
          {"group", "tiny"},
          {"makespans_s", {0.012, 0.010, 0.011}},
          {"median_s", 0.011},
          {"runs_before", 2},
          {"host_issue_s", {{0.004, 0.006}, {0.003, 0.002}, {0.005, 0.007}}},
          {"workload",
           {{"name", "tiny-none"},
            {"model", {{"preset", "custom"}, {"blocks", 2}, {"hidden", 1024}, {"ffn", 4096}, {"heads", 8}, {"head_dim", 128}, {"text_tokens", 64}}},
            {"tokens", 1024},
            {"steps", 1},
            {"cfg", "none"},
            {"parallelism", {{"ulysses", 1}}},
            {"runtime", {{"framework", "pytorch"}}}}}};
}

std::string write_doc(const nlohmann::json& doc, const std::string& name) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << doc.dump();
  return path.string();
}
}  // namespace

TEST_CASE("a program's host issue time is the slowest rank's in the median run") {
  const ProgramRun run = read_program_run(write_doc(program_doc(), "osim-program-host.json"));
  REQUIRE(run.host_issue_s);
  CHECK(*run.host_issue_s == doctest::Approx(0.007));  // the third run's makespan is the median; its rank 1
  nlohmann::json old = program_doc();
  old.erase("host_issue_s");
  CHECK_FALSE(read_program_run(write_doc(old, "osim-program-old.json")).host_issue_s);
}

TEST_CASE("a malformed host issue time is refused naming the file") {
  nlohmann::json doc = program_doc();
  doc["host_issue_s"] = {{0.004}, {0.003}};  // two runs for three makespans
  const std::string path = write_doc(doc, "osim-program-bad-host.json");
  CHECK_THROWS_WITH_AS(read_program_run(path), doctest::Contains("osim-program-bad-host.json"), InputError);
  CHECK_THROWS_WITH_AS(read_program_run(path), doctest::Contains("one list of ranks' issue times per timed run"), InputError);
  doc["host_issue_s"] = {{0.0}, {0.0}, {0.0}};
  CHECK_THROWS_WITH_AS(read_program_run(write_doc(doc, "osim-program-zero-host.json")), doctest::Contains("no positive issue time"), InputError);
}

TEST_CASE("the twin's host issue time is its host's calls up to the closing synchronisation") {
  const ProgramRun run = read_program_run(write_doc(program_doc(), "osim-program-twin.json"));
  ModelParams p;
  // Only kernel launches cost the host, 10 us each: the host reaches the
  // closing sync after (launches) x 10 us, however long the GPU runs (a
  // kernel standing for several framework ops launches each).
  p.overheads = OverheadParams{};
  p.overheads.kernel_launch = Time::from_us(10);
  p.overheads.framework_op_call = p.overheads.memcpy_call = p.overheads.event_call = p.overheads.alloc_call = p.overheads.free_call = Time::zero();
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  DitWorkload w = parse_workload_string(run.workload_yaml, run.file);
  const Schedule s = generate_schedule(w);
  int kernels = 0;
  int launches = 0;
  for (const Op& op : *s.programs[0].ops) {
    kernels += op.kind == OpKind::Kernel;
    launches += op.kind == OpKind::Kernel ? op.launches : 0;
  }
  REQUIRE(kernels > 10);
  CHECK(launches == kernels + kernels / 15 * 3);  // the Wan-shaped block's 15 kernels: rope 2 launches, the residual 3
  const ProgramPrediction pred = predict_program(run, topo, p);
  CHECK(pred.simulated_host_s == doctest::Approx(launches * 10e-6).epsilon(1e-9));
  CHECK(pred.simulated_host_s < pred.simulated_s);  // the GPU runs behind the host
  CHECK(*pred.measured_host_s == doctest::Approx(0.007));
  CHECK(pred.host_error() == doctest::Approx((launches * 10e-6 - 0.007) / 0.007));
}

TEST_CASE("programs whose measured host set the pace and whose twin's did not are named") {
  auto run = [](const char* name, double measured_s, double host_s, double simulated_s, double sim_host_s) {
    ProgramPrediction p;
    p.name = name;
    p.group = "g";
    p.measured_s = measured_s;
    p.simulated_s = simulated_s;
    p.measured_host_s = host_s;
    p.simulated_host_s = sim_host_s;
    return p;
  };
  const ProgramPrediction paced = run("paced", 0.070, 0.069, 0.055, 0.018);     // issued to 99 %, the twin to 33 %
  const ProgramPrediction blocked = run("blocked", 1.15, 1.05, 1.14, 1.02);     // both hosts held by pageable copies
  const ProgramPrediction ahead = run("ahead", 0.054, 0.031, 0.054, 0.006);     // the measured host ran ahead too
  const ProgramPrediction edge = run("edge", 0.100, 0.091, 0.100, 0.049);       // 91 % against 49 %: named
  const ProgramPrediction short_of = run("short", 0.100, 0.089, 0.100, 0.049);  // 89 %: not
  CHECK(paced.host_bound_measured_only());
  CHECK_FALSE(blocked.host_bound_measured_only());
  CHECK_FALSE(ahead.host_bound_measured_only());
  CHECK(edge.host_bound_measured_only());
  CHECK_FALSE(short_of.host_bound_measured_only());
  const std::string text = format_program_figures(program_figures({paced, blocked, ahead, edge, short_of}));
  CHECK(
      text.find(
          "the twins' not (a framework's host is slower than a generated twin's; import the program's trace, docs/import-trace.md): paced edge\n") !=
      std::string::npos);
  CHECK(format_program_figures(program_figures({blocked, ahead})).find("set the pace") == std::string::npos);
}

TEST_CASE("a program measured more than once is compared at its median run and against its range") {
  auto run = [](const char* name, const char* group, double measured_ms, double simulated_ms) {
    ProgramPrediction p;
    p.name = name;
    p.group = group;
    p.measured_s = measured_ms / 1e3;
    p.simulated_s = simulated_ms / 1e3;
    return p;
  };
  // a: three sessions 100, 130, 110 ms, twins 119-121: median 110, simulated 120 (+9.09 %), within 100-130.
  // b: two sessions 50, 60 ms (median 55), twin 70 (+27.27 %), outside. c: once, left out.
  const RepeatedFigures f = repeated_figures({run("a", "g", 100, 121), run("b", "g", 50, 70), run("a", "g", 130, 120), run("c", "g", 80, 80),
                                              run("b", "g", 60, 70), run("a", "g", 110, 119)});
  REQUIRE(f.programs.size() == 2);
  CHECK(f.programs[0].name == "a");
  CHECK(f.programs[0].runs == 3);
  CHECK(f.programs[0].measured_median_s == doctest::Approx(0.110));
  CHECK(f.programs[0].measured_min_s == doctest::Approx(0.100));
  CHECK(f.programs[0].measured_max_s == doctest::Approx(0.130));
  CHECK(f.programs[0].simulated_s == doctest::Approx(0.120));
  CHECK(f.programs[0].within_range());
  CHECK(f.programs[1].measured_median_s == doctest::Approx(0.055));
  CHECK_FALSE(f.programs[1].within_range());
  CHECK(f.median_pct == doctest::Approx((100.0 / 11 + 300.0 / 11) / 2));
  CHECK(f.worst_pct == doctest::Approx(300.0 / 11));
  CHECK(f.within_range == 1);
  CHECK(f.spearman_min == 1);  // no group of three repeats
  const std::string text = format_repeated_figures(f);
  CHECK(text.find("2 programs measured more than once: makespan error against each one's median run: median 18.2 %, worst 27.3 %; 1 simulated "
                  "within their measured range") != std::string::npos);
  CHECK(text.find("+27.3%  outside\n") != std::string::npos);
  CHECK(format_repeated_figures(repeated_figures({run("a", "g", 100, 121), run("c", "g", 80, 80)})).empty());
  // Three repeated programs in one group: their medians 110, 55, 90 against twins 120, 70, 60 rank 3-1-2 against 3-2-1.
  const RepeatedFigures ranked = repeated_figures({run("a", "g", 100, 120), run("a", "g", 120, 120), run("b", "g", 50, 70), run("b", "g", 60, 70),
                                                   run("d", "g", 80, 60), run("d", "g", 100, 60)});
  CHECK(ranked.spearman_min == doctest::Approx(0.5));
}

namespace {
// One session's result of program `name` in group g, and its twin's makespan.
ProgramPrediction session_run(const char* name, const std::string& session, double measured_ms, double simulated_ms) {
  ProgramPrediction p;
  p.name = name;
  p.group = "g";
  p.session = session;
  p.measured_s = measured_ms / 1e3;
  p.simulated_s = simulated_ms / 1e3;
  return p;
}
}  // namespace

TEST_CASE("configuration pairs every session ran in the same order, and those the simulation orders otherwise") {
  const auto run = session_run;
  // Three sessions. a is faster than b in all three (b simulated faster: misordered), than c (simulated alike)
  // and than e (simulated equal: misordered, tied); b and c swap in session 3, and c ties e in session 2 (not
  // ordered); b and e swap in session 2; d is measured in two sessions only (its pairs need three).
  std::vector<ProgramPrediction> runs;
  const char* sessions[] = {"s1", "s2", "s3"};
  const double a[] = {100, 101, 99}, b[] = {110, 108, 112}, c[] = {105, 104, 115}, e[] = {120, 104, 130};
  for (int s = 0; s < 3; ++s) {
    runs.push_back(run("a", sessions[s], a[s], 110));
    runs.push_back(run("b", sessions[s], b[s], 105));
    runs.push_back(run("c", sessions[s], c[s], 115));
    runs.push_back(run("e", sessions[s], e[s], 110));
    if (s < 2) runs.push_back(run("d", sessions[s], 50, 200));
  }
  const RepeatedFigures f = repeated_figures(runs);
  CHECK(f.pairs_ordered == 3);
  REQUIRE(f.pairs_misordered.size() == 2);
  CHECK(f.pairs_misordered[0] == "a / b");
  CHECK(f.pairs_misordered[1] == "a / e (tied)");
  const std::string text = format_repeated_figures(f);
  CHECK(text.find("  ordered otherwise by the simulation (measured faster / slower): a / b\n") != std::string::npos);
  CHECK(text.find("; of the 3 configuration pairs every session ran in the same order (three or more measured both), the simulation orders 1 "
                  "alike\n") != std::string::npos);
  // Without sessions (one folder): nothing is ordered, and the summary says nothing of pairs.
  for (auto& r : runs) r.session.clear();
  CHECK(repeated_figures(runs).pairs_ordered == 0);
  CHECK(format_repeated_figures(repeated_figures(runs)).find("configuration pairs") == std::string::npos);
}

TEST_CASE("a group's ranking by the simulation beside one half of the sessions' against the other's") {
  const auto run = session_run;
  const char* names[] = {"a", "b", "c"};
  const double twins[] = {1, 2, 3};
  // Two sessions, a b c and a c b, the twins a b c: one split, its halves the sessions. Halves: 1 - 6 * 2 / 24 = 0.5;
  // the twins against s1 1, against s2 0.5 (median 0.75); against the medians (1, 2.5, 2.5) 1.5 / sqrt(1.5 * 2).
  {
    std::vector<ProgramPrediction> runs;
    const double s1[] = {1, 2, 3}, s2[] = {1, 3, 2};
    for (int p = 0; p < 3; ++p) runs.push_back(run(names[p], "s1", s1[p], twins[p])), runs.push_back(run(names[p], "s2", s2[p], twins[p]));
    const RepeatedFigures f = repeated_figures(runs);
    REQUIRE(f.rankings.size() == 1);
    CHECK(f.rankings[0].sessions == 2);
    CHECK(f.rankings[0].splits == 1);
    CHECK(f.rankings[0].halves == doctest::Approx(0.5));
    CHECK(f.rankings[0].simulated_halves == doctest::Approx(0.75));
    CHECK(f.rankings[0].simulated == doctest::Approx(1.5 / std::sqrt(3.0)));
    CHECK(f.halves_spearman_min == doctest::Approx(0.5));
    CHECK(format_repeated_figures(f).find(
              "  g: 3 programs' medians ranked against the simulation: rank correlation 0.87; half the 2 sessions' medians "
              "against the other half's 0.50, the simulation against a half's 0.75 (the median over 1 splits)\n") != std::string::npos);
  }
  // Four sessions, three alike (1 2 3) and s4 with a slowest (4 2 3): three splits, in each the half with s4 ranks (2.5, 2, 3):
  // halves 0.5 in all three; the twins 1 against one half, 0.5 against the other (median 0.75).
  {
    std::vector<ProgramPrediction> runs;
    for (const char* s : {"s1", "s2", "s3"})
      for (int p = 0; p < 3; ++p) runs.push_back(run(names[p], s, twins[p], twins[p]));
    const double s4[] = {4, 2, 3};
    for (int p = 0; p < 3; ++p) runs.push_back(run(names[p], "s4", s4[p], twins[p]));
    const RepeatedFigures f = repeated_figures(runs);
    REQUIRE(f.rankings.size() == 1);
    CHECK(f.rankings[0].splits == 3);
    CHECK(f.rankings[0].halves == doctest::Approx(0.5));
    CHECK(f.rankings[0].simulated_halves == doctest::Approx(0.75));
    // Three sessions: a half of one session against the other two, three ways.
    runs.resize(9);
    CHECK(repeated_figures(runs).rankings[0].splits == 3);
  }
  // 22 sessions that all rank a b c alike (by varied amounts): C(22, 11) / 2 splits is past 100,000, so a sample of
  // 100,000; every one of them ranks alike.
  {
    std::vector<ProgramPrediction> runs;
    for (int s = 0; s < 22; ++s)
      for (int p = 0; p < 3; ++p) runs.push_back(run(names[p], "s" + std::to_string(s), 10 * (p + 1) + s % 5, twins[p]));
    const RepeatedFigures f = repeated_figures(runs);
    REQUIRE(f.rankings.size() == 1);
    CHECK(f.rankings[0].splits == 100000);
    CHECK(f.rankings[0].halves == 1);
    CHECK(f.rankings[0].simulated_halves == 1);
  }
  // One folder (no sessions told apart): no ranking by halves.
  std::vector<ProgramPrediction> one;
  for (int p = 0; p < 3; ++p) one.push_back(run(names[p], "", twins[p], twins[p])), one.push_back(run(names[p], "", twins[p] + 1, twins[p]));
  CHECK(repeated_figures(one).rankings.empty());
  CHECK(format_repeated_figures(repeated_figures(one)).find("half the sessions") == std::string::npos);
}

TEST_CASE("a request result is read as a program measured end to end, its twin predicted with its stages") {
  const std::string path = kSrc + "/validate/reference/h100-sxm/request/request-480x832x17-enc-resident-dit-resident-vae-resident-fp32.json";
  const ProgramRun run = read_program_run(path);
  CHECK(run.name == "request-480x832x17-enc-resident-dit-resident-vae-resident-fp32");
  CHECK(run.group == "request");
  CHECK(run.measured_s == doctest::Approx(1.3606462079999915));  // median_wall_s, not a step time
  CHECK(run.workload_yaml.find("\"stages\"") != std::string::npos);
  // Its runs went back to back after one warm-up: the median one (the third) had three before it.
  CHECK(run.runs_before == 3);
  {
    std::ifstream in(path);
    nlohmann::json older = nlohmann::json::parse(in);
    older.erase("runs_before");  // an older result: warmup + the median-wall run's place among its runs
    CHECK(read_program_run(write_doc(older, "osim-request-no-runs-before.json")).runs_before == 3);
    older["runs"][2]["wall_s"] = 1.0;  // now the second run holds the median wall
    CHECK(read_program_run(write_doc(older, "osim-request-no-runs-before-2.json")).runs_before == 2);
  }
  nlohmann::json doc = program_doc();
  doc["schema"] = "overlapsim.request/v1";  // a request has median_wall_s
  CHECK_THROWS_WITH_AS(read_program_run(write_doc(doc, "osim-request-bad.json")), doctest::Contains("median_wall_s"), InputError);
  doc["schema"] = "overlapsim.other/v1";
  CHECK_THROWS_WITH_AS(read_program_run(write_doc(doc, "osim-request-other.json")), doctest::Contains("overlapsim.request/v1"), InputError);
}

TEST_CASE("a request's stages: each one's median time, and the median over its runs of its peak allocated") {
  const std::string path = kSrc + "/validate/reference/h100-sxm/request/request-480x832x17-enc-resident-dit-resident-vae-resident-fp32.json";
  const ProgramRun run = read_program_run(path);
  std::ifstream in(path);
  const nlohmann::json doc = nlohmann::json::parse(in);
  REQUIRE(run.stages.size() == 3);
  for (const ProgramRun::Stage& st : run.stages) {
    CAPTURE(st.name);
    CHECK(st.time_s == doc.at("median_stages_s").at(st.name).get<double>());
    // Three runs: the middle one of their peaks.
    std::vector<double> peaks;
    for (const auto& r : doc.at("runs")) peaks.push_back(r.at("peak_allocated_bytes").at(st.name).get<double>());
    REQUIRE(peaks.size() == 3);
    std::sort(peaks.begin(), peaks.end());
    REQUIRE(st.peak_allocated);
    CHECK(*st.peak_allocated == peaks[1]);
  }
  // An older result without stages reads as before; a stage of no time is refused.
  nlohmann::json older = doc;
  older.erase("median_stages_s");
  CHECK(read_program_run(write_doc(older, "osim-request-no-stages.json")).stages.empty());
  nlohmann::json bad = doc;
  bad["median_stages_s"]["dit"] = 0.0;
  CHECK_THROWS_WITH_AS(read_program_run(write_doc(bad, "osim-request-bad-stage.json")), doctest::Contains("stage 'dit'"), InputError);
}
