// The comparison of a measured run with a simulated one (records.hpp):
// compare_records() pairs the two op by op (same schedule, same ranks, same
// indices) and reports the error of the makespan, each step, each op class,
// each layer and each overlap window (docs/accuracy.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedule/records.hpp"

namespace osim {

struct ErrorRow {
  std::string key;
  int count = 0;
  double measured_s = 0, simulated_s = 0;  // summed durations
  double median_op_error = 0;              // median |relative error| of the single ops (or spans)
  double worst_op_error = 0;
  [[nodiscard]] double error() const { return measured_s > 0 ? (simulated_s - measured_s) / measured_s : 0; }
};

// The GPU time between two compute ops that follow each other in a rank's
// program: what overlapsim-validate run's events around every op cost (the
// simulator's ops follow each other at once unless the model gives events
// time), by whether the rank's own H2D copy ran across the gap (measured).
struct GapRow {
  std::string key;
  int count = 0;
  double measured_s = 0, simulated_s = 0;  // summed gaps
  double median_measured_us = 0, median_simulated_us = 0;
};

struct RecordComparison {
  std::string name;
  double makespan_measured_s = 0, makespan_simulated_s = 0;
  std::vector<ErrorRow> steps;    // per "step" marker segment on rank 0
  std::vector<ErrorRow> classes;  // per op class, all ranks
  std::vector<ErrorRow> layers;   // per layer span ("f<forward>.l<layer>"), rank 0
  ErrorRow layer_summary;         // over all ranks' layers: median/worst error of the spans
  std::vector<ErrorRow> windows;  // ops by what ran beside them in the measured run, e.g. "all_to_all nccl || h2d"
  std::vector<GapRow> gaps;       // between adjacent compute ops: "alone", "|| h2d"
  [[nodiscard]] double makespan_error() const {
    return makespan_measured_s > 0 ? (makespan_simulated_s - makespan_measured_s) / makespan_measured_s : 0;
  }
};

/// Pairs the ops of two runs of the same schedule; InputError when they are
/// not runs of the same schedule (different ranks, ops or labels).
RecordComparison compare_records(const Records& measured, const Records& simulated);
std::string format_record_comparison(const RecordComparison& c, bool per_layer = false);

}  // namespace osim
