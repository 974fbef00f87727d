#include "report/trace.hpp"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "io/text_file.hpp"

namespace osim {

namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::min();
constexpr int64_t kForever = std::numeric_limits<int64_t>::max();
constexpr int kMaxIndex = 1'000'000;  // an index list holds at most this many

// "--trace-steps: error: WHY": the flag stands where a file would.
[[noreturn]] void refuse(const std::string& flag, const std::string& why) { throw InputError(SourceLocation{flag, 0, 0}, why); }

// In a traced window (everything: always).
bool in_window(const TraceSelection& sel, int64_t ps) {
  if (sel.everything) return true;
  const auto it = std::upper_bound(sel.windows.begin(), sel.windows.end(), ps, [](int64_t x, const auto& w) { return x < w.first; });
  return it != sel.windows.begin() && ps < std::prev(it)->second;
}

// Counter samples in time order: those in a window, and before each window
// the last sample of each counter left out since (its value holds there).
// `key` tells the counters apart; `write` emits sample k.
template <class TimeOf, class Key, class Write>
void counter_samples(const TraceSelection& sel, size_t n, TimeOf time_of, Key key, Write write) {
  if (sel.everything) {
    for (size_t k = 0; k < n; ++k) write(k);
    return;
  }
  std::map<int, size_t> pending;
  size_t next_window = 0;  // the first window whose start no sample has reached yet
  auto carry_into = [&](int64_t t) {
    const size_t before = next_window;
    while (next_window < sel.windows.size() && sel.windows[next_window].first <= t) ++next_window;
    if (next_window == before) return;
    for (const auto& [c, k] : pending) write(k);
    pending.clear();
  };
  for (size_t k = 0; k < n; ++k) {
    carry_into(time_of(k).ps());
    if (in_window(sel, time_of(k).ps()))
      write(k);
    else
      pending[key(k)] = k;
  }
  carry_into(kForever);
}

}  // namespace

std::vector<int> parse_index_ranges(const std::string& text, const std::string& flag) {
  const std::string form = "write indices and ranges from 0, e.g. '0-1,39'";
  std::set<int> out;
  auto number = [&](std::string_view part) {
    int v = -1;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size() || v < 0)
      refuse(flag, fmt::format("'{}' is not an index in '{}': {}", part, text, form));
    if (v > kMaxIndex) refuse(flag, fmt::format("{} is past {}: no run has that many ranks or steps ({})", v, kMaxIndex, form));
    return v;
  };
  if (text.empty()) refuse(flag, "no indices given: " + form);
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view part(text.data() + pos, comma - pos);
    const size_t dash = part.find('-');
    const int lo = number(part.substr(0, dash));
    const int hi = dash == std::string_view::npos ? lo : number(part.substr(dash + 1));
    if (hi < lo) refuse(flag, fmt::format("the range '{}' runs backwards: write it '{}-{}'", part, hi, lo));
    for (int i = lo; i <= hi; ++i) out.insert(i);
    pos = comma + 1;
  }
  return {out.begin(), out.end()};
}

std::string index_ranges(const std::vector<int>& sorted) {
  std::string out;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + (i == j ? std::to_string(sorted[i]) : fmt::format("{}-{}", sorted[i], sorted[j]));
    i = j + 1;
  }
  return out;
}

