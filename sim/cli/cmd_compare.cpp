// overlapsim compare: a measured run against a simulated one (or re-simulated
// from its schedule), op by op; overlapsim report: a run's records made into
// metrics, a trace and a summary; overlapsim reference: a reference
// machine's calibration and validation runs checked against its manifest.
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "calib/calibrate.hpp"
#include "cli/common.hpp"
#include "io/text_file.hpp"
#include "io/yaml_reader.hpp"
#include "core/stats.hpp"
#include "gpu/as_run.hpp"
#include "calibrations/measured_defaults.hpp"
#include "gpu/params_io.hpp"
#include "report/compare.hpp"
#include "report/metrics.hpp"
#include "schedule/whatif.hpp"
#include "workload/program.hpp"

namespace osim::cli {

namespace {

// Re-simulates the schedule a measured run executed (DIR/schedule.yaml, or
// the records file's folder) and returns the simulated records.
// With `out_dir`, also writes the simulation's records.json and trace.json
// into out_dir/<run name>/ (to open beside the measured trace).
Records resimulate(const std::string& measured, const Records& measured_records, const std::string& topo_path,
                         const std::string& calibration, const std::string& timing_events, const std::string& out_dir, bool force,
                         const WhatIf& what_if = {}) {
  const fs::path dir = fs::is_directory(measured) ? fs::path(measured) : fs::path(measured).parent_path();
  const fs::path sched_path = dir / "schedule.yaml";
  if (!fs::exists(sched_path))
    throw InputError(SourceLocation{sched_path.string(), 0, 0},
                           "no schedule next to the measured records: overlapsim-validate run writes it there; or give the simulated records as a second argument");
  Schedule sched = apply_what_if(parse_schedule_file(sched_path.string()), what_if);
  std::string tp = topo_path;
  if (tp.empty()) {
    if (sched.topology.empty()) throw InputError(SourceLocation{sched_path.string(), 0, 0}, "no topology: pass --topology FILE");
    tp = (sched_path.parent_path() / sched.topology).string();
  }
  hw::Topology topo(hw::parse_topology_file(tp));
  ModelParams params = base_params(calibration, topo).params;  // without one: the measured defaults of its GPUs
  // --timing-events FILE: the run's own timing events (an event before and
  // after every op), at the GPU event times FILE measured.
  if (!timing_events.empty()) {
    const ModelParams ev = load_calibration(timing_events);
    if (ev.overheads.event_gpu_time <= Time::zero() && ev.overheads.event_gpu_time_h2d <= Time::zero())
      throw InputError(SourceLocation{timing_events, 0, 0},
                             "--timing-events needs event_gpu_time (and event_gpu_time_h2d) in this calibration: use one fitted from a bench with "
                             "overhead_gpu_event_gap rows, e.g. configs/calibrations/h200.yaml");
    params.overheads.event_gpu_time = ev.overheads.event_gpu_time;
    params.overheads.event_gpu_time_h2d = ev.overheads.event_gpu_time_h2d;
    params.overheads.event_gpu_time_copy = ev.overheads.event_gpu_time_copy;
  }
  // overlapsim-validate runs FLOP-count kernels, and attention it has no
  // kernel for, as cuBLAS GEMMs (realised_gemm): simulate what it ran, each
  // such kernel at the efficiency of the GEMM it became (the calibration's
  // entry for that shape, when the bench timed it with --gemm-shapes-from;
  // else the median). Attention it ran as cuDNN's SDPA is simulated as cuDNN's.
  if (measured_records.meta.contains("attention_slowdown")) {
    const auto sdpa = measured_records.meta.find("attention_sdpa");
    const bool ran_sdpa = sdpa != measured_records.meta.end() && sdpa->is_boolean() && sdpa->get<bool>();
    sched = as_realised(sched, params, measured_records.meta.at("attention_slowdown").get<double>(), ran_sdpa);
  }
  // It ran right after warm-up and earlier repeats (no pause): start it in
  // the sustained-load state those left.
  const int before = runs_before_recorded(measured_records);
  std::vector<std::vector<int>> at;
  const Schedule timed = timing_events.empty() ? Schedule{} : with_timing_events(sched, at);
  const ExecResult res = timing_events.empty() ? execute_after_runs(sched, topo, params, before)
                                                     : without_timing_events(sched, execute_after_runs(timed, topo, params, before), at);
  nlohmann::ordered_json meta;
  meta["runs_before"] = before;
  const nlohmann::ordered_json rec = records_json(sched, res, topo.name(), "simulated", meta);
  if (!out_dir.empty()) {
    // The run's name, unless it could leave out_dir: then the measured folder's.
    const std::string& nm = measured_records.name;
    const bool plain = !nm.empty() && nm != "." && nm != ".." && nm.find_first_of("/\\") == std::string::npos;
    const fs::path folder = dir.filename().empty() ? dir.parent_path() : dir;
    const fs::path sim_dir = fs::path(out_dir) / (plain ? nm : folder.filename().string());
    for (const char* f : {"records.json", "trace.json"}) refuse_overwrite(sim_dir / f, force);
    fs::create_directories(sim_dir);
    write_file(sim_dir / "records.json", records_text(rec));
    write_file(sim_dir / "trace.json", trace_json(sched, topo, res));
  }
  return parse_records(nlohmann::json::parse(rec.dump()), "simulation of " + sched_path.string());
}

// Reference programs' results (validate/programs/): each one's twin simulated
// on the machine with its calibration, against its measured median.
ProgramFigures predict_programs(const std::vector<std::string>& files, const hw::Topology& topo, const ModelParams& params) {
  std::vector<ProgramPrediction> runs;
  for (const auto& f : files) runs.push_back(predict_program(read_program_run(f), topo, params));
  return program_figures(std::move(runs));
}

int programs_command(const std::vector<std::string>& inputs, const std::string& topo_path, const std::string& calibration, double max_error,
                     double max_median_error, const std::string& csv, bool force) {
  if (topo_path.empty())
    throw InputError(SourceLocation{inputs.front(), 0, 0}, "--programs needs the machine's topology: pass --topology FILE");
  if (!csv.empty()) refuse_overwrite(csv, force);
  const hw::Topology topo(hw::parse_topology_file(topo_path));
  const ProgramFigures f = predict_programs(inputs, topo, base_params(calibration, topo).params);
  std::cout << format_program_figures(f) << format_repeated_figures(repeated_figures(f.runs));
  if (!csv.empty()) {
    // The host issue time's columns empty where the run did not measure it.
    std::string text = "program,group,measured_ms,simulated_ms,error_pct,host_measured_ms,host_simulated_ms\n";
    for (const auto& r : f.runs)
      text += fmt::format("{},{},{:.4f},{:.4f},{:.3f},{},{}\n", r.name, r.group, r.measured_s * 1e3, r.simulated_s * 1e3, 100 * r.error(),
                          r.measured_host_s ? fmt::format("{:.4f}", *r.measured_host_s * 1e3) : "",
                          r.measured_host_s ? fmt::format("{:.4f}", r.simulated_host_s * 1e3) : "");
    write_file(csv, text);
  }
  int rc = 0;
  if (max_error >= 0 && f.worst_pct > max_error) {
    std::cerr << fmt::format("compare: a program's makespan error {:.1f} % is above --max-error {} %\n", f.worst_pct, max_error);
    rc = 1;
  }
  if (max_median_error >= 0 && f.median_pct > max_median_error) {
    std::cerr << fmt::format("compare: median makespan error {:.1f} % is above --max-median-error {} %\n", f.median_pct, max_median_error);
    rc = 1;
  }
  return rc;
}

int compare_command(const std::vector<std::string>& inputs, bool simulate, const std::string& topo_path, const std::string& calibration,
                    const std::string& timing_events, double max_error, double max_median_error, bool per_layer, const std::string& csv,
                    const std::string& sim_out, bool force, const WhatIf& what_if) {
  if (!csv.empty()) refuse_overwrite(csv, force);
  if (!sim_out.empty() && !simulate)
    throw InputError(SourceLocation{sim_out, 0, 0}, "--simulated-out writes the re-simulated runs: add --simulate");
  if (!timing_events.empty() && !simulate)
    throw InputError(SourceLocation{timing_events, 0, 0}, "--timing-events applies to the re-simulated runs: add --simulate");
  std::vector<std::pair<Records, Records>> pairs;
  if (!simulate) {
    if (inputs.size() != 2)
      throw InputError(SourceLocation{inputs.front(), 0, 0},
                             "compare takes MEASURED SIMULATED (records files or --out folders); or --simulate MEASURED... to re-simulate measured runs");
    pairs.emplace_back(read_records(records_path(inputs[0])), read_records(records_path(inputs[1])));
  } else {
    for (const auto& in : inputs) {
      Records m = read_records(records_path(in));
      Records sim = resimulate(in, m, topo_path, calibration, timing_events, sim_out, force, what_if);
      pairs.emplace_back(std::move(m), std::move(sim));
    }
  }
  std::vector<double> errs;
  std::vector<std::string> over;
  for (const auto& [m, s] : pairs) {
    const RecordComparison c = compare_records(m, s);
    std::string text = format_record_comparison(c, per_layer);
    if (const int before = s.meta.is_object() ? s.meta.value("runs_before", 0) : 0; before > 0)
      text = fmt::format("{}  (simulated as run {} of the schedule back to back, as measured: warm-up and repeats went first without a pause)\n",
                         text, before + 1);
    std::cout << text << "\n";
    errs.push_back(std::abs(c.makespan_error()));
    if (max_error >= 0 && 100 * errs.back() > max_error) over.push_back(fmt::format("{} ({:.1f} %)", c.name, 100 * errs.back()));
  }
  const double med = median(errs);
  if (pairs.size() > 1) {
    std::cout << fmt::format("{} runs: makespan error median {:.1f} %, worst {:.1f} %\n", pairs.size(), 100 * med, 100 * *std::max_element(errs.begin(), errs.end()));
    std::cout << fmt::format("  {:<44} {:>12} {:>12} {:>8}\n", "run", "measured", "simulated", "error");
    for (const auto& [m, s] : pairs)
      std::cout << fmt::format("  {:<44} {:>9.2f} ms {:>9.2f} ms {:>+7.1f}%\n", m.name, m.makespan_ns * 1e-6, s.makespan_ns * 1e-6,
                               100 * (s.makespan_ns - m.makespan_ns) / m.makespan_ns);
  }
  if (!csv.empty()) {
    std::string text = "run,measured_ms,simulated_ms,error_pct\n";
    for (const auto& [m, s] : pairs)
      text += fmt::format("{},{:.4f},{:.4f},{:.3f}\n", m.name, m.makespan_ns * 1e-6, s.makespan_ns * 1e-6, 100 * (s.makespan_ns - m.makespan_ns) / m.makespan_ns);
    write_file(csv, text);
  }
  int rc = 0;
  if (!over.empty()) {
    std::string list;
    for (const auto& o : over) list += (list.empty() ? "" : ", ") + o;
    std::cerr << fmt::format("compare: makespan error above --max-error {} %: {}\n", max_error, list);
    rc = 1;
  }
  if (max_median_error >= 0 && 100 * med > max_median_error) {
    std::cerr << fmt::format("compare: median makespan error {:.1f} % is above --max-median-error {} %\n", 100 * med, max_median_error);
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
  const fs::path sched_path = dir / "schedule.yaml";
  if (!fs::exists(sched_path))
    throw InputError(SourceLocation{sched_path.string(), 0, 0},
                           "no schedule beside the records: overlapsim-validate run and overlapsim run --schedule-out write it there");
  const Schedule sched = parse_schedule_file(sched_path.string());
  std::string tp = topo_path;
  if (tp.empty()) {
    if (sched.topology.empty()) throw InputError(SourceLocation{sched_path.string(), 0, 0}, "no topology: pass --topology FILE");
    tp = (sched_path.parent_path() / sched.topology).string();
  }
  const hw::Topology topo(hw::parse_topology_file(tp));
  if (out_dir.empty()) out_dir = dir.string();
  for (const char* f : {"metrics.json", "trace.json", "summary.txt"}) refuse_overwrite(fs::path(out_dir) / f, force);
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
  write_file(fs::path(out_dir) / "trace.json", trace_json(sched, topo, run));
  write_file(fs::path(out_dir) / "summary.txt", summary);
  std::cout << summary << fmt::format("wrote {}/metrics.json, trace.json (open in ui.perfetto.dev), summary.txt\n", out_dir);
  return 0;
}

// The makespan errors (fractions) of the measured runs in `runs_dir` re-simulated with `cal`.
std::vector<double> validation_errors(const fs::path& runs_dir, const std::string& cal, const std::string& timing_events) {
  std::vector<std::string> runs;
  for (const auto& e : fs::directory_iterator(runs_dir))
    if (fs::exists(plain_or_gz(e.path().string(), "records.json"))) runs.push_back(e.path().string());
  std::sort(runs.begin(), runs.end());
  std::vector<double> errs;
  for (const auto& run : runs) {
    const Records m = read_records(records_path(run));
    const Records sim = resimulate(run, m, "", cal, timing_events, "", false);
    errs.push_back(std::abs(compare_records(m, sim).makespan_error()));
  }
  return errs;
}

// A reference machine (validate/reference/<machine>/manifest.yaml): its
// calibration refitted from the manifest's bench files against the committed
// file (or written with --write-calibration), every row replayed, and its
// validation runs re-simulated; each figure against what the manifest expects.
int reference_command(const std::string& folder, bool write_calibration) {
  const fs::path dir(folder);
  const std::string file = (dir / "manifest.yaml").string();
  const YAML::Node root = load_yaml_file(file);
  MapReader top(file, root, "reference manifest",
                {"schema", "machine", "description", "measured", "topology", "calibration", "validation", "programs", "fp8_programs", "models", "memory", "traces", "expected"});
  if (top.str("schema") != "overlapsim.reference/v1") top.fail("schema", "expected overlapsim.reference/v1");
  const auto path = [&](const std::string& p) { return (dir / p).lexically_normal().string(); };
  // A folder of results the section names beside the manifest; refused at the section's line if it is not there.
  const auto results_folder = [&](const MapReader& m, const char* key, const std::string& name) {
    const std::string d = path(name);
    if (!fs::is_directory(d)) m.fail(key, "no folder " + d + ": name a folder of results beside the manifest");
    return d;
  };
  const hw::Topology topo(hw::parse_topology_file(path(top.str("topology"))));
  MapReader cal(file, top.get("calibration"), "calibration", {"file", "sources", "second_run"});
  const std::string cal_file = path(cal.str("file"));
  BenchDocs docs;
  for (const YAML::Node& s : cal.get("sources")) docs.emplace_back(path(scalar_str(file, s, "a source")), BenchDocs::value_type::second_type{});
  for (auto& [name, doc] : docs) doc = read_json(name);
  check_bench_gpus(docs, topo);
  const Calibration c = calibrate(docs, topo);
  const std::string yaml = calibration_yaml(c);
  std::cout << fmt::format("reference {}: {}\n", top.str("machine"), top.opt_str("description").value_or(""));
  int rc = 0;
  const auto fits_on = [](const std::string& t) { const size_t i = t.find("# Fits"); return i == std::string::npos ? t : t.substr(i); };
  std::string committed;
  if (fs::exists(cal_file)) committed = slurp(cal_file);
  if (write_calibration) {
    write_file(cal_file, yaml);
    std::cout << fmt::format("  calibration: wrote {}\n", cal_file);
  } else if (fits_on(committed) == fits_on(yaml)) {
    std::cout << fmt::format("  calibration: {} is what calibrate fits from the {} bench files today\n", cal_file, docs.size());
  } else {
    std::cout << fmt::format("  calibration: {} differs from what calibrate fits today: re-run with --write-calibration if the change is meant\n", cal_file);
    rc = 1;
  }
  // Every row replayed: the held rows (effects the model holds) over 5 %,
  // apart from those a time the hand-off's phase allows is within 5 % of.
  long rows = 0, held = 0, over = 0;
  for (const auto& [name, d] : merge_bench_runs(docs))
    for (const Comparison& r : compare_bench(d, topo, c.params)) {
      ++rows;
      if (!r.outside.empty()) continue;
      ++held;
      over += std::abs(r.error_pct()) > 5 && !r.within_phase();
    }
  std::optional<MapReader> expected;
  if (top.has("expected"))
    expected.emplace(file, top.get("expected"), "expected", std::vector<std::string>{"replay_held_over_5pct", "validation", "validation_timing_events", "programs", "programs_repeated", "fp8_programs", "fp8_programs_repeated", "models",
                                                      "models_repeated", "memory", "traces"});
  // A figure at most its expected value (to the printed precision).
  const auto within = [](double value, const MapReader& e, const char* key) { return value <= e.num(key) + 0.05; };
  const auto check = [&](bool ok, const std::string& what) {
    if (!ok) {
      std::cout << "  above what the manifest expects: " << what << "\n";
      rc = 1;
    }
  };
  std::cout << fmt::format("  replay: {} rows, {} of effects the model holds; of those over 5 % outside the hand-off's phase: {}\n", rows, held, over);
  if (expected && expected->has("replay_held_over_5pct")) check(over <= expected->integer("replay_held_over_5pct"), "held rows over 5 %");
  if (top.has("validation")) {
    MapReader v(file, top.get("validation"), "validation", {"runs", "timing_events"});
    const auto figures = [&](const std::string& te, const char* key, const char* label) {
      const std::vector<double> errs = validation_errors(results_folder(v, "runs", v.str("runs")), cal_file, te);
      const double med = 100 * median(errs), worst = errs.empty() ? 0 : 100 * *std::max_element(errs.begin(), errs.end());
      std::cout << fmt::format("  {}: {} runs, makespan error median {:.1f} %, worst {:.1f} %\n", label, errs.size(), med, worst);
      if (expected && expected->has(key)) {
        const MapReader e(file, expected->get(key), key, {"median_pct", "worst_pct"});
        check(within(med, e, "median_pct") && within(worst, e, "worst_pct"), label);
      }
    };
    figures("", "validation", "validation runs");
    if (v.has("timing_events")) figures(path(v.str("timing_events")), "validation_timing_events", "with their timing events");
  }
  // The calibration as committed (or just written), read once for the sections below.
  const ModelParams params = load_calibration(cal_file);
  // A section naming a folder of program results (`runs:`), each one's twin predicted.
  const auto predicted = [&](const char* key, bool repeatable) {
    MapReader m(file, top.get(key), key, repeatable ? std::vector<std::string>{"runs", "repeats"} : std::vector<std::string>{"runs"});
    return std::make_pair(m, predict_programs(program_files(results_folder(m, "runs", m.str("runs"))), topo, params));
  };
  // `repeats:` of a section: the same programs run again (other boxes or sessions), each one's median run against its twin;
  // checked against `expected: <section>_repeated`.
  const auto repeats = [&](const MapReader& m, const std::string& section, const ProgramFigures& first) {
    if (!m.has("repeats")) return;
    std::vector<ProgramPrediction> all = first.runs;
    int sessions = 1;
    if (!m.get("repeats").IsSequence()) m.fail("repeats", "expected a list of folders of program results, e.g. [" + section + "-run-2]");
    for (const YAML::Node& r : m.get("repeats")) {
      const std::string repeat_dir = results_folder(m, "repeats", scalar_str(file, r, "a repeat's folder"));
      for (auto& run : predict_programs(program_files(repeat_dir), topo, params).runs) all.push_back(std::move(run));
      ++sessions;
    }
    const RepeatedFigures rf = repeated_figures(all);
    std::cout << fmt::format("  {} over {} sessions: {} measured more than once, error against each one's median run: median {:.1f} %, worst "
                             "{:.1f} %, {} within their measured range, medians' rank correlation at least {:.2f}{}; configuration pairs every "
                             "session ran in the same order: {}, ordered otherwise by the simulation: {}\n",
                             section, sessions, rf.programs.size(), rf.median_pct, rf.worst_pct, rf.within_range, rf.spearman_min,
                             rf.rankings.empty() ? "" : fmt::format(" (half the sessions' medians against the other half's: at least {:.2f})",
                                                                    rf.halves_spearman_min),
                             rf.pairs_ordered, rf.pairs_misordered.size());
    for (const auto& r : rf.rankings)
      std::cout << fmt::format("    {}: rank correlation with the simulation {:.2f}; half the sessions against the other half {:.2f}, the "
                               "simulation against a half {:.2f}\n", r.group, r.simulated, r.halves, r.simulated_halves);
    for (const std::string& p : rf.pairs_misordered) std::cout << "    ordered otherwise (measured faster / slower): " << p << "\n";
    // The hosts' pace: every run that measured its issue time, pooled over the sessions.
    const ProgramFigures pooled = program_figures(all);
    if (pooled.host_runs > 0)
      std::cout << fmt::format("  {}' host issue time over {} sessions: {} runs, error median {:.1f} %, worst {:.1f} %\n", section, sessions,
                               pooled.host_runs, pooled.host_median_pct, pooled.host_worst_pct);
    const std::string key = section + "_repeated";
    if (expected && expected->has(key)) {
      const MapReader e(file, expected->get(key), key,
                        {"median_pct", "worst_pct", "spearman_min", "halves_spearman_min", "pairs_misordered_max", "host_median_pct"});
      check(within(rf.median_pct, e, "median_pct") && within(rf.worst_pct, e, "worst_pct") && rf.spearman_min >= e.num("spearman_min") - 0.005,
            section + " over their sessions");
      if (const auto most = e.opt_int32("pairs_misordered_max"))
        check(static_cast<int>(rf.pairs_misordered.size()) <= *most, section + "' configuration pairs ordered otherwise by the simulation");
      if (e.has("host_median_pct")) check(within(pooled.host_median_pct, e, "host_median_pct"), section + "' host issue time over their sessions");
      if (e.has("halves_spearman_min"))
        check(std::abs(rf.halves_spearman_min - e.num("halves_spearman_min")) <= 0.005, section + "' sessions ranked against each other");
    }
  };
  // Reference programs (framework programs run on the machine, none of them a calibration input): `programs:`, and
  // `fp8_programs:` with fp8 weights; `repeats:` the same programs run again (other boxes or sessions), each one's median
  // run against its twin.
  for (const char* section : {"programs", "fp8_programs"}) {
    if (!top.has(section)) continue;
    const auto [pr, f] = predicted(section, true);
    std::cout << fmt::format("  {}: {} runs, makespan error median {:.1f} %, worst {:.1f} %, rank correlation at least {:.2f}\n", section,
                             f.runs.size(), f.median_pct, f.worst_pct, f.spearman_min);
    if (expected && expected->has(section)) {
      const MapReader e(file, expected->get(section), section, {"median_pct", "worst_pct", "spearman_min"});
      check(within(f.median_pct, e, "median_pct") && within(f.worst_pct, e, "worst_pct") && f.spearman_min >= e.num("spearman_min") - 0.005, section);
    }
    repeats(pr, section, f);
  }
  if (top.has("models")) {
    // The other presets' blocks as their reference code runs them (validate/programs/model_blocks.py), against the presets.
    const auto [mr, f] = predicted("models", true);
    std::cout << format_program_figures(f);
    std::cout << fmt::format("  models: {} runs, makespan error median {:.1f} %, worst {:.1f} %; peak allocated median {:.1f} %, worst {:.1f} %\n", f.runs.size(),
                             f.median_pct, f.worst_pct, f.allocated_median_pct, f.allocated_worst_pct);
    if (expected && expected->has("models")) {
      const MapReader e(file, expected->get("models"), "models", {"median_pct", "worst_pct", "allocated_worst_pct"});
      check(within(f.median_pct, e, "median_pct") && within(f.worst_pct, e, "worst_pct") && within(f.allocated_worst_pct, e, "allocated_worst_pct"), "models");
    }
    repeats(mr, "models", f);
  }
  if (top.has("memory")) {
    // Reference programs run for their peak memory (the allocator's statistics), against their twins' peak VRAM.
    const auto [mr, f] = predicted("memory", false);
    if (f.memory_runs == 0) mr.fail("runs", "none of these program results measured its memory (validate/programs/dit_offload.py writes memory:)");
    std::cout << fmt::format("  memory: {} runs, peak allocated error median {:.1f} %, worst {:.1f} %; peak in use median {:.1f} %, worst {:.1f} %\n",
                             f.memory_runs, f.allocated_median_pct, f.allocated_worst_pct, f.device_median_pct, f.device_worst_pct);
    if (expected && expected->has("memory")) {
      const MapReader e(file, expected->get("memory"), "memory", {"allocated_worst_pct", "device_worst_pct"});
      check(within(f.allocated_worst_pct, e, "allocated_worst_pct") && within(f.device_worst_pct, e, "device_worst_pct"), "memory");
    }
  }
  if (top.has("traces")) {
    // Reference programs' torch.profiler traces imported and simulated: step time against the program's own (no profiler).
    MapReader tr(file, top.get("traces"), "traces", {"runs", "steps"});
    const std::vector<TraceFigure> figs = trace_figures(path(tr.str("runs")), topo, params, tr.opt_str("steps").value_or(""));
    std::cout << format_trace_figures(figs);
    std::vector<double> pinned, pageable;
    for (const TraceFigure& f : figs) (f.pageable ? pageable : pinned).push_back(std::abs(f.error()));
    const auto worst = [](const std::vector<double>& v) { return v.empty() ? 0.0 : 100 * *std::max_element(v.begin(), v.end()); };
    std::cout << fmt::format("  traces: {} imported, step time error against the program's worst {:.1f} % pinned, {:.1f} % pageable\n", figs.size(),
                             worst(pinned), worst(pageable));
    if (expected && expected->has("traces")) {
      const MapReader e(file, expected->get("traces"), "traces", {"pinned_worst_pct", "pageable_worst_pct"});
      check(within(worst(pinned), e, "pinned_worst_pct") && within(worst(pageable), e, "pageable_worst_pct"), "traces");
    }
  }
  std::cout << fmt::format("reference {}: {}\n", top.str("machine"), rc == 0 ? "ok" : "FAILED");
  return rc;
}

struct CompareOptions {
  std::vector<std::string> inputs;
  std::string topology, calibration, timing_events, csv, simulated_out;
  bool simulate = false, programs = false, layers = false, force = false, remodel_kernels = false;
  double max_error = -1, max_median_error = -1;
};
struct ReferenceOptions {
  std::string folder;
  bool write_calibration = false;
};
struct ReportOptions {
  std::string run, topology, out;
  bool force = false;
};
}  // namespace

Command add_compare(CLI::App& app) {
  auto o = std::make_shared<CompareOptions>();
  auto* c = app.add_subcommand("compare", "Compare a measured run (overlapsim-validate run) with a simulated one: makespan, steps, op classes, layers, overlap windows");
  c->add_option("runs", o->inputs, "MEASURED SIMULATED (records.json files or --out folders); with --simulate: measured runs only")->required();
  c->add_flag("--simulate", o->simulate, "re-simulate each measured run's schedule (its folder's schedule.yaml) instead of reading simulated records");
  c->add_flag("--programs", o->programs,
              "the runs are reference programs' results (validate/programs/, *.json): simulate each one's twin workload on --topology and "
              "compare makespans, with the configurations' rank correlation");
  c->add_option("--topology,-t", o->topology, "topology for --simulate (default: the schedule's 'topology:')");
  c->add_option("--calibration", o->calibration, "calibration file for --simulate");
  c->add_option("--timing-events", o->timing_events,
                "with --simulate: simulate the run's own timing events (overlapsim-validate run records one before and after every op) at "
                "the GPU event times this calibration file measured (event_gpu_time, event_gpu_time_h2d, event_gpu_time_copy)");
  c->add_option("--max-error", o->max_error, "exit 1 when a run's makespan error exceeds this many percent")->check(finite_percent());
  c->add_option("--max-median-error", o->max_median_error, "exit 1 when the median makespan error over the runs exceeds this many percent")
      ->check(finite_percent());
  c->add_flag("--layers", o->layers, "print every layer of rank 0");
  c->add_option("--csv", o->csv, "also write each run's measured and simulated makespan (with --programs, their host issue times too) (CSV)");
  c->add_option("--simulated-out", o->simulated_out, "with --simulate: write each run's simulated records.json and trace.json (Perfetto) into DIR/<run name>/");
  c->add_flag("--force", o->force, "overwrite an existing --csv file or --simulated-out files");
  c->add_flag("--remodel-kernels", o->remodel_kernels,
              "with --simulate: time kernels that carry a shape by the model, not by their measured duration (how well an imported trace re-models)");
  return {c, [o] {
            if (o->remodel_kernels && !o->simulate)
              throw InputError(SourceLocation{o->inputs.front(), 0, 0}, "--remodel-kernels applies to the re-simulated runs: add --simulate");
            WhatIf what_if;
            what_if.remodel_kernels = o->remodel_kernels;
            if (o->programs) {
              if (o->simulate) throw InputError(SourceLocation{o->inputs.front(), 0, 0}, "--programs simulates the programs' twins already: drop --simulate");
              return programs_command(o->inputs, o->topology, o->calibration, o->max_error, o->max_median_error, o->csv, o->force);
            }
            return compare_command(o->inputs, o->simulate, o->topology, o->calibration, o->timing_events, o->max_error, o->max_median_error, o->layers,
                                   o->csv, o->simulated_out, o->force, what_if);
          }};
}

Command add_report(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  auto* c = app.add_subcommand("report", "Make metrics.json, trace.json and summary.txt of a run's records (overlapsim-validate run's, or run --records')");
  c->add_option("run", o->run, "the run's folder (records.json, or records.json.gz, and schedule.yaml), or its records file")->required();
  c->add_option("--topology,-t", o->topology, "topology YAML (default: the schedule's 'topology:')");
  c->add_option("--out", o->out, "write the three files here (default: the run's folder)");
  c->add_flag("--force", o->force, "overwrite existing files");
  return {c, [o] { return report_command(o->run, o->topology, o->out, o->force); }};
}

Command add_reference(CLI::App& app) {
  auto o = std::make_shared<ReferenceOptions>();
  auto* c = app.add_subcommand("reference", "Check a reference machine (validate/reference/<machine>): its calibration refitted, its rows replayed, its validation runs re-simulated, against its manifest");
  c->add_option("folder", o->folder, "the machine's folder (its manifest.yaml)")->required();
  c->add_flag("--write-calibration", o->write_calibration, "write the refitted calibration over the manifest's calibration file");
  return {c, [o] { return reference_command(o->folder, o->write_calibration); }};
}

}  // namespace osim::cli
