#include "gpu/model.hpp"

#include <cassert>
#include <cmath>
#include <cstdlib>

namespace osim {

double ModelParams::NcclTable::time_at(double bytes) const {
  assert(!points.empty());
  if (bytes <= points.front().first || points.size() == 1) return points.front().second;
  size_t i = 1;
  while (i + 1 < points.size() && points[i].first < bytes) ++i;
  const auto [b0, t0] = points[i - 1];
  const auto [b1, t1] = points[i];
  // Between two sizes (and past the last): the latency + bandwidth line
  // through them.
  return t0 + (bytes - b0) * (t1 - t0) / (b1 - b0);
}

const ModelParams::NcclTable* ModelParams::nccl_table_for(TableColl coll, int ranks, bool via_host, int channels) const {
  const NcclTable* best = nullptr;
  for (const auto& t : nccl_tables) {
    if (t.coll != coll || t.via_host != via_host || t.channels != channels || t.points.empty()) continue;
    if (!best) {
      best = &t;
      continue;
    }
    const int d = std::abs(t.ranks - ranks), db = std::abs(best->ranks - ranks);
    if (d < db || (d == db && t.ranks > best->ranks)) best = &t;
  }
  return best;
}

}  // namespace osim