TraceSelection select_trace(const TraceRequest& req, const Metrics& m) {
  const int nranks = static_cast<int>(m.per_rank.size());
  const int nsteps = static_cast<int>(m.steps.size());
  std::vector<int> run_steps;
  for (const StepMetrics& st : m.steps) run_steps.push_back(st.index);
  if (req.all && (!req.ranks.empty() || !req.steps.empty())) refuse("--trace-all", "it traces every rank and step: drop --trace-ranks and --trace-steps");
  for (int r : req.ranks)
    if (r >= nranks) refuse("--trace-ranks", fmt::format("the run has no rank {} (its ranks are 0-{})", r, nranks - 1));
  for (int st : req.steps)
    if (!std::binary_search(run_steps.begin(), run_steps.end(), st))
      refuse("--trace-steps", nsteps == 0 ? std::string("the run has no steps (no \"step N\" markers on rank 0's compute stream)")
                                          : fmt::format("the run has no step {} (its steps are {})", st, index_ranges(run_steps)));
  TraceSelection sel;
  sel.steps = run_steps;
  sel.rank.assign(static_cast<size_t>(nranks), 1);
  const bool chosen = !req.ranks.empty() || !req.steps.empty();
  const int64_t rank_steps = int64_t{nranks} * std::max(1, nsteps);
  if (req.all || (!chosen && rank_steps <= kTraceRankSteps)) return sel;

  // Ranks: as asked, else every one of a small run, else the first of each group of alike ranks.
  std::vector<int> ranks = req.ranks;
  if (ranks.empty()) {
    if (nranks <= kTraceRanksAll) {
      for (int r = 0; r < nranks; ++r) ranks.push_back(r);
    } else {
      for (const std::vector<int>& g : alike_rank_groups(m))
        for (size_t k = 0; k < g.size() && k < static_cast<size_t>(kTraceRanksPerGroup) && ranks.size() < static_cast<size_t>(kTraceRanks); ++k)
          ranks.push_back(g[k]);
      std::sort(ranks.begin(), ranks.end());
    }
  }
  // Steps: as asked, else the first ones within the limit for those ranks.
  std::vector<size_t> steps;  // positions in m.steps
  if (!req.steps.empty()) {
    for (size_t i = 0; i < m.steps.size(); ++i)
      if (std::binary_search(req.steps.begin(), req.steps.end(), m.steps[i].index)) steps.push_back(i);
  } else {
    const size_t n = static_cast<size_t>(std::max<int64_t>(1, kTraceRankSteps / static_cast<int64_t>(ranks.size())));
    for (size_t i = 0; i < m.steps.size() && i < n; ++i) steps.push_back(i);
  }
  sel.steps.clear();
  for (size_t i : steps) sel.steps.push_back(m.steps[i].index);
  if (static_cast<int>(ranks.size()) == nranks && static_cast<int>(steps.size()) == nsteps) return sel;  // all of it after all

  sel.everything = false;
  sel.rank.assign(static_cast<size_t>(nranks), 0);
  for (int r : ranks) sel.rank[static_cast<size_t>(r)] = 1;
  // Windows: before the first step, each chosen step, after the last; adjacent ones joined.
  if (m.steps.empty()) {
    sel.windows.emplace_back(kNever, kForever);
  } else {
    sel.windows.emplace_back(kNever, m.steps.front().start.ps());
    for (size_t i : steps) sel.windows.emplace_back(m.steps[i].start.ps(), m.steps[i].end.ps());
    sel.windows.emplace_back(m.steps.back().end.ps(), kForever);
    std::vector<std::pair<int64_t, int64_t>> joined;
    for (const auto& w : sel.windows)
      if (!joined.empty() && joined.back().second >= w.first)
        joined.back().second = std::max(joined.back().second, w.second);
      else
        joined.push_back(w);
    sel.windows = std::move(joined);
  }
  const std::string what_steps = nsteps == 0 ? std::string()
                                 : static_cast<int>(steps.size()) == nsteps
                                     ? fmt::format("all {} steps", nsteps)
                                     : fmt::format("step{} {} of {}", steps.size() == 1 ? "" : "s", index_ranges(sel.steps), index_ranges(run_steps));
  const std::string what_ranks = static_cast<int>(ranks.size()) == nranks
                                     ? fmt::format("all {} ranks", nranks)
                                     : fmt::format("rank{} {} of {}", ranks.size() == 1 ? "" : "s", index_ranges(ranks), nranks);
  sel.note = fmt::format("the trace holds {}{}{} ({}): --trace-all for all of it, --trace-steps and --trace-ranks to choose", what_steps,
                         what_steps.empty() ? "" : ", ", what_ranks,
                         chosen ? "as asked" : fmt::format("the default past {} ranks x steps", kTraceRankSteps));
  return sel;
}

void select_trace_links(TraceSelection& sel, const hw::Topology& topo, const RunRecord& r, size_t budget) {
  const size_t nres = topo.resources().size();
  const auto& ls = r.link_samples;
  // The samples the trace would write of each link.
  std::vector<size_t> count(nres, 0);
  counter_samples(
      sel, ls.size(), [&](size_t k) { return ls[k].time; }, [&](size_t k) { return ls[k].resource; },
      [&](size_t k) { ++count[static_cast<size_t>(ls[k].resource)]; });
  size_t total = 0, links = 0;
  for (size_t c : count) total += c, links += c > 0;
  const size_t traced = static_cast<size_t>(std::count(sel.rank.begin(), sel.rank.end(), 1));
  const bool ranks_left_out = traced < sel.rank.size();
  if (budget == 0) budget = ranks_left_out ? std::min(kTraceLinkSamples, kTraceLinkSamplesPerRank * traced) : kTraceLinkSamples;
  if (total <= budget) return;
  // The busiest links first (ties: in the topology's order), as many as fit.
  std::vector<size_t> order;
  for (size_t i = 0; i < nres; ++i)
    if (count[i] > 0) order.push_back(i);
  auto bytes = [&](size_t i) { return i < r.resource_bytes.size() ? r.resource_bytes[i] : 0.0; };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bytes(a) > bytes(b); });
  sel.link.assign(nres, 0);
  size_t kept = 0, kept_links = 0;
  for (size_t i : order) {
    if (kept + count[i] > budget) break;
    kept += count[i];
    ++kept_links;
    sel.link[i] = 1;
  }
  const std::string what =
      fmt::format("fabric counters of the {} busiest of {} links, {} of {} samples (the default past {} samples{}): --trace-all-links for every link",
                  kept_links, links, kept, total, budget, ranks_left_out ? fmt::format(", {} per traced rank", kTraceLinkSamplesPerRank) : "");
  sel.note = sel.note.empty() ? "the trace holds " + what : sel.note + "; " + what;
}

