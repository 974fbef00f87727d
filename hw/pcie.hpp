// A PCIe link's nominal rate from its `pcie:` label, for figures that scale
// with the link's generation and width (a calibration carried to another GPU).
#pragma once

#include <string>

namespace osim::hw {

/// The data rate per direction, in GB/s, after line encoding and before
/// protocol overhead, of a link labelled like "gen5 x16" (63.0); 0 for any other label.
double pcie_nominal_GBps(const std::string& label);

}  // namespace osim::hw
