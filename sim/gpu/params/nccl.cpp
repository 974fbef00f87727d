// Calibration fields of the NCCL collectives: channels, latencies, rank
// ceilings, measured tables (and the struct's methods).
#include "gpu/params/field.hpp"

#include <cassert>
#include <cstdlib>

#include <fmt/format.h>

namespace osim {

const char* table_coll_name(TableColl c) {
  switch (c) {
    case TableColl::AllToAll: return "all_to_all";
    case TableColl::AllToAllPairwise: return "all_to_all_pairwise";
    case TableColl::AllGather: return "all_gather";
    case TableColl::ReduceScatter: return "reduce_scatter";
    case TableColl::AllReduce: return "all_reduce";
    case TableColl::FrameworkAllToAllPairwise: return "framework_all_to_all_pairwise";
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

namespace params {

namespace {

void read_nccl_tables(const MapReader& m, const std::string& file, ModelParams& p) {
  const YAML::Node list = m.get("nccl_tables");
  if (!list.IsSequence()) m.fail("nccl_tables", "must be a list of {collective, ranks, transport, channels (optional), points}");
  p.nccl.nccl_tables.clear();
  for (const YAML::Node& e : list) {
    MapReader t(file, e, "nccl_tables entry", {"collective", "ranks", "transport", "channels", "points"});
    NcclTable tab;
    const std::string coll = t.str("collective"), transport = t.str("transport");
    bool known = false;
    for (const auto k : kTableColls)
      if (coll == table_coll_name(k)) {
        tab.coll = k;
        known = true;
      }
    if (!known)
      t.fail("collective", "must be all_to_all, all_to_all_pairwise, all_gather, reduce_scatter, all_reduce or framework_all_to_all_pairwise");
    if (transport != "p2p" && transport != "host") t.fail("transport", "must be p2p or host");
    tab.via_host = transport == "host";
    const auto ranks = t.opt_int32("ranks");
    if (!ranks || *ranks < 2) t.fail("ranks", "must be a whole number >= 2");
    tab.ranks = static_cast<int>(*ranks);
    if (const auto ch = t.opt_int32("channels")) {
      if (*ch < 1 || *ch > 64) t.fail("channels", "must be 1..64 (leave it out for NCCL's choice)");
      tab.channels = static_cast<int>(*ch);
    }
    const YAML::Node pts = t.get("points");
    if (!pts.IsSequence() || pts.size() == 0) t.fail("points", "must be a non-empty list of [bytes per rank, time in us]");
    for (const YAML::Node& q : pts) {
      double b = 0, us = 0;
      try {
        if (!q.IsSequence() || q.size() != 2) throw YAML::Exception(q.Mark(), "");
        b = q[0].as<double>();
        us = q[1].as<double>();
      } catch (const YAML::Exception&) {
        throw InputError(location_of(file, q), "each point is [bytes per rank, time in us]");
      }
      if (!(b > 0 && us > 0) || (!tab.points.empty() && (b <= tab.points.back().first || us * 1e-6 < tab.points.back().second)))
        throw InputError(location_of(file, q), "points need positive bytes and times, bytes ascending and times not decreasing");
      tab.points.emplace_back(b, us * 1e-6);
    }
    p.nccl.nccl_tables.push_back(std::move(tab));
  }
}

}  // namespace

std::vector<Field> nccl_fields() {
  return {
      {.name = "nccl_channels",
       .family = "nccl",
       .kind = Kind::Count,
       .ref = OSIM_REF(nccl, nccl_channels),
       .precision = 0,
       .lo = 1,
       .hi = 64,
       .example = "24",
       .doc = "channels a collective uses where the schedule gives none"},
      {.name = "nccl_channel_bandwidth",
       .family = "nccl",
       .kind = Kind::Bandwidth,
       .ref = OSIM_REF(nccl, nccl_channel_bandwidth),
       .hi = 1e5,
       .lo_open = true,
       .example = "19.5 GB/s",
       .doc = "one channel's rate"},
      {.name = "nccl_latency",
       .family = "nccl",
       .kind = Kind::TimeUs,
       .ref = OSIM_REF(nccl, nccl_latency),
       .hi = 1e6,
       .example = "10 us",
       .doc = "per collective launch (and per pairwise round)"},
      {.name = "nccl_step_latency",
       .family = "nccl",
       .kind = Kind::TimeUs,
       .ref = OSIM_REF(nccl, nccl_step_latency),
       .hi = 1e6,
       .example = "1 us",
       .doc = "each further ring step"},
      {.name = "nccl_rank_bandwidth",
       .family = "nccl",
       .kind = Kind::Bandwidth,
       .ref = OSIM_REF(nccl, nccl_rank_bandwidth),
       .hi = 1e5,
       .lo_open = true,
       .example = "330 GB/s",
       .written = OSIM_LIMITED(nccl, nccl_rank_bandwidth),
       .doc = "ceiling of one rank's collective traffic (absent: none)"},
      {.name = "nccl_host_rank_bandwidth",
       .family = "nccl",
       .kind = Kind::Bandwidth,
       .ref = OSIM_REF(nccl, nccl_host_rank_bandwidth),
       .hi = 1e5,
       .lo_open = true,
       .example = "24 GB/s",
       .written = OSIM_LIMITED(nccl, nccl_host_rank_bandwidth),
       .doc = "the same through host memory (NCCL_P2P_DISABLE=1)"},
      {.name = "nccl_model",
       .family = "nccl",
       .kind = Kind::Count,
       .ref = OSIM_REF(nccl, nccl_model),
       .precision = 0,
       .lo = 0,
       .hi = 1,
       .example = "1",
       .written = OSIM_POS(nccl, nccl_model),
       .doc = "1: collectives no table fits take NCCL's model over the topology (its channels, latency and protocol by size), not the "
              "channel fields; written where nothing NCCL was measured"},
      {.name = "nccl_tables",
       .family = "nccl",
       .kind = Kind::Custom,
       .example = "[{collective: all_to_all, ranks: 4, transport: p2p, points: [[1048576, 20.5]]}]",
       .written = [](const ModelParams& p) { return !p.nccl.nccl_tables.empty(); },
       .doc = "collectives measured at NCCL's channels or the given count: [bytes per rank, time in us]; used inside one host, nearest rank count; "
              "framework_all_to_all_pairwise: the pairwise all-to-all as the framework calls it, timed from before the call",
       .read = read_nccl_tables,
       .write =
           [](const ModelParams& p) {
             std::string out = "\n";
             for (const auto& tab : p.nccl.nccl_tables) {
               out += fmt::format("    - {{collective: {}, ranks: {}, transport: {}, {}points: [", table_coll_name(tab.coll), tab.ranks,
                                  tab.via_host ? "host" : "p2p", tab.channels > 0 ? fmt::format("channels: {}, ", tab.channels) : std::string());
               for (size_t i = 0; i < tab.points.size(); ++i)
                 out += fmt::format("{}[{:.0f}, {:.2f}]", i ? ", " : "", tab.points[i].first, tab.points[i].second * 1e6);
               out += "]}\n";
             }
             return out;
           }},
  };
}

}  // namespace params
}  // namespace osim
