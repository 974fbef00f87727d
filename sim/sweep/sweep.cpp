#include "sweep.hpp"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <yaml-cpp/yaml.h>

#include "calibrations/measured_defaults.hpp"
#include "gpu/params_io.hpp"
#include "io/file_hash.hpp"
#include "io/text_file.hpp"
#include "io/yaml_reader.hpp"
#include "gpu/executor.hpp"
#include "hw/fabric.hpp"
#include "report/metrics.hpp"
#include "workload/dit.hpp"

namespace osim {

namespace fs = std::filesystem;

namespace {

// Workload keys a sweep may set (the first part of a dotted key), and the
// sweep's own: `topology` (a file, relative to the sweep), `topology.*`
// (edits of the topology file), `calibration` (a file, or none).
const std::vector<std::string> kWorkloadRoots = {"name", "model", "video", "tokens", "steps", "cfg", "parallelism", "offload", "compute", "runtime", "memory"};
const std::vector<std::string> kScheduleRoots = {"name", "gpus", "settings", "streams", "events", "groups", "programs"};

std::string flow_text(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  if (n.IsNull()) return "null";
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

bool is_topology_edit(const std::string& key) { return key.rfind("topology.", 0) == 0; }
// The sweep's own keys: topology, its edits and calibration. Every other key edits the base.
bool is_sweep_key(const std::string& key) { return key == "topology" || key == "calibration" || is_topology_edit(key); }

void check_key(const SweepSpec& s, const std::string& key, const SourceLocation& where) {
  if (is_sweep_key(key)) return;
  const std::string root = key.substr(0, key.find('.'));
  const auto& roots = s.schedule_base ? kScheduleRoots : kWorkloadRoots;
  if (std::find(roots.begin(), roots.end(), root) != roots.end()) return;
  std::string msg = fmt::format("'{}' is not a {} key", key, s.schedule_base ? "schedule" : "workload");
  const std::string near = closest_match(root, roots);
  if (!near.empty()) msg += fmt::format("; did you mean '{}'?", near);
  else msg += fmt::format("; keys start with one of: {}, or topology, topology.<key in the topology file>, calibration", fmt::join(roots, ", "));
  throw InputError(where, msg);
}

SweepAssignment read_assignment(const SweepSpec& s, const YAML::Node& map, const std::string& what) {
  if (!map.IsMap()) throw InputError(location_of(s.file, map), fmt::format("{} must be a mapping of key: value", what));
  SweepAssignment out;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = scalar_str(s.file, it->first, "a key");
    const SourceLocation where = location_of(s.file, it->first);
    check_key(s, key, where);
    out.emplace_back(key, SweepValue{flow_text(it->second), location_of(s.file, it->second)});
  }
  return out;
}

// A mapping of key: [values...] (or key: value, an axis of one where `lists_only` is false).
std::vector<SweepAxis> read_block(const SweepSpec& s, const YAML::Node& map, const std::string& what, bool lists_only) {
  if (!map.IsMap()) throw InputError(location_of(s.file, map), fmt::format("{} must be a mapping of key: [values...]", what));
  std::vector<SweepAxis> block;
  for (auto it = map.begin(); it != map.end(); ++it) {
    SweepAxis a;
    a.key = scalar_str(s.file, it->first, "a key");
    check_key(s, a.key, location_of(s.file, it->first));
    for (const auto& b : block)
      if (b.key == a.key) throw InputError(location_of(s.file, it->first), fmt::format("key '{}' is given twice in {}", a.key, what));
    // The node itself, not `it->second`: that is a member of a proxy the
    // iterator's operator-> returns, gone before a range-for's body runs.
    const YAML::Node values = it->second;
    if (values.IsSequence()) {
      if (values.size() == 0)
        throw InputError(location_of(s.file, values), fmt::format("'{}' has an empty list of values: give at least one", a.key));
      for (const auto& v : values) a.values.push_back(SweepValue{flow_text(v), location_of(s.file, v)});
    } else if (lists_only) {
      throw InputError(location_of(s.file, it->second),
                       fmt::format("grid key '{}' needs a list of values, e.g. [1, 2, 3] (a fixed value goes under 'set:')", a.key));
    } else {
      a.values.push_back(SweepValue{flow_text(it->second), location_of(s.file, it->second)});
    }
    block.push_back(std::move(a));
  }
  return block;
}

size_t block_size(const std::vector<SweepAxis>& b) {
  size_t n = 1;
  for (const auto& a : b) n *= a.values.size();
  return n;
}

std::string relative_to(const std::string& file, const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  return (fs::path(file).parent_path() / path).lexically_normal().string();
}

}  // namespace

size_t SweepSpec::size() const {
  size_t n = 0;
  for (const auto& b : blocks) n += block_size(b);
  return n;
}

SweepAssignment SweepSpec::point(size_t i) const {
  SweepAssignment out = set;
  for (const auto& b : blocks) {
    const size_t n = block_size(b);
    if (i >= n) {
      i -= n;
      continue;
    }
    std::vector<size_t> idx(b.size());
    for (size_t a = b.size(); a-- > 0;) {
      idx[a] = i % b[a].values.size();
      i /= b[a].values.size();
    }
    for (size_t a = 0; a < b.size(); ++a) out.emplace_back(b[a].key, b[a].values[idx[a]]);
    return out;
  }
  throw std::out_of_range("SweepSpec::point: index past the end");
}

SweepSpec parse_sweep_file(const std::string& path) {
  const YAML::Node root = load_yaml_file(path);
  MapReader r(path, root, "sweep", {"name", "workload", "schedule", "topology", "calibration", "set", "grid", "points"});
  SweepSpec s;
  s.file = path;
  s.name = r.str("name");
  // The default CSV is NAME.csv in the working folder: a name, never a path.
  if (s.name.empty() || s.name == "." || s.name == ".." ||
      !std::all_of(s.name.begin(), s.name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; }))
    r.fail("name", "must be a plain name (letters, digits, '-', '_', '.'): the CSV is NAME.csv in the working folder; choose another place with -o");
  if (r.has("workload") == r.has("schedule"))
    r.fail_here("give the base of every point: either 'workload: FILE' (a DiT workload) or 'schedule: FILE' (a schedule)");
  s.schedule_base = r.has("schedule");
  s.base = relative_to(path, r.str(s.schedule_base ? "schedule" : "workload"));
  std::error_code ec;  // a name the OS refuses (too long, say) is a file that does not exist
  if (!fs::exists(s.base, ec))
    r.fail(s.schedule_base ? "schedule" : "workload", fmt::format("no such file: {} (paths are relative to the sweep file)", s.base));
  if (s.schedule_base == is_workload_file(s.base))
    r.fail(s.schedule_base ? "schedule" : "workload",
           fmt::format("{} is a {}: use '{}:' for it", s.base, s.schedule_base ? "workload (it has model:)" : "schedule (no model:)",
                       s.schedule_base ? "workload" : "schedule"));
  s.topology = relative_to(path, r.opt_str("topology").value_or(""));
  s.calibration = relative_to(path, r.opt_str("calibration").value_or(""));
  if (r.has("set")) s.set = read_assignment(s, r.get("set"), "set");
  if (r.has("grid")) s.blocks.push_back(read_block(s, r.get("grid"), "grid", true));
  if (r.has("points")) {
    const YAML::Node p = r.get("points");
    if (!p.IsSequence() || p.size() == 0) r.fail("points", "must be a non-empty list of mappings, e.g. - {offload.policy: block}");
    for (const auto& item : p) s.blocks.push_back(read_block(s, item, "each entry of points", false));
  }
  if (s.blocks.empty()) s.blocks.emplace_back();  // just the base (with `set`)
  for (const auto& b : s.blocks)
    for (const auto& a : b)
      if (std::find(s.parameters.begin(), s.parameters.end(), a.key) == s.parameters.end()) s.parameters.push_back(a.key);
  return s;
}

