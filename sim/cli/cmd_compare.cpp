// overlapsim compare: a measured run against a simulated one (or re-simulated
// from its schedule), op by op; overlapsim report: a run's records made into
// metrics, a trace and a summary; overlapsim reference: a reference
// machine's calibration and validation runs checked against its manifest.
#include <algorithm>
#include <functional>
#include <iostream>
#include <memory>
#include <tuple>

#include <fmt/format.h>

#include "calibrations/carry.hpp"
#include "calibrations/measured_defaults.hpp"
#include "cli/common.hpp"
#include "core/stats.hpp"
#include "io/paths.hpp"
#include "reference/reference.hpp"
#include "reference/reference_runs.hpp"
#include "report/compare.hpp"
#include "report/metrics.hpp"
#include "report/trace.hpp"
#include "schedule/whatif.hpp"
#include "workload/program.hpp"

namespace osim::cli {

namespace {

struct CompareOptions {
  std::vector<std::string> inputs;
  std::string topology, calibration, carry_from, timing_events, csv, simulated_out;
  bool simulate = false, programs = false, layers = false, force = false, remodel_kernels = false, pageable_rate_from_trace = false;
  double max_error = -1, max_median_error = -1;
};

// Re-simulates the schedule a measured run executed (DIR/schedule.yaml, or
// the records file's folder) and returns the simulated records.
// With `out_dir`, also writes the simulation's records.json and trace.json
// into out_dir/<run name>/ (to open beside the measured trace).
Records resimulate_into(const std::string& measured, const Records& measured_records, const ResimulateOptions& o, const std::string& out_dir,
                        bool force) {
  Resimulation r = resimulate(measured, measured_records, o);
  if (!out_dir.empty()) {
    // The run's name, unless it could leave out_dir: then the measured folder's.
    const fs::path dir = fs::is_directory(measured) ? fs::path(measured) : fs::path(measured).parent_path();
    const std::string& nm = measured_records.name;
    const bool plain = !nm.empty() && nm != "." && nm != ".." && nm.find_first_of("/\\") == std::string::npos;
    const fs::path folder = dir.filename().empty() ? dir.parent_path() : dir;
    const fs::path sim_dir = fs::path(out_dir) / (plain ? nm : folder.filename().string());
    for (const char* f : {"records.json", "trace.json"}) claim_new_output(sim_dir / f, force);
    fs::create_directories(sim_dir);
    write_file(sim_dir / "records.json", records_text(r.records));
    write_trace_file(sim_dir / "trace.json", r.schedule, *r.topology, r.result);
  }
  return std::move(r.simulated);
}

int programs_command(const CompareOptions& o) {
  if (o.topology.empty()) throw InputError(SourceLocation{o.inputs.front(), 0, 0}, "--programs needs the machine's topology: pass --topology FILE");
  if (!o.csv.empty()) claim_new_output(o.csv, o.force);
  const hw::Topology topo(hw::parse_topology_file(o.topology));
  ModelParams params = base_params(o.calibration, topo).params;
  if (!o.carry_from.empty()) {
    // Measured on another GPU: its rates carried to this topology's through the datasheets.
    const GpuFigures from = gpu_figures(hw::Topology(hw::parse_topology_file(o.carry_from))), to = gpu_figures(topo);
    CarriedCalibration c = carry_calibration(params, from, to);
    std::cout << carry_note(c, from, to);
    params = std::move(c.params);
  }
  const ProgramFigures f = predict_programs(o.inputs, topo, params);
  std::cout << format_program_figures(f) << format_repeated_figures(repeated_figures(f.runs));
  if (!o.csv.empty()) {
    // The host issue time's columns empty where the run did not measure it.
    std::string text = "program,group,measured_ms,simulated_ms,error_pct,host_measured_ms,host_simulated_ms\n";
    for (const auto& r : f.runs)
      text += fmt::format("{},{},{:.4f},{:.4f},{:.3f},{},{}\n", r.name, r.group, r.measured_s * 1e3, r.simulated_s * 1e3, 100 * r.error(),
                          r.measured_host_s ? fmt::format("{:.4f}", *r.measured_host_s * 1e3) : "",
                          r.measured_host_s ? fmt::format("{:.4f}", r.simulated_host_s * 1e3) : "");
    write_file(o.csv, text);
  }
  int rc = 0;
  if (o.max_error >= 0 && f.worst_pct > o.max_error) {
    std::cerr << fmt::format("compare: a program's makespan error {:.1f} % is above --max-error {} %\n", f.worst_pct, o.max_error);
    rc = 1;
  }
  if (o.max_median_error >= 0 && f.median_pct > o.max_median_error) {
    std::cerr << fmt::format("compare: median makespan error {:.1f} % is above --max-median-error {} %\n", f.median_pct, o.max_median_error);
    rc = 1;
  }
  return rc;
}

int compare_command(const CompareOptions& o, const WhatIf& what_if) {
  if (!o.csv.empty()) claim_new_output(o.csv, o.force);
  if (!o.simulated_out.empty() && !o.simulate)
    throw InputError(SourceLocation{o.simulated_out, 0, 0}, "--simulated-out writes the re-simulated runs: add --simulate");
  if (!o.timing_events.empty() && !o.simulate)
    throw InputError(SourceLocation{o.timing_events, 0, 0}, "--timing-events applies to the re-simulated runs: add --simulate");
  std::vector<std::pair<Records, Records>> pairs;
  if (!o.simulate) {
    if (o.inputs.size() != 2)
      throw InputError(SourceLocation{o.inputs.front(), 0, 0},
                       "compare takes MEASURED SIMULATED (records files or --out folders); or --simulate MEASURED... to re-simulate measured runs");
    pairs.emplace_back(read_records(records_path(o.inputs[0])), read_records(records_path(o.inputs[1])));
  } else {
    for (const auto& in : o.inputs) {
      Records m = read_records(records_path(in));
      ResimulateOptions ro{o.topology, o.calibration, o.timing_events, what_if};
      ro.pageable_rate_from_trace = o.pageable_rate_from_trace;
      Records sim = resimulate_into(in, m, ro, o.simulated_out, o.force);
      pairs.emplace_back(std::move(m), std::move(sim));
    }
  }
  std::vector<double> errs;
  std::vector<std::string> over;
  for (const auto& [m, s] : pairs) {
    const RecordComparison c = compare_records(m, s);
    std::string text = format_record_comparison(c, o.layers);
    if (const int before = s.meta.is_object() ? s.meta.value("runs_before", 0) : 0; before > 0)
      text = fmt::format("{}  (simulated as run {} of the schedule back to back, as measured: warm-up and repeats went first without a pause)\n",
                         text, before + 1);
    if (s.meta.is_object() && s.meta.contains("host_calls") && s.meta.at("host_calls").is_string())
      text += "  " + s.meta.at("host_calls").get<std::string>() + "\n";
    if (s.meta.is_object() && s.meta.contains("copy_rates") && s.meta.at("copy_rates").is_string())
      text += "  " + s.meta.at("copy_rates").get<std::string>() + "\n";
    std::cout << text << "\n";
    errs.push_back(std::abs(c.makespan_error()));
    if (o.max_error >= 0 && 100 * errs.back() > o.max_error) over.push_back(fmt::format("{} ({:.1f} %)", c.name, 100 * errs.back()));
  }
  const double med = median(errs);
  if (pairs.size() > 1) {
    std::cout << fmt::format("{} runs: makespan error median {:.1f} %, worst {:.1f} %\n", pairs.size(), 100 * med,
                             100 * *std::max_element(errs.begin(), errs.end()));
    std::cout << fmt::format("  {:<44} {:>12} {:>12} {:>8}\n", "run", "measured", "simulated", "error");
    for (const auto& [m, s] : pairs)
      std::cout << fmt::format("  {:<44} {:>9.2f} ms {:>9.2f} ms {:>+7.1f}%\n", m.name, m.makespan_ns * 1e-6, s.makespan_ns * 1e-6,
                               100 * (s.makespan_ns - m.makespan_ns) / m.makespan_ns);
  }
  if (!o.csv.empty()) {
    std::string text = "run,measured_ms,simulated_ms,error_pct\n";
    for (const auto& [m, s] : pairs)
      text += fmt::format("{},{:.4f},{:.4f},{:.3f}\n", m.name, m.makespan_ns * 1e-6, s.makespan_ns * 1e-6,
                          100 * (s.makespan_ns - m.makespan_ns) / m.makespan_ns);
    write_file(o.csv, text);
  }
  int rc = 0;
  if (!over.empty()) {
    std::string list;
    for (const auto& run : over) list += (list.empty() ? "" : ", ") + run;
    std::cerr << fmt::format("compare: makespan error above --max-error {} %: {}\n", o.max_error, list);
    rc = 1;
  }
  if (o.max_median_error >= 0 && 100 * med > o.max_median_error) {
    std::cerr << fmt::format("compare: median makespan error {:.1f} % is above --max-median-error {} %\n", 100 * med, o.max_median_error);
    rc = 1;
  }
  return rc;
}

// A run's records (overlapsim-validate run's or `run --records`') and the
// schedule beside them made into metrics.json, trace.json and summary.txt,
// as `overlapsim run --out` writes them for a simulated run.
int report_command(const std::string& run_dir, const std::string& topo_path, std::string out_dir, bool force) {
  const fs::path dir = fs::is_directory(run_dir) ? fs::path(run_dir) : fs::path(run_dir).parent_path();
  const Records rec = read_records(records_path(run_dir));
  const fs::path sched_path = plain_or_gz(dir.string(), "schedule.yaml");
  if (!fs::exists(sched_path))
    throw InputError(SourceLocation{sched_path.string(), 0, 0},
                     "no schedule beside the records: overlapsim-validate run and overlapsim run --schedule-out write it there");
  // Read one op at a time (parse_schedule_file): a many-step run's schedule fits in memory.
  Schedule sched;
  try {
    sched = parse_schedule_file(sched_path.string());
  } catch (const InputError& e) {
    // The run wrote it: an error in it is damage, such as a copy cut short.
    throw InputError(e.where(),
                     e.message() + "; it is the schedule the run executed: copy it again, or write it again as the run did (run --schedule-out)");
  }
  std::string tp = topo_path;
  if (tp.empty()) {
    if (sched.topology.empty()) throw InputError(SourceLocation{sched_path.string(), 0, 0}, "no topology: pass --topology FILE");
    tp = resolve_named_path(sched_path.string(), sched.topology);
  }
  const hw::Topology topo(hw::parse_topology_file(tp));
  if (out_dir.empty()) out_dir = dir.string();
  for (const char* f : {"metrics.json", "trace.json", "summary.txt"}) claim_new_output(fs::path(out_dir) / f, force);
  RunRecord run = run_record_of(sched, rec);
  // A runner that knew no GPU names leaves them to the topology: rank i on its i-th GPU.
  const auto gpus = topo.gpus();
  for (size_t r = 0; r < run.ranks.size(); ++r)
    if (run.ranks[r].gpu.empty() && r < gpus.size()) run.ranks[r].gpu = topo.node(gpus[r]).name;
  Metrics m = compute_metrics(sched, topo, run);
  m.source = rec.source;
  auto metrics = metrics_json(m, topo, run);
  if (rec.meta.is_object() && !rec.meta.empty()) metrics["meta"] = rec.meta;
  std::string head = fmt::format("schedule {}: {} ranks on {}", sched.name, sched.ranks(), topo.name());
  if (rec.meta.is_object() && rec.meta.contains("makespans_s")) {
    std::string runs;
    for (const auto& ms : rec.meta.at("makespans_s")) runs += fmt::format("{}{:.4f} s", runs.empty() ? "" : ", ", ms.get<double>());
    head = fmt::format("{} schedule {}: {} ranks on {} (the median of {} runs: {})", rec.source, sched.name, sched.ranks(), topo.name(),
                       rec.meta.at("makespans_s").size(), runs);
  }
  const std::string summary = format_summary(m, topo, run, head);
  fs::create_directories(out_dir);
  write_file(fs::path(out_dir) / "metrics.json", metrics.dump(2) + "\n");
  write_trace_file(fs::path(out_dir) / "trace.json", sched, topo, run);
  write_file(fs::path(out_dir) / "summary.txt", summary);
  std::cout << summary << fmt::format("wrote {}/metrics.json, trace.json (open in ui.perfetto.dev), summary.txt\n", out_dir);
  return 0;
}

// A section's repeats: every session's programs, each one's median run
// against its twin.
void print_repeated(const std::string& section, const reference::RepeatedSet& r) {
  const RepeatedFigures& rf = r.figures;
  std::cout << fmt::format(
      "  {} over {} sessions: {} measured more than once, error against each one's median run: median {:.1f} %, worst "
      "{:.1f} %, {} within their measured range, medians' rank correlation at least {:.2f}{}; configuration pairs every "
      "session ran in the same order: {}, ordered otherwise by the simulation: {}\n",
      section, r.sessions, rf.programs.size(), rf.median_pct, rf.worst_pct, rf.within_range, rf.spearman_min,
      rf.rankings.empty() ? "" : fmt::format(" (half the sessions' medians against the other half's: at least {:.2f})", rf.halves_spearman_min),
      rf.pairs_ordered, rf.pairs_misordered.size());
  for (const auto& g : rf.rankings)
    std::cout << fmt::format(
        "    {}: rank correlation with the simulation {:.2f}; half the sessions against the other half {:.2f}, the "
        "simulation against a half {:.2f}\n",
        g.group, g.simulated, g.halves, g.simulated_halves);
  for (const std::string& p : rf.pairs_misordered) std::cout << "    ordered otherwise (measured faster / slower): " << p << "\n";
  // The hosts' pace: every run that measured its issue time, pooled over the sessions.
  if (r.pooled.host_runs > 0)
    std::cout << fmt::format("  {}' host issue time over {} sessions: {} runs, error median {:.1f} %, worst {:.1f} %\n", section, r.sessions,
                             r.pooled.host_runs, r.pooled.host_median_pct, r.pooled.host_worst_pct);
}

// The misses checked under a key, printed (and taken off the list).
std::function<void(const std::string&)> print_misses(std::vector<reference::Miss>& misses) {
  return [&misses](const std::string& key) {
    for (auto it = misses.begin(); it != misses.end();)
      if (it->key == key) {
        std::cout << "  above what the manifest expects: " << it->what << "\n";
        it = misses.erase(it);
      } else {
        ++it;
      }
  };
}

// Each set of runs' figures, in the report's order, each followed by the
// misses checked under its key.
void print_sets(const reference::Figures& f, const std::function<void(const std::string&)>& missed) {
  for (const auto& [v, key, label] : {std::tuple{&f.validation, "validation", "validation runs"},
                                      std::tuple{&f.validation_timing_events, "validation_timing_events", "with their timing events"}}) {
    if (!*v) continue;
    std::cout << fmt::format("  {}: {} runs, makespan error median {:.1f} %, worst {:.1f} %\n", label, (*v)->runs, (*v)->median_pct, (*v)->worst_pct);
    missed(key);
  }
  for (const auto& [set, section] :
       {std::pair{&f.programs, "programs"}, std::pair{&f.fp8_programs, "fp8_programs"}, std::pair{&f.requests, "requests"}}) {
    if (!*set) continue;
    const ProgramFigures& p = (*set)->first;
    std::cout << fmt::format("  {}: {} runs, makespan error median {:.1f} %, worst {:.1f} %, rank correlation at least {:.2f}\n", section,
                             p.runs.size(), p.median_pct, p.worst_pct, p.spearman_min);
    missed(section);
    if ((*set)->stages) {
      // A request's stages against its twin's: time, and peak allocated where measured.
      const StageFigures& st = *(*set)->stages;
      std::cout << format_stage_figures(st);
      std::cout << fmt::format("  {} stages: {} stages of {} runs, time error median {:.1f} %, worst {:.1f} %", section, st.stages.size(),
                               p.runs.size(), st.median_pct, st.worst_pct);
      std::cout << (st.memory_stages == 0 ? std::string("; peak allocated not compared\n")
                                          : fmt::format("; peak allocated ({} stages) error median {:.1f} %, worst {:.1f} %\n", st.memory_stages,
                                                        st.allocated_median_pct, st.allocated_worst_pct));
      missed("requests_stages");
      missed("requests_memory");
    }
    if ((*set)->repeated) print_repeated(section, *(*set)->repeated);
    missed(std::string(section) + "_repeated");
  }
  if (f.models) {
    // The other presets' blocks as their reference code runs them (validate/programs/model_blocks.py), against the presets.
    const ProgramFigures& p = f.models->first;
    std::cout << format_program_figures(p);
    std::cout << fmt::format("  models: {} runs, makespan error median {:.1f} %, worst {:.1f} %; peak allocated median {:.1f} %, worst {:.1f} %\n",
                             p.runs.size(), p.median_pct, p.worst_pct, p.allocated_median_pct, p.allocated_worst_pct);
    missed("models");
    if (f.models->repeated) print_repeated("models", *f.models->repeated);
    missed("models_repeated");
  }
  if (f.memory) {
    std::cout << fmt::format("  memory: {} runs, peak allocated error median {:.1f} %, worst {:.1f} %; peak in use median {:.1f} %, worst {:.1f} %\n",
                             f.memory->memory_runs, f.memory->allocated_median_pct, f.memory->allocated_worst_pct, f.memory->device_median_pct,
                             f.memory->device_worst_pct);
    missed("memory");
  }
  if (f.traces) {
    std::cout << format_trace_figures(f.traces->traces);
    std::cout << fmt::format("  traces: {} imported, step time error against the program's worst {:.1f} % pinned, {:.1f} % pageable\n",
                             f.traces->traces.size(), f.traces->pinned_worst_pct, f.traces->pageable_worst_pct);
    missed("traces");
  }
  if (f.traces_default) {
    // Recorded with torch.profiler's defaults: steps found by the import, stream waits inferred from the runtime calls.
    const reference::TraceSetFigures& t = *f.traces_default;
    std::cout << format_trace_figures(t.traces);
    for (const TraceFigure& tf : t.traces) {
      std::cout << fmt::format("    {}: steps {}", tf.name, tf.steps_from.empty() ? "as the manifest's steps: matches" : tf.steps_from);
      if (tf.waits_inferred > 0)
        std::cout << fmt::format("; stream waits inferred {}, {} confirmed by the timeline, {} by program order only", tf.waits_inferred,
                                 tf.inferred_timed, tf.waits_inferred - tf.inferred_timed);
      std::cout << "\n";
    }
    std::cout << fmt::format(
        "  traces_default: {} imported (torch.profiler's defaults), step time error against the program's worst {:.1f} % pinned, {:.1f} % "
        "pageable; stream waits inferred {}, {} confirmed by the timeline\n",
        t.traces.size(), t.pinned_worst_pct, t.pageable_worst_pct, t.waits_inferred, t.inferred_timed);
    missed("traces_default");
  }
}

// A reference machine (validate/reference/<machine>/manifest.yaml): its
// manifest run (reference/reference.hpp), each figure printed with what the
// manifest expects of it that it misses.
int reference_command(const std::string& folder, bool write_calibration) {
  const reference::Manifest m = reference::read_manifest(folder);
  std::cout << fmt::format("reference {}: {}\n", m.machine, m.description);
  if (write_calibration) claim_output(m.calibration);
  const reference::Figures f = reference::run(m, {write_calibration});
  std::vector<reference::Miss> misses = reference::check(f, m.expected);
  const auto missed = print_misses(misses);
  const bool failed = f.calibration == reference::CalibrationState::differs || !misses.empty();
  switch (f.calibration) {
    case reference::CalibrationState::written: std::cout << fmt::format("  calibration: wrote {}\n", m.calibration); break;
    case reference::CalibrationState::same:
      std::cout << fmt::format("  calibration: {} is what calibrate fits from the {} bench files today\n", m.calibration, f.bench_files);
      break;
    case reference::CalibrationState::differs:
      std::cout << fmt::format("  calibration: {} differs from what calibrate fits today: re-run with --write-calibration if the change is meant\n",
                               m.calibration);
      break;
  }
  for (const std::string& w : f.family_gaps) std::cout << "  calibration: " << w << "\n";
  std::cout << fmt::format("  replay: {} rows, {} of effects the model holds; of those over 5 % outside the hand-off's phase: {}\n", f.rows, f.held,
                           f.held_over_5pct);
  missed("replay_held_over_5pct");
  print_sets(f, missed);
  for (const reference::Miss& x : misses) std::cout << "  above what the manifest expects: " << x.what << "\n";  // none the sections above printed
  std::cout << fmt::format("reference {}: {}\n", m.machine, failed ? "FAILED" : "ok");
  return failed ? 1 : 0;
}

// Leave one machine out: a reference machine's runs predicted from another
// machine's calibration, checked against the manifest's `predicted_from:`.
int cross_command(const std::string& folder, const std::string& source_folder) {
  const reference::Manifest m = reference::read_manifest(folder);
  const reference::Manifest source = reference::read_manifest(source_folder);
  std::cout << fmt::format("reference {} predicted from {}'s calibration ({}, fitted from {}'s {} bench files only): {}\n", m.machine, source.machine,
                           source.calibration, source.machine, source.sources.size(), m.description);
  const reference::Figures f = reference::predict_from(m, source);
  for (const std::string& w : f.family_gaps) std::cout << "  calibration: " << w << "\n";
  if (!f.carried.empty()) std::cout << "  " << f.carried;
  const reference::CrossExpected* x = reference::cross_expected(m, source_folder);
  std::vector<reference::Miss> misses = x ? reference::check(f, x->expected) : std::vector<reference::Miss>{};
  print_sets(f, print_misses(misses));
  for (const reference::Miss& miss : misses) std::cout << "  above what the manifest expects: " << miss.what << "\n";
  if (!x) {
    std::cout << fmt::format("reference {} from {}: not checked ({} has no predicted_from: entry for {})\n", m.machine, source.machine, m.file,
                             source_folder);
    return 0;
  }
  const bool failed = !reference::check(f, x->expected).empty();
  std::cout << fmt::format("reference {} from {}: {}\n", m.machine, source.machine, failed ? "FAILED" : "ok");
  return failed ? 1 : 0;
}

struct ReferenceOptions {
  std::string folder, calibration_from;
  bool write_calibration = false;
};
struct ReportOptions {
  std::string run, topology, out;
  bool force = false;
};
}  // namespace

Command add_compare(CLI::App& app) {
  auto o = std::make_shared<CompareOptions>();
  auto* c = app.add_subcommand(
      "compare", "Compare a measured run (overlapsim-validate run) with a simulated one: makespan, steps, op classes, layers, overlap windows");
  c->add_option("runs", o->inputs, "MEASURED SIMULATED (records.json files or --out folders); with --simulate: measured runs only")->required();
  c->add_flag("--simulate", o->simulate,
              "re-simulate each measured run's schedule (its folder's schedule.yaml, or schedule.yaml.gz) instead of reading simulated records");
  c->add_flag("--programs", o->programs,
              "the runs are reference programs' results (validate/programs/, *.json): simulate each one's twin workload on --topology and "
              "compare makespans, with the configurations' rank correlation");
  c->add_option("--topology,-t", o->topology, "topology for --simulate (default: the schedule's 'topology:')");
  c->add_option("--calibration", o->calibration, "calibration file for --simulate");
  c->add_option("--carry-from", o->carry_from,
                "with --programs: the topology the calibration was fitted on; where its GPU is another than --topology's, the "
                "calibration's rates are carried to it through the two GPUs' datasheet figures (as `reference --calibration-from` does)");
  c->add_option("--timing-events", o->timing_events,
                "with --simulate: simulate the run's own timing events (overlapsim-validate run records one before and after every op) at "
                "the GPU event times this calibration file measured (event_gpu_time, event_gpu_time_h2d, event_gpu_time_copy)");
  c->add_option("--max-error", o->max_error, "exit 1 when a run's makespan error exceeds this many percent")->check(finite_percent());
  c->add_option("--max-median-error", o->max_median_error, "exit 1 when the median makespan error over the runs exceeds this many percent")
      ->check(finite_percent());
  c->add_flag("--layers", o->layers, "print every layer of rank 0");
  c->add_option("--csv", o->csv, "also write each run's measured and simulated makespan (with --programs, their host issue times too) (CSV)");
  c->add_option("--simulated-out", o->simulated_out,
                "with --simulate: write each run's simulated records.json and trace.json (Perfetto) into DIR/<run name>/");
  c->add_flag("--force", o->force, "overwrite an existing --csv file or --simulated-out files");
  c->add_flag("--remodel-kernels", o->remodel_kernels,
              "with --simulate: time kernels that carry a shape by the model, not by their measured duration (how well an imported trace re-models)");
  c->add_flag("--pageable-rate-from-trace", o->pageable_rate_from_trace,
              "with --simulate: an imported trace's pageable copies at the rates they ran at where it was recorded (settings.copy_rates), "
              "as `run` takes them by default, in place of the calibration's pageable rate (pinned copies keep the calibration's)");
  return {c, [o] {
            if (o->remodel_kernels && !o->simulate)
              throw InputError(SourceLocation{o->inputs.front(), 0, 0}, "--remodel-kernels applies to the re-simulated runs: add --simulate");
            if (o->pageable_rate_from_trace && o->programs)
              throw InputError(SourceLocation{o->inputs.front(), 0, 0},
                               "--pageable-rate-from-trace takes an imported trace's measured rates; --programs simulates the programs' "
                               "twin workloads, which have none");
            if (o->pageable_rate_from_trace && !o->simulate)
              throw InputError(SourceLocation{o->inputs.front(), 0, 0},
                               "--pageable-rate-from-trace applies to the re-simulated runs (an imported trace's): add --simulate");
            WhatIf what_if;
            what_if.remodel_kernels = o->remodel_kernels;
            if (o->programs) {
              if (o->simulate)
                throw InputError(SourceLocation{o->inputs.front(), 0, 0}, "--programs simulates the programs' twins already: drop --simulate");
              return programs_command(*o);
            }
            return compare_command(*o, what_if);
          }};
}

Command add_report(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  auto* c =
      app.add_subcommand("report", "Make metrics.json, trace.json and summary.txt of a run's records (overlapsim-validate run's, or run --records')");
  c->add_option("run", o->run, "the run's folder (records.json and schedule.yaml, each plain or .gz), or its records file")->required();
  c->add_option("--topology,-t", o->topology, "topology YAML (default: the schedule's 'topology:')");
  c->add_option("--out", o->out, "write the three files here (default: the run's folder)");
  c->add_flag("--force", o->force, "overwrite existing files");
  return {c, [o] { return report_command(o->run, o->topology, o->out, o->force); }};
}

Command add_reference(CLI::App& app) {
  auto o = std::make_shared<ReferenceOptions>();
  auto* c = app.add_subcommand("reference",
                               "Check a reference machine (validate/reference/<machine>): its calibration refitted, its rows replayed, its "
                               "validation runs re-simulated, against its manifest");
  c->add_option("folder", o->folder, "the machine's folder (its manifest.yaml)")->required();
  c->add_flag("--write-calibration", o->write_calibration, "write the refitted calibration over the manifest's calibration file");
  c->add_option("--calibration-from", o->calibration_from,
                "leave one machine out: predict this machine's runs and programs with another reference machine's calibration (its folder) "
                "on this machine's topology, checked against the manifest's predicted_from: entry for it");
  return {c, [o] {
            if (o->calibration_from.empty()) return reference_command(o->folder, o->write_calibration);
            if (o->write_calibration)
              throw InputError(SourceLocation{o->folder, 0, 0}, "--write-calibration refits this machine's own calibration: drop --calibration-from");
            return cross_command(o->folder, o->calibration_from);
          }};
}

}  // namespace osim::cli
