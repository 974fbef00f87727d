// YAML -> TopologySpec, then checks. No graph here: see topology_graph.cpp.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "io/repeat.hpp"
#include "io/yaml_reader.hpp"
#include "hw/gpu_datasheets.hpp"
#include "hw/pcie.hpp"
#include "topology.hpp"

namespace osim::hw {

std::string to_string(NodeKind k) {
  switch (k) {
    case NodeKind::Gpu: return "gpu";
    case NodeKind::PcieSwitch: return "pcie_switch";
    case NodeKind::HostBridge: return "host_bridge";
    case NodeKind::Cpu: return "cpu";
    case NodeKind::NvSwitch: return "nvswitch";
    case NodeKind::Nic: return "nic";
    case NodeKind::NetworkSwitch: return "network_switch";
  }
  return "?";
}

std::string to_string(LinkKind k) {
  switch (k) {
    case LinkKind::Pcie: return "pcie";
    case LinkKind::NvLink: return "nvlink";
    case LinkKind::InterSocket: return "inter_socket";
    case LinkKind::Internal: return "internal";
    case LinkKind::InfiniBand: return "infiniband";
    case LinkKind::Ethernet: return "ethernet";
    case LinkKind::NvLinkC2C: return "nvlink_c2c";
  }
  return "?";
}

namespace {
const std::vector<std::string> kPathNames = {"LOC", "NVL", "PIX", "PXB", "PHB", "NODE", "SYS", "NET"};
const std::vector<std::string> kNodeKinds = {"gpu", "pcie_switch", "host_bridge", "cpu", "nvswitch", "nic", "network_switch"};
const std::vector<std::string> kLinkKinds = {"pcie", "nvlink", "inter_socket", "internal", "infiniband", "ethernet", "nvlink_c2c"};
}  // namespace

std::string to_string(PathType p) { return kPathNames[static_cast<size_t>(p)]; }

std::optional<PathType> path_type_from_string(const std::string& s) {
  for (size_t i = 0; i < kPathNames.size(); ++i)
    if (kPathNames[i] == s) return static_cast<PathType>(i);
  return std::nullopt;
}

namespace {

NodeKind node_kind(const std::string& s) { return static_cast<NodeKind>(std::find(kNodeKinds.begin(), kNodeKinds.end(), s) - kNodeKinds.begin()); }
LinkKind link_kind(const std::string& s) { return static_cast<LinkKind>(std::find(kLinkKinds.begin(), kLinkKinds.end(), s) - kLinkKinds.begin()); }

// PCIe data rate per lane and direction after line encoding, in GB/s.
double pcie_lane_GBps(int gen) {
  switch (gen) {
    case 1: return 0.25;  // 2.5 GT/s, 8b/10b
    case 2: return 0.5;   // 5 GT/s, 8b/10b
    case 3: return 8.0 * 128 / 130 / 8;
    case 4: return 16.0 * 128 / 130 / 8;
    case 5: return 32.0 * 128 / 130 / 8;
    case 6: return 64.0 * 242 / 256 / 8;  // FLIT mode
    default: return 0;
  }
}

// "gen5 x16" (any case, spaces allowed before the x) as (generation, lanes);
// nullopt for anything else. By hand: std::regex took 44 % of reading a
// 1,024-GPU topology.
std::optional<std::pair<int, int>> pcie_gen_width(const std::string& s) {
  auto lower = [&](size_t i) { return i < s.size() ? static_cast<char>(std::tolower(static_cast<unsigned char>(s[i]))) : '\0'; };
  if (lower(0) != 'g' || lower(1) != 'e' || lower(2) != 'n' || lower(3) < '1' || lower(3) > '6') return std::nullopt;
  const int gen = lower(3) - '0';
  size_t i = 4;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  if (lower(i) != 'x') return std::nullopt;
  const std::string width = s.substr(i + 1);
  for (const int w : {1, 2, 4, 8, 16})
    if (width == std::to_string(w)) return std::make_pair(gen, w);
  return std::nullopt;
}

constexpr double kDefaultPcieEfficiency = 0.87;  // TLP/DLLP overhead, 256 B payloads (MODEL.md: 55 of 63 GB/s)
constexpr double kNvlink4PerLinkGBps = 25.0;     // NVLink4: 50 GB/s bidirectional per link

PathType read_path_level(const MapReader& r, const std::string& key, PathType fallback) {
  if (!r.has(key)) return fallback;
  const std::string s = r.str(key);
  auto p = path_type_from_string(s);
  if (!p || *p == PathType::Net) r.fail(key, fmt::format("'{}' is not a path type: use LOC, NVL, PIX, PXB, PHB, NODE or SYS", s));
  return *p;
}

NodeSpec parse_node(const std::string& file, const YAML::Node& n, const YAML::Node& original) {
  // Kind first, so the key check can be specific to it.
  const YAML::Node kind_node = n["kind"];
  if (!kind_node.IsDefined()) throw InputError(location_of(file, original), "node is missing the required key 'kind'");
  const std::string kind_s = scalar_str(file, kind_node, "kind");
  if (std::find(kNodeKinds.begin(), kNodeKinds.end(), kind_s) == kNodeKinds.end()) {
    const std::string near = closest_match(kind_s, kNodeKinds);
    throw InputError(location_of(file, original["kind"]),
                     fmt::format("unknown node kind '{}'{}; kinds: {}", kind_s, near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near),
                                 fmt::join(kNodeKinds, ", ")));
  }
  const NodeKind kind = node_kind(kind_s);
  std::vector<std::string> known = {"name", "kind", "throughput", "latency"};
  if (kind == NodeKind::Gpu) known.insert(known.end(), {"model", "memory", "hbm_bandwidth", "sms", "copy_engines", "p2p", "peak_tflops"});
  if (kind == NodeKind::Cpu) known.insert(known.end(), {"memory_bandwidth", "memory"});
  if (kind == NodeKind::HostBridge) known.insert(known.end(), {"throughput_to_host", "throughput_from_host"});
  MapReader r(file, n, fmt::format("{} node", kind_s), known, original);
  NodeSpec s;
  s.kind = kind;
  s.where = location_of(file, original);
  {
    s.name = r.str("name");
    s.throughput = r.opt_bandwidth("throughput");
    s.throughput_to_host = r.opt_bandwidth("throughput_to_host");
    s.throughput_from_host = r.opt_bandwidth("throughput_from_host");
    s.latency = r.opt_duration("latency").value_or(Time::zero());
    if (kind == NodeKind::Gpu) {
      s.gpu.model = r.opt_str("model").value_or("");
      s.gpu.memory = r.opt_bytes("memory");
      s.gpu.hbm_bandwidth = r.opt_bandwidth("hbm_bandwidth");
      if (auto v = r.opt_int32("sms")) {
        if (*v < 1) r.fail("sms", "must be at least 1");
        s.gpu.sms = static_cast<int>(*v);
      }
      if (auto v = r.opt_int32("copy_engines")) {
        if (*v < 1) r.fail("copy_engines", "must be at least 1");
        s.gpu.copy_engines = static_cast<int>(*v);
      }
      s.gpu.p2p = r.boolean("p2p", true);
      if (r.has("peak_tflops")) {
        MapReader pk(file, n["peak_tflops"], "peak_tflops", {"bf16", "fp16", "fp32", "fp8"}, original["peak_tflops"]);
        for (const char* d : {"bf16", "fp16", "fp32", "fp8"})
          if (auto v = pk.opt_num(d)) {
            if (*v <= 0) pk.fail(d, "must be positive (TFLOP/s)");
            s.gpu.peak_tflops[d] = *v;
          }
      }
    }
    if (kind == NodeKind::Cpu) {
      s.memory_bandwidth = r.opt_bandwidth("memory_bandwidth");
      s.memory = r.opt_bytes("memory");
    }
  }
  return s;
}

// A link line's `name:` addresses it in `--set` and sweep keys
// (`topology.links.NAME.pcie`), so it is a plain name, one per line. Its
// `role:` (several lines may share one) addresses every line of that role
// where no line has that name, so a role may not be another line's name.
void check_link_names(const std::string& file, const YAML::Node& links) {
  if (!links.IsSequence()) return;  // for_each_repeated says what is wrong
  auto plain_name = [&](const YAML::Node& n, const char* what) {
    const SourceLocation where = location_of(file, n);
    const std::string name = n.IsScalar() ? n.Scalar() : "";
    const bool plain = !name.empty() && std::all_of(name.begin(), name.end(),
                                                    [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; });
    const bool digits = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!plain || digits)
      throw InputError(
          where, fmt::format("a link's {} must be a plain name (letters, digits, '_' or '-', not only digits: keys take a number as an index), not '{}'",
                             what, name));
    return name;
  };
  std::map<std::string, int> seen;  // name -> its line
  for (const YAML::Node& l : links) {
    if (!l.IsMap() || !l["name"]) continue;
    const std::string name = plain_name(l["name"], "name");
    const int line = location_of(file, l["name"]).line;
    if (auto [it, fresh] = seen.emplace(name, line); !fresh)
      throw InputError(location_of(file, l["name"]),
                       fmt::format("link name '{}' is used already on line {}: give each link line its own name", name, it->second));
  }
  for (const YAML::Node& l : links) {
    if (!l.IsMap() || !l["role"]) continue;
    const std::string role = plain_name(l["role"], "role");
    if (auto it = seen.find(role); it != seen.end())
      throw InputError(location_of(file, l["role"]),
                       fmt::format("role '{}' is the name of the link on line {}: a key would pick that line alone; rename one of them", role,
                                   it->second));
  }
}

