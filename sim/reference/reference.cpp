// A reference machine's manifest read and checked, and its figures checked
// against what it expects (the run itself: reference_run.cpp).
#include "reference/reference.hpp"

#include <cmath>
#include <filesystem>
#include <tuple>

#include <fmt/format.h>

#include "io/yaml_reader.hpp"

namespace osim::reference {

namespace fs = std::filesystem;

namespace {

// Where the manifest's paths point: resolved against its folder.
struct Paths {
  fs::path dir;
  [[nodiscard]] std::string operator()(const std::string& p) const { return (dir / p).lexically_normal().string(); }
  // A folder of results a section names beside the manifest; refused at the section's key if it is not there.
  [[nodiscard]] std::string folder(const MapReader& m, const char* key, const std::string& name) const {
    const std::string d = (*this)(name);
    if (!fs::is_directory(d)) m.fail(key, "no folder " + d + ": name a folder of results beside the manifest");
    return d;
  }
};

std::vector<std::string> bench_sources(const MapReader& cal, const Paths& path) {
  const YAML::Node list = cal.get("sources");
  if (!list.IsSequence() || list.size() == 0)
    cal.fail("sources", "expected a list of the bench files the calibration is fitted from, e.g. [bench-default.json]");
  std::vector<std::string> out;
  for (const YAML::Node& s : list) {
    out.push_back(path(scalar_str(cal.file(), s, "a source")));
    if (!fs::is_regular_file(out.back()))
      throw InputError(location_of(cal.file(), s), "no bench file " + out.back() + ": name a file beside the manifest");
  }
  return out;
}

ProgramSet program_set(const MapReader& top, const char* section, bool repeatable, const Paths& path) {
  const MapReader m(top.file(), top.get(section), section,
                    repeatable ? std::vector<std::string>{"runs", "repeats"} : std::vector<std::string>{"runs"});
  ProgramSet s;
  s.runs = path.folder(m, "runs", m.str("runs"));
  s.at = m.where("runs");
  if (m.has("repeats")) {
    if (!m.get("repeats").IsSequence() || m.get("repeats").size() == 0)
      m.fail("repeats", std::string("expected a list of folders of program results, e.g. [") + section + "-run-2]");
    for (const YAML::Node& r : m.get("repeats")) s.repeats.push_back(path.folder(m, "repeats", scalar_str(top.file(), r, "a repeat's folder")));
  }
  return s;
}

// One `expected:` entry: a mapping of these keys, each a number.
MapReader limits(const MapReader& e, const char* key, std::vector<std::string> known) {
  return MapReader(e.file(), e.get(key), key, std::move(known));
}

Expected read_expected(const MapReader& e, const Manifest& m) {
  Expected x;
  // An expected figure needs the section that makes it.
  const auto needs = [&](const char* key, bool present, const std::string& section) {
    if (e.has(key) && !present) e.fail(key, "the manifest has no " + section + " to make this figure: add it, or drop this line");
    return e.has(key);
  };
  if (e.has("replay_held_over_5pct")) x.replay_held_over_5pct = e.integer("replay_held_over_5pct");
  for (const auto& [key, present, section, out] :
       {std::tuple{"validation", m.validation.has_value(), "validation: section", &x.validation},
        std::tuple{"validation_timing_events", m.timing_events.has_value(), "validation: timing_events", &x.validation_timing_events}})
    if (needs(key, present, section)) {
      const MapReader l = limits(e, key, {"median_pct", "worst_pct"});
      *out = ErrorLimits{l.num("median_pct"), l.num("worst_pct")};
    }
  for (const auto& [key, set, out] : {std::tuple{"programs", &m.programs, &x.programs}, std::tuple{"fp8_programs", &m.fp8_programs, &x.fp8_programs},
                                      std::tuple{"requests", &m.requests, &x.requests}})
    if (needs(key, set->has_value(), std::string(key) + ": section")) {
      const MapReader l = limits(e, key, {"median_pct", "worst_pct", "spearman_min"});
      *out = ProgramLimits{l.num("median_pct"), l.num("worst_pct"), l.num("spearman_min")};
    }
  for (const auto& [section, key, set, out] : {std::tuple{"programs", "programs_repeated", &m.programs, &x.programs_repeated},
                                               std::tuple{"fp8_programs", "fp8_programs_repeated", &m.fp8_programs, &x.fp8_programs_repeated},
                                               std::tuple{"requests", "requests_repeated", &m.requests, &x.requests_repeated},
                                               std::tuple{"models", "models_repeated", &m.models, &x.models_repeated}})
    if (needs(key, *set && !(*set)->repeats.empty(), std::string(section) + ": section with repeats:")) {
      const MapReader l =
          limits(e, key, {"median_pct", "worst_pct", "spearman_min", "halves_spearman_min", "pairs_misordered_max", "host_median_pct"});
      *out = RepeatedLimits{l.num("median_pct"),
                            l.num("worst_pct"),
                            l.num("spearman_min"),
                            l.opt_num("halves_spearman_min"),
                            l.opt_int32("pairs_misordered_max"),
                            l.opt_num("host_median_pct")};
    }
  // A request set's stages: their times, and their peak allocated bytes.
  if (needs("requests_stages", m.requests.has_value(), "requests: section")) {
    const MapReader l = limits(e, "requests_stages", {"median_pct", "worst_pct"});
    x.requests_stages = ErrorLimits{l.num("median_pct"), l.num("worst_pct")};
  }
  if (needs("requests_memory", m.requests.has_value(), "requests: section")) {
    const MapReader l = limits(e, "requests_memory", {"allocated_worst_pct"});
    x.requests_memory = StageMemoryLimits{l.num("allocated_worst_pct")};
  }
  if (needs("models", m.models.has_value(), "models: section")) {
    const MapReader l = limits(e, "models", {"median_pct", "worst_pct", "allocated_worst_pct"});
    x.models = ModelLimits{l.num("median_pct"), l.num("worst_pct"), l.num("allocated_worst_pct")};
  }
  if (needs("memory", m.memory.has_value(), "memory: section")) {
    const MapReader l = limits(e, "memory", {"allocated_worst_pct", "device_worst_pct"});
    x.memory = MemoryLimits{l.num("allocated_worst_pct"), l.num("device_worst_pct")};
  }
  for (const auto& [key, set, out] : {std::tuple{"traces", &m.traces, &x.traces}, std::tuple{"traces_default", &m.traces_default, &x.traces_default}})
    if (needs(key, set->has_value(), std::string(key) + ": section")) {
      const MapReader l = limits(e, key, {"pinned_worst_pct", "pageable_worst_pct"});
      *out = TraceLimits{l.num("pinned_worst_pct"), l.num("pageable_worst_pct")};
    }
  return x;
}

// `predicted_from:`: per other reference machine (its folder), the figures
// this machine's runs come to with that machine's calibration.
std::vector<CrossExpected> read_predicted_from(const MapReader& top, const Manifest& m, const Paths& path) {
  const YAML::Node map = top.get("predicted_from");
  if (!map.IsMap() || map.size() == 0)
    top.fail("predicted_from",
             "expected a mapping of other reference machines' folders to the figures predicted from their calibrations, "
             "e.g. {../h200: {programs: {median_pct: 3, worst_pct: 9, spearman_min: 0.9}}}");
  std::vector<CrossExpected> out;
  for (const auto& kv : map) {
    const std::string name = scalar_str(m.file, kv.first, "a reference machine's folder");
    CrossExpected x{path(name), location_of(m.file, kv.first), {}};
    if (!fs::is_regular_file(fs::path(x.folder) / "manifest.yaml"))
      throw InputError(x.at, "no reference manifest in " + x.folder + ": name another machine's folder, relative to this manifest");
    // What a calibration borrowed from another machine makes: no refit, no replay, no timing events.
    x.expected = read_expected(MapReader(m.file, kv.second, name,
                                         {"validation", "programs", "programs_repeated", "fp8_programs", "fp8_programs_repeated", "requests",
                                          "requests_repeated", "requests_stages", "requests_memory", "models", "models_repeated", "memory", "traces", "traces_default"}),
                               m);
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace

Manifest read_manifest(const std::string& folder) {
  const Paths path{fs::path(folder)};
  Manifest m;
  m.file = (path.dir / "manifest.yaml").string();
  const YAML::Node root = load_yaml_file(m.file);
  const MapReader top(m.file, root, "reference manifest",
                      {"schema", "machine", "description", "measured", "topology", "calibration", "validation", "programs", "fp8_programs",
                       "requests", "models", "memory", "traces", "traces_default", "expected", "predicted_from"});
  if (top.str("schema") != "overlapsim.reference/v1") top.fail("schema", "expected overlapsim.reference/v1");
  m.machine = top.str("machine");
  m.description = top.opt_str("description").value_or("");
  m.topology = path(top.str("topology"));
  if (!fs::is_regular_file(m.topology)) top.fail("topology", "no file " + m.topology + ": name the machine's topology, relative to the manifest");
  const MapReader cal(m.file, top.get("calibration"), "calibration", {"file", "sources", "second_run", "fill_from_family"});
  m.calibration = path(cal.str("file"));
  m.fill_from_family = cal.boolean("fill_from_family", false);
  m.sources = bench_sources(cal, path);
  if (top.has("validation")) {
    const MapReader v(m.file, top.get("validation"), "validation", {"runs", "timing_events"});
    m.validation = path.folder(v, "runs", v.str("runs"));
    if (v.has("timing_events")) {
      m.timing_events = path(v.str("timing_events"));
      if (!fs::is_regular_file(*m.timing_events))
        v.fail("timing_events", "no file " + *m.timing_events + ": name a calibration with GPU event times");
    }
  }
  for (const auto& [section, repeatable, out] :
       {std::tuple{"programs", true, &m.programs}, std::tuple{"fp8_programs", true, &m.fp8_programs}, std::tuple{"requests", true, &m.requests},
        std::tuple{"models", true, &m.models}, std::tuple{"memory", false, &m.memory}})
    if (top.has(section)) *out = program_set(top, section, repeatable, path);
  for (const auto& [section, out] : {std::pair{"traces", &m.traces}, std::pair{"traces_default", &m.traces_default}})
    if (top.has(section)) {
      const MapReader tr(m.file, top.get(section), section, {"runs", "steps"});
      *out = TraceSet{path.folder(tr, "runs", tr.str("runs")), tr.opt_str("steps").value_or("")};
    }
  if (top.has("expected"))
    m.expected = read_expected(
        MapReader(m.file, top.get("expected"), "expected",
                  {"replay_held_over_5pct", "validation", "validation_timing_events", "programs", "programs_repeated", "fp8_programs",
                   "fp8_programs_repeated", "requests", "requests_repeated", "requests_stages", "requests_memory", "models", "models_repeated", "memory", "traces", "traces_default"}),
        m);
  if (top.has("predicted_from")) m.predicted_from = read_predicted_from(top, m, path);
  return m;
}

namespace {

// A figure at most its expected value (to the printed precision), at least
// it for a rank correlation.
bool within(double value, double limit) { return value <= limit + 0.05; }
bool at_least(double value, double limit) { return value >= limit - 0.005; }

struct Checker {
  std::vector<Miss> misses;
  void operator()(bool ok, const std::string& key, const std::string& what) {
    if (!ok) misses.push_back({key, what});
  }
  void absent(const std::string& key) { misses.push_back({key, key + ": no such figure (the manifest has no section that makes it)"}); }
};

void check_repeated(Checker& c, const std::optional<ProgramSetFigures>& f, const std::optional<RepeatedLimits>& e, const std::string& section) {
  const std::string key = section + "_repeated";
  if (!e) return;
  if (!f || !f->repeated) return c.absent(key);
  const RepeatedFigures& rf = f->repeated->figures;
  c(within(rf.median_pct, e->median_pct) && within(rf.worst_pct, e->worst_pct) && at_least(rf.spearman_min, e->spearman_min), key,
    section + " over their sessions");
  if (e->pairs_misordered_max)
    c(static_cast<int>(rf.pairs_misordered.size()) <= *e->pairs_misordered_max, key,
      section + "' configuration pairs ordered otherwise by the simulation");
  if (e->host_median_pct) c(within(f->repeated->pooled.host_median_pct, *e->host_median_pct), key, section + "' host issue time over their sessions");
  if (e->halves_spearman_min)
    c(std::abs(rf.halves_spearman_min - *e->halves_spearman_min) <= 0.005, key, section + "' sessions ranked against each other");
}

}  // namespace

std::vector<Miss> check(const Figures& f, const Expected& e) {
  Checker c;
  if (e.replay_held_over_5pct) c(f.held_over_5pct <= *e.replay_held_over_5pct, "replay_held_over_5pct", "held rows over 5 %");
  for (const auto& [key, figures, limits, label] :
       {std::tuple{"validation", &f.validation, &e.validation, "validation runs"},
        std::tuple{"validation_timing_events", &f.validation_timing_events, &e.validation_timing_events, "with their timing events"}}) {
    if (!*limits) continue;
    if (!*figures)
      c.absent(key);
    else
      c(within((*figures)->median_pct, (*limits)->median_pct) && within((*figures)->worst_pct, (*limits)->worst_pct), key, label);
  }
  for (const auto& [key, figures, limits, repeated] : {std::tuple{"programs", &f.programs, &e.programs, &e.programs_repeated},
                                                       std::tuple{"fp8_programs", &f.fp8_programs, &e.fp8_programs, &e.fp8_programs_repeated},
                                                       std::tuple{"requests", &f.requests, &e.requests, &e.requests_repeated}}) {
    if (*limits) {
      if (!*figures)
        c.absent(key);
      else {
        const ProgramFigures& p = (*figures)->first;
        c(within(p.median_pct, (*limits)->median_pct) && within(p.worst_pct, (*limits)->worst_pct) &&
              at_least(p.spearman_min, (*limits)->spearman_min),
          key, key);
      }
    }
    check_repeated(c, *figures, *repeated, key);
  }
  const StageFigures* stages = f.requests && f.requests->stages ? &*f.requests->stages : nullptr;
  if (e.requests_stages) {
    if (!stages)
      c.absent("requests_stages");
    else
      c(within(stages->median_pct, e.requests_stages->median_pct) && within(stages->worst_pct, e.requests_stages->worst_pct), "requests_stages",
        fmt::format("requests' stage times (median {:.1f} %, worst {:.1f} %; expected at most {:.1f} % and {:.1f} %)", stages->median_pct,
                    stages->worst_pct, e.requests_stages->median_pct, e.requests_stages->worst_pct));
  }
  if (e.requests_memory) {
    if (!stages || stages->memory_stages == 0)
      c.absent("requests_memory");
    else
      c(within(stages->allocated_worst_pct, e.requests_memory->allocated_worst_pct), "requests_memory",
        fmt::format("requests' stage peak allocated (worst {:.1f} %; expected at most {:.1f} %)", stages->allocated_worst_pct,
                    e.requests_memory->allocated_worst_pct));
  }
  if (e.models) {
    if (!f.models)
      c.absent("models");
    else {
      const ProgramFigures& p = f.models->first;
      c(within(p.median_pct, e.models->median_pct) && within(p.worst_pct, e.models->worst_pct) &&
            within(p.allocated_worst_pct, e.models->allocated_worst_pct),
        "models", "models");
    }
  }
  check_repeated(c, f.models, e.models_repeated, "models");
  if (e.memory) {
    if (!f.memory)
      c.absent("memory");
    else
      c(within(f.memory->allocated_worst_pct, e.memory->allocated_worst_pct) && within(f.memory->device_worst_pct, e.memory->device_worst_pct),
        "memory", "memory");
  }
  for (const auto& [key, figures, limits] :
       {std::tuple{"traces", &f.traces, &e.traces}, std::tuple{"traces_default", &f.traces_default, &e.traces_default}}) {
    if (!*limits) continue;
    if (!*figures)
      c.absent(key);
    else
      c(within((*figures)->pinned_worst_pct, (*limits)->pinned_worst_pct) && within((*figures)->pageable_worst_pct, (*limits)->pageable_worst_pct),
        key, key);
  }
  return c.misses;
}

}  // namespace osim::reference
