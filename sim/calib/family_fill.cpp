#include "calib/family_fill.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "calib/pipeline.hpp"
#include "calibrations/shipped.hpp"
#include "gpu/model_fields.hpp"
#include "gpu/params_io.hpp"
#include "io/yaml_reader.hpp"

namespace osim {

namespace {

bool pcie_card(const std::string& name) {
  std::string up;
  for (char ch : name)
    if (std::isalnum(static_cast<unsigned char>(ch))) up += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return up.find("PCIE") != std::string::npos;
}

std::string file_name(const std::string& path) { return std::filesystem::path(path).filename().string(); }

std::string machine(const CalibrationOrigin& o) { return o.gpus > 1 ? fmt::format("{}x {}", o.gpus, o.gpu) : o.gpu; }

// A value as a warning shows it: one short line, or what it is.
std::string shown(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  while (!text.empty() && text.front() == ' ') text.erase(text.begin());
  if (text.find('\n') != std::string::npos || text.size() > 40) return "(a table)";
  if (!text.empty() && text.front() == '-') return "unset";  // a negative time: the model's "none"

  return text;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

bool borrowable_field(std::string_view field) {
  const size_t dot = field.find('.');
  if (dot == std::string_view::npos) return false;
  const std::string_view family = field.substr(0, dot), name = field.substr(dot + 1);
  // Collectives' host cost, their share of the clock, their load and stragglers, NCCL's memory: the rank count's and the fabric's.
  for (std::string_view no :
       {"framework_collective_call", "framework_p2p_round", "comm_clock_share", "comm_clock_share_host", "straggler_share", "sustained_comm_load"})
    if (name == no) return false;
  if (family == "vram" && name.rfind("nccl", 0) == 0) return false;
  for (std::string_view yes : {"overheads", "handoff", "gemm", "conv", "attention", "memory", "power", "vram"})
    if (family == yes) return true;
  return false;  // copies, nccl, nvlink, interference: the box's
}

std::vector<FamilyGap> family_gaps(const ModelParams& p, const std::string& gpu_model, int gpus, const std::vector<FamilySibling>& siblings,
                                   const std::string& self_file) {
  std::vector<FamilyGap> out;
  for (const FitStep& s : fit_steps()) {
    if (s.writes.empty()) continue;
    std::vector<std::string> fields(s.writes.begin(), s.writes.end());
    const bool borrowable = std::all_of(fields.begin(), fields.end(), [](const std::string& f) { return borrowable_field(f); });
    const bool defaulted = std::all_of(fields.begin(), fields.end(), [&](const std::string& f) { return model_field_is_default(p, f); });
    if (!borrowable || !defaulted) continue;
    const FamilySibling* best = nullptr;
    for (const FamilySibling& m : siblings) {
      if (m.origin.gpu.empty() || !gpu_in_family(m.origin.gpu, gpu_model) || pcie_card(m.origin.gpu) != pcie_card(gpu_model)) continue;
      if (!self_file.empty() && file_name(m.file) == file_name(self_file)) continue;
      const bool measured = std::any_of(fields.begin(), fields.end(),
                                        [&](const std::string& f) { return !model_field_is_default(*m.params, f) && !m.taken.contains(f); });
      if (!measured) continue;
      const int n = m.origin.gpus, b = best ? best->origin.gpus : 0;
      if (!best || std::abs(n - gpus) < std::abs(b - gpus) || (std::abs(n - gpus) == std::abs(b - gpus) && n < b)) best = &m;
    }
    if (!best) continue;
    FamilyGap g{fmt::format("{} {}", s.family, s.name), fields, {}, {}, best->file, best->origin, best->params};
    for (const std::string& f : fields) {
      g.here.push_back(shown(model_field_text(p, f)));
      g.there.push_back(shown(model_field_text(*best->params, f)));
    }
    out.push_back(std::move(g));
  }
  return out;
}

std::string family_gap_warning(const FamilyGap& g) {
  return fmt::format("warning: {}: default {} here; measured {} on {} ({}): `overlapsim calibrate --fill-from-family` takes {}", joined(g.fields),
                     joined(g.here), joined(g.there), machine(g.origin), g.file, g.fields.size() > 1 ? "them" : "it");
}

std::string family_gap_taken(const FamilyGap& g) {
  return fmt::format("taken from the GPU family: {}: {} (default {}), measured on {} ({})", joined(g.fields), joined(g.there), joined(g.here),
                     machine(g.origin), g.file);
}

ModelParams family_base(const std::vector<FamilyGap>& gaps) {
  ModelParams p;
  for (const FamilyGap& g : gaps) p = with_model_fields(p, *g.params, g.fields);
  return p;
}

void take_from_family(Calibration& c, const std::vector<FamilyGap>& gaps) {
  if (gaps.empty()) return;
  c.provenance_yaml += "  taken_from_family:\n";  // not measured here: per field, where from
  for (const FamilyGap& g : gaps) {
    c.params = with_model_fields(c.params, *g.params, g.fields);
    for (const std::string& f : g.fields)
      if (!model_field_is_default(*g.params, f))
        c.provenance_yaml +=
            fmt::format("    {}: {}\n", f, nlohmann::json(fmt::format("taken from {}, measured there on {}", g.file, machine(g.origin))).dump());
  }
}

std::vector<FamilySibling> shipped_siblings() {
  std::vector<FamilySibling> out;
  for (const ShippedCalibration& s : shipped_calibrations())
    out.push_back({s.calibration.file, s.calibration.origin, &s.calibration.params, taken_from_family(s.text, s.calibration.file)});
  return out;
}

std::set<std::string> taken_from_family(const std::string& calibration_text, const std::string& name) {
  std::set<std::string> out;
  const YAML::Node root = load_yaml_string(provenance_block(calibration_text), name);
  if (root.IsMap() && root["provenance"] && root["provenance"]["taken_from_family"] && root["provenance"]["taken_from_family"].IsMap())
    for (const auto& kv : root["provenance"]["taken_from_family"]) out.insert(kv.first.as<std::string>());
  return out;
}

std::vector<FamilyGap> family_gaps(const ModelParams& p, const hw::Topology& topo, const std::string& self_file) {
  return family_gaps(p, topo.node(topo.gpus().front()).gpu.model, static_cast<int>(topo.gpus().size()), shipped_siblings(), self_file);
}

namespace {

// The *_aggregate tables covering fewer GPUs than copy at once on `topo`:
// "name (entries)", comma-separated; and the counts they are held against.
struct ShortHostTables {
  std::string names;
  int host = 0;    // GPUs on the host (pageable_*)
  int bridge = 0;  // most GPUs under one host bridge (host_*)
};

ShortHostTables short_host_tables(const ModelParams& p, const hw::Topology& topo) {
  std::map<int, int> under_bridge;  // a host bridge's from-host resource -> GPUs whose H2D copies cross it
  for (const int g : topo.gpus())
    for (const hw::ResourceUse& u : topo.route(topo.nearest_cpu(g), g, hw::RouteOptions{.dma = true}).uses)
      for (size_t n = 0; n < topo.node_count(); ++n)
        if (topo.from_host_resource(static_cast<int>(n)) == u.resource) ++under_bridge[u.resource];
  ShortHostTables s;
  for (const auto& [res, n] : under_bridge) s.bridge = std::max(s.bridge, n);
  s.host = static_cast<int>(topo.gpus().size());
  const CopyParams& c = p.copies;
  for (const auto& [name, table, gpus] : {std::tuple{"host_h2d_aggregate", &c.host_h2d_aggregate, s.bridge},
                                          std::tuple{"host_d2h_aggregate", &c.host_d2h_aggregate, s.bridge},
                                          std::tuple{"host_bidir_aggregate", &c.host_bidir_aggregate, s.bridge},
                                          std::tuple{"pageable_h2d_aggregate", &c.pageable_h2d_aggregate, s.host},
                                          std::tuple{"pageable_d2h_aggregate", &c.pageable_d2h_aggregate, s.host}})
    if (gpus >= 2 && table->size() < static_cast<size_t>(gpus))
      s.names += fmt::format("{}{} ({})", s.names.empty() ? "" : ", ", name, table->empty() ? std::string("none") : fmt::format("{}", table->size()));
  return s;
}

}  // namespace

std::string host_limit_gap(const ModelParams& p, const hw::Topology& topo) {
  const ShortHostTables s = short_host_tables(p, topo);
  if (s.names.empty()) return "";
  return fmt::format(
      "warning: host limits measured with fewer GPUs copying at once than this topology has ({} GPUs, {} under one host bridge): {}; "
      "with more GPUs copying than a table covers, only the topology's limits hold pinned copies, and each pageable copy keeps at "
      "most the last entry's per-GPU share (its own rate where the table has one entry or none)",
      s.host, s.bridge, s.names);
}

std::string gpu_count_gap(const ModelParams& p, int measured_gpus, const hw::Topology& topo, RunUses uses) {
  const int gpus = static_cast<int>(topo.gpus().size());
  if (measured_gpus <= 0 || measured_gpus >= gpus) return "";
  std::vector<std::string> missing;
  int nccl_ranks = 0;
  int framework_ranks = 0;
  for (const NcclTable& t : p.nccl.nccl_tables) {
    int& most = t.coll == TableColl::FrameworkAllToAllPairwise ? framework_ranks : nccl_ranks;
    most = std::max(most, t.ranks);
  }
  if (uses.collectives && nccl_ranks == 0)
    missing.emplace_back(p.nccl.nccl_model ? "NCCL's collectives (NCCL's own model stands in: its channels, latencies and rates by size)"
                                           : "NCCL's collectives (the channel fields' defaults stand in)");
  else if (uses.collectives && nccl_ranks < gpus)
    missing.emplace_back(fmt::format("NCCL's collectives on more than {} ranks (the {}-rank tables stand in)", nccl_ranks, nccl_ranks));
  if (uses.framework_pairwise && framework_ranks == 0)
    missing.emplace_back("PyTorch's pairwise all-to-all (its rounds cost what NCCL's do, with no framework time between them)");
  else if (uses.framework_pairwise && framework_ranks < gpus)
    missing.emplace_back(fmt::format("PyTorch's pairwise all-to-all on more than {} ranks (the {}-rank table stands in)", framework_ranks, framework_ranks));
  if (const ShortHostTables s = short_host_tables(p, topo); !s.names.empty())
    missing.emplace_back(fmt::format("the host's limits with more GPUs copying at once: {}", s.names));
  if (missing.empty()) return "";
  std::string what;
  for (size_t i = 0; i < missing.size(); ++i) what += (i ? "; " : "") + missing[i];
  return fmt::format("not measured for {} GPUs (the calibration measured {}): {}", gpus, measured_gpus, what);
}

void fill_from_family(Calibration& c, const BenchDocs& docs, const hw::Topology& topo, const std::vector<FamilyGap>& gaps) {
  if (gaps.empty()) return;
  c = calibrate(docs, topo, family_base(gaps));  // fitted again over the fields taken
  take_from_family(c, gaps);
}

}  // namespace osim
