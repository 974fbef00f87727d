// A reference program's measured run (validate/programs/, schema
// overlapsim.program/v1): what a framework program measured on a GPU, and
// its twin as a workload, simulated to compare. docs/formats/programs.md.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "gpu/executor.hpp"
#include "hw/fabric.hpp"
#include "workload/dit.hpp"

namespace osim {

struct ProgramRun {
  std::string file, name;
  std::string group;          // configurations ranked against each other (e.g. one model size)
  double measured_s = 0;      // the median of the timed runs
  int runs_before = 0;        // runs back to back before the median one (warm-up included)
  std::string workload_yaml;  // the twin, as the program wrote it
  // Its peak memory (absent in older results): the caching allocator's peak
  // allocated bytes, and the GPU's peak in use (memory outside the allocator,
  // read after the runs, plus the allocator's peak reserved bytes).
  std::optional<double> peak_allocated, peak_device;
  // The host's issue time (absent in older results): from the start event's
  // record to the end event's, the slowest rank's, in the median run.
  std::optional<double> host_issue_s;
  // A request's stages (overlapsim.request/v1, absent in older results):
  // each one's median time over the timed runs and its peak allocated bytes
  // (the median over the runs that measured it), by name.
  struct Stage {
    std::string name;
    double time_s = 0;
    std::optional<double> peak_allocated;
  };
  std::vector<Stage> stages;
};

/// Reads a program's result file; InputError naming the file on a wrong schema or field.
ProgramRun read_program_run(const std::string& path);

struct ProgramPrediction {
  std::string name, group;
  std::string session;  // the folder its result came from: one box's runs, minutes apart
  double measured_s = 0, simulated_s = 0;
  [[nodiscard]] double error() const { return (simulated_s - measured_s) / measured_s; }
  // Peak memory, where the run measured it: the simulated one's allocated
  // part (all but runtime and reserve) and its whole peak, rank 0's.
  std::optional<double> measured_allocated, measured_device;
  double simulated_allocated = 0, simulated_device = 0;
  [[nodiscard]] double allocated_error() const { return (simulated_allocated - *measured_allocated) / *measured_allocated; }
  [[nodiscard]] double device_error() const { return (simulated_device - *measured_device) / *measured_device; }
  // The host's issue time, where the run measured it, and the twin's: when
  // its slowest rank's host reached the run's closing synchronisation.
  std::optional<double> measured_host_s;
  double simulated_host_s = 0;
  [[nodiscard]] double host_error() const { return (simulated_host_s - *measured_host_s) / *measured_host_s; }
  // The measured host issued until 90 % of the makespan or later (it set the
  // pace, or something blocked it) where the twin's was done within half of it.
  [[nodiscard]] bool host_bound_measured_only() const {
    return measured_host_s && *measured_host_s >= 0.9 * measured_s && simulated_host_s <= 0.5 * simulated_s;
  }
};

/// The twin simulated on `topo` with `params`, after the runs that went
/// before it (the GPUs' sustained-load state at its start).
ProgramPrediction predict_program(const ProgramRun& run, const hw::Topology& topo, const ModelParams& params);

/// The twin's schedule and its simulated run (with records), for reports
/// that read more of it than the prediction (a request's stages).
struct TwinRun {
  Schedule schedule;
  ExecResult result;
};
TwinRun simulate_twin(const ProgramRun& run, const hw::Topology& topo, const ModelParams& params);
/// What predict_program makes of the twin's run.
ProgramPrediction prediction_of(const ProgramRun& run, const ExecResult& res);
/// A simulated peak as torch counts allocated: the VRAM less what the
/// runtime, the allocator's reserve and NCCL held at that peak (`parts`).
double allocated_as_torch_counts(Bytes vram, const std::array<Bytes, kMemParts>& parts);

/// Every program result (*.json) in a folder, by name.
std::vector<std::string> program_files(const std::string& dir);

/// What a set of predictions says: |makespan error| median and worst (%), and
/// the least over the groups of three or more of the rank correlation
/// (Spearman) between measured and simulated makespans (1 where none has three).
struct ProgramFigures {
  std::vector<ProgramPrediction> runs;
  double median_pct = 0, worst_pct = 0, spearman_min = 1;
  // Over the runs that measured their memory (memory_runs of them): |peak
  // allocated error| and |peak in use error|, median and worst (%).
  int memory_runs = 0;
  double allocated_median_pct = 0, allocated_worst_pct = 0, device_median_pct = 0, device_worst_pct = 0;
  // Over the runs that measured their host issue time: |error|, median and worst (%).
  int host_runs = 0;
  double host_median_pct = 0, host_worst_pct = 0;
};
ProgramFigures program_figures(std::vector<ProgramPrediction> runs);

/// A program measured more than once (on several boxes, or sessions): its
/// simulated makespan against the median of its measured ones, and whether it
/// lies within their range (the boxes' own spread).
struct RepeatedProgram {
  std::string name, group;
  int runs = 0;
  double measured_median_s = 0, measured_min_s = 0, measured_max_s = 0;
  double simulated_s = 0;  // the median of its twins' (each after its own runs before)
  [[nodiscard]] double error() const { return (simulated_s - measured_median_s) / measured_median_s; }
  [[nodiscard]] bool within_range() const { return simulated_s >= measured_min_s && simulated_s <= measured_max_s; }
};
struct RepeatedFigures {
  std::vector<RepeatedProgram> programs;  // in the order of their first run
  double median_pct = 0, worst_pct = 0;   // |error against the median|
  int within_range = 0;
  double spearman_min = 1;  // the medians ranked against the simulated, the least over groups of three or more
  // Pairs of one group's configurations that three or more sessions measured
  // both of and that every one of those ran in the same order: differences
  // the boxes' own spread does not blur (a rank correlation also counts the
  // pairs within the noise). How many, and those the simulation orders the
  // other way or ties ("faster / slower" as measured).
  int pairs_ordered = 0;
  std::vector<std::string> pairs_misordered;
  // How alike a repeat of the measurement ranks a group's configurations,
  // beside how alike the simulation does: over every split of the sessions
  // into two halves (a sample of them past 100,000), the rank correlation of
  // one half's medians with the other's, and of the twins with a half's.
  struct GroupRanking {
    std::string group;
    int programs = 0, sessions = 0, splits = 0;  // splits: those compared (three or more programs measured in both halves)
    double simulated = 1;                        // the twins against the medians over every session
    double halves = 1;                           // one half's medians against the other's, the median over the splits
    double simulated_halves = 1;                 // the twins against a half's medians, the median over both halves of every split
  };
  std::vector<GroupRanking> rankings;  // the groups of three or more programs measured in two or more sessions
  double halves_spearman_min = 1;      // the least `halves` over them
};
/// The programs of `runs` that appear more than once by name.
RepeatedFigures repeated_figures(const std::vector<ProgramPrediction>& runs);
/// Their table, then the figures (empty when no program repeats).
std::string format_repeated_figures(const RepeatedFigures& f);
/// A table of the runs, then the figures, per group.
std::string format_program_figures(const ProgramFigures& f);

}  // namespace osim
