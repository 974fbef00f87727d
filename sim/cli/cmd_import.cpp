// overlapsim import-trace: torch.profiler traces (one per rank) into a
// schedule, with the timeline they measured as that schedule's records.
#include <cmath>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "calibrations/measured_defaults.hpp"
#include "cli/common.hpp"
#include "core/units.hpp"
#include "hw/topology.hpp"
#include "io/paths.hpp"
#include "kineto/import.hpp"
#include "kineto/replan.hpp"
#include "schedule/records.hpp"

namespace osim::cli {

namespace {

struct ImportCliOptions {
  std::vector<std::string> traces;
  std::string out, topology, steps, name;
  bool symmetric_ranks = false;
  bool calls_as_measured = false;
  bool force = false;
  int prefetch = -1;  // -1: the program as measured
  int prefetch_cycle = 0;
};

// The topology's GPUs against the traces' (deviceProperties): a trace replays on the machine it was
// recorded on. Rank r runs on the topology's r-th GPU. Refused where the SMs differ or the memory by
// more than 10 % (totalGlobalMem is a little under the card's nominal size); returns the summary's line.
std::string check_gpus(const std::vector<kineto::TraceGpu>& gpus, const std::string& topology) {
  if (gpus.empty() || gpus[0].name.empty()) return "";
  const kineto::TraceGpu& g0 = gpus[0];
  std::string line = fmt::format("GPU: {} ({} SMs, {}; the trace's deviceProperties)", g0.name, g0.sms, format_bytes(static_cast<double>(g0.memory)));
  if (topology.empty()) return line + "; give the topology of the machine it ran on with -t\n";
  const hw::TopologySpec spec = hw::parse_topology_file(topology);
  std::vector<const hw::NodeSpec*> topo_gpus;
  for (const hw::NodeSpec& n : spec.nodes)
    if (n.kind == hw::NodeKind::Gpu) topo_gpus.push_back(&n);
  for (size_t r = 0; r < gpus.size() && r < topo_gpus.size(); ++r) {
    const kineto::TraceGpu& g = gpus[r];
    const hw::GpuParams& t = topo_gpus[r]->gpu;
    const bool sms_differ = g.sms > 0 && t.sms && *t.sms != g.sms;
    const bool memory_differs = g.memory > 0 && t.memory && std::abs(static_cast<double>(*t.memory) / static_cast<double>(g.memory) - 1.0) > 0.10;
    if (!sms_differ && !memory_differs) continue;
    throw InputError(SourceLocation{g.file, 0, 0},
                     fmt::format("the trace ran on {} ({} SMs, {}: its deviceProperties) but rank {}'s GPU in {} is {} ({}{} SMs, {}): give "
                                 "the topology of the machine the trace was recorded on with -t (to ask what another GPU would do, run "
                                 "the imported schedule with -t OTHER --remodel-kernels)",
                                 g.name.empty() ? "its GPU" : g.name, g.sms, format_bytes(static_cast<double>(g.memory)), r, topology,
                                 topo_gpus[r]->name, t.model.empty() ? "" : t.model + ", ", t.sms ? std::to_string(*t.sms) : "?",
                                 t.memory ? format_bytes(static_cast<double>(*t.memory)) : "memory not given"));
  }
  if (topo_gpus.empty()) return line + "\n";
  const hw::NodeSpec& n = *topo_gpus.front();
  return line + fmt::format(", as {}'s {}{}\n", spec.name, n.name, n.gpu.model.empty() ? "" : " (" + n.gpu.model + ")");
}

int import_command(const ImportCliOptions& o) {
  // -o x.yaml: the schedule alone; -o DIR: a run folder (schedule.yaml and the
  // measured records.json, what `overlapsim compare --simulate DIR` reads).
  const fs::path out(o.out);
  const bool folder = out.extension() != ".yaml" && out.extension() != ".yml";
  const fs::path sched_path = folder ? out / "schedule.yaml" : out;
  const fs::path records = folder ? out / "records.json" : fs::path();
  if (o.prefetch >= 0 && folder)
    throw InputError(SourceLocation{o.out, 0, 0},
                     "--prefetch writes a program the trace did not measure, so there are no records of it: give -o FILE.yaml (the "
                     "schedule alone) and run it with `overlapsim run FILE.yaml`");
  if (o.prefetch_cycle != 0 && o.prefetch < 0) throw InputError(SourceLocation{}, "--prefetch-cycle goes with --prefetch N");
  claim_new_output(sched_path, o.force);
  if (folder) claim_new_output(records, o.force);
  if (!o.topology.empty() && !fs::is_regular_file(o.topology)) throw InputError(SourceLocation{o.topology, 0, 0}, "no such topology file");
  kineto::ImportOptions io;
  io.steps = o.steps;
  io.symmetric_ranks = o.symmetric_ranks;
  io.name = o.name;
  io.call_times = o.calls_as_measured;
  // The costs a run without a calibration charges the kinds of call the
  // trace has too few of: the measured defaults of the topology's GPUs, else
  // the model's own.
  const OverheadParams model =
      o.topology.empty() ? OverheadParams{} : base_params("", hw::Topology(hw::parse_topology_file(o.topology))).params.overheads;
  io.model_costs = {model.kernel_launch, model.memcpy_call, model.event_call, model.sync_call, model.collective_call, model.wait_return};
  kineto::ImportedTrace t = kineto::import_traces(o.traces, io);
  const std::string gpu_line = check_gpus(t.gpus, o.topology);
  kineto::ReplanSummary replanned;
  if (o.prefetch >= 0) t.schedule = kineto::replan_prefetch(t.schedule, {o.prefetch, o.prefetch_cycle}, o.traces.front(), &replanned);
  if (!o.topology.empty()) t.schedule.topology = path_to_write(sched_path.string(), o.topology);
  if (!sched_path.parent_path().empty()) fs::create_directories(sched_path.parent_path());
  write_file(sched_path, to_yaml(t.schedule));
  if (folder) {
    nlohmann::ordered_json meta;
    meta["traces"] = o.traces;
    write_file(records, records_text(records_json(t.schedule, t.measured, "", "torch.profiler", meta)));
  }
  std::cout << t.summary.text() << gpu_line;
  std::cout << fmt::format("measured (with the profiler): {:.3f} ms from the first CUDA call to the last op's end\n", t.measured.makespan.s() * 1e3);
  if (o.prefetch >= 0) std::cout << replanned.text();
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
  c->add_flag("--symmetric-ranks", o->symmetric_ranks,
              "one rank's trace of a multi-rank job: replay it as every rank of the job (peers assumed symmetric), its collectives "
              "simulated instead of keeping their measured time");
  c->add_flag("--calls-as-measured", o->calls_as_measured,
              "each call keeps its own measured host time against its kind's cost (the profiled timeline reproduced; default: every "
              "call at its kind's cost, to predict the program run without the profiler)");
  c->add_option("--prefetch", o->prefetch,
                "re-plan the layer-weight prefetch the program holds: copy each block's weights N blocks ahead (0: a blocking copy before "
                "each block); writes the schedule alone (-o FILE.yaml)")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--prefetch-cycle", o->prefetch_cycle,
                "with --prefetch: blocks per cycle of the batches (the model's layers when a step runs them more than once; default: "
                "every block of the program)")
      ->check(CLI::PositiveNumber);
  c->add_flag("--force", o->force, "overwrite existing output files");
  return {c, [o] { return import_command(*o); }};
}

}  // namespace osim::cli