LinkSpec parse_link(const std::string& file, const YAML::Node& n, const YAML::Node& original) {
  const std::vector<std::string> known = {"name", "role", "a", "b", "kind", "bandwidth", "pcie", "efficiency", "nvlinks", "latency", "duplex"};
  MapReader r(file, n, "link", known, original);
  LinkSpec l;
  l.where = location_of(file, original);
  {
    l.name = r.opt_str("name").value_or("");
    l.a = r.str("a");
    l.b = r.str("b");
    if (r.has("kind"))
      l.kind = link_kind(r.choice("kind", kLinkKinds));
    else if (r.has("pcie"))
      l.kind = LinkKind::Pcie;
    else if (r.has("nvlinks"))
      l.kind = LinkKind::NvLink;
    else
      r.fail_here(
          "needs 'kind' (one of pcie, nvlink, inter_socket, internal, infiniband, ethernet, nvlink_c2c), or a 'pcie:' or 'nvlinks:' shorthand");

    const int ways = (r.has("bandwidth") ? 1 : 0) + (r.has("pcie") ? 1 : 0) + (r.has("nvlinks") ? 1 : 0);
    if (ways > 1) r.fail_here("give the bandwidth one way only: 'bandwidth', 'pcie: genN xW' or 'nvlinks: N'");
    if (r.has("efficiency") && !r.has("pcie")) r.fail("efficiency", "applies only to the 'pcie:' shorthand");
    if (r.has("bandwidth")) {
      l.bandwidth = r.bandwidth("bandwidth");
    } else if (r.has("pcie")) {
      if (l.kind != LinkKind::Pcie) r.fail("pcie", "the pcie shorthand needs kind pcie");
      const std::string s = r.str("pcie");
      const auto gen_width = pcie_gen_width(s);
      if (!gen_width) r.fail("pcie", fmt::format("'{}' is not like 'gen5 x16' (gen1..gen6, x1/x2/x4/x8/x16)", s));
      const auto [gen, width] = *gen_width;
      const double eff = r.opt_num("efficiency").value_or(kDefaultPcieEfficiency);
      if (!(eff > 0 && eff <= 1)) r.fail("efficiency", "must be in (0, 1]");
      l.bandwidth = Bandwidth::from_GBps(pcie_lane_GBps(gen) * width * eff);
      l.label = fmt::format("gen{} x{}", gen, width);
    } else if (r.has("nvlinks")) {
      if (l.kind != LinkKind::NvLink) r.fail("nvlinks", "the nvlinks shorthand needs kind nvlink");
      const int64_t count = r.integer("nvlinks");
      if (count < 1) r.fail("nvlinks", "must be at least 1");
      l.bandwidth = Bandwidth::from_GBps(kNvlink4PerLinkGBps * static_cast<double>(count));
      l.label = fmt::format("nvlink4 x{}", count);
    } else if (l.kind != LinkKind::Internal) {
      r.fail_here(fmt::format("a {} link needs 'bandwidth' (only internal links may be unlimited)", to_string(l.kind)));
    }
    if (r.has("latency"))
      l.latency = r.duration("latency");
    else if (l.kind != LinkKind::Internal)
      r.fail_here("needs 'latency' (e.g. latency: 1 us)");
    if (r.has("duplex")) l.half_duplex = r.choice("duplex", {"full", "half"}) == "half";
    if (l.label.empty()) l.label = to_string(l.kind);
  }
  return l;
}

