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

std::string trace_json(const Schedule& s, const hw::Topology& topo, const RunRecord& r) {
  assert(r.ops.size() == static_cast<size_t>(s.ranks()) && "a run without ExecOptions::keep_records has no per-op records");
  // Written by hand, event per line, with fixed formatting: deterministic and streamable.
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const std::string& ev) {
    if (!first) out += ",\n";
    first = false;
    out += ev;
  };
  // Every instant rounded once to the trace's unit (whole ns, written as µs
  // with 3 decimals) and a slice's duration taken between its rounded ends:
  // rounding is monotone, so slices that do not overlap in the run do not
  // overlap in the trace (Perfetto drops a complete event that overlaps the
  // one before it on its track).
  auto ns_of = [](Time t) {
    const int64_t ps = t.ps();
    return ps >= 0 ? (ps + 500) / 1000 : -((-ps + 499) / 1000);
  };
  auto us_ns = [](int64_t ns) {
    const uint64_t a = ns < 0 ? static_cast<uint64_t>(-ns) : static_cast<uint64_t>(ns);
    return fmt::format("{}{}.{:03}", ns < 0 ? "-" : "", a / 1000, a % 1000);
  };
  auto us = [&](Time t) { return us_ns(ns_of(t)); };
  auto dur = [&](Time from, Time to) { return us_ns(ns_of(to) - ns_of(from)); };
  auto esc = [](const std::string& x) {
    std::string o;
    for (char c : x) {
      if (c == '"' || c == '\\') o.push_back('\\');
      o.push_back(c);
    }
    return o;
  };
  const int nstreams = static_cast<int>(s.streams.size());
  const int fabric_pid = s.ranks();
  for (int rank = 0; rank < s.ranks(); ++rank) {
    emit(fmt::format(R"J({{"ph":"M","pid":{},"name":"process_name","args":{{"name":"rank {} ({})"}}}})J", rank, rank, esc(r.ranks[rank].gpu)));
    emit(fmt::format(R"J({{"ph":"M","pid":{},"tid":0,"name":"thread_name","args":{{"name":"host thread"}}}})J", rank));
    for (int st = 0; st < nstreams; ++st)
      emit(fmt::format(R"J({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":"stream {}"}}}})J", rank, 1 + st,
                       esc(s.streams[st].name)));
    const char* engines[] = {"copy engine H2D", "copy engine D2H", "copy engine other"};
    for (int e = 0; e < 3; ++e)
      emit(fmt::format(R"J({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":"{}"}}}})J", rank, 100 + e, engines[e]));
    for (size_t index = 0; index < r.ops[rank].size(); ++index) {
      const OpRecord& rec = r.ops[rank][index];
      const Op& op = *rec.op;
      const std::string name = esc(op.label.empty() ? to_string(op.kind) : op.label);
      // Host call.
      if (rec.returned > rec.issue || op.kind == OpKind::HostWork || op.kind == OpKind::StreamSync || op.kind == OpKind::EventSync ||
          op.kind == OpKind::DeviceSync) {
        const Time end = std::max(rec.returned, op.stream >= 0 && op.kind != OpKind::StreamSync ? rec.returned : rec.end);
        emit(fmt::format(R"J({{"ph":"X","pid":{},"tid":0,"ts":{},"dur":{},"name":"{}","cat":"host"}})J", rank, us(rec.issue), dur(rec.issue, end),
                         esc(to_string(op.kind))));
      }
      if (op.stream < 0 || !rec.ran) continue;
      const int tid = 1 + op.stream;
      if (op.kind == OpKind::Kernel || op.kind == OpKind::Collective || op.kind == OpKind::Memcpy) {
        emit(fmt::format(R"J({{"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"name":"{}","cat":"{}","args":{{"op":{}{}}}}})J", rank, tid, us(rec.start),
                         dur(rec.start, rec.end), name, to_string(op.kind), index,
                         op.bytes ? fmt::format(",\"bytes\":{}", op.bytes) : std::string()));
        if (op.kind == OpKind::Memcpy) {
          const int e = op.copy == CopyKind::H2D ? 0 : op.copy == CopyKind::D2H ? 1 : 2;
          const std::string bound = rec.bottleneck == -2 ? "" : rec.bottleneck == -1 ? "own cap" : topo.resources()[rec.bottleneck].name;
          const double d = (rec.end - rec.start).s();
          emit(fmt::format(
              R"J({{"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"name":"{}","cat":"copy","args":{{"GB/s":{:.2f},"bound by":"{}","bound for us":{}}}}})J",
              rank, 100 + e, us(rec.start), dur(rec.start, rec.end), name, d > 0 ? static_cast<double>(op.bytes) / d * 1e-9 : 0.0, esc(bound),
              us(rec.bottleneck_time)));
        }
      } else if (op.kind == OpKind::Marker) {
        emit(fmt::format(R"J({{"ph":"i","pid":{},"tid":{},"ts":{},"name":"{}","s":"t"}})J", rank, tid, us(rec.start), name));
      } else if (op.kind == OpKind::StreamWaitEvent && rec.waits_on >= 0) {
        const OpRecord& src = r.ops[rank][rec.waits_on];
        const int64_t id = int64_t{rank} * 10000000 + static_cast<int64_t>(index);
        emit(fmt::format(R"J({{"ph":"s","pid":{},"tid":{},"ts":{},"id":{},"name":"event {}","cat":"event"}})J", rank, 1 + src.op->stream, us(src.end),
                         id, esc(s.events[op.event])));
        emit(fmt::format(R"J({{"ph":"f","bp":"e","pid":{},"tid":{},"ts":{},"id":{},"name":"event {}","cat":"event"}})J", rank, tid, us(rec.start), id,
                         esc(s.events[op.event])));
      }
    }
    for (const auto& [t, b] : r.vram[rank])
      emit(fmt::format(R"J({{"ph":"C","pid":{},"ts":{},"name":"VRAM","args":{{"GiB":{:.4f}}}}})J", rank, us(t),
                       static_cast<double>(b) / 1073741824.0));
  }
  // The request's stages and steps on a track of rank 0's (a workload with stages).
  if (const std::vector<RequestSlice> slices = request_slices(s, r); !slices.empty()) {
    emit(R"J({"ph":"M","pid":0,"tid":99,"name":"thread_name","args":{"name":"request"}})J");
    for (const RequestSlice& sl : slices)
      emit(fmt::format(R"J({{"ph":"X","pid":0,"tid":99,"ts":{},"dur":{},"name":"{}","cat":"stage"}})J", us(sl.start), dur(sl.start, sl.end),
                       esc(sl.name)));
  }
  if (!r.link_samples.empty()) {
    emit(fmt::format(R"J({{"ph":"M","pid":{},"name":"process_name","args":{{"name":"fabric ({})"}}}})J", fabric_pid, esc(topo.name())));
    for (const auto& ls : r.link_samples)
      emit(fmt::format(R"J({{"ph":"C","pid":{},"ts":{},"name":"{}","args":{{"GB/s":{:.3f}}}}})J", fabric_pid, us(ls.time),
                       esc(topo.resources()[ls.resource].name), ls.bytes_per_s * 1e-9));
  }
  out += "\n]}\n";
  return out;
}

}  // namespace osim
