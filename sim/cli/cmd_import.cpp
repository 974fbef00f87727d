// overlapsim import-trace: torch.profiler traces (one per rank) into a
// schedule, with the timeline they measured as that schedule's records.
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <regex>

#include "cli/common.hpp"
#include "gpu/executor.hpp"
#include "kineto/import.hpp"
#include "report/metrics.hpp"
#include "schedule/records.hpp"
#include "workload/program.hpp"

namespace osim::cli {

namespace {

struct ImportCliOptions {
  std::vector<std::string> traces;
  std::string out, topology, steps, name;
  bool force = false;
};

int import_command(const ImportCliOptions& o) {
  // -o x.yaml: the schedule alone; -o DIR: a run folder (schedule.yaml and the
  // measured records.json, what `overlapsim compare --simulate DIR` reads).
  const fs::path out(o.out);
  const bool folder = out.extension() != ".yaml" && out.extension() != ".yml";
  const fs::path sched_path = folder ? out / "schedule.yaml" : out;
  const fs::path records = folder ? out / "records.json" : fs::path();
  refuse_overwrite(sched_path, o.force);
  if (folder) refuse_overwrite(records, o.force);
  if (!o.topology.empty() && !fs::is_regular_file(o.topology))
    throw InputError(SourceLocation{o.topology, 0, 0}, "no such topology file");
  kineto::ImportOptions io;
  io.steps = o.steps;
  io.name = o.name;
  kineto::ImportedTrace t = kineto::import_traces(o.traces, io);
  if (!o.topology.empty()) {
    const fs::path base = sched_path.parent_path().empty() ? fs::path(".") : sched_path.parent_path();
    t.schedule.topology = fs::relative(fs::absolute(o.topology), fs::absolute(base)).string();
  }
  if (!sched_path.parent_path().empty()) fs::create_directories(sched_path.parent_path());
  write_file(sched_path, to_yaml(t.schedule));
  if (folder) {
    nlohmann::ordered_json meta;
    meta["traces"] = o.traces;
    write_file(records, records_text(records_json(t.schedule, t.measured, "", "torch.profiler", meta)));
  }
  std::cout << t.summary.text();
  std::cout << fmt::format("measured (with the profiler): {:.3f} ms from the first CUDA call to the last op's end\n", t.measured.makespan.s() * 1e3);
  std::cout << fmt::format("wrote {}{}\n", sched_path.string(), folder ? ", " + records.string() : "");
  return 0;
}

// The step time of a run: its steps' mean, or its makespan where it has none.
double step_time_s(const Schedule& s, const hw::Topology& topo, const RunRecord& r) {
  const Metrics m = compute_metrics(s, topo, r);
  if (m.steps.empty()) return r.makespan.s();
  double sum = 0;
  for (const auto& st : m.steps) sum += (st.end - st.start).s();
  return sum / static_cast<double>(m.steps.size());
}

}  // namespace

std::vector<TraceFigure> trace_figures(const std::string& dir, const hw::Topology& topo, const ModelParams& params, const std::string& steps) {
  // NAME.json (the program's result) beside NAME[.rankN].trace.json.gz.
  std::map<std::string, std::vector<std::string>> traces;
  static const std::regex trace_name(R"(^(.*?)(\.rank\d+)?\.trace\.json(\.gz)?$)");
  for (const auto& e : fs::directory_iterator(dir)) {
    std::smatch m;
    const std::string f = e.path().filename().string();
    if (std::regex_match(f, m, trace_name)) traces[m[1].str()].push_back(e.path().string());
  }
  std::vector<TraceFigure> out;
  for (auto& [name, files] : traces) {
    std::sort(files.begin(), files.end());
    const fs::path result = fs::path(dir) / (name + ".json");
    if (!fs::exists(result)) throw InputError(SourceLocation{files[0], 0, 0}, "no " + result.filename().string() + " (the program's result) beside this trace");
    const ProgramRun run = read_program_run(result.string());
    kineto::ImportOptions io;
    io.steps = steps;
    const kineto::ImportedTrace t = kineto::import_traces(files, io);
    ExecOptions opts;
    opts.keep_records = true;
    const ExecResult sim = execute(t.schedule, topo, params, opts);
    TraceFigure f;
    f.name = name;
    f.program_s = run.measured_s;
    f.trace_s = step_time_s(t.schedule, topo, t.measured);
    f.simulated_s = step_time_s(t.schedule, topo, sim);
    f.pageable = name.find("pageable") != std::string::npos;
    out.push_back(f);
  }
  return out;
}

std::string format_trace_figures(const std::vector<TraceFigure>& figures) {
  std::string out = fmt::format("  {:<46} {:>12} {:>12} {:>12} {:>9} {:>9}\n", "trace (step time)", "program", "profiled", "simulated", "vs prog.", "vs prof.");
  for (const TraceFigure& f : figures)
    out += fmt::format("  {:<46} {:>9.3f} ms {:>9.3f} ms {:>9.3f} ms {:>+8.1f}% {:>+8.1f}%\n", f.name, f.program_s * 1e3, f.trace_s * 1e3,
                       f.simulated_s * 1e3, 100 * f.error(), 100 * (f.simulated_s / f.trace_s - 1));
  return out;
}

Command add_import_trace(CLI::App& app) {
  auto o = std::make_shared<ImportCliOptions>();
  auto* c = app.add_subcommand("import-trace", "Import torch.profiler traces (one per rank) as a schedule, with their measured timeline as its records");
  c->add_option("traces", o->traces, "Chrome-trace JSON files (.json or .json.gz) from prof.export_chrome_trace, one per rank")->required();
  c->add_option("-o,--out", o->out, "a folder (schedule.yaml + the measured records.json) or a .yaml file (the schedule alone)")->required();
  c->add_option("--topology,-t", o->topology, "write this topology into the schedule's 'topology:'");
  c->add_option("--steps", o->steps, "a regex: ranges (record_function, cpu ops) whose names match start steps (default ^ProfilerStep#\\d+$)");
  c->add_option("--name", o->name, "the schedule's name (default: the first trace's file name)");
  c->add_flag("--force", o->force, "overwrite existing output files");
  return {c, [o] { return import_command(*o); }};
}

}  // namespace osim::cli