void check(TopologySpec& t, const YAML::Node& root) {
  const std::string& file = t.file;
  std::map<std::string, const NodeSpec*> by_name;
  std::vector<std::string> names;
  for (const NodeSpec& n : t.nodes) {
    if (n.name.empty()) throw InputError(n.where, "node name must not be empty");
    if (n.name == "host") throw InputError(n.where, "'host' is reserved (it means a GPU's nearest host memory in scenarios): rename the node");
    auto [it, fresh] = by_name.emplace(n.name, &n);
    if (!fresh) throw InputError(n.where, fmt::format("duplicate node name '{}' (first defined at {})", n.name, it->second->where.str()));
    names.push_back(n.name);
  }
  auto resolve = [&](const std::string& name, const SourceLocation& where) {
    if (by_name.count(name)) return;
    const std::string near = closest_match(name, names);
    throw InputError(where, fmt::format("unknown node '{}'{}", name, near.empty() ? "" : fmt::format("; did you mean '{}'?", near)));
  };
  std::set<std::tuple<std::string, std::string, int>> seen;
  for (const LinkSpec& l : t.links) {
    resolve(l.a, l.where);
    resolve(l.b, l.where);
    if (l.a == l.b) throw InputError(l.where, fmt::format("link from '{}' to itself", l.a));
    auto key = std::make_tuple(std::min(l.a, l.b), std::max(l.a, l.b), static_cast<int>(l.kind));
    if (!seen.insert(key).second)
      throw InputError(l.where, fmt::format("duplicate {} link between '{}' and '{}': merge them into one link with the summed bandwidth",
                                            to_string(l.kind), l.a, l.b));
    const NodeKind ka = by_name[l.a]->kind, kb = by_name[l.b]->kind;
    const bool net = l.kind == LinkKind::InfiniBand || l.kind == LinkKind::Ethernet;
    auto netside = [](NodeKind k) { return k == NodeKind::Nic || k == NodeKind::NetworkSwitch; };
    if (net && !(netside(ka) && netside(kb)))
      throw InputError(l.where, fmt::format("{} links join NICs and network switches, not '{}' ({}) and '{}' ({})", to_string(l.kind), l.a,
                                            to_string(ka), l.b, to_string(kb)));
    if (l.kind == LinkKind::NvLinkC2C && !((ka == NodeKind::Gpu && kb == NodeKind::Cpu) || (ka == NodeKind::Cpu && kb == NodeKind::Gpu)))
      throw InputError(l.where, fmt::format("nvlink_c2c links join a GPU and its CPU (a Grace Hopper superchip), not '{}' ({}) and '{}' ({})", l.a,
                                            to_string(ka), l.b, to_string(kb)));
    if (l.kind == LinkKind::NvLink) {
      auto nvside = [](NodeKind k) { return k == NodeKind::Gpu || k == NodeKind::NvSwitch; };
      if (!(nvside(ka) && nvside(kb)))
        throw InputError(l.where,
                         fmt::format("nvlink links join GPUs and NVSwitches, not '{}' ({}) and '{}' ({})", l.a, to_string(ka), l.b, to_string(kb)));
    }
  }
  const YAML::Node pairs = root["p2p_disabled_pairs"];
  if (pairs.IsDefined()) {
    if (!pairs.IsSequence()) throw InputError(location_of(file, pairs), "p2p_disabled_pairs must be a list of [gpuA, gpuB] pairs");
    for (const YAML::Node& p : pairs) {
      if (!p.IsSequence() || p.size() != 2) throw InputError(location_of(file, p), "each p2p_disabled_pairs entry must be [gpuA, gpuB]");
      const std::string a = scalar_str(file, p[0], "GPU name"), b = scalar_str(file, p[1], "GPU name");
      resolve(a, location_of(file, p));
      resolve(b, location_of(file, p));
      if (by_name[a]->kind != NodeKind::Gpu || by_name[b]->kind != NodeKind::Gpu)
        throw InputError(location_of(file, p), "p2p_disabled_pairs entries must name two GPUs");
      t.p2p_disabled_pairs.emplace_back(a, b);
    }
  }
  if (std::none_of(t.nodes.begin(), t.nodes.end(), [](const NodeSpec& n) { return n.kind == NodeKind::Gpu; }))
    throw InputError(location_of(file, root), "the topology has no GPU");
}