void write_trace(const Schedule& s, const hw::Topology& topo, const RunRecord& r, const TraceSelection& sel, const TraceSink& sink) {
  assert(r.ops.size() == static_cast<size_t>(s.ranks()) && "a run without ExecOptions::keep_records has no per-op records");
  auto esc = [](const std::string& x) {
    std::string o;
    for (char c : x) {
      if (c == '"' || c == '\\') o.push_back('\\');
      o.push_back(c);
    }
    return o;
  };
  // Written by hand, event per line, with fixed formatting: deterministic and streamed.
  if (sel.note.empty())
    sink("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
  else
    sink(fmt::format("{{\"displayTimeUnit\":\"ms\",\"otherData\":{{\"overlapsim selection\":\"{}\"}},\"traceEvents\":[\n", esc(sel.note)));
  bool first = true;
  auto emit = [&](const std::string& ev) {
    if (!first) sink(",\n");
    first = false;
    sink(ev);
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
  auto kept = [&](Time t) { return in_window(sel, t.ps()); };
  auto counters = [&](size_t n, auto time_of, auto key, auto write) { counter_samples(sel, n, time_of, key, write); };
  const int nstreams = static_cast<int>(s.streams.size());
  const int fabric_pid = s.ranks();
  if (!sel.note.empty()) {
    int shown = 0;
    while (shown < s.ranks() && !sel.rank[static_cast<size_t>(shown)]) ++shown;
    emit(fmt::format(R"J({{"ph":"i","pid":{},"tid":0,"ts":0.000,"name":"{}","s":"g"}})J", shown, esc(sel.note)));
  }
  for (int rank = 0; rank < s.ranks(); ++rank) {
    if (!sel.everything && !sel.rank[static_cast<size_t>(rank)]) continue;
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
      if ((rec.returned > rec.issue || op.kind == OpKind::HostWork || op.kind == OpKind::StreamSync || op.kind == OpKind::EventSync ||
           op.kind == OpKind::DeviceSync) &&
          kept(rec.issue)) {
        const Time end = std::max(rec.returned, op.stream >= 0 && op.kind != OpKind::StreamSync ? rec.returned : rec.end);
        emit(fmt::format(R"J({{"ph":"X","pid":{},"tid":0,"ts":{},"dur":{},"name":"{}","cat":"host"}})J", rank, us(rec.issue), dur(rec.issue, end),
                         esc(to_string(op.kind))));
      }
      if (op.stream < 0 || !rec.ran || !kept(rec.start)) continue;
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
    const auto& vram = r.vram[rank];
    counters(
        vram.size(), [&](size_t k) { return vram[k].first; }, [](size_t) { return 0; },
        [&](size_t k) {
          emit(fmt::format(R"J({{"ph":"C","pid":{},"ts":{},"name":"VRAM","args":{{"GiB":{:.4f}}}}})J", rank, us(vram[k].first),
                           static_cast<double>(vram[k].second) / 1073741824.0));
        });
  }
  // The request's stages and steps on a track of rank 0's (a workload with stages).
  if (const std::vector<RequestSlice> slices = request_slices(s, r); !slices.empty() && (sel.everything || sel.rank[0])) {
    emit(R"J({"ph":"M","pid":0,"tid":99,"name":"thread_name","args":{"name":"request"}})J");
    for (const RequestSlice& sl : slices)
      if (kept(sl.start))
        emit(fmt::format(R"J({{"ph":"X","pid":0,"tid":99,"ts":{},"dur":{},"name":"{}","cat":"stage"}})J", us(sl.start), dur(sl.start, sl.end),
                         esc(sl.name)));
  }
  if (!r.link_samples.empty()) {
    emit(fmt::format(R"J({{"ph":"M","pid":{},"name":"process_name","args":{{"name":"fabric ({})"}}}})J", fabric_pid, esc(topo.name())));
    const auto& ls = r.link_samples;
    counters(
        ls.size(), [&](size_t k) { return ls[k].time; }, [&](size_t k) { return ls[k].resource; },
        [&](size_t k) {
          if (!sel.link.empty() && !sel.link[static_cast<size_t>(ls[k].resource)]) return;
          emit(fmt::format(R"J({{"ph":"C","pid":{},"ts":{},"name":"{}","args":{{"GB/s":{:.3f}}}}})J", fabric_pid, us(ls[k].time),
                           esc(topo.resources()[ls[k].resource].name), ls[k].bytes_per_s * 1e-9));
        });
  }
  sink("\n]}\n");
}

void write_trace_file(const std::filesystem::path& path, const Schedule& s, const hw::Topology& topo, const RunRecord& r, const TraceSelection& sel) {
  OutputFile f(path);
  write_trace(s, topo, r, sel, [&](std::string_view x) { f.write(x); });
  f.commit();
}

std::string trace_json(const Schedule& s, const hw::Topology& topo, const RunRecord& r) {
  std::string out;
  write_trace(s, topo, r, TraceSelection{}, [&](std::string_view x) { out.append(x); });
  return out;
}

}  // namespace osim
