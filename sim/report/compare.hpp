// Per-op records and the comparison of a measured run with a simulated one.
//
// Both backends write the same records file (`overlapsim.records/v1`): for
// every op of every rank, its class, label, and the host issue/return and GPU
// start/end times. `overlapsim run --records` writes it from the simulator,
// `overlapsim-validate run` from CUDA events on real GPUs. compare_records()
// pairs the two op by op (same schedule, same ranks, same indices) and
// reports the error of the makespan, each step, each op class, each layer
// and each overlap window (README "How accurate is it?").
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/executor.hpp"

namespace osim {

/// The class an op is compared in: "gemm", "attention (self)", "attention
/// (cross)", "memory kernel", "kernel"; "h2d", "h2d pageable", "d2h", ...;
/// "all_to_all nccl", "all_to_all pairwise", "all_gather", ...; otherwise the
/// op kind ("marker", "stream_sync", ...).
std::string op_class(const Op& op);
/// Whether an op of this class has a duration worth comparing (kernels, copies, collectives).
bool timed_class(const Op& op);

struct RecordOp {
  int index = 0;
  std::string cls, label;
  double issue = 0, returned = 0, start = 0, end = 0;  // ns from the run's start
};
struct RecordRank {
  int rank = 0;
  std::string gpu;
  std::vector<RecordOp> ops;
};
struct Records {
  std::string file, source, name, topology;
  std::vector<RecordRank> ranks;
  nlohmann::json meta;  // whatever else the writer recorded (environment, repeats)
  double makespan_ns = 0;
};

/// The records file for a run of `s` (every op that ran). `meta` is stored as is.
nlohmann::ordered_json records_json(const Schedule& s, const ExecResult& r, const std::string& topology, const std::string& source,
                                    const nlohmann::ordered_json& meta = nlohmann::ordered_json::object());
/// Text of a records file: one op per line (diffable), deterministic.
std::string records_text(const nlohmann::ordered_json& records);
/// Reads a records file; InputError naming the file on anything malformed.
Records read_records(const std::string& path);
Records parse_records(const nlohmann::json& j, const std::string& file);
/// How many runs of the schedule went back to back before the one recorded:
/// `overlapsim-validate run` runs warm-up + repeat times without a pause and
/// records the median; its meta says which (warmup, makespans_s). 0 for
/// records without that meta. InputError naming the file where the meta does
/// not hold the recorded run.
int runs_before_recorded(const Records& r);

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
