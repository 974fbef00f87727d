// The Perfetto trace of shipped workloads, read back as JSON: no two complete
// slices on one track overlap (Perfetto drops a slice that overlaps the one
// before it on its track, so it would vanish from the timeline); a selection
// of ranks and steps holds exactly those; a run that keeps records and link
// samples for that selection alone writes the same trace of those ranks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gpu/executor.hpp"
#include "report/metrics.hpp"
#include "report/trace.hpp"
#include "workload/dit.hpp"
#include "workload_run.hpp"

using namespace osim;

namespace {

struct Slice {
  int64_t start_ns, end_ns;
  size_t line;
};

// Slices per track (pid, tid), in the order written; the trace's times are µs with 3 decimals (whole ns).
std::map<std::pair<int, int>, std::vector<Slice>> slices_of(const std::string& trace) {
  const nlohmann::json j = nlohmann::json::parse(trace);
  std::map<std::pair<int, int>, std::vector<Slice>> tracks;
  size_t i = 0;
  for (const auto& ev : j.at("traceEvents")) {
    ++i;
    if (ev.at("ph") != "X") continue;
    const auto ns = [](double us) { return std::llround(us * 1000); };
    const int64_t start = ns(ev.at("ts").get<double>());
    tracks[{ev.at("pid").get<int>(), ev.at("tid").get<int>()}].push_back({start, start + ns(ev.at("dur").get<double>()), i});
  }
  return tracks;
}

// The first overlap on any track ("" when none), and how many slices were checked.
std::pair<std::string, size_t> first_overlap(const std::string& trace) {
  size_t n = 0;
  for (auto& [track, v] : slices_of(trace)) {
    n += v.size();
    std::stable_sort(v.begin(), v.end(), [](const Slice& a, const Slice& b) { return a.start_ns < b.start_ns; });
    for (size_t k = 1; k < v.size(); ++k)
      if (v[k].start_ns < v[k - 1].end_ns)
        return {"pid " + std::to_string(track.first) + " tid " + std::to_string(track.second) + ": event " + std::to_string(v[k].line) +
                    " starts at " + std::to_string(v[k].start_ns) + " ns, before event " + std::to_string(v[k - 1].line) + " ends at " +
                    std::to_string(v[k - 1].end_ns) + " ns",
                n};
  }
  return {"", n};
}

std::string trace_of(const std::string& workload, const std::vector<std::string>& sets) {
  const DitWorkload w = parse_workload_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/workloads/" + workload + ".yaml", sets);
  const Schedule s = generate_schedule(w);
  const hw::Topology topo(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/workloads/" + w.topology));
  const ExecResult r = execute(s, topo, w.params, ExecOptions{});
  return trace_json(s, topo, r);
}

}  // namespace

TEST_CASE("no two slices on one track of a shipped workload's trace overlap") {
  for (const std::string wl : {"wan22-720p-h200-layerwise", "wan22-720p-aces-layerwise", "wan21-480p-4090-block"}) {
    CAPTURE(wl);
    const auto [overlap, slices] = first_overlap(trace_of(wl, {"steps=1"}));
    CHECK(slices > 1000);  // the trace has its kernels, copies and host calls
    CHECK(overlap == "");
  }
}

TEST_CASE("the overlap check finds a slice that starts before the one before it ends") {
  const std::string t = R"({"traceEvents":[
{"ph":"X","pid":0,"tid":1,"ts":1.000,"dur":2.000,"name":"a"},
{"ph":"X","pid":0,"tid":2,"ts":2.000,"dur":1.000,"name":"other track"},
{"ph":"X","pid":0,"tid":1,"ts":2.999,"dur":1.000,"name":"b"}]})";
  CHECK(first_overlap(t).first == "pid 0 tid 1: event 3 starts at 2999 ns, before event 1 ends at 3000 ns");
  CHECK(first_overlap(R"({"traceEvents":[{"ph":"X","pid":0,"tid":1,"ts":1.000,"dur":2.000},{"ph":"X","pid":0,"tid":1,"ts":3.000,"dur":0.000}]})")
            .first == "");
}

