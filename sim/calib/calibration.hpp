// What calibrate produces: the fitted parameters, a report of each fit, and
// each measured testcase row replayed on the simulator.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gpu/params.hpp"

namespace osim {

/// One fit, as the calibration file's header reports it.
struct Fit {
  std::string name;     // e.g. "h2d pinned"
  std::string formula;  // what was fitted
  std::vector<std::pair<std::string, double>> values;
  double rms_residual_pct = 0;
  int points = 0;
};

struct Calibration {
  std::vector<std::string> sources;
  // What the sources say of the machine they measured (GPU, count, versions,
  // each file's hash), as the file's `provenance:` mapping.
  std::string provenance_yaml;
  // Per effect family, the bench testcases the sources hold (in the key
  // table's order): what its fields were fitted from.
  std::map<std::string, std::vector<std::string>> family_testcases;
  ModelParams params;
  std::vector<Fit> fits;
};

/// One measured microbenchmark replayed on the simulator.
struct Comparison {
  std::string cls;  // class of cases summarised together, e.g. "pinned copy >= 16 MiB"
  std::string key, what;
  double measured_us = 0, simulated_us = 0;
  // Non-empty: the row measures an effect the model leaves out (e.g. "the
  // CPU's caches hold the host buffer"); reported apart from the rest.
  std::string outside;
  // The simulated time with every hand-off between the engines at either
  // end of its phase (HandoffParams::handoff_phase_min / _max); negative:
  // the row has no hand-off, or the calibration no phase.
  double simulated_lo_us = -1, simulated_hi_us = -1;
  [[nodiscard]] double error_pct() const { return 100.0 * (simulated_us - measured_us) / measured_us; }
  [[nodiscard]] bool has_phase() const { return simulated_lo_us >= 0; }
  /// Some time the hand-off's phase allows is within 5 % of the measurement.
  [[nodiscard]] bool within_phase() const { return has_phase() && simulated_lo_us <= 1.05 * measured_us && simulated_hi_us >= 0.95 * measured_us; }
};

}  // namespace osim
