// Piecewise-linear interpolation of a measured table in log(x), flat beyond
// its first and last rows (copy shares by size, norm rates by row length).
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <vector>

namespace osim {

/// Column `col` of `table` (rows ascending in their column 0) at x.
template <size_t N>
double log_interpolate(const std::vector<std::array<double, N>>& table, double x, size_t col) {
  if (x <= table.front()[0]) return table.front()[col];
  if (x >= table.back()[0]) return table.back()[col];
  size_t i = 1;
  while (table[i][0] < x) ++i;
  const double f = (std::log(x) - std::log(table[i - 1][0])) / (std::log(table[i][0]) - std::log(table[i - 1][0]));
  return table[i - 1][col] + f * (table[i][col] - table[i - 1][col]);
}

}  // namespace osim
