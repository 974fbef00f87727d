// Calibration: fit the execution model's parameters to `overlapsim-validate
// bench` results, write them as a calibration file that runs load, and
// compare the calibrated simulator with every measurement it can replay.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/params.hpp"
#include "gpu/params_io.hpp"
#include "hw/fabric.hpp"

namespace osim {

struct Fit {
  std::string name;       // e.g. "h2d pinned"
  std::string formula;    // what was fitted
  std::vector<std::pair<std::string, double>> values;
  double rms_residual_pct = 0;
  int points = 0;
};

struct Calibration {
  std::vector<std::string> sources;
  ModelParams params;
  std::vector<Fit> fits;
};

/// One measured microbenchmark replayed on the simulator.
struct Comparison {
  std::string cls;        // class of cases summarised together, e.g. "pinned copy >= 16 MiB"
  std::string key, what;
  double measured_us = 0, simulated_us = 0;
  // Non-empty: the row measures an effect the model leaves out (e.g. "the
  // CPU's caches hold the host buffer"); reported apart from the rest.
  std::string outside;
  // The simulated time with every hand-off between the engines at either
  // end of its phase (ModelParams::handoff_phase_min / _max); negative: the
  // row has no hand-off, or the calibration no phase.
  double simulated_lo_us = -1, simulated_hi_us = -1;
  [[nodiscard]] double error_pct() const { return 100.0 * (simulated_us - measured_us) / measured_us; }
  [[nodiscard]] bool has_phase() const { return simulated_lo_us >= 0; }
  /// Some time the hand-off's phase allows is within 5 % of the measurement.
  [[nodiscard]] bool within_phase() const {
    return has_phase() && simulated_lo_us <= 1.05 * measured_us && simulated_hi_us >= 0.95 * measured_us;
  }
};

/// Fits from one or more bench documents (the first holds the defaults run).
/// Throws InputError naming the file when a document is not a bench result.
Calibration calibrate(const std::vector<std::pair<std::string, nlohmann::json>>& docs, const hw::Topology& topo,
                      const ModelParams& base = {});
std::string calibration_yaml(const Calibration& c);
/// Bench documents of the same kind (NCCL defaults; NCCL_P2P_DISABLE=1) merged
/// into one each: a later document's testcases replace an earlier one's of the same key.
std::vector<std::pair<std::string, nlohmann::json>> merge_bench_runs(const std::vector<std::pair<std::string, nlohmann::json>>& docs);

/// The GEMM shape model (GemmShapeModel) fitted to a per-shape
/// table: least squares on 1 / efficiency = (1 + m0/m + n0/n + k0/k +
/// pow2_m [m a power of two]) / e, leaving out entry `skip` (for
/// leave-one-out checks) and any term the table does not vary; every
/// coefficient >= 0 (a negative term is dropped and the rest refitted); the
/// power-of-two term only if it lowers the leave-one-out rms error over the
/// table. None with fewer than 5 shapes.
std::optional<GemmShapeModel> fit_gemm_model(const std::vector<GemmShapeEfficiency>& shapes,
                                                         size_t skip = static_cast<size_t>(-1));

/// Cross-attention efficiency against the query count: least squares on
/// 1 / efficiency = (1 + q0 / seq_q) / e over (seq_q, efficiency) points,
/// leaving out point `skip`; {e, q0}, or none with fewer than 3 points, one
/// length only, or q0 < 0.
std::optional<std::pair<double, double>> fit_cross_attention(const std::vector<std::pair<double, double>>& points,
                                                             size_t skip = static_cast<size_t>(-1));

/// Replays each measurement of a defaults-run bench document on `topo`.
/// A malformed row throws: a json exception (a field missing or of the
/// wrong type) or std::invalid_argument (a value outside its testcase's cases).
std::vector<Comparison> compare_bench(const nlohmann::json& doc, const hw::Topology& topo, const ModelParams& params);
struct ClassSummary {
  std::string cls;
  int cases = 0;
  double median_abs_pct = 0, worst_abs_pct = 0;
};
std::vector<ClassSummary> summarise(const std::vector<Comparison>& rows);
std::string format_comparison(const std::vector<Comparison>& rows);

}  // namespace osim
