// What-if sweeps (`overlapsim sweep`): a grid and/or a list of points over
// workload, schedule, topology and calibration keys; every point simulated
// (in parallel, rows in point order whatever the thread count); a CSV with
// the parameters and every metric; a summary with the best point per
// topology, the Pareto front of peak VRAM vs step time and a recommendation.
// Shards (`--shard i/N`) run every N-th point; `overlapsim merge` joins them
// into the CSV an unsharded run writes (docs/formats/sweep.md).
// Files: spec.cpp (the sweep file), run.cpp (the points), sweep.cpp (CSV,
// journal, merge), summary.cpp (best, Pareto front, recommendation).
#pragma once

#include <cstddef>
#include <cstdio>
#include <functional>
#include <map>
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
  std::vector<std::string> parameters;  // the CSV's parameter columns
  /// A workload base with `stages:` (or a sweep that sets them): its rows
  /// carry the request's columns and its summary ranks by request time.
  bool has_stages = false;
  std::vector<std::string> stage_names;  // the base's stages, in order
  bool stages_replaced = false;          // a block sets the whole `stages:` list

  /// The point count, from the keys' value counts (nothing enumerated);
  /// SIZE_MAX where it would overflow.
  [[nodiscard]] size_t size() const;
  /// Point i's keys: `set`, then its block's values (later ones win).
  [[nodiscard]] SweepAssignment point(size_t i) const;
};

/// Parses and checks a sweep file (docs/formats/sweep.md); InputError names file:line.
SweepSpec parse_sweep_file(const std::string& path);

/// The points a sweep runs unless told otherwise (SweepOptions::max_points, `--max-points`).
inline constexpr size_t kDefaultMaxSweepPoints = 100000;

/// What a shard's CSV comes from: its first line, `# overlapsim sweep shard
/// I/N of HASH` (HASH: sweep_identity), so that merge joins only shards of one sweep.
struct ShardOrigin {
  int shard = 0, shards = 1;  // 0-based shard of `shards`
  std::string sweep;          // sweep_identity
};

/// A hash of the files a sweep reads (the sweep file, its base, its default
/// topology and calibration), by content.
std::string sweep_identity(const SweepSpec& s);

/// A sweep's CSV: columns "point", the parameters, "status", "error", then the metrics.
struct SweepTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::optional<ShardOrigin> origin;                        // a shard's (not in an unsharded or merged CSV)
  [[nodiscard]] int column(const std::string& name) const;  // -1 when absent
  /// The parameter columns (between "point" and "status").
  [[nodiscard]] std::vector<std::string> parameters() const;
};

struct SweepOptions {
  int threads = 0;            // 0: every core
  int shard = 0, shards = 1;  // run the points with index % shards == shard
  /// More points than this (in this shard) are refused before any is enumerated.
  size_t max_points = kDefaultMaxSweepPoints;
  /// Called after each point (serialised, from worker threads).
  std::function<void(size_t done, size_t total)> progress;
  /// Rows already run, by point index (an interrupted sweep's journal):
  /// taken as they are, not run again.
  std::map<size_t, std::vector<std::string>> finished;
  /// Called with each row as its point finishes (serialised), e.g. to
  /// append it to the journal.
  std::function<void(const std::vector<std::string>& row)> on_row;
};

/// The metric columns every row has, in order (docs/formats/sweep.md).
const std::vector<std::string>& sweep_metric_columns();

/// The request's columns, after the metrics where the sweep has stages:
/// the request end to end, its stages and its DiT steps.
const std::vector<std::string>& sweep_request_columns();

/// The CSV header of a sweep: point, the parameters, status, error, the metrics.
std::vector<std::string> sweep_header(const SweepSpec& s);

/// An interrupted sweep's finished points (`sweep --resume`): a file beside
/// the CSV, `CSV.journal`, with a line naming what it belongs to (the sweep
/// file, its base, topology and calibration, by content, and the shard),
/// the header, then one CSV row per finished point, flushed as it lands.
class SweepJournal {
 public:
  /// The identity line of a sweep's journal: a hash of the files it reads
  /// (the sweep file, its base, its default topology and calibration) and the shard.
  static std::string identity(const SweepSpec& s, const SweepOptions& o);
  /// Reads a journal and checks it belongs to this sweep and shard; a last
  /// row cut short (the process was killed while writing it) is dropped.
  /// InputError when it belongs to another sweep, an edited file, or is damaged.
  static std::map<size_t, std::vector<std::string>> read(const std::string& path, const SweepSpec& s, const SweepOptions& o);
  /// Starts a journal (identity and header), or appends to an existing one.
  SweepJournal(const std::string& path, const SweepSpec& s, const SweepOptions& o, bool append);
  ~SweepJournal();
  SweepJournal(const SweepJournal&) = delete;
  SweepJournal& operator=(const SweepJournal&) = delete;
  void add(const std::vector<std::string>& row);

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

/// The points this shard of the sweep runs; InputError naming the sweep file
/// when they are more than `o.max_points` (what to pass to run them anyway).
size_t check_sweep_points(const SweepSpec& s, const SweepOptions& o);

/// Runs the sweep's points (this shard's); a failing point fills its row's
/// status and error columns and the sweep goes on. Refuses a sweep past
/// `o.max_points` (check_sweep_points).
SweepTable run_sweep(const SweepSpec& s, const SweepOptions& o = {});
/// How many rows failed (status "error").
size_t failed_points(const SweepTable& t);

/// RFC 4180 CSV (quotes where needed, "\n" line ends).
std::string to_csv(const SweepTable& t);
/// `first_line`: the file line the text starts at (for error locations).
SweepTable parse_csv(const std::string& text, const std::string& file, int first_line = 1);
SweepTable read_csv_file(const std::string& path);

/// Joins shard tables into the table an unsharded run gives: one header,
/// rows in point order. Refuses different headers, shards of different sweeps
/// or shard counts (their ShardOrigin), a point twice, and gaps;
/// `expected_points` (from the sweep file) also catches missing last shards,
/// `expected_sweep` (its sweep_identity) shards of another sweep or edited files.
SweepTable merge_sweep_tables(const std::vector<std::pair<std::string, SweepTable>>& shards, std::optional<size_t> expected_points = {},
                              const std::string& expected_sweep = "");

/// The summary `overlapsim sweep` and `merge` print: failures, then per
/// topology the best point, the Pareto front (peak VRAM vs step time) and a
/// recommendation: the least-VRAM point within `tolerance` of the best.
std::string sweep_summary(const SweepTable& t, double tolerance = 0.01);

}  // namespace osim
