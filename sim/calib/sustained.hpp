// The sustained-load model as the fits see a bench's timings: how far the
// clock is down after a time at full duty, averaged over the window a row
// was timed in (the GEMM table's window means, SDPA rows timed the same
// way), and the full-duty slowdown those windows imply.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/params.hpp"

namespace osim {

// A GEMM table row with a window mean: the mean's ratio to the burst time,
// and when the window ran (ms after the shape's load began).
struct WindowRow {
  double ratio, start_ms, end_ms;
};
std::vector<WindowRow> gemm_window_rows(const nlohmann::json& doc);

/// The model's activation after t_ms at full duty from rest (the duty
/// average over tau_ms past the threshold u0).
double activation(double t_ms, double tau_ms, double u0);
/// The fast and slow activations averaged over a window row's time.
std::pair<double, double> window_activations(const WindowRow& w, const ModelParams& p);
/// One window's estimate of the fast term's full-duty slowdown given the
/// rest of the model; none where the fast term is not yet active there.
std::optional<double> window_theta(const WindowRow& w, const ModelParams& p);
/// The median of the windows' estimates (all but `skip`); none with fewer than 5.
std::optional<double> table_theta(const std::vector<WindowRow>& rows, const ModelParams& p, size_t skip = SIZE_MAX);
/// An SDPA row's efficiency factor against the others': 1, except for rows
/// timed over a window, which the model slowed by its activations there
/// where the others take the full-duty burst scale.
double sdpa_window_scale(const nlohmann::json& r, const ModelParams& p);

}  // namespace osim
