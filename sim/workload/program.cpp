#include "workload/program.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/stats.hpp"
#include "gpu/executor.hpp"

namespace osim {

ProgramRun read_program_run(const std::string& path) {
  const SourceLocation at{path, 0, 0};
  std::ifstream in(path);
  if (!in) throw InputError(at, "cannot read this file");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(at, std::string("not JSON: ") + e.what());
  }
  if (!doc.is_object() || doc.value("schema", "") != "overlapsim.program/v1")
    throw InputError(at, "not a program result (schema overlapsim.program/v1, written by validate/programs/)");
  try {
    ProgramRun r;
    r.file = path;
    r.name = doc.at("name").get<std::string>();
    r.group = doc.value("group", "");
    r.measured_s = doc.at("median_s").get<double>();
    r.runs_before = doc.value("runs_before", 0);
    r.workload_yaml = doc.at("workload").dump();
    if (!(r.measured_s > 0) || r.runs_before < 0) throw InputError(at, "median_s must be positive and runs_before not negative");
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(at, std::string("a program result is malformed: ") + e.what());
  }
}

ProgramPrediction predict_program(const ProgramRun& run, const hw::Topology& topo, const ModelParams& params) {
  DitWorkload w = parse_workload_string(run.workload_yaml, run.file);
  w.params = params;  // the twin names shapes, offload and its attention's backend; the rates are the calibration's
  const ExecResult res = execute_after_runs(generate_schedule(w), topo, w.params, run.runs_before);
  return {run.name, run.group, run.measured_s, res.makespan.s()};
}

std::vector<std::string> program_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

namespace {
// The runs of each group, in their order.
std::vector<std::pair<std::string, std::vector<const ProgramPrediction*>>> by_group(const std::vector<ProgramPrediction>& runs) {
  std::vector<std::pair<std::string, std::vector<const ProgramPrediction*>>> out;
  for (const auto& r : runs) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& g) { return g.first == r.group; });
    if (it == out.end()) it = out.insert(out.end(), {r.group, {}});
    it->second.push_back(&r);
  }
  return out;
}
double spearman_of(const std::vector<const ProgramPrediction*>& g) {
  std::vector<double> m, s;
  for (const auto* r : g) m.push_back(r->measured_s), s.push_back(r->simulated_s);
  return spearman(m, s);
}
}  // namespace

ProgramFigures program_figures(std::vector<ProgramPrediction> runs) {
  ProgramFigures f;
  std::vector<double> errs;
  for (const auto& r : runs) errs.push_back(100 * std::abs(r.error()));
  f.median_pct = median(errs);
  f.worst_pct = errs.empty() ? 0 : *std::max_element(errs.begin(), errs.end());
  for (const auto& [name, g] : by_group(runs))
    if (g.size() >= 3) f.spearman_min = std::min(f.spearman_min, spearman_of(g));
  f.runs = std::move(runs);
  return f;
}

std::string format_program_figures(const ProgramFigures& f) {
  std::string out = fmt::format("  {:<40} {:>12} {:>12} {:>8}\n", "program", "measured", "simulated", "error");
  for (const auto& r : f.runs)
    out += fmt::format("  {:<40} {:>9.2f} ms {:>9.2f} ms {:>+7.1f}%\n", r.name, r.measured_s * 1e3, r.simulated_s * 1e3, 100 * r.error());
  for (const auto& [name, g] : by_group(f.runs)) {
    std::vector<double> errs;
    for (const auto* r : g) errs.push_back(100 * std::abs(r->error()));
    out += fmt::format("  {}: {} programs, makespan error median {:.1f} %, worst {:.1f} %", name.empty() ? "(no group)" : name, g.size(), median(errs),
                       *std::max_element(errs.begin(), errs.end()));
    out += g.size() >= 3 ? fmt::format(", rank correlation {:.2f}\n", spearman_of(g)) : "\n";
  }
  out += fmt::format("{} programs: makespan error median {:.1f} %, worst {:.1f} %; configurations ranked alike within each group: rank "
                     "correlation (Spearman) at least {:.2f}\n", f.runs.size(), f.median_pct, f.worst_pct, f.spearman_min);
  return out;
}

}  // namespace osim