// ---------------------------------------------------------------- running

const std::vector<std::string>& sweep_metric_columns() {
  static const std::vector<std::string> cols = {
      "topology_name",  "ranks",          "makespan_ms",     "steps",         "step_ms",           "step_ms_max",
      "peak_vram_GiB",  "compute_busy_ms", "comm_ms",        "comm_exposed_ms", "copy_ms",         "copy_stall_ms",
      "idle_other_ms",  "overlap_efficiency", "h2d_GB",      "d2h_GB",        "p2p_GB",            "collective_GB",
      "copy_bottleneck", "collective_bottleneck"};
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

std::vector<std::string> metric_cells(const Metrics& m, const ExecResult& r, const hw::Topology& topo) {
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
  return {m.topology,
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
}

const hw::Topology& topology_for(TopoCache& cache, const std::string& path, const std::vector<std::string>& edits) {
  std::string key = path;
  for (const auto& e : edits) key += "\n" + e;
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, std::make_unique<hw::Topology>(hw::parse_topology_file(path, edits))).first;
  return *it->second;
}

// What a worker thread keeps between points: parsed topologies, and the last
// schedule it built with the edits that built it (points that differ only
// in topology or calibration, e.g. the same workload on two machines, share it).
struct WorkerCache {
  TopoCache topologies;
  std::string schedule_key;  // the overrides, one per line; empty: nothing kept
  std::optional<DitWorkload> workload;  // the base parsed with them (a workload base)
  Schedule schedule;                     // a schedule base parsed with them
  // A workload's parameters and schedule by the calibration they were made
  // on (its memory plan reads it), each calibration file read once: points on
  // two machines keep one each.
  std::map<std::string, std::pair<ModelParams, Schedule>> generated;
};

// A point's edits of its base, "key=value" as --set takes them: all its
// schedule depends on.
std::vector<std::string> base_overrides(const SweepAssignment& a) {
  std::vector<std::string> out;
  for (const auto& [k, v] : a)
    if (!is_sweep_key(k)) out.push_back(k + "=" + v.text);
  return out;
}
std::string schedule_key(const std::vector<std::string>& overrides) { return fmt::format("\n{}\n", fmt::join(overrides, "\n")); }

// Simulates one point; throws what the parsers and the simulator throw.
std::vector<std::string> run_point(const SweepSpec& s, const SweepAssignment& a, WorkerCache& worker) {
  TopoCache& cache = worker.topologies;
  const std::vector<std::string> overrides = base_overrides(a);
  std::vector<std::string> topo_edits;
  std::string topo_path = s.topology;
  std::optional<std::string> calibration;  // a file, "none", or not given (the base's own, else the measured defaults)
  if (!s.calibration.empty()) calibration = s.calibration;
  for (const auto& [k, v] : a) {
    if (k == "topology") topo_path = relative_to(s.file, v.text);
    else if (k == "calibration") calibration = (v.text == "none" || v.text == "null" || v.text.empty()) ? "none" : relative_to(s.file, v.text);
    else if (is_topology_edit(k)) topo_edits.push_back(k.substr(9) + "=" + v.text);
  }
  const std::string key = schedule_key(overrides);
  if (worker.schedule_key != key) {
    worker.schedule_key.clear();  // a throw below leaves nothing kept
    worker.generated.clear();
    worker.workload.reset();
    if (s.schedule_base) worker.schedule = parse_schedule_file(s.base, overrides);
    else worker.workload = parse_workload_file(s.base, overrides);
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
  return metric_cells(m, res, topo);
}

}  // namespace

std::vector<std::string> sweep_header(const SweepSpec& s) {
  std::vector<std::string> h{"point"};
  h.insert(h.end(), s.parameters.begin(), s.parameters.end());
  h.push_back("status");
  h.push_back("error");
  const auto& metrics = sweep_metric_columns();
  h.insert(h.end(), metrics.begin(), metrics.end());
  return h;
}

namespace {

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

}  // namespace

SweepTable run_sweep(const SweepSpec& s, const SweepOptions& o) {
  if (o.shards < 1 || o.shard < 0 || o.shard >= o.shards) throw std::invalid_argument("run_sweep: bad shard");
  SweepTable t;
  t.header = sweep_header(s);
  const auto& metrics = sweep_metric_columns();

  std::vector<size_t> mine;
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
      if (cells.empty()) cells.assign(metrics.size(), "");
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

// ---------------------------------------------------------------- journal

namespace {
constexpr const char* kJournalTag = "# overlapsim sweep journal ";

std::string csv_cell(const std::string& c) {
  if (c.find_first_of(",\"\n\r") == std::string::npos) return c;
  std::string out = "\"";
  for (char ch : c) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

// One CSV row, RFC 4180 quoting, "\n"-terminated.
std::string csv_line(const std::vector<std::string>& cells) {
  std::string out;
  for (size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + csv_cell(cells[i]);
  return out + "\n";
}

// A row's point column as an index; none unless it is all digits.
std::optional<size_t> point_index(const std::string& cell) {
  try {
    size_t used = 0;
    const size_t i = std::stoul(cell, &used);
    if (used == cell.size()) return i;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::string read_text(const std::string& path, const char* what) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw InputError(SourceLocation{path, 0, 0}, fmt::format("cannot open {}: check the path", what));
  return read_maybe_gzip(path);
}
}  // namespace

std::string SweepJournal::identity(const SweepSpec& s, const SweepOptions& o) {
  uint64_t h = kFnv1a64Offset;
  for (const std::string& f : {s.file, s.base, s.topology, s.calibration})
    if (!f.empty()) fnv1a64_file(f, h);
  return fmt::format("{}{:016x} shard {}/{}", kJournalTag, h, o.shard + 1, o.shards);
}

std::map<size_t, std::vector<std::string>> SweepJournal::read(const std::string& path, const SweepSpec& s, const SweepOptions& o) {
  std::string text = read_text(path, "the sweep's journal");
  const size_t first = text.find('\n');
  if (text.rfind(kJournalTag, 0) != 0 || first == std::string::npos)
    throw InputError(SourceLocation{path, 1, 1}, "not a sweep journal: remove it, or run without --resume and with --force to start over");
  if (text.substr(0, first) != identity(s, o))
    throw InputError(SourceLocation{path, 1, 1},
                     "this journal is another sweep's, another shard's, or its sweep, base, topology or calibration file has changed since: "
                     "run with --force (not --resume) to start over");
  // A row is whole once its line ends; a last line without its end was cut short.
  text.erase(text.rfind('\n') + 1);
  SweepTable t = parse_csv(text.substr(first + 1), path, 2);
  if (t.header != sweep_header(s)) throw InputError(SourceLocation{path, 2, 1}, "the journal's columns are not this sweep's: run with --force to start over");
  std::map<size_t, std::vector<std::string>> rows;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const SourceLocation where{path, static_cast<int>(r + 3), 1};
    const std::optional<size_t> at = point_index(t.rows[r][0]);
    if (!at) throw InputError(where, "a journal row's point is not a number: the journal is damaged; run with --force to start over");
    const size_t i = *at;
    if (i >= s.size() || i % static_cast<size_t>(o.shards) != static_cast<size_t>(o.shard) ||
        !std::equal(t.rows[r].begin(), t.rows[r].begin() + static_cast<long>(s.parameters.size() + 1), point_cells(s, i, s.point(i)).begin()))
      throw InputError(where, fmt::format("point {} is not this sweep's: the journal is damaged; run with --force to start over", t.rows[r][0]));
    rows[i] = std::move(t.rows[r]);
  }
  return rows;
}

SweepJournal::SweepJournal(const std::string& path, const SweepSpec& s, const SweepOptions& o, bool append) : path_(path) {
  if (append) {
    // A row cut short by the interruption goes: the next one starts on its own line.
    const std::string text = read_text(path, "the sweep's journal");
    std::error_code ec;
    fs::resize_file(path, text.rfind('\n') + 1, ec);
    if (ec) throw InputError(SourceLocation{path, 0, 0}, "cannot write the sweep's journal (" + ec.message() + ")");
  }
  file_ = std::fopen(path.c_str(), append ? "ab" : "wb");
  if (!file_) throw InputError(SourceLocation{path, 0, 0}, "cannot write the sweep's journal here: check the folder exists and is writable");
  if (!append) {
    const std::string text = identity(s, o) + "\n" + csv_line(sweep_header(s));
    if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0)
      throw InputError(SourceLocation{path, 0, 0}, "cannot write the sweep's journal");
  }
}

SweepJournal::~SweepJournal() {
  if (file_) std::fclose(file_);
}

void SweepJournal::add(const std::vector<std::string>& row) {
  const std::string text = csv_line(row);
  // Flushed row by row: a killed sweep loses at most the rows in flight.
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0)
    throw InputError(SourceLocation{path_, 0, 0}, "cannot append to the sweep's journal (is the disk full?)");
}

// ---------------------------------------------------------------- CSV

int SweepTable::column(const std::string& name) const {
  const auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : static_cast<int>(it - header.begin());
}

std::vector<std::string> SweepTable::parameters() const {
  const int st = column("status");
  if (st < 1) return {};
  return std::vector<std::string>(header.begin() + 1, header.begin() + st);
}

std::string to_csv(const SweepTable& t) {
  std::string out = csv_line(t.header);
  for (const auto& r : t.rows) out += csv_line(r);
  return out;
}

SweepTable parse_csv(const std::string& text, const std::string& file, int first_line) {
  std::vector<std::vector<std::string>> lines;
  std::vector<std::string> row;
  std::string cell;
  bool quoted = false, any = false;
  int line_no = first_line, row_line = first_line;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          cell += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line_no;
        cell += c;
      }
      continue;
    }
    if (c == '"') {
      if (!cell.empty()) throw InputError(SourceLocation{file, row_line, 0}, "a quote inside an unquoted CSV cell: is this a sweep CSV?");
      quoted = any = true;
    } else if (c == ',') {
      row.push_back(std::move(cell));
      cell.clear();
      any = true;
    } else if (c == '\n') {
      row.push_back(std::move(cell));
      cell.clear();
      lines.push_back(std::move(row));
      row.clear();
      any = false;
      row_line = ++line_no;
    } else if (c != '\r') {
      cell += c;
      any = true;
    }
  }
  if (quoted) throw InputError(SourceLocation{file, row_line, 0}, "a quoted CSV cell is not closed: the file is cut short");
  if (any || !cell.empty()) {
    row.push_back(std::move(cell));
    lines.push_back(std::move(row));
  }
  if (lines.empty()) throw InputError(SourceLocation{file, first_line, 0}, "empty file: expected a sweep CSV (overlapsim sweep -o)");
  SweepTable t;
  t.header = std::move(lines.front());
  if (t.header.empty() || t.header.front() != "point" || t.column("status") < 0)
    throw InputError(SourceLocation{file, first_line, 1}, "not a sweep CSV: the header must start with 'point' and have a 'status' column");
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].size() != t.header.size())
      throw InputError(SourceLocation{file, static_cast<int>(i) + first_line, 0},
                       fmt::format("row has {} cells, the header {}: the file is damaged or was edited", lines[i].size(), t.header.size()));
    t.rows.push_back(std::move(lines[i]));
  }
  return t;
}

