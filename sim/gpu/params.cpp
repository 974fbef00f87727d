#include "gpu/params.hpp"

#include <cassert>
#include <cmath>
#include <cstdlib>

namespace osim {

const char* table_coll_name(TableColl c) {
  switch (c) {
    case TableColl::AllToAll: return "all_to_all";
    case TableColl::AllToAllPairwise: return "all_to_all_pairwise";
    case TableColl::AllGather: return "all_gather";
    case TableColl::ReduceScatter: return "reduce_scatter";
    case TableColl::AllReduce: return "all_reduce";
  }
  return "?";
}

double NcclTable::time_at(double bytes) const {
  assert(!points.empty());
  if (bytes <= points.front().first || points.size() == 1) return points.front().second;
  size_t i = 1;
  while (i + 1 < points.size() && points[i].first < bytes) ++i;
  const auto [b0, t0] = points[i - 1];
  const auto [b1, t1] = points[i];
  return t0 + (bytes - b0) * (t1 - t0) / (b1 - b0);
}

const NcclTable* NcclParams::nccl_table_for(TableColl coll, int ranks, bool via_host, int channels) const {
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

double CopyParams::copy_bidir_factor_for(bool d2h, Bytes bytes) const {
  if (!copy_bidir_tabled()) return copy_bidir_factor_for(d2h);
  const auto& t = copy_bidir_table;
  const size_t k = d2h ? 2 : 1;
  const double b = static_cast<double>(bytes);
  if (b <= t.front()[0]) return t.front()[k];
  if (b >= t.back()[0]) return t.back()[k];
  size_t i = 1;
  while (t[i][0] < b) ++i;
  const double x = (std::log(b) - std::log(t[i - 1][0])) / (std::log(t[i][0]) - std::log(t[i - 1][0]));
  return t[i - 1][k] + x * (t[i][k] - t[i - 1][k]);
}

}  // namespace osim
