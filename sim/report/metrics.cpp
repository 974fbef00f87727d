#include "metrics.hpp"

#include <algorithm>
#include <cassert>
#include <map>

#include <fmt/format.h>

namespace osim {

Metrics compute_metrics(const Schedule& s, const hw::Topology& topo, const RunRecord& r) {
  if (r.spans) return compute_metrics(s, topo, r, *r.spans);
  RunSpans spans = RunSpans::for_schedule(s);
  for (int rank = 0; rank < static_cast<int>(r.ops.size()); ++rank)
    for (const OpRecord& rec : r.ops[static_cast<size_t>(rank)]) spans.add(rank, *rec.op, rec.start, rec.end);
  return compute_metrics(s, topo, r, spans);
}

Metrics compute_metrics(const Schedule& s, const hw::Topology& topo, const RunRecord& r, const RunSpans& spans) {
  Metrics m;
  m.name = s.name;
  m.topology = topo.name();
  m.ranks = s.ranks();
  m.makespan = r.makespan;
  for (size_t i = 0; i < RunSpans::kBins.size(); ++i) {
    const SpanBin& b = spans.histogram()[i];
    m.copy_histogram.push_back(HistogramBin{RunSpans::kBins[i][0], RunSpans::kBins[i][1], b.count, b.bytes, b.time});
  }
  m.bytes_h2d = spans.bytes_h2d;
  m.bytes_d2h = spans.bytes_d2h;
  m.bytes_p2p = spans.bytes_p2p;
  m.bytes_d2d = spans.bytes_d2d;
  m.bytes_collective = spans.bytes_collective;
  for (const auto& [idx, start] : spans.steps()) m.steps.push_back(StepMetrics{idx, start, start});
  for (int rank = 0; rank < s.ranks(); ++rank) {
    const RankBusy b = spans.busy(rank);
    RankMetrics rm;
    rm.rank = rank;
    rm.gpu = r.ranks[rank].gpu;
    rm.end = r.ranks[rank].end;
    rm.peak_vram = r.ranks[rank].peak_vram;
    rm.peak_parts = r.ranks[rank].peak_parts;
    rm.peak_vram_held = r.ranks[rank].peak_vram_held;
    rm.compute_busy = Time::from_ps(b.kernels);
    rm.comm = Time::from_ps(b.colls);
    rm.comm_exposed = Time::from_ps(b.colls_exposed);
    rm.copy = Time::from_ps(b.copies);
    rm.copy_stall = Time::from_ps(b.copies_in_gaps + b.compute_copies);
    rm.idle_other = Time::from_ps(b.gaps - b.copies_in_gaps);
    const double t_comm = static_cast<double>(b.colls_or_copies);
    const double total = static_cast<double>(rm.end.ps());
    rm.overlap_efficiency = t_comm > 0 ? (static_cast<double>(rm.compute_busy.ps()) + t_comm - total) / t_comm : 1.0;
    m.per_rank.push_back(rm);
  }
  const Time last_end = spans.steps_end().value_or(r.ranks[0].end);
  for (size_t i = 0; i < m.steps.size(); ++i) m.steps[i].end = i + 1 < m.steps.size() ? m.steps[i + 1].start : last_end;
  m.stages = stage_metrics(spans.stages(), r);
  return m;
}

nlohmann::ordered_json metrics_json(const Metrics& m, const hw::Topology& topo, const RunRecord& r) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["schema"] = "overlapsim.metrics/v1";
  j["source"] = m.source;
  j["name"] = m.name;
  j["topology"] = m.topology;
  j["ranks"] = m.ranks;
  j["makespan_s"] = m.makespan.s();
  ordered_json steps = ordered_json::array();
  for (const auto& st : m.steps) steps.push_back({{"index", st.index}, {"start_s", st.start.s()}, {"time_s", (st.end - st.start).s()}});
  j["steps"] = steps;
  if (!m.steps.empty()) {
    double sum = 0, lo = 1e300, hi = 0;
    for (const auto& st : m.steps) {
      const double t = (st.end - st.start).s();
      sum += t;
      lo = std::min(lo, t);
      hi = std::max(hi, t);
    }
    j["step_time_s"] = {{"mean", sum / static_cast<double>(m.steps.size())}, {"min", lo}, {"max", hi}};
  }
  stages_json(j, m);
  ordered_json ranks = ordered_json::array();
  for (const auto& rm : m.per_rank) {
    ordered_json parts;
    for (size_t i = 0; i < rm.peak_parts.size(); ++i) parts[mem_part_names()[i]] = rm.peak_parts[i];
    ranks.push_back({{"rank", rm.rank},
                     {"gpu", rm.gpu},
                     {"end_s", rm.end.s()},
                     {"peak_vram_bytes", rm.peak_vram},
                     {"peak_vram_parts", parts},
                     {"peak_vram_held_bytes", rm.peak_vram_held},
                     {"compute_busy_s", rm.compute_busy.s()},
                     {"comm_s", rm.comm.s()},
                     {"comm_exposed_s", rm.comm_exposed.s()},
                     {"copy_s", rm.copy.s()},
                     {"copy_stall_s", rm.copy_stall.s()},
                     {"idle_other_s", rm.idle_other.s()},
                     {"overlap_efficiency", rm.overlap_efficiency}});
  }
  j["per_rank"] = ranks;
  j["bytes"] = {{"h2d", m.bytes_h2d}, {"d2h", m.bytes_d2h}, {"p2p", m.bytes_p2p}, {"d2d", m.bytes_d2d}, {"collective", m.bytes_collective}};
  ordered_json links = ordered_json::array();
  const double span = m.makespan.s();
  for (size_t i = 0; i < r.resource_bytes.size(); ++i) {
    if (r.resource_bytes[i] <= 0) continue;
    const auto& res = topo.resources()[i];
    links.push_back({{"name", res.name},
                     {"bytes", r.resource_bytes[i]},
                     {"capacity_Bps", res.capacity},
                     {"avg_Bps", span > 0 ? r.resource_bytes[i] / span : 0.0},
                     {"utilisation", span > 0 ? r.resource_bytes[i] / span / res.capacity : 0.0}});
  }
  j["links"] = links;
  ordered_json hist = ordered_json::array();
  for (const auto& b : m.copy_histogram)
    hist.push_back({{"lo_GBps", b.lo_GBps},
                    {"hi_GBps", b.hi_GBps >= 1e300 ? ordered_json(nullptr) : ordered_json(b.hi_GBps)},
                    {"count", b.count},
                    {"bytes", b.bytes},
                    {"time_s", b.time.s()}});
  j["copy_bandwidth_histogram"] = hist;
  auto bn = [&](const std::vector<BottleneckStat>& v) {
    ordered_json a = ordered_json::array();
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i].time == Time::zero() && v[i].transfers == 0) continue;
      a.push_back({{"resource", i + 1 == v.size() ? std::string("own cap") : topo.resources()[i].name},
                   {"time_s", v[i].time.s()},
                   {"transfers", v[i].transfers}});
    }
    return a;
  };
  j["bottlenecks"] = {{"copies", bn(r.copy_bottlenecks)}, {"collectives", bn(r.collective_bottlenecks)}};
  // Engine hand-offs (a simulated run whose calibration has them).
  int64_t handoffs = 0;
  for (const auto& rs : r.ranks) handoffs += rs.handoffs;
  if (handoffs > 0) {
    ordered_json per = ordered_json::array();
    double total = 0;
    for (size_t i = 0; i < r.ranks.size(); ++i) {
      per.push_back({{"rank", i}, {"count", r.ranks[i].handoffs}, {"time_s", r.ranks[i].handoff_time.s()}});
      total += r.ranks[i].handoff_time.s();
    }
    j["handoffs"] = {{"count", handoffs}, {"time_s", total}, {"per_rank", per}};
  }
  return j;
}

}  // namespace osim
