// Time intervals [start, end) as pairs: sorting, merging and measuring,
// shared by the run's spans and metrics (picoseconds) and the
// measured/simulated comparison (nanoseconds).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace osim {

/// Sorts `v` and joins overlapping and touching intervals, dropping empty
/// ones, in place (no allocation).
template <class T>
void merge_in_place(std::vector<std::pair<T, T>>& v) {
  if (!std::is_sorted(v.begin(), v.end())) std::sort(v.begin(), v.end());  // often sorted already (one stream)
  size_t n = 0;
  for (const auto& iv : v) {
    if (iv.second <= iv.first) continue;
    if (n > 0 && iv.first <= v[n - 1].second)
      v[n - 1].second = std::max(v[n - 1].second, iv.second);
    else
      v[n++] = iv;
  }
  v.resize(n);
}

/// Sorted, overlapping and touching intervals joined, empty ones dropped.
template <class T>
std::vector<std::pair<T, T>> merge_intervals(std::vector<std::pair<T, T>> v) {
  merge_in_place(v);
  return v;
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
