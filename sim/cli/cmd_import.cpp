// overlapsim import-trace: torch.profiler traces (one per rank) into a
// schedule, with the timeline they measured as that schedule's records.
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/common.hpp"
#include "io/paths.hpp"
#include "kineto/import.hpp"
#include "schedule/records.hpp"

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
  if (!o.topology.empty() && !fs::is_regular_file(o.topology)) throw InputError(SourceLocation{o.topology, 0, 0}, "no such topology file");
  kineto::ImportOptions io;
  io.steps = o.steps;
  io.name = o.name;
  kineto::ImportedTrace t = kineto::import_traces(o.traces, io);
  if (!o.topology.empty()) t.schedule.topology = path_to_write(sched_path.string(), o.topology);
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

}  // namespace

Command add_import_trace(CLI::App& app) {
  auto o = std::make_shared<ImportCliOptions>();
  auto* c =
      app.add_subcommand("import-trace", "Import torch.profiler traces (one per rank) as a schedule, with their measured timeline as its records");
  c->add_option("traces", o->traces, "Chrome-trace JSON files (.json or .json.gz) from prof.export_chrome_trace, one per rank")->required();
  c->add_option("-o,--out", o->out, "a folder (schedule.yaml + the measured records.json) or a .yaml file (the schedule alone)")->required();
  c->add_option("--topology,-t", o->topology, "write this topology into the schedule's 'topology:'");
  c->add_option("--steps", o->steps,
                "a regex: ranges (record_function, cpu ops) whose names match start steps (default: ProfilerStep#N ranges, else `step N` ones)");
  c->add_option("--name", o->name, "the schedule's name (default: the first trace's file name)");
  c->add_flag("--force", o->force, "overwrite existing output files");
  return {c, [o] { return import_command(*o); }};
}

}  // namespace osim::cli
