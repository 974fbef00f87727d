// Running a sweep's points: each point's base, topology and calibration
// resolved, simulated in parallel (a worker keeps what consecutive points
// share), and its row of metrics.
#include "sweep.hpp"

#include <algorithm>
#include <cassert>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include <fmt/format.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include "calibrations/measured_defaults.hpp"
#include "gpu/executor.hpp"
#include "gpu/params_io.hpp"
#include "hw/fabric.hpp"
#include "report/metrics.hpp"
#include "sweep/internal.hpp"
#include "workload/dit.hpp"

namespace osim {

namespace fs = std::filesystem;

const std::vector<std::string>& sweep_metric_columns() {
  static const std::vector<std::string> cols = {
      "topology_name",   "ranks",   "makespan_ms",     "steps",         "step_ms",         "step_ms_max",          "peak_vram_GiB",
      "compute_busy_ms", "comm_ms", "comm_exposed_ms", "copy_ms",       "copy_stall_ms",   "idle_other_ms",        "overlap_efficiency",
      "h2d_GB",          "d2h_GB",  "p2p_GB",          "collective_GB", "copy_bottleneck", "collective_bottleneck"};
  return cols;
}

const std::vector<std::string>& sweep_request_columns() {
  static const std::vector<std::string> cols = {"request_ms", "stages_ms", "dit_ms"};
  return cols;
}

namespace {

using TopoCache = std::map<std::string, std::unique_ptr<hw::Topology>>;

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  std::string out;
  for (char c : s)
    if (!(c == ' ' && !out.empty() && out.back() == ' ')) out += c;
  return out;
}

std::string bottleneck_name(const std::vector<BottleneckStat>& stats, const hw::Topology& topo) {
  size_t best = stats.size();
  for (size_t i = 0; i < stats.size(); ++i)
    if (stats[i].time > Time::zero() && (best == stats.size() || stats[i].time > stats[best].time)) best = i;
  if (best == stats.size()) return "";
  return best + 1 == stats.size() ? "own cap" : topo.resources()[best].name;
}

std::vector<std::string> metric_cells(const Metrics& m, const ExecResult& r, const hw::Topology& topo, bool request) {
  const auto ms = [](Time t) { return fmt::format("{:.4f}", t.s() * 1e3); };
  double step_sum = 0, step_max = 0;
  for (const auto& st : m.steps) {
    step_sum += (st.end - st.start).s();
    step_max = std::max(step_max, (st.end - st.start).s());
  }
  const double step_mean = m.steps.empty() ? m.makespan.s() : step_sum / static_cast<double>(m.steps.size());
  if (m.steps.empty()) step_max = m.makespan.s();
  Bytes peak = 0;
  Time busy, comm, exposed, copy, stall, idle;
  double eff = 0;
  for (const auto& rm : m.per_rank) {
    peak = std::max(peak, rm.peak_vram);
    busy += rm.compute_busy;
    comm += rm.comm;
    exposed += rm.comm_exposed;
    copy += rm.copy;
    stall += rm.copy_stall;
    idle += rm.idle_other;
    eff += rm.overlap_efficiency;
  }
  const int64_t n = std::max<int64_t>(1, static_cast<int64_t>(m.per_rank.size()));
  const auto mean = [&](Time t) { return ms(Time::from_ps(t.ps() / n)); };
  const auto gb = [](double b) { return fmt::format("{:.3f}", b / 1e9); };
  std::vector<std::string> cells{m.topology,
          std::to_string(m.ranks),
          ms(m.makespan),
          std::to_string(m.steps.size()),
          fmt::format("{:.4f}", step_mean * 1e3),
          fmt::format("{:.4f}", step_max * 1e3),
          fmt::format("{:.3f}", static_cast<double>(peak) / static_cast<double>(1ull << 30)),
          mean(busy),
          mean(comm),
          mean(exposed),
          mean(copy),
          mean(stall),
          mean(idle),
          fmt::format("{:.4f}", eff / static_cast<double>(n)),
          gb(m.bytes_h2d),
          gb(m.bytes_d2h),
          gb(m.bytes_p2p),
          gb(m.bytes_collective),
          bottleneck_name(r.copy_bottlenecks, topo),
          bottleneck_name(r.collective_bottlenecks, topo)};
  // A point without stages (a point's list may drop them) leaves them empty.
  if (request) {
    const bool staged = !m.stages.empty();
    cells.push_back(staged ? ms(m.makespan) : "");
    cells.push_back(staged ? ms(request_stages_time(m)) : "");
    cells.push_back(staged ? ms(request_steps_time(m)) : "");
  }
  return cells;
}

const hw::Topology& topology_for(TopoCache& cache, const std::string& path, const std::vector<Override>& edits) {
  std::string key = path;
  for (const auto& e : edits) key += "\n" + e.key_value;
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, std::make_unique<hw::Topology>(hw::parse_topology_file(path, edits))).first;
  return *it->second;
}

