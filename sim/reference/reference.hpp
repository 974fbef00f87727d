// A reference machine (validate/reference/<machine>/manifest.yaml, schema
// overlapsim.reference/v1; docs/accuracy.md): the bench files its
// calibration is fitted from, the runs and programs measured on it, and the
// figures the simulation is expected to reproduce. Three steps, kept apart so
// that each can be tested alone: read the manifest (every key checked, every
// error at its file:line), run it (refit, replay, re-simulate, predict: the
// figures), check the figures against the manifest's `expected:`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "reference/reference_runs.hpp"
#include "workload/program.hpp"

namespace osim::reference {

/// What `expected:` holds: each error figure at most its value (to the printed
/// precision, 0.05), each rank correlation at least its value (to 0.005).
struct ErrorLimits {
  double median_pct = 0, worst_pct = 0;
};
struct ProgramLimits {
  double median_pct = 0, worst_pct = 0, spearman_min = 0;
};
struct RepeatedLimits {
  double median_pct = 0, worst_pct = 0, spearman_min = 0;
  std::optional<double> halves_spearman_min;  // within 0.005 either way: the sessions' own agreement
  std::optional<int> pairs_misordered_max;
  std::optional<double> host_median_pct;
};
struct ModelLimits {
  double median_pct = 0, worst_pct = 0, allocated_worst_pct = 0;
};
struct MemoryLimits {
  double allocated_worst_pct = 0, device_worst_pct = 0;
};
// A request set's stages (requests_stages: time; requests_memory: peak allocated, per stage).
struct StageMemoryLimits {
  double allocated_worst_pct = 0;
};
struct TraceLimits {
  double pinned_worst_pct = 0, pageable_worst_pct = 0;
};
struct Expected {
  std::optional<int64_t> replay_held_over_5pct;
  std::optional<ErrorLimits> validation, validation_timing_events, requests_stages;
  std::optional<ProgramLimits> programs, fp8_programs, requests;
  std::optional<RepeatedLimits> programs_repeated, fp8_programs_repeated, requests_repeated, models_repeated;
  std::optional<ModelLimits> models;
  std::optional<MemoryLimits> memory;
  std::optional<StageMemoryLimits> requests_memory;
  std::optional<TraceLimits> traces, traces_default;
};

/// Leave one machine out: what this machine's runs and programs should come
/// to when predicted from another reference machine's calibration (fitted from
/// that machine's microbenchmarks only) on this machine's topology.
struct CrossExpected {
  std::string folder;  // the other machine's folder (its manifest.yaml)
  SourceLocation at;   // its key under `predicted_from:`
  Expected expected;
};

/// A folder of program results, and the same programs run again (other boxes
/// or sessions). Paths resolved against the manifest's folder.
struct ProgramSet {
  std::string runs;
  std::vector<std::string> repeats;
  SourceLocation at;  // the section's `runs:`, for errors found in its results
};
struct TraceSet {
  std::string runs, steps;  // steps "": found by the import (ProfilerStep#N, else `step N` ranges)
};

/// A manifest read and checked: every path resolved against its folder (and
/// each folder of results found there).
struct Manifest {
  std::string file;  // manifest.yaml
  std::string machine, description;
  std::string topology;
  std::string calibration;           // the calibration file the sources make
  std::vector<std::string> sources;  // its bench files
  bool fill_from_family = false;     // made with `calibrate --fill-from-family` (calib/family_fill.hpp)
  std::optional<std::string> validation, timing_events;
  std::optional<ProgramSet> programs, fp8_programs, requests, models, memory;
  // traces: recorded as docs/import-trace.md asks (shapes, CUDA sync events);
  // traces_default: with torch.profiler's defaults, as users record them.
  std::optional<TraceSet> traces, traces_default;
  Expected expected;
  std::vector<CrossExpected> predicted_from;
};

/// Reads `folder`/manifest.yaml. InputError at the file:line of the first
/// wrong key, value, missing folder or file, or expected figure the manifest
/// has no section for.
Manifest read_manifest(const std::string& folder);

struct Options {
  bool write_calibration = false;  // write the refitted calibration over the manifest's file
};

/// The refitted calibration against the manifest's file.
enum class CalibrationState { same, differs, written };

struct ErrorFigures {
  size_t runs = 0;
  double median_pct = 0, worst_pct = 0;
};
/// A program set's `repeats:`: every session's runs, each program's median
/// run against its twin (figures), and the runs pooled (for the hosts' pace).
struct RepeatedSet {
  int sessions = 1;
  RepeatedFigures figures;
  ProgramFigures pooled;
};
struct ProgramSetFigures {
  ProgramFigures first;
  std::optional<RepeatedSet> repeated;
  std::optional<StageFigures> stages;  // requests: the first folder's stages against their twins'
};
struct TraceSetFigures {
  std::vector<TraceFigure> traces;
  double pinned_worst_pct = 0, pageable_worst_pct = 0;  // |step time error| against the program's
  int64_t waits_inferred = 0, inferred_timed = 0;       // stream waits without a cuda_sync event, all traces
};

/// What a manifest's machine reproduces; a section is absent where the manifest has none.
struct Figures {
  CalibrationState calibration = CalibrationState::same;
  size_t bench_files = 0;
  // Every bench row replayed: those of effects the model holds, and of those
  // the ones over 5 % that no time within the hand-off's phase brings within 5 %.
  long rows = 0, held = 0, held_over_5pct = 0;
  // The calibration file's fields left at their defaults that a shipped
  // machine of the GPU family measured: one warning line each (calib/family_fill.hpp);
  // predicted from another machine, also its host limits measured with
  // fewer GPUs than this machine has (host_limit_gap).
  std::vector<std::string> family_gaps;
  // Predicted from another GPU's calibration: what was carried to this
  // machine's GPU through the datasheets (carry_note), "" for none.
  std::string carried;
  std::optional<ErrorFigures> validation, validation_timing_events;
  std::optional<ProgramSetFigures> programs, fp8_programs, requests, models;
  std::optional<ProgramFigures> memory;
  std::optional<TraceSetFigures> traces, traces_default;
};

/// Refits the calibration from the sources (writing it with
/// o.write_calibration), replays every bench row, re-simulates the validation
/// runs and predicts every program set with the calibration file.
Figures run(const Manifest& m, const Options& o = {});

/// Leave one machine out: `target`'s validation runs, program sets, memory
/// and traces predicted with `source`'s calibration file (fitted from the
/// source's bench files only) on the target's topology. No refit and no
/// replay: `calibration`, `rows` and the timing-event figures stay empty.
Figures predict_from(const Manifest& target, const Manifest& source);

/// What `target` expects of predictions from the machine in `source_folder`,
/// if its manifest says (`predicted_from:`).
const CrossExpected* cross_expected(const Manifest& target, const std::string& source_folder);

/// A figure past what the manifest expects: the `expected:` key it is checked
/// under, and what is off (as the report names it).
struct Miss {
  std::string key, what;
};
/// Every figure against `expected`, in the report's order; a figure expected
/// but not in `f` is a miss too.
std::vector<Miss> check(const Figures& f, const Expected& expected);

}  // namespace osim::reference
