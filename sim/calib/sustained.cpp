#include "calib/sustained.hpp"

#include <algorithm>
#include <cmath>

#include "calib/bench_doc.hpp"
#include "core/stats.hpp"

namespace osim {

std::vector<WindowRow> gemm_window_rows(const json& doc) {
  std::vector<WindowRow> out;
  for (const auto& r : rows(doc, "gemm_bf16")) {
    if (!r.contains("loaded_mean_us") || !r.contains("burst_time_us")) continue;
    const double mean_us = r.at("loaded_mean_us").get<double>();
    const double op_ms = mean_us * r.value("chunks", 1) * 1e-3;
    const double t0 = r.at("soak_calls").get<double>() * op_ms;
    out.push_back({mean_us / r.at("burst_time_us").get<double>(), t0, t0 + r.at("window_calls").get<double>() * op_ms});
  }
  return out;
}

// The sustained-load model's activation after t_ms at full duty from rest
// (ModelParams: the duty average over `tau_ms` past the threshold u0).
double activation(double t_ms, double tau_ms, double u0) { return std::clamp((1 - std::exp(-t_ms / tau_ms) - u0) / (1 - u0), 0.0, 1.0); }

// The sustained-load model's fast and slow activations averaged over a
// window row's time.
std::pair<double, double> window_activations(const WindowRow& w, const ModelParams& p) {
  double fast = 0, slow = 0;
  const int n = 64;
  for (int i = 0; i < n; ++i) {
    const double t = w.start_ms + (w.end_ms - w.start_ms) * (i + 0.5) / n;
    fast += activation(t, p.power.sustained_time_constant.ms(), p.power.sustained_duty) / n;
    slow += activation(t, p.power.sustained_slow_time_constant.ms(), p.power.sustained_duty) / n;
  }
  return {fast, slow};
}

// One window row's estimate of the fast term's full-duty slowdown, given the
// rest of the model: (ratio - 1 - slow term) / fast activation, each averaged
// over the window; nullopt where the fast term is not yet active there.
std::optional<double> window_theta(const WindowRow& w, const ModelParams& p) {
  const auto [fast, slow] = window_activations(w, p);
  if (fast < 0.5) return std::nullopt;
  return (w.ratio - 1 - p.power.sustained_slow_slowdown * slow) / fast;
}

// The fast term's slowdown from the window rows (all but `skip`): the median
// of their estimates; nullopt with fewer than 5.
std::optional<double> table_theta(const std::vector<WindowRow>& rows, const ModelParams& p, size_t skip) {
  std::vector<double> est;
  for (size_t i = 0; i < rows.size(); ++i)
    if (i != skip)
      if (auto t = window_theta(rows[i], p)) est.push_back(*t);
  if (est.size() < 5) return std::nullopt;
  return std::max(0.0, median(est));
}

// An SDPA row's efficiency factor against the others': 1, except for rows
// timed over a window (`timing: window`),
// which the sustained-load model slowed by its activations over that window
// where the others take the full-duty burst scale (1 + sustained_slowdown).
double sdpa_window_scale(const json& r, const ModelParams& p) {
  if (r.value("timing", "") != "window") return 1.0;
  const double op_ms = r.at("time_us").get<double>() * 1e-3;
  const double t0 = r.at("soak_calls").get<double>() * op_ms;
  const auto [fast, slow] = window_activations({0, t0, t0 + r.at("window_calls").get<double>() * op_ms}, p);
  return (1 + p.power.sustained_slowdown * fast + p.attention.attention_slow_share * p.power.sustained_slow_slowdown * slow) /
         (1 + p.power.sustained_slowdown);
}

}  // namespace osim