// What a worker thread keeps between points: parsed topologies, and the last
// schedule it built with the edits that built it (points that differ only
// in topology or calibration, e.g. the same workload on two machines, share it).
struct WorkerCache {
  TopoCache topologies;
  std::string schedule_key;             // the overrides, one per line; empty: nothing kept
  std::optional<DitWorkload> workload;  // the base parsed with them (a workload base)
  Schedule schedule;                    // a schedule base parsed with them
  // A workload's parameters and schedule by the calibration they were made
  // on (its memory plan reads it), each calibration file read once: points on
  // two machines keep one each.
  std::map<std::string, std::pair<ModelParams, Schedule>> generated;
};

// A point's edits of its base, "key=value" as --set takes them, each at its
// value's place in the sweep file: all its schedule depends on.
std::vector<Override> base_overrides(const SweepAssignment& a) {
  std::vector<Override> out;
  for (const auto& [k, v] : a)
    if (!is_sweep_key(k)) out.push_back(Override{k + "=" + v.text, v.where});
  return out;
}
std::string schedule_key(const std::vector<Override>& overrides) {
  std::vector<std::string> kv;
  for (const Override& o : overrides) kv.push_back(o.key_value);
  return fmt::format("\n{}\n", fmt::join(kv, "\n"));
}

// Simulates one point; throws what the parsers and the simulator throw.
std::vector<std::string> run_point(const SweepSpec& s, const SweepAssignment& a, WorkerCache& worker) {
  TopoCache& cache = worker.topologies;
  const std::vector<Override> overrides = base_overrides(a);
  std::vector<Override> topo_edits;
  std::string topo_path = s.topology;
  std::optional<std::string> calibration;  // a file, "none", or not given (the base's own, else the measured defaults)
  if (!s.calibration.empty()) calibration = s.calibration;
  for (const auto& [k, v] : a) {
    if (k == "topology")
      topo_path = relative_to(s.file, v.text);
    else if (k == "calibration")
      calibration = (v.text == "none" || v.text == "null" || v.text.empty()) ? "none" : relative_to(s.file, v.text);
    else if (is_topology_edit(k))
      topo_edits.push_back(Override{k.substr(9) + "=" + v.text, v.where});
  }
  const std::string key = schedule_key(overrides);
  if (worker.schedule_key != key) {
    worker.schedule_key.clear();  // a throw below leaves nothing kept
    worker.generated.clear();
    worker.workload.reset();
    if (s.schedule_base)
      worker.schedule = parse_schedule_file(s.base, overrides);
    else
      worker.workload = parse_workload_file(s.base, overrides);
    worker.schedule_key = key;
  }
  if (topo_path.empty()) {
    const std::string& named = worker.workload ? worker.workload->topology : worker.schedule.topology;
    if (named.empty())
      throw InputError(SourceLocation{s.file, 0, 0}, fmt::format("no topology: {} names none; add 'topology: FILE' to the sweep", s.base));
    topo_path = (fs::path(s.base).parent_path() / named).lexically_normal().string();
  }
  const hw::Topology& topo = topology_for(cache, topo_path, topo_edits);
  const std::string given = calibration.value_or(worker.workload ? worker.workload->calibration : std::string());
  const Schedule* schedule = &worker.schedule;
  ModelParams params;
  if (!worker.workload) {
    params = base_params(given, topo).params;
  } else {
    // Keyed by the file given, else by the measured defaults the topology's GPUs take (no I/O).
    std::string on = given;
    if (on.empty()) {
      const auto measured = measured_defaults(topo);
      on = measured ? "built-in " + measured->file : "none";
    }
    place_on(*worker.workload, topo);  // its `placement:` on this point's topology, part of the key
    for (const std::string& g : worker.workload->gpus) on += " " + g;
    auto it = worker.generated.find(on);
    if (it == worker.generated.end()) {
      set_base_params(*worker.workload, base_params(given, topo).params);
      it = worker.generated.emplace(on, std::make_pair(worker.workload->params, generate_schedule_as_run(*worker.workload))).first;
    }
    params = it->second.first;
    schedule = &it->second.second;
  }
  const Schedule& sched = *schedule;
  ExecOptions opts;
  opts.keep_records = false;  // a row is metrics only
  const ExecResult res = execute(sched, topo, params, opts);
  const Metrics m = compute_metrics(sched, topo, res);
  return metric_cells(m, res, topo, s.has_stages);
}

}  // namespace

