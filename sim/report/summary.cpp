// The ten-second summary `overlapsim run` and `report` print: the makespan
// and steps, what each rank did (a row a rank for small runs; alike ranks
// grouped, else the spread over ranks, so that a 1,024-rank run fits a
// screen), VRAM, bytes moved, the busiest links, the copy bandwidth
// histogram, what bound the transfers and the engine hand-offs.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "report/metrics.hpp"

namespace osim {

namespace {

constexpr size_t kRankRows = 16;      // up to this many ranks: a row each
constexpr size_t kGroupRows = 8;      // more ranks: a row per group of alike ranks, up to this many groups
constexpr size_t kBoundLinks = 3;     // resources named as binding the copies
constexpr double kBoundShare = 0.01;  // ... where they bound them at least this share of the run

// Two decimals, with no "-0.00" for a value that rounds to zero.
std::string two_decimals(double x) { return fmt::format("{:.2f}", std::round(x * 100) / 100 + 0.0); }

// A rank's cells after its rank and GPU.
std::vector<std::string> rank_cells(const RankMetrics& rm) {
  return {format_time(rm.compute_busy),
          format_time(rm.comm),
          format_time(rm.comm_exposed),
          format_time(rm.copy),
          format_time(rm.copy_stall),
          two_decimals(rm.overlap_efficiency),
          format_bytes(static_cast<double>(rm.peak_vram))};
}

std::string table_row(const std::string& rank, const std::string& gpu, const std::vector<std::string>& c) {
  return fmt::format("  {:<6} {:<8} {:>12} {:>12} {:>13} {:>12} {:>12} {:>8} {:>11}\n", rank, gpu, c[0], c[1], c[2], c[3], c[4], c[5], c[6]);
}

// "0-7,16-23" for a sorted rank list; past three runs of ranks, the first and a count.
std::string rank_ranges(const std::vector<int>& ranks) {
  std::vector<std::pair<int, int>> runs;
  for (int r : ranks)
    if (!runs.empty() && runs.back().second + 1 == r)
      runs.back().second = r;
    else
      runs.emplace_back(r, r);
  std::string out;
  for (size_t i = 0; i < runs.size() && i < 3; ++i)
    out += (i ? "," : "") + (runs[i].first == runs[i].second ? std::to_string(runs[i].first) : fmt::format("{}-{}", runs[i].first, runs[i].second));
  if (runs.size() > 3) out += ",…";
  return out;
}

// Ranks alike (every cell the same, as printed) in groups, by their first rank.
void grouped_rows(std::string& out, const std::vector<RankMetrics>& per_rank, const std::map<std::vector<std::string>, std::vector<int>>& groups) {
  std::vector<std::pair<int, const std::vector<std::string>*>> order;
  for (const auto& [cells, ranks] : groups) order.emplace_back(ranks.front(), &cells);
  std::sort(order.begin(), order.end());
  out += fmt::format("  {} ranks in {} group{} of alike ranks (every column the same):\n", per_rank.size(), groups.size(),
                     groups.size() == 1 ? "" : "s");
  out += fmt::format("  {:<20} {:>12} {:>12} {:>13} {:>12} {:>12} {:>8} {:>11}\n", "ranks", "compute", "comm", "comm exposed", "copy", "copy stall",
                     "overlap", "peak VRAM");
  for (const auto& [first, cells] : order) {
    const std::vector<int>& ranks = groups.at(*cells);
    const auto& c = *cells;
    out += fmt::format("  {:<20} {:>12} {:>12} {:>13} {:>12} {:>12} {:>8} {:>11}\n", fmt::format("{} ({})", rank_ranges(ranks), ranks.size()), c[0],
                       c[1], c[2], c[3], c[4], c[5], c[6]);
  }
}

// Per column, the spread over ranks: min (its rank), median, max (its rank).
void spread_rows(std::string& out, const std::vector<RankMetrics>& per_rank) {
  out += fmt::format("  {} ranks, spread over them: {:>20} {:>12} {:>20}\n", per_rank.size(), "min (rank)", "median", "max (rank)");
  auto row = [&](const char* what, auto value, auto show) {
    std::vector<std::pair<double, int>> v;
    for (const auto& rm : per_rank) v.emplace_back(value(rm), rm.rank);
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    const double med = n % 2 ? v[n / 2].first : (v[n / 2 - 1].first + v[n / 2].first) / 2;
    out += fmt::format("    {:<24} {:>20} {:>12} {:>20}\n", what, fmt::format("{} ({})", show(v.front().first), v.front().second), show(med),
                       fmt::format("{} ({})", show(v.back().first), v.back().second));
  };
  const auto time = [](double ps) { return format_time(Time::from_ps(static_cast<int64_t>(std::llround(ps)))); };
  const auto ps = [](Time RankMetrics::*f) { return [f](const RankMetrics& rm) { return static_cast<double>((rm.*f).ps()); }; };
  row("compute", ps(&RankMetrics::compute_busy), time);
  row("comm", ps(&RankMetrics::comm), time);
  row("comm exposed", ps(&RankMetrics::comm_exposed), time);
  row("copy", ps(&RankMetrics::copy), time);
  row("copy stall", ps(&RankMetrics::copy_stall), time);
  row(
      "overlap", [](const RankMetrics& rm) { return rm.overlap_efficiency; }, two_decimals);
  row(
      "peak VRAM", [](const RankMetrics& rm) { return static_cast<double>(rm.peak_vram); }, format_bytes);
}

void rank_table(std::string& out, const std::vector<RankMetrics>& per_rank) {
  if (per_rank.size() <= kRankRows) {
    out += table_row("rank", "gpu", {"compute", "comm", "comm exposed", "copy", "copy stall", "overlap", "peak VRAM"});
    for (const auto& rm : per_rank) out += table_row(std::to_string(rm.rank), rm.gpu, rank_cells(rm));
    return;
  }
  std::map<std::vector<std::string>, std::vector<int>> groups;
  for (const auto& rm : per_rank) groups[rank_cells(rm)].push_back(rm.rank);
  if (groups.size() <= kGroupRows)
    grouped_rows(out, per_rank, groups);
  else
    spread_rows(out, per_rank);
}

}  // namespace

std::vector<std::vector<int>> alike_rank_groups(const Metrics& m) {
  std::map<std::vector<std::string>, std::vector<int>> groups;
  for (const auto& rm : m.per_rank) groups[rank_cells(rm)].push_back(rm.rank);
  std::vector<std::vector<int>> out;
  for (auto& [cells, ranks] : groups) out.push_back(std::move(ranks));
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

std::string resource_name(const hw::Topology& topo, size_t i, size_t n) {
  return i + 1 == n ? std::string("their own cap") : topo.resources()[i].name;
}

// What bound the copies (the collectives' transfers): each resource's share of the run during which it
// bound at least one of them.
void binding(std::string& out, const Metrics& m, const hw::Topology& topo, const std::vector<Time>& b, const char* what, const char* one) {
  std::vector<size_t> order;
  for (size_t i = 0; i < b.size(); ++i)
    if (b[i] > Time::zero()) order.push_back(i);
  if (order.empty() || m.makespan <= Time::zero()) return;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return b[x] > b[y]; });
  std::string list;
  for (size_t k = 0; k < order.size() && k < kBoundLinks; ++k) {
    const double share = b[order[k]].s() / m.makespan.s();
    if (k > 0 && share < kBoundShare) break;
    list += fmt::format("{}{} {:.1f} % ({})", k ? ", " : "", resource_name(topo, order[k], b.size()), 100 * share, format_time(b[order[k]]));
  }
  out += fmt::format("  {} were bound (share of the makespan during which it bound at least one {}): {}\n", what, one, list);
}

