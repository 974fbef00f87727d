// What-if sweeps (`overlapsim sweep`): a grid and/or a list of points over
// workload, schedule, topology and calibration keys; every point simulated
// (in parallel, rows in point order whatever the thread count); a CSV with
// the parameters and every metric; a summary with the best point per
// topology, the Pareto front of peak VRAM vs step time and a recommendation.
// Shards (`--shard i/N`) run every N-th point; `overlapsim merge` joins them
// into the CSV an unsharded run writes (docs/formats/sweep.md).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"

namespace osim {

/// One value of a swept key: its YAML text (flow style), as the CSV shows it.
struct SweepValue {
  std::string text;
  SourceLocation where;
};

/// Keys in file order with the value each takes.
using SweepAssignment = std::vector<std::pair<std::string, SweepValue>>;

struct SweepAxis {
  std::string key;
  std::vector<SweepValue> values;
};

struct SweepSpec {
  std::string file, name;
  bool schedule_base = false;  // the base is a schedule (programs:) rather than a workload (model:)
  std::string base;            // path of the base workload or schedule
  std::string topology;        // default topology ("" = the base's own `topology:`)
  std::string calibration;     // default calibration file ("" = none)
  SweepAssignment set;         // applied to every point
  /// The grid, then each entry of `points:`; each block is a Cartesian
  /// product of its keys (first key slowest). An entry's key with one value is
  /// an axis of one.
  std::vector<std::vector<SweepAxis>> blocks;
  std::vector<std::string> parameters;    // the CSV's parameter columns

  [[nodiscard]] size_t size() const;
  /// Point i's keys: `set`, then its block's values (later ones win).
  [[nodiscard]] SweepAssignment point(size_t i) const;
};

/// Parses and checks a sweep file (docs/formats/sweep.md); InputError names file:line.
SweepSpec parse_sweep_file(const std::string& path);

/// A sweep's CSV: columns "point", the parameters, "status", "error", then the metrics.
struct SweepTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  [[nodiscard]] int column(const std::string& name) const;  // -1 when absent
  /// The parameter columns (between "point" and "status").
  [[nodiscard]] std::vector<std::string> parameters() const;
};

struct SweepOptions {
  int threads = 0;             // 0: every core
  int shard = 0, shards = 1;   // run the points with index % shards == shard
  /// Called after each point (serialised, from worker threads).
  std::function<void(size_t done, size_t total)> progress;
};

/// The metric columns every row has, in order (docs/formats/sweep.md).
const std::vector<std::string>& sweep_metric_columns();

/// Runs the sweep's points (this shard's); a failing point fills its row's
/// status and error columns and the sweep goes on.
SweepTable run_sweep(const SweepSpec& s, const SweepOptions& o = {});

/// RFC 4180 CSV (quotes where needed, "\n" line ends).
std::string to_csv(const SweepTable& t);
SweepTable parse_csv(const std::string& text, const std::string& file);
SweepTable read_csv_file(const std::string& path);

/// Joins shard tables into the table an unsharded run gives: one header,
/// rows in point order. Refuses different headers, a point twice, and gaps;
/// `expected_points` (from the sweep file) also catches missing last shards.
SweepTable merge_sweep_tables(const std::vector<std::pair<std::string, SweepTable>>& shards, std::optional<size_t> expected_points = {});

/// The summary `overlapsim sweep` and `merge` print: failures, then per
/// topology the best point, the Pareto front (peak VRAM vs step time) and a
/// recommendation: the least-VRAM point within `tolerance` of the best.
std::string sweep_summary(const SweepTable& t, double tolerance = 0.01);

}  // namespace osim
