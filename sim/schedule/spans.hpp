// What the metrics read of a run, gathered one finished GPU op at a time:
// per rank the time spans of kernels, collectives and copies (only their
// unions count, so spans that overlap or touch are joined as they come),
// bytes moved, the copy bandwidth histogram and the step markers.
//
// compute_metrics() feeds a run's records through it; a run that keeps no
// records (ExecOptions::keep_records = false: `overlapsim run` without --out,
// sweeps) fills it as ops finish, so the same metrics need no per-op memory,
// and folds what lies behind the ops still running into sums as it goes
// (fold()), so a rank's spans take memory for what is in flight, not for
// every gap of the run.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/units.hpp"
#include "schedule/schedule.hpp"
#include "schedule/stage_spans.hpp"

namespace osim {

/// Spans [start, end) in picoseconds; unordered, overlapping ones may remain.
using Spans = std::vector<std::pair<int64_t, int64_t>>;

/// What the metrics take of a rank's spans, picoseconds (docs/formats/metrics.md).
struct RankBusy {
  int64_t kernels = 0;          // any kernel running
  int64_t colls = 0;            // any collective running
  int64_t colls_exposed = 0;    // a collective and no kernel
  int64_t copies = 0;           // any copy running
  int64_t colls_or_copies = 0;  // a collective or a copy
  int64_t gaps = 0;             // the compute stream idle between its busy spans
  int64_t copies_in_gaps = 0;   // a copy running in those gaps
  int64_t compute_copies = 0;   // a copy on the compute stream
  RankBusy& operator+=(const RankBusy& o);
};

struct SpanBin {
  int64_t count = 0;
  double bytes = 0;
  Time time;
};

// What one rank's copies and collectives added to the run's byte counts and
// copy histogram (a mirrored rank adds its representative's again).
struct RankTally {
  double bytes_h2d = 0, bytes_d2h = 0, bytes_p2p = 0, bytes_d2d = 0, bytes_collective = 0;
  std::array<SpanBin, 5> bins{};
};

struct RankSpans {
  Spans kernels, colls, copies;
  Spans cstream;         // kernels, collectives and copies on the compute stream
  Spans compute_copies;  // copies on the compute stream
  // Spans before folded_to are summed in `folded` and dropped. cstream_end:
  // where the compute stream was last busy before folded_to (a gap starting
  // there ends at its next busy span); none while it has not been busy.
  RankBusy folded;
  int64_t folded_to = INT64_MIN;
  std::optional<int64_t> cstream_end;
  size_t fold_at = 0;  // spans held when the next fold is due
  RankTally tally;
};

class RunSpans {
 public:
  /// Copy bandwidth bins, GB/s: [lo, hi).
  static constexpr std::array<std::array<double, 2>, 5> kBins{{{0, 5}, {5, 20}, {20, 50}, {50, 80}, {80, 1e300}}};
  static_assert(kBins.size() == std::tuple_size_v<decltype(RankTally::bins)>);

  RunSpans() = default;
  /// `compute_stream`: the stream whose gaps are stalls and whose "step N" markers time steps.
  /// `fold_at`: the spans a rank holds before wants_fold() says to fold.
  RunSpans(int ranks, int compute_stream, size_t fold_at = 4096)
      : compute_stream_(compute_stream), fold_at_(fold_at), ranks_(static_cast<size_t>(ranks)) {}
  static RunSpans for_schedule(const Schedule& s, size_t fold_at = 4096) {
    const int cs = s.find_stream("compute");
    return RunSpans(s.ranks(), cs >= 0 ? cs : 0, fold_at);
  }

  /// One op of `rank` ran from `start` to `end` (any op; only GPU work and
  /// rank 0's compute-stream step markers are kept). Rank 0's markers must
  /// come in stream order; everything else in any order.
  void add(int rank, const Op& op, Time start, Time end);
  /// `rank` ran what `of` ran (a mirrored rank: gpu/exec_context.hpp
  /// Mirrors): its spans become `of`'s, and the run's counts take them again.
  void mirror(int rank, int of);

  const std::vector<RankSpans>& ranks() const { return ranks_; }
  /// Whether `rank` holds enough spans to be worth a fold().
  [[nodiscard]] bool wants_fold(int rank) const;
  /// No span of `rank` added from now on starts before `watermark` (the
  /// earliest start of its ops still running): sums the spans before it (or
  /// before the compute stream's last busy end, where `watermark` falls in
  /// one of its gaps) into RankSpans::folded and drops them. busy() is the
  /// same with or without folds.
  void fold(int rank, int64_t watermark);
  /// The rank's measures over the whole run.
  [[nodiscard]] RankBusy busy(int rank) const;
  const std::array<SpanBin, kBins.size()>& histogram() const { return bins_; }
  /// Rank 0's "step N" markers on the compute stream: (N, time), a step once.
  const std::vector<std::pair<int, Time>>& steps() const { return steps_; }
  /// When rank 0's compute stream reached an "end of steps" marker: the last
  /// step's end (without one, the rank's end).
  const std::optional<Time>& steps_end() const { return steps_end_; }
  /// Rank 0's request stages (its "stage NAME" markers), where a workload has them.
  const StageTally& stages() const { return stages_; }
  double bytes_h2d = 0, bytes_d2h = 0, bytes_p2p = 0, bytes_d2d = 0, bytes_collective = 0;

 private:
  // Reused by fold(): the spans being summed (kernels, collectives, copies,
  // compute stream, compute-stream copies) and measure()'s own.
  struct Scratch {
    Spans before[5];
    Spans both, gaps;
  };
  static RankBusy measure(const Spans* lists, std::optional<int64_t> cstream_end, Scratch& scratch);

  int compute_stream_ = 0;
  size_t fold_at_ = 4096;
  std::vector<RankSpans> ranks_;
  Scratch scratch_;
  std::array<SpanBin, kBins.size()> bins_{};
  std::vector<std::pair<int, Time>> steps_;
  std::optional<Time> steps_end_;
  StageTally stages_;
};

}  // namespace osim