TopologySpec parse(const YAML::Node& root, const std::string& file) {
  MapReader r(file, root, "topology", {"name", "description", "p2p_level", "gdr_level", "p2p_disabled_pairs", "nodes", "links"});
  TopologySpec t;
  t.file = file;
  t.name = r.str("name");
  t.description = r.opt_str("description").value_or("");
  t.p2p_level = read_path_level(r, "p2p_level", PathType::Pxb);
  t.gdr_level = read_path_level(r, "gdr_level", PathType::Pxb);
  for_each_repeated(file, r.get("nodes"), "nodes",
                    [&](const YAML::Node& n, const YAML::Node& original, const RepeatVars&) { t.nodes.push_back(parse_node(file, n, original)); });
  if (r.has("links")) {
    check_link_names(file, r.get("links"));
    for_each_repeated(file, r.get("links"), "links",
                      [&](const YAML::Node& n, const YAML::Node& original, const RepeatVars&) { t.links.push_back(parse_link(file, n, original)); });
  }
  check(t, root);
  return t;
}

}  // namespace

double pcie_nominal_GBps(const std::string& label) {
  const auto gen_width = pcie_gen_width(label);
  return gen_width ? pcie_lane_GBps(gen_width->first) * gen_width->second : 0.0;
}

TopologySpec parse_topology_file(const std::string& path, const std::vector<std::string>& overrides) {
  return parse_topology_file(path, overrides_from_flags(overrides, "topology."));
}