SweepTable read_csv_file(const std::string& path) {
  SweepTable t = parse_csv(read_text(path, "file"), path);
  std::vector<std::string> needed{"error"};
  const auto& metrics = sweep_metric_columns();
  needed.insert(needed.end(), metrics.begin(), metrics.end());
  for (const std::string& c : needed)
    if (t.column(c) < 0)
      throw InputError(SourceLocation{path, 1, 1}, fmt::format("not a sweep CSV: it has no '{}' column (overlapsim sweep writes every metric column)", c));
  // A point that ran has a number in every numeric metric.
  const int status = t.column("status");
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const std::string& st = t.rows[r][static_cast<size_t>(status)];
    if (st != "ok" && st != "error")
      throw InputError(SourceLocation{path, static_cast<int>(r + 2), status + 1}, fmt::format("status '{}' is neither ok nor error: the file was edited", st));
    if (st != "ok") continue;
    for (const std::string& c : metrics) {
      if (c == "topology_name" || c == "copy_bottleneck" || c == "collective_bottleneck") continue;
      const int col = t.column(c);
      const std::string& cell = t.rows[r][static_cast<size_t>(col)];
      char* end = nullptr;
      const double v = std::strtod(cell.c_str(), &end);
      if (cell.empty() || end != cell.c_str() + cell.size() || !std::isfinite(v))
        throw InputError(SourceLocation{path, static_cast<int>(r + 2), col + 1}, fmt::format("'{}' of a point that ran is '{}', not a number: the file was edited", c, cell));
    }
  }
  return t;
}

