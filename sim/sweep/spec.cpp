// A sweep file read into a SweepSpec: its keys checked against the base's
// kind, its grid and points, and each point's keys (docs/formats/sweep.md).
#include "sweep.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "io/yaml_reader.hpp"
#include "sweep/internal.hpp"
#include "workload/dit.hpp"

namespace osim {

namespace fs = std::filesystem;

namespace {

// Workload keys a sweep may set (the first part of a dotted key), and the
// sweep's own: `topology` (a file, relative to the sweep), `topology.*`
// (edits of the topology file), `calibration` (a file, or none).
const std::vector<std::string> kWorkloadRoots = {"name",    "model",   "video",   "tokens", "steps",  "cfg",    "parallelism",
                                                 "offload", "compute", "runtime", "memory", "stages", "request"};
const std::vector<std::string> kScheduleRoots = {"name", "gpus", "settings", "streams", "events", "groups", "programs"};

std::string flow_text(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  if (n.IsNull()) return "null";
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

}  // namespace

bool is_topology_edit(const std::string& key) { return key.rfind("topology.", 0) == 0; }
// The sweep's own keys: topology, its edits and calibration. Every other key edits the base.
bool is_sweep_key(const std::string& key) { return key == "topology" || key == "calibration" || is_topology_edit(key); }

namespace {

// A key into the base's stages, `stages.<name or index>.<stage key>...`:
// the stage must be one the base lists and the key one a stage takes, so a
// typo fails here with the sweep's line rather than in every point's row.
void check_stage_key(const SweepSpec& s, const std::string& key, const SourceLocation& where) {
  if (s.stages_replaced || key == "stages") return;  // a point brings its own list
  const size_t dot = key.find('.', 7);
  const std::string item = key.substr(7, dot == std::string::npos ? std::string::npos : dot - 7);
  if (!s.has_stages)
    throw InputError(where, fmt::format("'{}': the base {} has no stages: list them in it, or set the whole list with 'stages: [...]'", key, s.base));
  const bool digits = !item.empty() && std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; });
  const bool known = digits ? item.size() < 6 && std::stoul(item) < s.stage_names.size()
                            : std::find(s.stage_names.begin(), s.stage_names.end(), item) != s.stage_names.end();
  if (!known) {
    std::string msg = fmt::format("'{}': the base {} has no stage '{}'; its stages: {} (or an index 0..{})", key, s.base, item,
                                  fmt::join(s.stage_names, ", "), s.stage_names.size() - 1);
    const std::string near = digits ? std::string() : closest_match(item, s.stage_names);
    if (!near.empty()) msg += fmt::format("; did you mean 'stages.{}'?", near);
    throw InputError(where, msg);
  }
  if (dot == std::string::npos) return;  // the whole stage
  const size_t end = key.find('.', dot + 1);
  const std::string field = key.substr(dot + 1, end == std::string::npos ? std::string::npos : end - dot - 1);
  const auto& keys = stage_keys();
  if (std::find(keys.begin(), keys.end(), field) != keys.end()) return;
  std::string msg = fmt::format("'{}': a stage has no key '{}'", key, field);
  const std::string near = closest_match(field, keys);
  msg += near.empty() ? fmt::format("; its keys: {}", fmt::join(keys, ", ")) : fmt::format("; did you mean '{}'?", near);
  throw InputError(where, msg);
}

void check_key(const SweepSpec& s, const std::string& key, const SourceLocation& where) {
  if (is_sweep_key(key)) return;
  const std::string root = key.substr(0, key.find('.'));
  const auto& roots = s.schedule_base ? kScheduleRoots : kWorkloadRoots;
  if (root == "stages" && !s.schedule_base) check_stage_key(s, key, where);
  if (std::find(roots.begin(), roots.end(), root) != roots.end()) return;
  std::string msg = fmt::format("'{}' is not a {} key", key, s.schedule_base ? "schedule" : "workload");
  const std::string near = closest_match(root, roots);
  if (!near.empty())
    msg += fmt::format("; did you mean '{}'?", near);
  else
    msg += fmt::format("; keys start with one of: {}, or topology, topology.<key in the topology file>, calibration", fmt::join(roots, ", "));
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

// The block's point count; SIZE_MAX where it would overflow.
size_t block_size(const std::vector<SweepAxis>& b) {
  size_t n = 1;
  for (const auto& a : b) {
    if (a.values.size() > 0 && n > SIZE_MAX / a.values.size()) return SIZE_MAX;
    n *= a.values.size();
  }
  return n;
}

// The base workload's stage names, for stage keys and the request columns;
// whether any of the sweep's blocks sets the whole `stages:` list.
void read_base_stages(SweepSpec& s, const MapReader& r) {
  const YAML::Node base = load_yaml_file(s.base);
  if (base["stages"] && base["stages"].IsSequence()) {
    s.has_stages = true;
    for (const auto& st : base["stages"])
      if (st.IsMap() && st["name"] && st["name"].IsScalar()) s.stage_names.push_back(st["name"].Scalar());
  }
  const auto sets_stages = [](const YAML::Node& m) { return m.IsMap() && m["stages"].IsDefined() && !m["stages"].IsNull(); };
  for (const char* b : {"set", "grid"})
    if (r.has(b) && sets_stages(r.get(b))) s.stages_replaced = true;
  if (r.has("points") && r.get("points").IsSequence())
    for (const auto& p : r.get("points"))
      if (sets_stages(p)) s.stages_replaced = true;
  // `set: {stages: null}` times the DiT steps alone, as the base without its stages.
  if (r.has("set") && r.get("set").IsMap()) {
    const YAML::Node set = r.get("set");
    if (set["stages"].IsDefined() && set["stages"].IsNull()) {
      s.has_stages = false;
      s.stage_names.clear();
    }
  }
  if (s.stages_replaced) s.has_stages = true;
}

}  // namespace

std::string relative_to(const std::string& file, const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  return (fs::path(file).parent_path() / path).lexically_normal().string();
}

size_t SweepSpec::size() const {
  size_t n = 0;
  for (const auto& b : blocks) {
    const size_t k = block_size(b);
    if (k > SIZE_MAX - n) return SIZE_MAX;
    n += k;
  }
  return n;
}

size_t check_sweep_points(const SweepSpec& s, const SweepOptions& o) {
  const size_t all = s.size(), shards = static_cast<size_t>(o.shards), shard = static_cast<size_t>(o.shard);
  const size_t mine = all == SIZE_MAX ? SIZE_MAX : all / shards + (shard < all % shards ? 1 : 0);
  if (mine <= o.max_points) return mine;
  // How the count comes about: the grid's keys and the points' entries.
  std::vector<std::string> parts;
  for (const auto& b : s.blocks) {
    std::vector<std::string> axes;
    for (const auto& a : b)
      if (a.values.size() > 1) axes.push_back(fmt::format("{} {}", a.values.size(), a.key));
    parts.push_back(axes.empty() ? "1" : fmt::format("{}", fmt::join(axes, " x ")));
  }
  const std::string count = all == SIZE_MAX ? "more than 10^19" : fmt::format("{}", all);
  throw InputError(
      SourceLocation{s.file, 0, 0},
      fmt::format("{} points ({}){}: more than the limit of {} a run. Pass --max-points {} to run them all, split them with --shard i/N, or "
                  "give the keys fewer values",
                  count, fmt::join(parts, " + "), shards > 1 ? fmt::format(", {} in shard {}/{}", mine, shard + 1, shards) : "", o.max_points,
                  all == SIZE_MAX ? std::string("N") : std::to_string(mine)));
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
  if (s.name.empty() || s.name == "." || s.name == ".." || !std::all_of(s.name.begin(), s.name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
      }))
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
  if (!s.schedule_base) read_base_stages(s, r);
  s.topology = relative_to(path, r.opt_str("topology").value_or(""));
  s.calibration = r.opt_str("calibration").value_or("");
  if (s.calibration != "none") s.calibration = relative_to(path, s.calibration);  // none: the datasheet defaults, as the key's value
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

}  // namespace osim