// What slowed compute, by source, as a share of the kernel time it would have taken without them.
void compute_slowdown(std::string& out, const Metrics& m, const RunRecord& r) {
  Time by_comm, by_copies, by_clock, by_nvlink, busy;
  for (const auto& rs : r.ranks) {
    by_comm += rs.slowed_by_collectives;
    by_copies += rs.slowed_by_copies;
    by_clock += rs.slowed_by_clock;
    by_nvlink += rs.slowed_by_nvlink;
  }
  for (const auto& rm : m.per_rank) busy += rm.compute_busy;
  const Time all = by_comm + by_copies + by_clock + by_nvlink;
  if (all <= Time::zero() || busy <= all) return;
  const double unslowed = (busy - all).s();
  auto pct = [&](Time t) { return 100 * t.s() / unslowed; };
  std::string parts;
  for (const auto& [t, what] : {std::pair{by_copies, "copies' interference"}, std::pair{by_comm, "collectives' interference"},
                                std::pair{by_clock, "the clock under sustained load"}, std::pair{by_nvlink, "NVLink awake"}})
    if (pct(t) >= 0.05) parts += fmt::format("{}{} {:.1f} %", parts.empty() ? "" : ", ", what, pct(t));
  if (parts.empty()) return;
  out += fmt::format("  compute slowed {:.1f} % (kernel time over what it takes alone at full clock): {}\n", pct(all), parts);
}

}  // namespace