SweepTable merge_sweep_tables(const std::vector<std::pair<std::string, SweepTable>>& shards, std::optional<size_t> expected_points) {
  if (shards.empty()) throw std::invalid_argument("merge_sweep_tables: no input");
  SweepTable out;
  out.header = shards.front().second.header;
  std::map<size_t, std::pair<std::vector<std::string>, std::string>> by_point;
  for (const auto& [file, t] : shards) {
    if (t.header != out.header)
      throw InputError(SourceLocation{file, 1, 1}, fmt::format("its columns differ from {}'s: these are not shards of one sweep", shards.front().first));
    for (size_t r = 0; r < t.rows.size(); ++r) {
      const std::optional<size_t> at = point_index(t.rows[r][0]);
      if (!at) throw InputError(SourceLocation{file, static_cast<int>(r + 2), 1}, fmt::format("point '{}' is not a number", t.rows[r][0]));
      const size_t idx = *at;
      auto [it, fresh] = by_point.emplace(idx, std::make_pair(t.rows[r], file));
      if (!fresh)
        throw InputError(SourceLocation{file, static_cast<int>(r + 2), 1},
                         fmt::format("point {} is also in {}: a shard was given twice, or shards of different runs were mixed", idx, it->second.second));
    }
  }
  size_t expect = 0;
  for (const auto& [idx, row] : by_point) {
    if (idx != expect)
      throw InputError(SourceLocation{shards.front().first, 0, 0},
                       fmt::format("point {} is in no shard: a shard is missing (give every shard's CSV)", expect));
    out.rows.push_back(row.first);
    ++expect;
  }
  if (expected_points && expect != *expected_points)
    throw InputError(SourceLocation{shards.front().first, 0, 0},
                     fmt::format("the shards hold {} points, the sweep has {}: a shard is missing (give every shard's CSV)", expect, *expected_points));
  return out;
}

