// What the sweep's files share and its users do not need: a point's keys
// (spec.cpp) and a row's first cells (run.cpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "sweep/sweep.hpp"

namespace osim {

/// A key that edits the point's topology file (`topology.KEY`).
bool is_topology_edit(const std::string& key);
/// The sweep's own keys: topology, its edits and calibration. Every other key edits the base.
bool is_sweep_key(const std::string& key);
/// `path` as given in `file`: relative to that file's folder ("" and absolute paths as they are).
std::string relative_to(const std::string& file, const std::string& path);
/// A row's first cells: the point's index and its parameters' values.
std::vector<std::string> point_cells(const SweepSpec& s, size_t i, const SweepAssignment& a);

}  // namespace osim
