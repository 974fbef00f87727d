// Time intervals [start, end) as pairs: sorting, merging and measuring,
// shared by the run's spans and metrics (picoseconds) and the
// measured/simulated comparison (nanoseconds).
#pragma once

#include <algorithm>
#include <cstdint>
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

/// Total length of merged intervals.
template <class T>
T length(const std::vector<std::pair<T, T>>& v) {
  T t = 0;
  for (const auto& iv : v) t += iv.second - iv.first;
  return t;
}

/// Length of a minus b (both merged).
template <class T>
T length_minus(const std::vector<std::pair<T, T>>& a, const std::vector<std::pair<T, T>>& b) {
  T t = 0;
  size_t j = 0;
  for (const auto& iv : a) {
    T cur = iv.first;
    while (j < b.size() && b[j].second <= cur) ++j;
    size_t k = j;
    while (cur < iv.second) {
      if (k >= b.size() || b[k].first >= iv.second) {
        t += iv.second - cur;
        break;
      }
      if (b[k].first > cur) t += b[k].first - cur;
      cur = std::max(cur, b[k].second);
      ++k;
    }
  }
  return t;
}

/// Length of a and b together (both merged).
template <class T>
T length_both(const std::vector<std::pair<T, T>>& a, const std::vector<std::pair<T, T>>& b) {
  return length(a) - length_minus(a, b);
}

}  // namespace osim