std::vector<std::string> sweep_header(const SweepSpec& s) {
  std::vector<std::string> h{"point"};
  h.insert(h.end(), s.parameters.begin(), s.parameters.end());
  h.push_back("status");
  h.push_back("error");
  const auto& metrics = sweep_metric_columns();
  h.insert(h.end(), metrics.begin(), metrics.end());
  if (s.has_stages) h.insert(h.end(), sweep_request_columns().begin(), sweep_request_columns().end());
  return h;
}

// A row's first cells: the point's index and its parameters' values.
std::vector<std::string> point_cells(const SweepSpec& s, size_t i, const SweepAssignment& a) {
  std::vector<std::string> row{std::to_string(i)};
  for (const auto& p : s.parameters) {
    std::string cell;
    for (const auto& [k, v] : a)
      if (k == p) cell = v.text;  // the last assignment wins, as when running
    row.push_back(cell);
  }
  return row;
}

SweepTable run_sweep(const SweepSpec& s, const SweepOptions& o) {
  if (o.shards < 1 || o.shard < 0 || o.shard >= o.shards) throw std::invalid_argument("run_sweep: bad shard");
  const size_t count = check_sweep_points(s, o);
  SweepTable t;
  t.header = sweep_header(s);
  if (o.shards > 1) t.origin = ShardOrigin{o.shard, o.shards, sweep_identity(s)};

  std::vector<size_t> mine;
  mine.reserve(count);
  for (size_t i = static_cast<size_t>(o.shard); i < s.size(); i += static_cast<size_t>(o.shards)) mine.push_back(i);
  t.rows.resize(mine.size());
  // The points still to run. Points that share a schedule run one after
  // another, so a worker builds it once; rows land in their own places, so
  // the table is the same in any order.
  std::vector<size_t> order;
  {
    std::vector<std::string> keys(mine.size());
    for (size_t j = 0; j < mine.size(); ++j) {
      if (const auto it = o.finished.find(mine[j]); it != o.finished.end()) {
        assert(it->second.size() == t.header.size());
        t.rows[j] = it->second;
        continue;
      }
      order.push_back(j);
      keys[j] = schedule_key(base_overrides(s.point(mine[j])));
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
  }

  std::unique_ptr<tbb::global_control> limit;
  if (o.threads > 0) limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, static_cast<size_t>(o.threads));
  tbb::enumerable_thread_specific<WorkerCache> caches;
  std::mutex progress_mutex;
  size_t done = mine.size() - order.size();
  tbb::parallel_for(tbb::blocked_range<size_t>(0, order.size(), 1), [&](const tbb::blocked_range<size_t>& range) {
    for (size_t pos = range.begin(); pos != range.end(); ++pos) {
      const size_t j = order[pos];
      const size_t i = mine[j];
      const SweepAssignment a = s.point(i);
      std::vector<std::string> row = point_cells(s, i, a);
      std::vector<std::string> cells;
      std::string error;
      try {
        cells = run_point(s, a, caches.local());
      } catch (const InputError& e) {
        error = one_line(e.what());
      } catch (const SimulationError& e) {
        error = "simulation error: " + one_line(e.what());
      } catch (const std::exception& e) {
        error = "internal error: " + one_line(e.what());
      }
      row.push_back(error.empty() ? "ok" : "error");
      row.push_back(error);
      if (cells.empty()) cells.assign(t.header.size() - row.size(), "");
      row.insert(row.end(), cells.begin(), cells.end());
      t.rows[j] = std::move(row);
      std::lock_guard<std::mutex> lock(progress_mutex);
      if (o.on_row) o.on_row(t.rows[j]);
      if (o.progress) o.progress(++done, mine.size());
    }
  });
  // Every row was written before its worker released the mutex: taking it
  // here orders them before the caller's reads in a way ThreadSanitizer
  // sees too (TBB's own join is in uninstrumented code).
  { const std::lock_guard<std::mutex> lock(progress_mutex); }
  return t;
}

size_t failed_points(const SweepTable& t) {
  const int st = t.column("status");
  if (st < 0) return 0;
  return static_cast<size_t>(std::count_if(t.rows.begin(), t.rows.end(), [&](const auto& r) { return r[static_cast<size_t>(st)] == "error"; }));
}

}  // namespace osim
