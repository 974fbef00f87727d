// Least-squares fits shared by the families: a copy's latency + bytes /
// rate + burst / reps line, ops timed per gated burst, and a latency +
// bytes / bandwidth line.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "calib/calibration.hpp"

namespace osim {

// time per op = latency + bytes / bandwidth + burst / reps: copies timed
// `reps` per gated burst (a burst pays the hand-off from its gate and its
// closing event once). `burst`: held at that; else fitted where the rows
// hold two reps values or more (none, or a negative one: 0). Relative least
// squares (each row weighted by 1 / time), so large and small sizes count
// alike. `ok`: a positive bandwidth.
struct CopyPoint {
  double bytes, reps, time;
};
struct CopyLine {
  double latency_us = 0, burst_us = 0, inv_beta = 0;  // us, us, us per byte
  double sq = 0;                                      // summed squared relative residuals
  int n = 0;
  bool ok = false;
};
CopyLine fit_copy_burst_line(const std::vector<CopyPoint>& pts, std::optional<double> burst);

// Ops timed per gated burst: time per op - known = steady(group) + burst /
// reps (+ step where `step`, with_step), relative least squares. None where
// the rows hold fewer than two burst sizes, or with_step and the step column
// is all one value.
struct BurstPoint {
  double group, reps, time;
  double known = 0;  // part of the time known already (a copy's bytes / rate)
  bool step = false;
};
struct BurstFit {
  std::map<double, double> steady;  // per group
  double burst = 0, step = 0, rms_pct = 0;
};
std::optional<BurstFit> fit_burst(const std::vector<BurstPoint>& pts, bool with_step);

/// A parameter found by replaying: 40 halvings of [lo, hi], moving up where
/// `below(mid)` says the answer lies above mid; the interval's middle.
template <class F>
double bisect(double lo, double hi, F&& below) {
  for (int it = 0; it < 40; ++it) {
    const double mid = 0.5 * (lo + hi);
    (below(mid) ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

/// time = latency + bytes / bandwidth over (bytes, time us) points; values
/// {latency_us, bandwidth_GBps} where there are two points or more.
Fit fit_alpha_beta(const std::string& name, const std::vector<std::pair<double, double>>& pts);

}  // namespace osim