TEST_CASE("a trace of chosen ranks and steps holds exactly those, and the full selection is the whole trace") {
  const test::Run ran = test::run("wan22-720p-aces-layerwise", {"steps=3"}, /*samples=*/true);
  const Schedule& s = ran.s;
  const hw::Topology& topo = *ran.topo;
  const ExecResult& r = ran.r;
  const Metrics& m = ran.m;
  REQUIRE(m.steps.size() == 3);
  auto written = [&](const TraceSelection& sel) {
    std::string out;
    write_trace(s, topo, r, sel, [&](std::string_view x) { out.append(x); });
    return out;
  };
  // 4 ranks x 3 steps is within the limit: the default is the whole trace, byte for byte.
  const TraceSelection whole = select_trace({}, m);
  CHECK(whole.everything);
  const std::string full = written(whole);
  CHECK(full == trace_json(s, topo, r));

  TraceRequest req;
  req.ranks = parse_index_ranges("0,2", "--trace-ranks");
  req.steps = parse_index_ranges("1", "--trace-steps");
  const std::string part = written(select_trace(req, m));
  const nlohmann::json j = nlohmann::json::parse(part);
  CHECK(j.at("otherData").at("overlapsim selection").get<std::string>().find("step 1 of 0-2, ranks 0,2 of 4 (as asked)") != std::string::npos);
  const int64_t step1_from = (m.steps[1].start.ps() + 500) / 1000, step1_to = (m.steps[1].end.ps() + 500) / 1000;  // ns, as written
  const int64_t steps_from = (m.steps[0].start.ps() + 500) / 1000, steps_to = (m.steps[2].end.ps() + 500) / 1000;
  std::set<int> pids;
  std::set<std::string> step_markers;
  size_t slices = 0, counters = 0;
  for (const auto& ev : j.at("traceEvents")) {
    const int pid = ev.at("pid").get<int>();
    pids.insert(pid);
    const std::string ph = ev.at("ph");
    if (ph == "M" || (ph == "i" && ev.value("s", "") == "g")) continue;
    const int64_t ts = std::llround(ev.at("ts").get<double>() * 1000);
    if (ph == "i" && ev.at("name").get<std::string>().rfind("step ", 0) == 0) step_markers.insert(ev.at("name").get<std::string>().substr(0, 6));
    if (ph == "X" || ph == "i" || ph == "f") {
      ++slices;
      // In step 1, or outside the steps (before the first, after the last).
      CHECK((ts < steps_from || ts >= steps_to || (ts >= step1_from && ts < step1_to)));
    }
    if (ph == "C") ++counters;
  }
  CHECK(pids == std::set<int>{0, 2, 4});  // ranks 0 and 2, and the fabric's counters (pid 4)
  CHECK(step_markers == std::set<std::string>{"step 1"});
  CHECK(slices > 1000);
  CHECK(counters > 0);
  CHECK(part.size() * 2 < full.size());
}

TEST_CASE("a run that keeps records and link samples for the traced ranks and steps alone writes their trace and every rank's metrics") {
  const test::Run ran = test::run("wan22-720p-aces-layerwise", {"steps=3"}, /*samples=*/true);
  const DitWorkload& w = ran.w;
  const Schedule& s = ran.s;
  const hw::Topology& topo = *ran.topo;
  const ExecResult& all = ran.r;
  const Metrics& m = ran.m;
  ExecOptions opts;
  opts.link_samples = true;
  TraceRequest req;
  req.ranks = parse_index_ranges("1,3", "--trace-ranks");
  req.steps = parse_index_ranges("2", "--trace-steps");
  const TraceSelection sel = select_trace(req, m);
  REQUIRE(!sel.everything);
  opts.record_ranks = sel.rank;
  opts.sample_windows = sel.windows;
  const ExecResult part = execute(s, topo, w.params, opts);
  // Records and VRAM timelines of ranks 1 and 3 alone, each a record per op.
  REQUIRE(part.ops.size() == 4);
  for (size_t r = 0; r < 4; ++r) {
    CAPTURE(r);
    const bool traced = r == 1 || r == 3;
    CHECK(part.ops[r].size() == (traced ? s.programs[r].ops->size() : 0));
    CHECK(part.vram[r].size() == (traced ? all.vram[r].size() : 0));
    CHECK(!all.ops[r].empty());
  }
  CHECK(part.ops[1][7].end == all.ops[1][7].end);
  // Link samples: fewer (steps 0 and 1 left out but for each link's last value before step 2; of
  // the links a transfer of rank 1 or 3 crossed, from the first on); the trace the same byte for
  // byte but for the fabric's counters, which are some of the full run's, in its order.
  CHECK(!part.link_samples.empty());
  CHECK(part.link_samples.size() * 3 < all.link_samples.size() * 2);
  auto written = [&](const ExecResult& r) {
    std::string out;
    write_trace(s, topo, r, sel, [&](std::string_view x) { out.append(x); });
    std::vector<std::string> ranks, fabric;  // the fabric is process 4
    for (size_t at = 0, nl; at < out.size(); at = nl + 1) {
      nl = out.find('\n', at);
      const std::string line = out.substr(at, nl - at);
      (line.find("\"pid\":4,") != std::string::npos ? fabric : ranks).push_back(line);
    }
    return std::make_pair(ranks, fabric);
  };
  const auto [part_ranks, part_fabric] = written(part);
  const auto [all_ranks, all_fabric] = written(all);
  CHECK(part_ranks == all_ranks);
  CHECK(part_fabric.size() > 10);
  CHECK(part_fabric.size() < all_fabric.size());
  size_t k = 0;
  for (const std::string& line : all_fabric)
    if (k < part_fabric.size() && line == part_fabric[k]) ++k;
  CHECK(k == part_fabric.size());
  // The metrics, every rank's, from the spans the run kept beside the records.
  REQUIRE(part.spans.has_value());
  CHECK(metrics_json(compute_metrics(s, topo, part), topo, part).dump() == metrics_json(m, topo, all).dump());
}

