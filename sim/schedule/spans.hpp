// What the metrics read of a run, gathered one finished GPU op at a time:
// per rank the time spans of kernels, collectives and copies (only their
// unions count, so spans that overlap or touch are joined as they come),
// bytes moved, the copy bandwidth histogram and the step markers.
//
// compute_metrics() feeds a run's records through it; a run that keeps no
// records (ExecOptions::keep_records = false: `overlapsim run` without --out,
// sweeps) fills it as ops finish, so the same metrics need no per-op memory.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/units.hpp"
#include "schedule/schedule.hpp"

namespace osim {

/// Spans [start, end) in picoseconds; unordered, overlapping ones may remain.
using Spans = std::vector<std::pair<int64_t, int64_t>>;

struct RankSpans {
  Spans kernels, colls, copies;
  Spans cstream;         // kernels, collectives and copies on the compute stream
  Spans compute_copies;  // copies on the compute stream
};

struct SpanBin {
  int64_t count = 0;
  double bytes = 0;
  Time time;
};

class RunSpans {
 public:
  /// Copy bandwidth bins, GB/s: [lo, hi).
  static constexpr std::array<std::array<double, 2>, 5> kBins{{{0, 5}, {5, 20}, {20, 50}, {50, 80}, {80, 1e300}}};

  RunSpans() = default;
  /// `compute_stream`: the stream whose gaps are stalls and whose "step N" markers time steps.
  RunSpans(int ranks, int compute_stream) : compute_stream_(compute_stream), ranks_(static_cast<size_t>(ranks)) {}
  static RunSpans for_schedule(const Schedule& s) {
    const int cs = s.find_stream("compute");
    return RunSpans(s.ranks(), cs >= 0 ? cs : 0);
  }

  /// One op of `rank` ran from `start` to `end` (any op; only GPU work and
  /// rank 0's compute-stream step markers are kept). Rank 0's markers must
  /// come in stream order; everything else in any order.
  void add(int rank, const Op& op, Time start, Time end);

  const std::vector<RankSpans>& ranks() const { return ranks_; }
  const std::array<SpanBin, kBins.size()>& histogram() const { return bins_; }
  /// Rank 0's "step N" markers on the compute stream: (N, time), a step once.
  const std::vector<std::pair<int, Time>>& steps() const { return steps_; }
  /// When rank 0's compute stream reached an "end of steps" marker: the last
  /// step's end (without one, the rank's end).
  const std::optional<Time>& steps_end() const { return steps_end_; }
  double bytes_h2d = 0, bytes_d2h = 0, bytes_p2p = 0, bytes_d2d = 0, bytes_collective = 0;

 private:
  int compute_stream_ = 0;
  std::vector<RankSpans> ranks_;
  std::array<SpanBin, kBins.size()> bins_{};
  std::vector<std::pair<int, Time>> steps_;
  std::optional<Time> steps_end_;
};

}  // namespace osim
