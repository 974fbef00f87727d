// A reference machine's manifest (reference/reference.hpp): bad manifests refused
// at their file:line before anything runs; figures checked against each
// `expected:` key, at and past its limit; a small real manifest run.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "core/errors.hpp"
#include "io/text_file.hpp"
#include "reference/reference.hpp"

using namespace osim;
namespace fs = std::filesystem;

namespace {
const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

// A folder holding a manifest (its text given), with empty folders of results
// beside it for the sections to name.
struct ManifestDir {
  fs::path dir;
  explicit ManifestDir(const std::string& text) {
    // One folder a process: CTest runs each test case as its own process, several at once.
    dir = fs::temp_directory_path() / ("osim-reference-manifest-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    for (const char* d : {"validation", "programs", "programs-run-2", "request", "models", "memory", "traces", "traces-default"})
      fs::create_directories(dir / d);
    std::ofstream(dir / "manifest.yaml") << text;
  }
  ~ManifestDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  [[nodiscard]] std::string folder() const { return dir.string(); }
};

// Lines 1-6: schema, machine, topology and calibration with one source; the
// sections a test adds follow from line 7.
std::string head(const std::string& sources = "[" + kSrc + "/validate/reference/h200x2-nvlink/bench-skew-1.json]") {
  return "schema: overlapsim.reference/v1\n"
         "machine: test-box\n"
         "topology: " +
         kSrc +
         "/configs/topologies/h200x4-nvlink.yaml\n"
         "calibration:\n"
         "  file: calibration.yaml\n"
         "  sources: " +
         sources + "\n";
}

// The manifest's error: its line, and its message.
std::pair<int, std::string> refused(const std::string& text) {
  const ManifestDir d(text);
  try {
    reference::read_manifest(d.folder());
  } catch (const InputError& e) {
    CHECK(e.where().file == (d.dir / "manifest.yaml").string());
    return {e.where().line, e.message()};
  }
  FAIL("read without an error: " << text);
  return {0, ""};
}
}  // namespace

TEST_CASE("a manifest is read with its paths resolved against its folder and every expected figure") {
  const ManifestDir d(head() + "validation: {runs: validation, timing_events: " + kSrc +
                      "/configs/calibrations/h200.yaml}\n"
                      "programs: {runs: programs, repeats: [programs-run-2]}\n"
                      "memory: {runs: memory}\n"
                      "requests: {runs: request}\n"
                      "traces: {runs: traces, steps: '^step \\d+$'}\n"
                      "traces_default: {runs: traces-default}\n"
                      "expected:\n"
                      "  replay_held_over_5pct: 31\n"
                      "  validation: {median_pct: 1.6, worst_pct: 2.5}\n"
                      "  programs_repeated: {median_pct: 1.3, worst_pct: 2.0, spearman_min: 0.93, pairs_misordered_max: 0}\n"
                      "  requests_stages: {median_pct: 12.3, worst_pct: 30.8}\n"
                      "  requests_memory: {allocated_worst_pct: 80.9}\n"
                      "  traces: {pinned_worst_pct: 6.5, pageable_worst_pct: 0.0}\n"
                      "  traces_default: {pinned_worst_pct: 6.4, pageable_worst_pct: 5.9}\n");
  const reference::Manifest m = reference::read_manifest(d.folder());
  CHECK(m.machine == "test-box");
  CHECK(m.calibration == (d.dir / "calibration.yaml").string());
  REQUIRE(m.sources.size() == 1);
  CHECK(m.validation == (d.dir / "validation").string());
  REQUIRE(m.programs);
  CHECK(m.programs->repeats == std::vector<std::string>{(d.dir / "programs-run-2").string()});
  CHECK(m.programs->at.line == 8);
  CHECK(!m.fp8_programs);
  REQUIRE(m.traces);
  CHECK(m.traces->steps == "^step \\d+$");
  REQUIRE(m.traces_default);  // no steps: the import finds them
  CHECK(m.traces_default->runs == (d.dir / "traces-default").string());
  CHECK(m.traces_default->steps.empty());
  CHECK(m.expected.replay_held_over_5pct == 31);
  REQUIRE(m.expected.validation);
  CHECK(m.expected.validation->worst_pct == 2.5);
  REQUIRE(m.expected.programs_repeated);
  CHECK(m.expected.programs_repeated->pairs_misordered_max == 0);
  CHECK(!m.expected.programs_repeated->halves_spearman_min);
  CHECK(!m.expected.programs);
  CHECK(m.expected.traces->pinned_worst_pct == 6.5);
  REQUIRE(m.expected.traces_default);
  CHECK(m.expected.traces_default->pageable_worst_pct == 5.9);
  REQUIRE(m.requests);
  CHECK(m.requests->runs == (d.dir / "request").string());
  CHECK(!m.expected.requests);
  REQUIRE(m.expected.requests_stages);
  CHECK(m.expected.requests_stages->median_pct == 12.3);
  CHECK(m.expected.requests_stages->worst_pct == 30.8);
  REQUIRE(m.expected.requests_memory);
  CHECK(m.expected.requests_memory->allocated_worst_pct == 80.9);
}

TEST_CASE("a bad manifest is refused at its line with what to do") {
  const std::string missing_folder = kSrc + "/no-such-file.json";
  const struct {
    const char* what;
    std::string text;
    int line;
    const char* says;
  } cases[] = {
      {"no bench files (once a crash)", head("[]"), 6, "calibration 'sources': expected a list of the bench files"},
      {"sources not a list", head("bench.json"), 6, "calibration 'sources': expected a list"},
      {"a source that is not there", head("[" + missing_folder + "]"), 6, "no bench file"},
      {"a wrong schema", "schema: overlapsim.reference/v2\n" + head().substr(head().find('\n') + 1), 1, "expected overlapsim.reference/v1"},
      {"an unknown key", head() + "expectd: {}\n", 7, "unknown key 'expectd'"},
      {"a section's folder missing", head() + "models:\n  runs: models-9\n", 8, "models 'runs': no folder"},
      {"a repeat's folder missing", head() + "programs: {runs: programs, repeats: [programs-run-99]}\n", 7, "programs 'repeats': no folder"},
      {"no repeats", head() + "programs: {runs: programs, repeats: []}\n", 7, "programs 'repeats': expected a list of folders"},
      {"a traces folder missing", head() + "traces: {runs: nowhere}\n", 7, "traces 'runs': no folder"},
      {"a default-setting traces folder missing", head() + "traces_default: {runs: nowhere}\n", 7, "traces_default 'runs': no folder"},
      {"default-setting trace limits without their section",
       head() + "traces: {runs: traces}\nexpected:\n  traces_default: {pinned_worst_pct: 1, pageable_worst_pct: 2}\n", 9,
       "expected 'traces_default': the manifest has no traces_default: section"},
      {"stage limits without a requests section", head() + "expected:\n  requests_memory: {allocated_worst_pct: 1}\n", 8,
       "expected 'requests_memory': the manifest has no requests: section"},
      {"a stage limit missing", head() + "requests: {runs: request}\nexpected:\n  requests_stages: {median_pct: 1}\n", 9,
       "missing the required key 'worst_pct'"},
      {"a memory section with repeats", head() + "memory: {runs: memory, repeats: [programs-run-2]}\n", 7, "unknown key 'repeats'"},
      {"an unknown expected key", head() + "expected:\n  programz: {}\n", 8, "unknown key 'programz'"},
      {"an expected limit without its section", head() + "expected:\n  programs: {median_pct: 1, worst_pct: 2, spearman_min: 0.9}\n", 8,
       "expected 'programs': the manifest has no programs: section"},
      {"repeated limits without repeats",
       head() + "programs: {runs: programs}\nexpected:\n  programs_repeated: {median_pct: 1, worst_pct: 2, spearman_min: 0.9}\n", 9, "with repeats:"},
      {"timing-event limits without timing events",
       head() + "validation: {runs: validation}\nexpected:\n  validation_timing_events: {median_pct: 1, worst_pct: 2}\n", 9,
       "validation: timing_events"},
      {"a limit missing", head() + "validation: {runs: validation}\nexpected:\n  validation: {median_pct: 1}\n", 9,
       "missing the required key 'worst_pct'"},
      {"an unknown limit", head() + "memory: {runs: memory}\nexpected:\n  memory: {allocated_worst_pct: 1, device_worst: 2}\n", 9,
       "unknown key 'device_worst'"},
      {"a limit that is not a number", head() + "traces: {runs: traces}\nexpected:\n  traces: {pinned_worst_pct: x, pageable_worst_pct: 1}\n", 9,
       "pinned_worst_pct"},
      {"predicted_from not a mapping", head() + "predicted_from: [../h200]\n", 7, "expected a mapping of other reference machines' folders"},
      {"predicted_from a folder without a manifest", head() + "predicted_from:\n  " + kSrc + "/configs: {}\n", 8, "no reference manifest in"},
      {"predicted_from a replay figure (no replay there)",
       head() + "predicted_from:\n  " + kSrc + "/validate/reference/h200x2-nvlink: {replay_held_over_5pct: 3}\n", 8,
       "unknown key 'replay_held_over_5pct'"},
      {"predicted_from a figure without its section",
       head() + "predicted_from:\n  " + kSrc + "/validate/reference/h200x2-nvlink:\n    programs: {median_pct: 1, worst_pct: 2, spearman_min: 0.9}\n",
       9, "the manifest has no programs: section"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const auto refusal = refused(c.text);
    const std::string& message = refusal.second;  // (clang 14 cannot capture a structured binding)
    CHECK(refusal.first == c.line);
    CHECK_MESSAGE(message.find(c.says) != std::string::npos, message);
  }
}

namespace {
// Figures exactly at every limit of `expected()`.
reference::Expected expected() {
  reference::Expected e;
  e.replay_held_over_5pct = 10;
  e.validation = reference::ErrorLimits{1.0, 2.0};
  e.validation_timing_events = reference::ErrorLimits{1.5, 2.5};
  e.programs = reference::ProgramLimits{1.0, 10.0, 0.9};
  e.fp8_programs = reference::ProgramLimits{2.0, 20.0, 0.8};
  e.programs_repeated = reference::RepeatedLimits{1.0, 5.0, 0.9, 0.95, 1, 30.0};
  e.fp8_programs_repeated = reference::RepeatedLimits{1.0, 5.0, 0.9, std::nullopt, std::nullopt, std::nullopt};
  e.models = reference::ModelLimits{3.0, 6.0, 11.0};
  e.models_repeated = reference::RepeatedLimits{1.5, 4.0, 1.0, std::nullopt, std::nullopt, 40.0};
  e.memory = reference::MemoryLimits{5.0, 8.0};
  e.traces = reference::TraceLimits{6.5, 0.0};
  e.traces_default = reference::TraceLimits{6.4, 5.9};
  e.requests_stages = reference::ErrorLimits{12.3, 30.8};
  e.requests_memory = reference::StageMemoryLimits{80.9};
  return e;
}
reference::ProgramSetFigures programs(double median, double worst, double spearman, double allocated_worst = 0) {
  reference::ProgramSetFigures p;
  p.first.median_pct = median, p.first.worst_pct = worst, p.first.spearman_min = spearman, p.first.allocated_worst_pct = allocated_worst;
  return p;
}
reference::RepeatedSet repeated(double median, double worst, double spearman, double halves, int misordered, double host_median) {
  reference::RepeatedSet r;
  r.sessions = 3;
  r.figures.median_pct = median, r.figures.worst_pct = worst, r.figures.spearman_min = spearman, r.figures.halves_spearman_min = halves;
  r.figures.pairs_misordered.assign(misordered, "a / b");
  r.pooled.host_median_pct = host_median;
  return r;
}
reference::Figures at_limits() {
  reference::Figures f;
  f.held_over_5pct = 10;
  f.validation = reference::ErrorFigures{16, 1.0, 2.0};
  f.validation_timing_events = reference::ErrorFigures{16, 1.5, 2.5};
  f.programs = programs(1.0, 10.0, 0.9);
  f.programs->repeated = repeated(1.0, 5.0, 0.9, 0.95, 1, 30.0);
  f.fp8_programs = programs(2.0, 20.0, 0.8);
  f.fp8_programs->repeated = repeated(1.0, 5.0, 0.9, 0.5, 7, 99.0);  // limits it has none of: not checked
  f.models = programs(3.0, 6.0, 0.1, 11.0);
  f.models->repeated = repeated(1.5, 4.0, 1.0, 0.0, 0, 40.0);
  f.memory = ProgramFigures{};
  f.memory->allocated_worst_pct = 5.0, f.memory->device_worst_pct = 8.0;
  f.traces = reference::TraceSetFigures{{}, 6.5, 0.0};
  f.traces_default = reference::TraceSetFigures{{}, 6.4, 5.9};
  f.requests = programs(9.0, 99.0, 0.0);  // no requests: limit, only its stages'
  f.requests->stages = StageFigures{{}, 12.3, 30.8, 16, 54.4, 80.9};
  return f;
}
std::vector<std::string> keys(const std::vector<reference::Miss>& misses) {
  std::vector<std::string> out;
  for (const auto& m : misses) out.push_back(m.key);
  return out;
}
}  // namespace

TEST_CASE("figures within what the manifest expects (to the printed precision) pass, and past it each is a miss under its key") {
  CHECK(reference::check(at_limits(), expected()).empty());
  CHECK(reference::check(at_limits(), reference::Expected{}).empty());
  // Within the printed precision: 0.04 over an error limit, 0.004 under a rank correlation.
  reference::Figures near = at_limits();
  near.validation->median_pct += 0.04;
  near.programs->first.spearman_min -= 0.004;
  near.programs->repeated->figures.halves_spearman_min += 0.004;  // the sessions' agreement: within 0.005 either way
  CHECK(reference::check(near, expected()).empty());

  // One figure past its limit at a time: the miss names its key and what is off.
  const struct {
    const char* key;
    void (*worsen)(reference::Figures&);
    const char* what;
  } cases[] = {
      {"replay_held_over_5pct", [](reference::Figures& f) { f.held_over_5pct = 11; }, "held rows over 5 %"},
      {"validation", [](reference::Figures& f) { f.validation->median_pct = 1.06; }, "validation runs"},
      {"validation", [](reference::Figures& f) { f.validation->worst_pct = 2.1; }, "validation runs"},
      {"validation_timing_events", [](reference::Figures& f) { f.validation_timing_events->worst_pct = 2.6; }, "with their timing events"},
      {"programs", [](reference::Figures& f) { f.programs->first.median_pct = 1.1; }, "programs"},
      {"programs", [](reference::Figures& f) { f.programs->first.worst_pct = 10.1; }, "programs"},
      {"programs", [](reference::Figures& f) { f.programs->first.spearman_min = 0.89; }, "programs"},
      {"programs_repeated", [](reference::Figures& f) { f.programs->repeated->figures.median_pct = 1.1; }, "programs over their sessions"},
      {"programs_repeated", [](reference::Figures& f) { f.programs->repeated->figures.spearman_min = 0.89; }, "programs over their sessions"},
      {"programs_repeated", [](reference::Figures& f) { f.programs->repeated->figures.pairs_misordered.push_back("c / d"); },
       "programs' configuration pairs ordered otherwise by the simulation"},
      {"programs_repeated", [](reference::Figures& f) { f.programs->repeated->pooled.host_median_pct = 30.1; },
       "programs' host issue time over their sessions"},
      {"programs_repeated", [](reference::Figures& f) { f.programs->repeated->figures.halves_spearman_min = 0.96; },
       "programs' sessions ranked against each other"},
      {"programs_repeated", [](reference::Figures& f) { f.programs->repeated->figures.halves_spearman_min = 0.94; },
       "programs' sessions ranked against each other"},
      {"fp8_programs", [](reference::Figures& f) { f.fp8_programs->first.spearman_min = 0.79; }, "fp8_programs"},
      {"fp8_programs_repeated", [](reference::Figures& f) { f.fp8_programs->repeated->figures.worst_pct = 5.1; }, "fp8_programs over their sessions"},
      {"models", [](reference::Figures& f) { f.models->first.allocated_worst_pct = 11.1; }, "models"},
      {"models", [](reference::Figures& f) { f.models->first.worst_pct = 6.1; }, "models"},
      {"models_repeated", [](reference::Figures& f) { f.models->repeated->pooled.host_median_pct = 40.1; },
       "models' host issue time over their sessions"},
      {"memory", [](reference::Figures& f) { f.memory->allocated_worst_pct = 5.1; }, "memory"},
      {"memory", [](reference::Figures& f) { f.memory->device_worst_pct = 8.1; }, "memory"},
      {"traces", [](reference::Figures& f) { f.traces->pinned_worst_pct = 6.6; }, "traces"},
      {"traces", [](reference::Figures& f) { f.traces->pageable_worst_pct = 0.1; }, "traces"},
      {"traces_default", [](reference::Figures& f) { f.traces_default->pinned_worst_pct = 6.5; }, "traces_default"},
      {"traces_default", [](reference::Figures& f) { f.traces_default->pageable_worst_pct = 6.0; }, "traces_default"},
      {"requests_stages", [](reference::Figures& f) { f.requests->stages->median_pct = 12.4; },
       "requests' stage times (median 12.4 %, worst 30.8 %; expected at most 12.3 % and 30.8 %)"},
      {"requests_stages", [](reference::Figures& f) { f.requests->stages->worst_pct = 30.9; },
       "requests' stage times (median 12.3 %, worst 30.9 %; expected at most 12.3 % and 30.8 %)"},
      {"requests_memory", [](reference::Figures& f) { f.requests->stages->allocated_worst_pct = 81.0; },
       "requests' stage peak allocated (worst 81.0 %; expected at most 80.9 %)"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.key);
    CAPTURE(c.what);
    reference::Figures f = at_limits();
    c.worsen(f);
    const std::vector<reference::Miss> misses = reference::check(f, expected());
    REQUIRE(misses.size() == 1);
    CHECK(misses[0].key == c.key);
    CHECK(misses[0].what == c.what);
  }

  // Several at once: in the report's order, each limit of a repeated set its own miss.
  reference::Figures f = at_limits();
  f.traces->pinned_worst_pct = 7;
  f.programs->repeated->pooled.host_median_pct = 31;
  f.programs->repeated->figures.median_pct = 2;
  f.held_over_5pct = 12;
  CHECK(keys(reference::check(f, expected())) ==
        std::vector<std::string>{"replay_held_over_5pct", "programs_repeated", "programs_repeated", "traces"});
}

TEST_CASE("a figure the manifest expects but the run did not make is a miss") {
  reference::Figures f = at_limits();
  f.validation_timing_events.reset();
  f.fp8_programs->repeated.reset();
  f.models.reset();
  f.memory.reset();
  f.traces_default.reset();
  f.requests->stages.reset();
  const std::vector<reference::Miss> misses = reference::check(f, expected());
  CHECK(keys(misses) == std::vector<std::string>{"validation_timing_events", "fp8_programs_repeated", "requests_stages", "requests_memory", "models",
                                                 "models_repeated", "memory", "traces_default"});
  for (const auto& m : misses) CHECK(m.what.find("no such figure") != std::string::npos);
  // Stage times but no stage's peak on both sides: the memory figure alone is missing.
  f = at_limits();
  f.requests->stages->memory_stages = 0;
  CHECK(keys(reference::check(f, expected())) == std::vector<std::string>{"requests_memory"});
}

TEST_CASE("a small manifest runs: its calibration written, then found the same, and its programs predicted") {
  // The 2xH200 box's full bench alone, and three of its programs.
  const ManifestDir d(head("[" + kSrc + "/validate/reference/h200x2-nvlink/bench-default.json.gz]") +
                      "programs: {runs: programs}\n"
                      "expected:\n"
                      "  programs: {median_pct: 100, worst_pct: 100, spearman_min: -1}\n");
  int copied = 0;
  for (const auto& e : fs::directory_iterator(kSrc + "/validate/reference/h200x2-nvlink/programs"))
    if (e.path().extension() == ".json" && e.path().filename().string().find("p2poff") == std::string::npos && copied < 3) {
      fs::copy_file(e.path(), d.dir / "programs" / e.path().filename());
      ++copied;
    }
  REQUIRE(copied == 3);
  const reference::Manifest m = reference::read_manifest(d.folder());
  const reference::Figures written = reference::run(m, {true});
  CHECK(written.calibration == reference::CalibrationState::written);
  CHECK(written.bench_files == 1);
  CHECK(written.rows > 0);
  CHECK(written.held <= written.rows);
  REQUIRE(fs::is_regular_file(m.calibration));
  const reference::Figures again = reference::run(m);
  CHECK(again.calibration == reference::CalibrationState::same);
  CHECK(again.rows == written.rows);
  CHECK(again.held_over_5pct == written.held_over_5pct);
  REQUIRE(again.programs);
  CHECK(again.programs->first.runs.size() == 3);
  CHECK(!again.programs->repeated);
  CHECK(!again.validation);
  CHECK(reference::check(again, m.expected).empty());
  // The calibration edited by hand (a line below "# Fits"): no longer what the sources make.
  std::string text = read_maybe_gzip(m.calibration);
  REQUIRE(text.find("# Fits") != std::string::npos);
  text.insert(text.find('\n', text.find("# Fits")) + 1, "# edited by hand\n");
  write_file(m.calibration, text);
  CHECK(reference::run(m).calibration == reference::CalibrationState::differs);
}

TEST_CASE("leave one machine out: predicted_from read, found by folder, and a machine predicted from itself is its own run") {
  const std::string other = kSrc + "/validate/reference/h200x2-nvlink";
  const ManifestDir d(head("[" + other + "/bench-default.json.gz]") + "programs: {runs: programs}\npredicted_from:\n  " + other +
                      ":\n    programs: {median_pct: 4, worst_pct: 9, spearman_min: 0.8}\n");
  int copied = 0;
  for (const auto& e : fs::directory_iterator(other + "/programs"))
    if (e.path().extension() == ".json" && e.path().filename().string().find("p2poff") == std::string::npos && copied < 3) {
      fs::copy_file(e.path(), d.dir / "programs" / e.path().filename());
      ++copied;
    }
  REQUIRE(copied == 3);
  const reference::Manifest m = reference::read_manifest(d.folder());
  REQUIRE(m.predicted_from.size() == 1);
  CHECK(m.predicted_from[0].at.line == 9);
  REQUIRE(m.predicted_from[0].expected.programs);
  CHECK(m.predicted_from[0].expected.programs->worst_pct == 9);
  // Found by the folder however it is spelled; not for a machine it does not name.
  CHECK(reference::cross_expected(m, other + "/") == &m.predicted_from[0]);
  CHECK(reference::cross_expected(m, other + "/../h200x2-nvlink") == &m.predicted_from[0]);
  CHECK(reference::cross_expected(m, kSrc + "/validate/reference/h200") == nullptr);
  // This machine's own calibration written, then its programs predicted from itself: the same figures as its run.
  const reference::Figures own = reference::run(m, {true});
  const reference::Figures self = reference::predict_from(m, m);
  REQUIRE(own.programs);
  REQUIRE(self.programs);
  CHECK(self.rows == 0);
  CHECK(self.programs->first.median_pct == own.programs->first.median_pct);
  CHECK(self.programs->first.worst_pct == own.programs->first.worst_pct);
  // One bench file leaves fields at their defaults that a shipped H200 measured: the borrowed
  // calibration's warnings are those its own run prints.
  // (Predicted, it may also warn of host tables short of the topology: host_limit_gap.)
  CHECK(!own.family_gaps.empty());
  std::vector<std::string> family_only;
  for (const std::string& w : self.family_gaps)
    if (w.find("warning: host limits") == std::string::npos) family_only.push_back(w);
  CHECK(family_only == own.family_gaps);
  // From the 2xH200 box's own calibration (fitted from more than this one bench file): other figures, same runs.
  const reference::Figures from_box = reference::predict_from(m, reference::read_manifest(other));
  REQUIRE(from_box.programs);
  CHECK(from_box.programs->first.runs.size() == 3);
  CHECK(from_box.bench_files == reference::read_manifest(other).sources.size());
  CHECK(from_box.programs->first.median_pct != own.programs->first.median_pct);
  // Its gaps are its own: against the other shipped H200 calibrations, never against itself.
  REQUIRE(!from_box.family_gaps.empty());
  for (const std::string& w : from_box.family_gaps) {
    if (w.find("warning: host limits") != std::string::npos) continue;
    CHECK(w.find("configs/calibrations/h200x2-nvlink.yaml") == std::string::npos);
    CHECK((w.find("configs/calibrations/h200.yaml") != std::string::npos || w.find("configs/calibrations/h200x4-nvlink.yaml") != std::string::npos));
  }
}
