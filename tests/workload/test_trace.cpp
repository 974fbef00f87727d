// The Perfetto trace of shipped workloads, read back as JSON: no two complete
// slices on one track overlap (Perfetto drops a slice that overlaps the one
// before it on its track, so it would vanish from the timeline).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/executor.hpp"
#include "report/metrics.hpp"
#include "workload/dit.hpp"

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
