// Measured runs against their simulations, the pieces `overlapsim compare`
// and a reference machine's check (reference/reference.hpp) share: a measured run
// re-simulated from the schedule it executed, reference programs' twins
// predicted, and programs' torch.profiler traces imported and simulated.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/executor.hpp"
#include "hw/fabric.hpp"
#include "schedule/records.hpp"
#include "schedule/whatif.hpp"
#include "workload/program.hpp"

namespace osim {

struct GpuFigures;  // calibrations/carry.hpp

struct ResimulateOptions {
  std::string topology;       // default: the schedule's `topology:`
  std::string calibration;    // default: the measured defaults of the topology's GPUs
  std::string timing_events;  // a calibration whose GPU event times the run's own timing events take
  WhatIf what_if;
  // An imported trace's measured pageable rates (settings.copy_rates) in place
  // of the calibration's pageable bandwidth, as `run` takes them by default
  // (take_pageable_rates); false: the calibration's, which this checks.
  bool pageable_rate_from_trace = false;
  // The GPU the calibration was measured on, where it is another than the
  // run's: its rates carried to the run's GPU (calibrations/carry.hpp). Null: as it is.
  const GpuFigures* carry_from = nullptr;
};

/// A schedule's own host call costs (settings.host_calls: an imported trace's
/// measured calls) put over the parameters where no calibration was given
/// (`calibration` empty): the trace is then the only measurement of its host.
/// Returns the line the run prints of them ("" where none were taken).
std::string take_host_calls(ModelParams& params, const RuntimeSettings& settings, const std::string& calibration);
/// A measured run simulated again: the schedule it executed, what the
/// simulation did, and its records (as `run --records` writes them).
struct Resimulation {
  std::string schedule_path;
  Schedule schedule;
  std::unique_ptr<hw::Topology> topology;
  ExecResult result;
  nlohmann::ordered_json records;
  Records simulated;  // `records` read back, to compare with the measured ones
};

/// Re-simulates the schedule a measured run executed (`measured` is the run's
/// folder, or its records file: schedule.yaml beside it), as it ran: after the
/// runs that went before it, its FLOP-count and attention kernels as the GEMMs
/// (or SDPA) the runner made them. InputError naming the file when there is no
/// schedule or topology.
Resimulation resimulate(const std::string& measured, const Records& measured_records, const ResimulateOptions& o);

/// The makespan errors (fractions, absolute) of the measured runs in
/// `runs_dir` (each folder with a records file), by name, re-simulated.
std::vector<double> validation_errors(const std::string& runs_dir, const ResimulateOptions& o);

/// Reference programs' results (validate/programs/): each one's twin
/// simulated on the machine with `params`, against its measured median.
ProgramFigures predict_programs(const std::vector<std::string>& files, const hw::Topology& topo, const ModelParams& params);

/// 100 x the median and the largest of errors given as fractions (0, 0 for none).
std::pair<double, double> median_worst_pct(const std::vector<double>& errs);

/// A reference request's stage (encode, dit, decode: those its result and its
/// twin both have) measured against the twin's: its time, and its peak
/// allocated bytes where both sides have one.
struct StageComparison {
  std::string request, stage;
  double measured_s = 0, simulated_s = 0;
  std::optional<double> measured_allocated, simulated_allocated;
  [[nodiscard]] double error() const { return (simulated_s - measured_s) / measured_s; }
  [[nodiscard]] double allocated_error() const { return (*simulated_allocated - *measured_allocated) / *measured_allocated; }
};
/// Every request's stages: |time error| median and worst (%) over them all,
/// and |peak allocated error| over those with both peaks (memory_stages).
struct StageFigures {
  std::vector<StageComparison> stages;  // by request, each in its twin's stage order
  double median_pct = 0, worst_pct = 0;
  int memory_stages = 0;
  double allocated_median_pct = 0, allocated_worst_pct = 0;
};
struct RequestFigures {
  ProgramFigures programs;
  StageFigures stages;
};
/// Reference requests' results (validate/programs/request_pipeline.py): as
/// predict_programs, and each one's stages against its twin's (the stage
/// windows `overlapsim run` reports; a measured "dit" stage against the
/// twin's DiT steps where the twin has no stage of that name).
RequestFigures predict_requests(const std::vector<std::string>& files, const hw::Topology& topo, const ModelParams& params);
/// The stages' table (measured, simulated, error), then per stage name its figures.
std::string format_stage_figures(const StageFigures& f);

/// A reference program's torch.profiler trace imported and simulated: its
/// step time as the program measured it (median, no profiler), as the trace
/// measured it (the profiled run), and simulated.
struct TraceFigure {
  std::string name;
  double program_s = 0, trace_s = 0, simulated_s = 0;
  bool pageable = false;
  int64_t waits_inferred = 0, inferred_timed = 0;  // stream waits without a cuda_sync event; of those bound by the timeline
  std::string steps_from;                          // which ranges became steps, where `steps` was ""
  [[nodiscard]] double error() const { return simulated_s / program_s - 1; }
};
/// Every NAME[.rankN].trace.json.gz in `dir` with its NAME.json, imported
/// (steps: ranges matching `steps`; "": the import finds them) and simulated with `params`.
std::vector<TraceFigure> trace_figures(const std::string& dir, const hw::Topology& topo, const ModelParams& params, const std::string& steps);
std::string format_trace_figures(const std::vector<TraceFigure>& figures);

}  // namespace osim
