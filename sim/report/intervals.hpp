// Time intervals [start, end) as pairs: sorting and merging, shared by the
// metrics (picoseconds) and the measured/simulated comparison (nanoseconds).
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

namespace osim {

/// Sorted, overlapping and touching intervals joined, empty ones dropped.
template <class T>
std::vector<std::pair<T, T>> merge_intervals(std::vector<std::pair<T, T>> v) {
  if (!std::is_sorted(v.begin(), v.end())) std::sort(v.begin(), v.end());  // often sorted already (one stream)
  std::vector<std::pair<T, T>> out;
  for (const auto& iv : v) {
    if (iv.second <= iv.first) continue;
    if (!out.empty() && iv.first <= out.back().second) out.back().second = std::max(out.back().second, iv.second);
    else out.push_back(iv);
  }
  return out;
}

}  // namespace osim
