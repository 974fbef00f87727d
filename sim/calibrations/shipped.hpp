// Every calibration shipped in configs/calibrations/ (built into the
// binary), as they were when it was built: for what looks across machines
// of a GPU family (calib/family_fill.hpp).
#pragma once

#include <string>
#include <vector>

#include "calibrations/measured_defaults.hpp"

namespace osim {

struct ShippedCalibration {
  MeasuredDefaults calibration;  // its file, origin and parameters
  std::string text;              // the file as shipped
};
/// Every shipped calibration that records what it measured, in file order.
std::vector<ShippedCalibration> shipped_calibrations();

}  // namespace osim