// ---------------------------------------------------------------- summary

namespace {

struct Pt {
  size_t row;
  double step_ms, vram_gib;
};

std::string describe(const SweepTable& t, size_t row, const std::vector<int>& cols) {
  std::string out;
  for (int c : cols) {
    if (t.rows[row][static_cast<size_t>(c)].empty()) continue;
    if (!out.empty()) out += ", ";
    out += t.header[static_cast<size_t>(c)] + "=" + t.rows[row][static_cast<size_t>(c)];
  }
  return out.empty() ? "the base point" : out;
}

}  // namespace

std::string sweep_summary(const SweepTable& t, double tolerance) {
  const int st = t.column("status"), err = t.column("error"), topo = t.column("topology_name"), step = t.column("step_ms"),
            vram = t.column("peak_vram_GiB");
  if (st < 0 || err < 0 || topo < 0 || step < 0 || vram < 0) throw std::invalid_argument("sweep_summary: not a sweep table");
  std::vector<int> params;  // parameter columns other than the topology file
  for (int c = 1; c < st; ++c)
    if (t.header[static_cast<size_t>(c)] != "topology") params.push_back(c);
  std::string out;
  std::vector<size_t> failed;
  std::map<std::string, std::vector<Pt>> groups;  // by topology name, in name order
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const auto& row = t.rows[r];
    if (row[static_cast<size_t>(st)] != "ok") {
      failed.push_back(r);
      continue;
    }
    groups[row[static_cast<size_t>(topo)]].push_back(Pt{r, std::stod(row[static_cast<size_t>(step)]), std::stod(row[static_cast<size_t>(vram)])});
  }
  out += fmt::format("{} points: {} ran, {} failed\n", t.rows.size(), t.rows.size() - failed.size(), failed.size());
  std::vector<int> all_params(params);
  for (int c = 1; c < st; ++c)
    if (t.header[static_cast<size_t>(c)] == "topology") all_params.insert(all_params.begin(), c);
  for (size_t k = 0; k < failed.size() && k < 5; ++k)
    out += fmt::format("  point {} ({}) failed: {}\n", t.rows[failed[k]][0], describe(t, failed[k], all_params), t.rows[failed[k]][static_cast<size_t>(err)]);
  if (failed.size() > 5) out += fmt::format("  ... and {} more (the CSV's error column has each)\n", failed.size() - 5);
  for (auto& [name, pts] : groups) {
    // Best: least step time, then least VRAM, then first point.
    const auto faster = [](const Pt& a, const Pt& b) {
      if (a.step_ms != b.step_ms) return a.step_ms < b.step_ms;
      if (a.vram_gib != b.vram_gib) return a.vram_gib < b.vram_gib;
      return a.row < b.row;
    };
    const Pt best = *std::min_element(pts.begin(), pts.end(), faster);
    out += fmt::format("\non {} ({} point{}):\n", name, pts.size(), pts.size() == 1 ? "" : "s");
    out += fmt::format("  best: point {}, {:.2f} ms/step, peak VRAM {:.2f} GiB: {}\n", t.rows[best.row][0], best.step_ms, best.vram_gib,
                       describe(t, best.row, params));
    // Pareto front: sorted by VRAM, keep points faster than every point with less VRAM.
    std::vector<Pt> by_vram = pts;
    std::sort(by_vram.begin(), by_vram.end(), [](const Pt& a, const Pt& b) {
      if (a.vram_gib != b.vram_gib) return a.vram_gib < b.vram_gib;
      if (a.step_ms != b.step_ms) return a.step_ms < b.step_ms;
      return a.row < b.row;
    });
    std::vector<Pt> front;
    for (const Pt& p : by_vram)
      if (front.empty() || p.step_ms < front.back().step_ms) front.push_back(p);
    out += fmt::format("  Pareto front, peak VRAM vs step time ({} point{}):\n", front.size(), front.size() == 1 ? "" : "s");
    for (size_t k = 0; k < front.size(); ++k) {
      if (k == 8 && front.size() > 10) {
        out += fmt::format("    ... {} more\n", front.size() - 9);
        k = front.size() - 1;
      }
      const Pt& p = front[k];
      out += fmt::format("    {:>8.2f} GiB {:>10.2f} ms/step  point {}: {}\n", p.vram_gib, p.step_ms, t.rows[p.row][0], describe(t, p.row, params));
    }
    // Recommendation: least VRAM within the tolerance of the best.
    Pt rec = best;
    for (const Pt& p : pts)
      if (p.step_ms <= best.step_ms * (1 + tolerance) &&
          (p.vram_gib < rec.vram_gib || (p.vram_gib == rec.vram_gib && faster(p, rec))))
        rec = p;
    std::vector<int> same, differ;
    for (int c : params) {
      const auto& a = t.rows[rec.row][static_cast<size_t>(c)];
      const auto& b = t.rows[best.row][static_cast<size_t>(c)];
      (a == b ? same : differ).push_back(c);
    }
    const std::string context = same.empty() ? "" : " with " + describe(t, rec.row, same);
    if (rec.row == best.row || differ.empty()) {
      out += fmt::format("  recommendation: on {}, run {}: it is the fastest ({:.2f} ms/step), and no point within {:g} % of it needs less VRAM\n",
                         name, describe(t, best.row, params), best.step_ms, 100 * tolerance);
    } else {
      out += fmt::format("  recommendation: on {}{}, {} is within {:.1f} % of the best ({}, {:.2f} ms/step) and needs {:.2f} GiB less peak VRAM\n",
                         name, context, describe(t, rec.row, differ), 100 * (rec.step_ms / best.step_ms - 1), describe(t, best.row, differ),
                         best.step_ms, best.vram_gib - rec.vram_gib);
    }
  }
  return out;
}

}  // namespace osim