std::string format_summary(const Metrics& m, const hw::Topology& topo, const RunRecord& r, const std::string& headline) {
  std::string out = headline + "\n";
  out += fmt::format("  makespan {}", format_time(m.makespan));
  if (!m.steps.empty()) {
    Time lo = Time::max(), hi, sum;
    for (const auto& st : m.steps) {
      const Time t = st.end - st.start;
      lo = std::min(lo, t);
      hi = std::max(hi, t);
      sum += t;
    }
    out += fmt::format("   {} steps, step time mean {} (min {}, max {})", m.steps.size(),
                       format_time(Time::from_ps(sum.ps() / static_cast<int64_t>(m.steps.size()))), format_time(lo), format_time(hi));
  }
  out += "\n";
  out += format_stages(m);
  rank_table(out, m.per_rank);
  compute_slowdown(out, m, r);
  // The rank with the most VRAM at its peak, and what held it.
  const auto most =
      std::max_element(m.per_rank.begin(), m.per_rank.end(), [](const RankMetrics& a, const RankMetrics& b) { return a.peak_vram < b.peak_vram; });
  if (most != m.per_rank.end() && most->peak_vram > 0)
    out += fmt::format("  peak VRAM {} (rank {}): {}{}\n", format_bytes(static_cast<double>(most->peak_vram)), most->rank,
                       format_vram_parts(most->peak_parts),
                       most->peak_vram_held > most->peak_vram
                           ? fmt::format("; the allocator holds up to {} where the GPU has room (memory freed on a stream waits for it)",
                                         format_bytes(static_cast<double>(most->peak_vram_held)))
                           : "");
  out += fmt::format("  moved: H2D {}, D2H {}, P2P {}, collectives {} (per-rank buffers)\n", format_bytes(m.bytes_h2d), format_bytes(m.bytes_d2h),
                     format_bytes(m.bytes_p2p), format_bytes(m.bytes_collective));
  const double span = m.makespan.s();
  const std::vector<size_t> order = hw::by_utilisation(topo, r.resource_bytes, span);
  auto util = [&](size_t i) { return r.resource_bytes[i] / span / topo.resources()[i].capacity; };
  if (!order.empty()) out += "  busiest links (average over the run):\n";
  for (size_t k = 0; k < order.size() && k < 5; ++k)
    out += fmt::format("    {:<26} {:>12} of {:>12}  {:5.1f} %\n", topo.resources()[order[k]].name,
                       format_bandwidth({r.resource_bytes[order[k]] / span}), format_bandwidth({topo.resources()[order[k]].capacity}),
                       100 * util(order[k]));
  int64_t copies = 0;
  for (const auto& b : m.copy_histogram) copies += b.count;
  if (copies > 0) {
    out += "  copy bandwidth histogram:   range          count         data         time\n";
    for (const auto& b : m.copy_histogram)
      out += fmt::format("    {:>26} {:>10} {:>12} {:>12}\n",
                         b.hi_GBps >= 1e300 ? fmt::format("{:.0f}+ GB/s", b.lo_GBps) : fmt::format("{:.0f}-{:.0f} GB/s", b.lo_GBps, b.hi_GBps),
                         b.count, format_bytes(b.bytes), format_time(b.time));
  }
  binding(out, m, topo, r.copy_binding, "copies", "copy");
  // Collectives replayed in closed form have no flows: only those run as flows count here.
  binding(out, m, topo, r.collective_binding, "collective transfers", "transfer");
  int64_t handoffs = 0;
  Time handoff_time;
  for (const auto& rs : r.ranks) handoffs += rs.handoffs, handoff_time += rs.handoff_time;
  if (handoffs > 0)
    out += fmt::format("  engine hand-offs (copy after kernel, kernel after copy): {} on {} rank{}, {} in all\n", handoffs, r.ranks.size(),
                       r.ranks.size() == 1 ? "" : "s", format_time(handoff_time));
  return out;
}

}  // namespace osim