TopologySpec parse_topology_file(const std::string& path, const std::vector<Override>& overrides) {
  YAML::Node root = load_yaml_file(path);
  apply_overrides(root, overrides, "the topology " + path);
  if (overrides.empty()) return parse(root, path);
  try {
    return parse(root, path);
  } catch (const InputError& e) {
    throw override_error(e, path, overrides);
  }
}

TopologySpec parse_topology_string(const std::string& yaml, const std::string& name) {
  YAML::Node root = load_yaml_string(yaml, name);
  if (!root.IsMap()) throw InputError(SourceLocation{name, 1, 1}, "expected a YAML mapping at the top level");
  return parse(root, name);
}

// GPU datasheets: each row checked as a GPU node of a topology is, with the
// row's own marks, so an error names the table's line.
std::vector<GpuDatasheet> parse_gpu_datasheets(const std::string& text, const std::string& file) {
  const YAML::Node root = load_yaml_string(text, file);
  if (!root.IsMap()) throw InputError(SourceLocation{file, 1, 1}, "expected a mapping with 'gpus:', a list of rows");
  const MapReader r(file, root, "GPU datasheets", {"gpus"});
  const YAML::Node rows = r.get("gpus");
  if (!rows.IsSequence()) r.fail("gpus", "must be a list of rows, e.g. - {match: H200, model: H200, memory: 141 GB, ...}");
  std::vector<GpuDatasheet> out;
  for (const YAML::Node& row : rows) {
    if (!row.IsMap()) throw InputError(location_of(file, row), "a row must be a mapping: {match: NAME, model: ..., memory: ..., ...}");
    const YAML::Node match = row["match"];
    if (!match.IsDefined() || !match.IsScalar() || match.Scalar().empty())
      throw InputError(location_of(file, row), "a row needs 'match': a part of the GPU's name as nvidia-smi prints it");
    GpuDatasheet d;
    d.match = match.Scalar();
    YAML::Node node(YAML::NodeType::Map);
    node["name"] = d.match;
    node["kind"] = "gpu";
    for (auto it = row.begin(); it != row.end(); ++it) {
      const std::string key = it->first.as<std::string>();
      if (key == "match") continue;
      if (key == "name" || key == "kind")
        throw InputError(location_of(file, it->first), fmt::format("a row holds a GPU's figures, not its '{}'", key));
      node[key] = it->second;
      std::string value;
      if (it->second.IsScalar()) {
        value = it->second.Scalar();
      } else if (it->second.IsMap()) {
        for (auto v = it->second.begin(); v != it->second.end(); ++v)
          value += fmt::format("{}{}: {}", value.empty() ? "{" : ", ", v->first.as<std::string>(), v->second.IsScalar() ? v->second.Scalar() : "?");
        value += "}";
      }
      d.fields += fmt::format("{}{}: {}", d.fields.empty() ? "" : ", ", key, value);
    }
    const NodeSpec g = parse_node(file, node, row);  // unknown keys and bad values, at the row's marks
    for (const char* key : {"model", "memory", "hbm_bandwidth", "sms", "copy_engines"})
      if (!row[key].IsDefined()) throw InputError(location_of(file, row), fmt::format("the row of '{}' needs '{}'", d.match, key));
    if (g.gpu.peak_tflops.empty())
      throw InputError(location_of(file, row), fmt::format("the row of '{}' needs 'peak_tflops' (dense TFLOP/s by dtype)", d.match));
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<GpuDatasheet> builtin_gpu_datasheets() {
  return parse_gpu_datasheets(
#include "gpu_datasheets.inc"
      , "configs/gpus.yaml");
}

const GpuDatasheet* find_gpu_datasheet(const std::vector<GpuDatasheet>& table, const std::string& gpu_name) {
  if (gpu_name.empty()) return nullptr;
  for (const GpuDatasheet& d : table)
    if (gpu_name.find(d.match) != std::string::npos) return &d;
  return nullptr;
}

}  // namespace osim::hw