TEST_CASE("past its budget of link samples the trace keeps the busiest links' counters and says what it left out") {
  const test::Run ran = test::run("wan22-720p-aces-layerwise", {"steps=2"}, /*samples=*/true);
  const Schedule& s = ran.s;
  const hw::Topology& topo = *ran.topo;
  const ExecResult& r = ran.r;
  const Metrics& m = ran.m;
  const int fabric = s.ranks();
  // The fabric's counter samples per link, as written.
  auto fabric_samples = [&](const TraceSelection& sel, std::string* note) {
    std::string out;
    write_trace(s, topo, r, sel, [&](std::string_view x) { out.append(x); });
    const nlohmann::json j = nlohmann::json::parse(out);
    if (note) *note = j.contains("otherData") ? j.at("otherData").at("overlapsim selection").get<std::string>() : "";
    std::map<std::string, size_t> n;
    for (const auto& ev : j.at("traceEvents"))
      if (ev.at("ph") == "C" && ev.at("pid").get<int>() == fabric) ++n[ev.at("name").get<std::string>()];
    return n;
  };
  TraceSelection whole = select_trace({}, m);
  REQUIRE(whole.everything);
  const std::map<std::string, size_t> all = fabric_samples(whole, nullptr);
  size_t total = 0;
  for (const auto& [name, n] : all) total += n;
  REQUIRE(all.size() > 4);
  // Within the budget: every link, nothing said, the trace as before.
  TraceSelection fits = whole;
  select_trace_links(fits, topo, r, total);
  CHECK(fits.link.empty());
  CHECK(fits.note.empty());
  // Half the budget: the busiest links whose samples fit, named in the note.
  TraceSelection part = whole;
  const size_t budget = total / 2;
  select_trace_links(part, topo, r, budget);
  std::string note;
  const std::map<std::string, size_t> kept = fabric_samples(part, &note);
  size_t written = 0;
  for (const auto& [name, n] : kept) {
    written += n;
    CHECK(n == all.at(name));  // a kept link keeps every sample
  }
  CHECK(written <= budget);
  CHECK(!kept.empty());
  CHECK(kept.size() < all.size());
  CHECK(note == part.note);
  CHECK(note == fmt::format("the trace holds fabric counters of the {} busiest of {} links, {} of {} samples (the default past {} samples): "
                            "--trace-all-links for every link",
                            kept.size(), all.size(), written, total, budget));
  // Busiest: no link left out moved more bytes than a kept one.
  double least_kept = 1e300, most_left = 0;
  for (size_t i = 0; i < topo.resources().size(); ++i) {
    const std::string& name = topo.resources()[i].name;
    if (!all.count(name)) continue;
    if (kept.count(name))
      least_kept = std::min(least_kept, r.resource_bytes[i]);
    else
      most_left = std::max(most_left, r.resource_bytes[i]);
  }
  CHECK(most_left <= least_kept);
  // The ranks' events are the same; only the fabric's counters went.
  CHECK(part.everything);
}
