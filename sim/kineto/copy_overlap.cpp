#include "kineto/copy_overlap.hpp"

#include <algorithm>
#include <limits>

namespace osim::kineto {

void CopyOverlap::add(Engine engine, int64_t start, int64_t end) {
  if (end > start) busy_[engine].emplace_back(start, end);
}

void CopyOverlap::build() {
  for (auto& v : busy_) {
    std::sort(v.begin(), v.end());
    size_t out = 0;
    for (const auto& iv : v) {
      if (out > 0 && iv.first <= v[out - 1].second)
        v[out - 1].second = std::max(v[out - 1].second, iv.second);
      else
        v[out++] = iv;
    }
    v.resize(out);
  }
}

std::array<uint32_t, 3> CopyOverlap::beside(int64_t start, int64_t end) const {
  // Each engine's busy edges within [start, end): +1 where a stretch begins, -1 where it ends.
  std::vector<std::pair<int64_t, int>> edges;
  for (const auto& v : busy_) {
    auto it = std::upper_bound(v.begin(), v.end(), std::make_pair(start, std::numeric_limits<int64_t>::max()));
    if (it != v.begin() && std::prev(it)->second > start) --it;
    for (; it != v.end() && it->first < end; ++it) {
      edges.emplace_back(std::max(it->first, start), +1);
      edges.emplace_back(std::min(it->second, end), -1);
    }
  }
  std::array<int64_t, 3> ns{};
  std::sort(edges.begin(), edges.end());
  int busy = 0;
  int64_t at = start;
  for (const auto& [t, d] : edges) {
    if (busy > 0) ns[static_cast<size_t>(busy - 1)] += t - at;
    busy += d;
    at = t;
  }
  std::array<uint32_t, 3> out{};
  for (size_t i = 0; i < 3; ++i) out[i] = static_cast<uint32_t>(std::min<int64_t>(ns[i], std::numeric_limits<uint32_t>::max()));
  return out;
}

}  // namespace osim::kineto
