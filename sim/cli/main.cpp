// overlapsim command line. Subcommands parse their inputs, run the library
// and print; all errors surface here as one line "file:line:col: error: ..."
// and exit code 2 (input) or 3 (simulation).
#include <algorithm>
#include <set>
#include <cmath>
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>
#include <optional>
#include <chrono>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/stats.hpp"
#include "calib/calibrate.hpp"
#include "gpu/executor.hpp"
#include "gpu/as_run.hpp"
#include "report/compare.hpp"
#include "report/metrics.hpp"
#include "sweep/sweep.hpp"
#include "workload/dit.hpp"
#include "fabric/transfers.hpp"
#include "hw/fabric.hpp"

namespace {

namespace fs = std::filesystem;

void refuse_overwrite(const fs::path& p, bool force) {
  if (!force && fs::exists(p))
    throw osim::InputError(osim::SourceLocation{p.string(), 0, 0}, "exists already: pass --force to overwrite it, or choose another path");
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
  if (!out) throw osim::InputError(osim::SourceLocation{p.string(), 0, 0}, "cannot write this file");
}

std::string headline(const osim::DitWorkload& w, const std::string& topo) {
  std::string off = osim::to_string(w.offload);
  if (w.offload == osim::OffloadPolicy::Layerwise) off += fmt::format(" prefetch {}", w.prefetch_size);
  if (w.offload != osim::OffloadPolicy::None) off += w.host_memory == osim::HostMem::Pinned ? " (pinned)" : " (pageable)";
  const char* cfg = w.cfg == osim::CfgMode::Serial ? "serial" : w.cfg == osim::CfgMode::Parallel ? "parallel" : "none";
  return fmt::format("{}: {} {}x{}x{} ({} tokens), {} steps, CFG {}, Ulysses {} ({}, {} all-to-alls/layer, {}), offload {}, on {}{}",
                     w.name, w.model.preset, w.width, w.height, w.frames, w.tokens, w.steps, cfg, w.ulysses, osim::to_string(w.all_to_all),
                     w.attention_comm, osim::to_string(w.comm_dtype), off, topo, w.runtime.nccl_p2p_disable ? " (NCCL_P2P_DISABLE=1)" : "");
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw osim::InputError(osim::SourceLocation{path, 0, 0}, "cannot open file: check the path");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw osim::InputError(osim::SourceLocation{path, 0, 0}, std::string("not valid JSON: ") + e.what());
  }
}

// Every row of these bench files replayed with `params`, runs of one kind merged (a later
// run's testcases replace an earlier one's of the same key): (merged run's name, kind's
// position, row); with `label`, each merged run's table printed.
std::vector<std::tuple<std::string, size_t, osim::Comparison>> replay_bench(const std::vector<std::pair<std::string, nlohmann::json>>& docs,
                                                                           const osim::hw::Topology& topo, const osim::ModelParams& params,
                                                                           const std::string& label) {
  std::vector<std::tuple<std::string, size_t, osim::Comparison>> all;
  size_t kind = 0;
  for (const auto& [name, d] : osim::merge_bench_runs(docs)) {
    std::vector<osim::Comparison> rows;
    // A field missing or of the wrong type (nlohmann::json), or a value
    // outside the testcase's cases (std::invalid_argument).
    const auto malformed = [&](const char* what) {
      return osim::InputError(osim::SourceLocation{name, 0, 0},
                              fmt::format("a bench testcase is malformed ({}): re-run overlapsim-validate bench, or fix that row", what));
    };
    try {
      rows = osim::compare_bench(d, topo, params);
    } catch (const nlohmann::json::exception& e) {
      throw malformed(e.what());
    } catch (const std::invalid_argument& e) {
      throw malformed(e.what());
    }
    if (!label.empty()) std::cout << label << " vs " << name << ":\n" << osim::format_comparison(rows) << "\n";
    for (auto& c : rows) all.emplace_back(name, kind, std::move(c));
    ++kind;
  }
  return all;
}

// --second-run: the same bench run again (seconds or minutes later) replayed with
// the same parameters. How much of the simulator's error is the measurement's:
// the rows whose two runs differ by more than 5 %, the rows it misses in the
// second run by more than 5 % and how many of those by less than the two runs
// differ, and the rows it misses the same way in both runs while they agree
// within 2 % (the model's own), listed. Only the testcases the second run
// measured again count (`again_keys`: those of its files not also in the
// first run, e.g. not a bench-rest.json both name).
void second_run_report(const std::vector<std::tuple<std::string, size_t, osim::Comparison>>& first,
                       const std::vector<std::tuple<std::string, size_t, osim::Comparison>>& second, const std::string& names,
                       const std::set<std::string>& again_keys) {
  std::map<std::tuple<size_t, std::string, std::string>, const osim::Comparison*> again;
  for (const auto& [name, kind, c] : second) again[{kind, c.key, c.what}] = &c;
  long both = 0, differ = 0, missed = 0, within = 0, phase = 0, phase_both = 0;
  std::vector<std::pair<const osim::Comparison*, const osim::Comparison*>> own;
  for (const auto& [name, kind, c] : first) {
    const auto it = again.find({kind, c.key, c.what});
    if (!c.outside.empty() || it == again.end() || !again_keys.contains(c.key)) continue;
    const osim::Comparison& c2 = *it->second;
    ++both;
    const double runs = 100 * std::abs(c2.measured_us - c.measured_us) / c.measured_us;
    differ += runs > 5;
    if (std::abs(c2.error_pct()) > 5) {
      ++missed;
      within += runs >= std::abs(c2.error_pct());
      phase += c2.within_phase();
    }
    // The same way in both runs while they agree: the model's own, unless the
    // hand-off's phase allows both (it held one step in both runs; the
    // schedule does not set it).
    if (std::abs(c.error_pct()) > 5 && std::abs(c2.error_pct()) > 5 && c.error_pct() * c2.error_pct() > 0 && runs < 2) {
      if (c.within_phase() && c2.within_phase()) ++phase_both;
      else own.emplace_back(&c, &c2);
    }
  }
  const auto pct = [&](long n) { return both ? 100.0 * static_cast<double>(n) / static_cast<double>(both) : 0.0; };
  std::cout << fmt::format("second run ({}): {} rows of effects the model holds measured in both\n", names, both);
  std::cout << fmt::format("  the two runs differ by > 5%: {} ({:.1f}%)\n", differ, pct(differ));
  std::cout << fmt::format("  the simulator misses the second run by > 5%: {} ({:.1f}%), {} of them by less than the two runs differ{}\n", missed,
                           pct(missed), within, phase ? fmt::format(", {} within the hand-off's phase", phase) : "");
  std::cout << fmt::format("  missed by > 5% the same way in both runs, which agree within 2%: {} ({:.1f}%){}\n", own.size(),
                           pct(static_cast<long>(own.size())),
                           phase_both ? fmt::format("; {} more within the hand-off's phase in both", phase_both) : "");
  for (const auto& [a, b] : own) std::cout << fmt::format("    {:+.1f}% / {:+.1f}%  {} {} ({})\n", a->error_pct(), b->error_pct(), a->key, a->what, a->cls);
}

int calibrate_command(const std::vector<std::string>& inputs, const std::string& topo_path, const std::string& out, bool force,
                      const std::string& replay_with, const std::string& csv, const std::vector<std::string>& second_run) {
  if (!replay_with.empty() && !out.empty())
    throw osim::InputError(osim::SourceLocation{out, 0, 0}, "--replay-with fits nothing, so there is no calibration to write: drop -o");
  // Check every output first, so nothing is written when one would be refused.
  if (!out.empty()) refuse_overwrite(out, force);
  if (!csv.empty()) refuse_overwrite(csv, force);
  osim::hw::Topology topo(osim::hw::parse_topology_file(topo_path));
  std::vector<std::pair<std::string, nlohmann::json>> docs;
  for (const auto& in : inputs) docs.emplace_back(in, read_json(in));
  osim::ModelParams params;
  std::string label = "calibrated simulator";
  if (replay_with.empty()) {
    const osim::Calibration cal = osim::calibrate(docs, topo);
    const std::string yaml = osim::calibration_yaml(cal);
    if (!out.empty()) write_file(out, yaml);
    std::cout << yaml << "\n";
    params = cal.params;
  } else {
    // Out of sample: these measurements replayed with a calibration fitted elsewhere.
    params = osim::load_calibration(replay_with);
    label = "simulator with " + replay_with;
  }
  // Read before anything is replayed, so a bad second-run file is refused first.
  std::vector<std::pair<std::string, nlohmann::json>> again;
  for (const auto& in : second_run) again.emplace_back(in, read_json(in));
  const auto replayed = replay_bench(docs, topo, params, label);
  std::vector<std::pair<std::string, osim::Comparison>> all;
  for (const auto& [name, kind, c] : replayed) all.emplace_back(name, c);
  // --csv: every replayed row (source, class, testcase, case, measured,
  // simulated, error, and what the model leaves out where it does).
  if (!csv.empty()) {
    osim::SweepTable t;
    // simulated_lo_us / _hi_us: with the hand-off at either end of its phase (empty: none).
    t.header = {"source", "class", "key", "case", "measured_us", "simulated_us", "error_pct", "not_modelled", "simulated_lo_us", "simulated_hi_us"};
    for (const auto& [name, c] : all)
      t.rows.push_back({name, c.cls, c.key, c.what, fmt::format("{:.4f}", c.measured_us), fmt::format("{:.4f}", c.simulated_us),
                        fmt::format("{:.3f}", c.error_pct()), c.outside, c.has_phase() ? fmt::format("{:.4f}", c.simulated_lo_us) : "",
                        c.has_phase() ? fmt::format("{:.4f}", c.simulated_hi_us) : ""});
    write_file(csv, osim::to_csv(t));
  }
  // The worst case over every replayed row, and each row over 5 %; then the
  // same over the rows of effects the model holds (the rest measure one it
  // leaves out, named on each).
  if (!all.empty()) {
    std::vector<double> errs;
    for (const auto& [name, c] : all) errs.push_back(std::abs(c.error_pct()));
    struct Stats {
      double median;
      size_t worst;
      long over;
    };
    auto stats = [&](const std::vector<size_t>& rows) {
      std::vector<double> e;
      size_t worst = rows[0];
      for (const size_t i : rows) {
        e.push_back(errs[i]);
        if (errs[i] > errs[worst]) worst = i;
      }
      return Stats{osim::median(e), worst, static_cast<long>(std::count_if(e.begin(), e.end(), [](double x) { return x > 5.0; }))};
    };
    std::vector<size_t> every(all.size()), held;
    for (size_t i = 0; i < all.size(); ++i) {
      every[i] = i;
      if (all[i].second.outside.empty()) held.push_back(i);
    }
    const Stats st = stats(every);
    const auto& w = all[st.worst].second;
    std::cout << fmt::format("all {} replayed rows: median |err| {:.1f}%, worst {:.1f}% ({} {}, {})\n", all.size(), st.median, errs[st.worst], w.key,
                             w.what, all[st.worst].first);
    std::cout << fmt::format("rows over 5%: {}\n", st.over);
    long phased = 0, in_phase = 0;  // held rows with a hand-off's phase; of those over 5 %, within it
    for (size_t i = 0; i < all.size(); ++i) {
      const osim::Comparison& c = all[i].second;
      if (c.outside.empty() && c.has_phase()) {
        ++phased;
        in_phase += errs[i] > 5.0 && c.within_phase();
      }
      if (errs[i] > 5.0)
        std::cout << fmt::format("  {:+.1f}%  {} {} ({}; {}){}{}\n", c.error_pct(), c.key, c.what, c.cls, all[i].first,
                                 c.outside.empty() ? "" : " [not modelled: " + c.outside + "]",
                                 c.within_phase() ? fmt::format(" [within the hand-off's phase: {:.2f}-{:.2f} us]", c.simulated_lo_us, c.simulated_hi_us) : "");
    }
    if (!held.empty() && held.size() < all.size()) {
      const Stats h = stats(held);
      const auto& hw = all[h.worst].second;
      std::cout << fmt::format("rows of effects the model holds: {} of {}: median |err| {:.1f}%, worst {:.1f}% ({} {}, {}); over 5%: {}\n", held.size(),
                               all.size(), h.median, errs[h.worst], hw.key, hw.what, all[h.worst].first, h.over);
    }
    // The hand-off's phase (handoff_phase_min / _max): the rows it moves, and
    // those over 5 % whose measurement a time it allows is within 5 % of.
    if (phased > 0) {
      std::vector<size_t> rest;
      for (const size_t i : held.empty() ? every : held)
        if (!(errs[i] > 5.0 && all[i].second.within_phase())) rest.push_back(i);
      const Stats r = stats(rest);
      std::cout << fmt::format("rows with a hand-off, whose phase ({:.2f}-{:.2f} us) moves them: {}; over 5% but within it: {}; the rest over 5%: {}, worst {:.1f}% ({} {}, {})\n",
                               params.handoff.handoff_phase_min.us(), params.handoff.handoff_phase_max.us(), phased, in_phase, r.over, errs[r.worst],
                               all[r.worst].second.key, all[r.worst].second.what, all[r.worst].first);
    }
  }
  if (!again.empty()) {
    std::string names;
    for (const auto& in : second_run) names += (names.empty() ? "" : " + ") + in;
    std::set<std::string> again_keys;
    for (const auto& [path, doc] : again)
      if (std::find(inputs.begin(), inputs.end(), path) == inputs.end())
        for (const auto& r : doc.value("results", nlohmann::json::array())) again_keys.insert(r.value("key", std::string()));
    second_run_report(replayed, replay_bench(again, topo, params, ""), names, again_keys);
  }
  return 0;
}

int run_command(const std::string& input, std::string topo_path, const std::vector<std::string>& sets, const std::string& out_dir,
                const std::string& schedule_out, bool force, bool show_ops, const std::string& calibration, bool records, bool every_flow, int runs_before) {
  osim::Schedule sched;
  osim::ModelParams params;
  std::string head;
  std::optional<osim::DitWorkload> workload;
  if (osim::is_workload_file(input)) {
    workload = osim::parse_workload_file(input, sets);
    sched = osim::generate_schedule(*workload);
    params = workload->params;
  } else {
    sched = osim::parse_schedule_file(input, sets);
    show_ops = true;
  }
  if (topo_path.empty()) {
    if (sched.topology.empty())
      throw osim::InputError(osim::SourceLocation{input, 0, 0}, "no topology: pass --topology FILE or add 'topology: FILE' to the input");
    topo_path = (fs::path(input).parent_path() / sched.topology).string();
  }
  osim::hw::Topology topo(osim::hw::parse_topology_file(topo_path));
  if (!calibration.empty()) params = osim::load_calibration(calibration, params);
  // Check every output first, so nothing is written when one would be refused.
  if (!schedule_out.empty()) refuse_overwrite(schedule_out, force);
  if (!out_dir.empty())
    for (const char* f : {"metrics.json", "trace.json", "summary.txt", "records.json"}) refuse_overwrite(fs::path(out_dir) / f, force);
  if (records && out_dir.empty()) throw osim::InputError(osim::SourceLocation{input, 0, 0}, "--records writes into the --out folder: give --out DIR");
  if (!out_dir.empty()) fs::create_directories(out_dir);
  if (!schedule_out.empty()) {
    if (const fs::path parent = fs::path(schedule_out).parent_path(); !parent.empty()) fs::create_directories(parent);
    write_file(schedule_out, osim::to_yaml(sched));
  }
  osim::ExecOptions opts;
  opts.link_samples = !out_dir.empty();
  opts.keep_records = !out_dir.empty() || show_ops;  // the trace, records.json and the per-op table read them
  opts.closed_form_collectives = !every_flow;
  // --runs-before N: the GPUs come from N runs of the same input back to back
  // (a serving loop's steady state: the sustained-load clock already down).
  const osim::ExecResult res = osim::execute_after_runs(sched, topo, params, runs_before, opts);
  const osim::Metrics m = osim::compute_metrics(sched, topo, res);
  if (show_ops) std::cout << osim::format_exec_report(sched, res) << "\n";
  head = workload ? headline(*workload, topo.name()) : fmt::format("schedule {}: {} ranks on {}", sched.name, sched.ranks(), topo.name());
  const std::string summary = osim::format_summary(m, topo, res, head);
  std::cout << summary;
  if (!out_dir.empty()) {
    write_file(fs::path(out_dir) / "metrics.json", osim::metrics_json(m, topo, res).dump(2) + "\n");
    write_file(fs::path(out_dir) / "trace.json", osim::trace_json(sched, topo, res));
    write_file(fs::path(out_dir) / "summary.txt", summary);
    if (records) write_file(fs::path(out_dir) / "records.json", osim::records_text(osim::records_json(sched, res, topo.name(), "simulated")));
    std::cout << fmt::format("wrote {}/metrics.json, trace.json (open in ui.perfetto.dev), summary.txt{}\n", out_dir, records ? ", records.json" : "");
  }
  return 0;
}

std::string records_path(const std::string& p) {
  return fs::is_directory(p) ? (fs::path(p) / "records.json").string() : p;
}

// Re-simulates the schedule a measured run executed (DIR/schedule.yaml, or
// the records file's folder) and returns the simulated records.
// With `out_dir`, also writes the simulation's records.json and trace.json
// into out_dir/<run name>/ (to open beside the measured trace).
osim::Records resimulate(const std::string& measured, const osim::Records& measured_records, const std::string& topo_path,
                         const std::string& calibration, const std::string& timing_events, const std::string& out_dir, bool force) {
  const fs::path dir = fs::is_directory(measured) ? fs::path(measured) : fs::path(measured).parent_path();
  const fs::path sched_path = dir / "schedule.yaml";
  if (!fs::exists(sched_path))
    throw osim::InputError(osim::SourceLocation{sched_path.string(), 0, 0},
                           "no schedule next to the measured records: overlapsim-validate run writes it there; or give the simulated records as a second argument");
  osim::Schedule sched = osim::parse_schedule_file(sched_path.string());
  std::string tp = topo_path;
  if (tp.empty()) {
    if (sched.topology.empty()) throw osim::InputError(osim::SourceLocation{sched_path.string(), 0, 0}, "no topology: pass --topology FILE");
    tp = (sched_path.parent_path() / sched.topology).string();
  }
  osim::hw::Topology topo(osim::hw::parse_topology_file(tp));
  osim::ModelParams params;
  if (!calibration.empty()) params = osim::load_calibration(calibration, params);
  // --timing-events FILE: the run's own timing events (an event before and
  // after every op), at the GPU event times FILE measured.
  if (!timing_events.empty()) {
    const osim::ModelParams ev = osim::load_calibration(timing_events);
    if (ev.overheads.event_gpu_time <= osim::Time::zero() && ev.overheads.event_gpu_time_h2d <= osim::Time::zero())
      throw osim::InputError(osim::SourceLocation{timing_events, 0, 0},
                             "--timing-events needs event_gpu_time (and event_gpu_time_h2d) in this calibration: use one fitted from a bench with "
                             "overhead_gpu_event_gap rows, e.g. validate/results/h200x1-e/calibration.yaml");
    params.overheads.event_gpu_time = ev.overheads.event_gpu_time;
    params.overheads.event_gpu_time_h2d = ev.overheads.event_gpu_time_h2d;
    params.overheads.event_gpu_time_copy = ev.overheads.event_gpu_time_copy;
  }
  // overlapsim-validate runs attention (and FLOP-count kernels) as cuBLAS
  // GEMMs (osim::realised_gemm): simulate what it ran, each such kernel at the
  // efficiency of the GEMM it became (the calibration's entry for that shape,
  // when the bench timed it with --gemm-shapes-from; else the median).
  if (measured_records.meta.contains("attention_slowdown"))
    sched = osim::as_realised(sched, params, measured_records.meta.at("attention_slowdown").get<double>());
  // It ran right after warm-up and earlier repeats (no pause): start it in
  // the sustained-load state those left.
  const int before = osim::runs_before_recorded(measured_records);
  std::vector<std::vector<int>> at;
  const osim::Schedule timed = timing_events.empty() ? osim::Schedule{} : osim::with_timing_events(sched, at);
  const osim::ExecResult res = timing_events.empty() ? osim::execute_after_runs(sched, topo, params, before)
                                                     : osim::without_timing_events(sched, osim::execute_after_runs(timed, topo, params, before), at);
  nlohmann::ordered_json meta;
  meta["runs_before"] = before;
  const nlohmann::ordered_json rec = osim::records_json(sched, res, topo.name(), "simulated", meta);
  if (!out_dir.empty()) {
    // The run's name, unless it could leave out_dir: then the measured folder's.
    const std::string& nm = measured_records.name;
    const bool plain = !nm.empty() && nm != "." && nm != ".." && nm.find_first_of("/\\") == std::string::npos;
    const fs::path folder = dir.filename().empty() ? dir.parent_path() : dir;
    const fs::path sim_dir = fs::path(out_dir) / (plain ? nm : folder.filename().string());
    for (const char* f : {"records.json", "trace.json"}) refuse_overwrite(sim_dir / f, force);
    fs::create_directories(sim_dir);
    write_file(sim_dir / "records.json", osim::records_text(rec));
    write_file(sim_dir / "trace.json", osim::trace_json(sched, topo, res));
  }
  return osim::parse_records(nlohmann::json::parse(rec.dump()), "simulation of " + sched_path.string());
}

int compare_command(const std::vector<std::string>& inputs, bool simulate, const std::string& topo_path, const std::string& calibration,
                    const std::string& timing_events, double max_error, double max_median_error, bool per_layer, const std::string& csv,
                    const std::string& sim_out, bool force) {
  if (!csv.empty()) refuse_overwrite(csv, force);
  if (!sim_out.empty() && !simulate)
    throw osim::InputError(osim::SourceLocation{sim_out, 0, 0}, "--simulated-out writes the re-simulated runs: add --simulate");
  if (!timing_events.empty() && !simulate)
    throw osim::InputError(osim::SourceLocation{timing_events, 0, 0}, "--timing-events applies to the re-simulated runs: add --simulate");
  std::vector<std::pair<osim::Records, osim::Records>> pairs;
  if (!simulate) {
    if (inputs.size() != 2)
      throw osim::InputError(osim::SourceLocation{inputs.front(), 0, 0},
                             "compare takes MEASURED SIMULATED (records files or --out folders); or --simulate MEASURED... to re-simulate measured runs");
    pairs.emplace_back(osim::read_records(records_path(inputs[0])), osim::read_records(records_path(inputs[1])));
  } else {
    for (const auto& in : inputs) {
      osim::Records m = osim::read_records(records_path(in));
      osim::Records sim = resimulate(in, m, topo_path, calibration, timing_events, sim_out, force);
      pairs.emplace_back(std::move(m), std::move(sim));
    }
  }
  std::vector<double> errs;
  std::vector<std::string> over;
  for (const auto& [m, s] : pairs) {
    const osim::RecordComparison c = osim::compare_records(m, s);
    std::string text = osim::format_record_comparison(c, per_layer);
    if (const int before = s.meta.is_object() ? s.meta.value("runs_before", 0) : 0; before > 0)
      text = fmt::format("{}  (simulated as run {} of the schedule back to back, as measured: warm-up and repeats went first without a pause)\n",
                         text, before + 1);
    std::cout << text << "\n";
    errs.push_back(std::abs(c.makespan_error()));
    if (max_error >= 0 && 100 * errs.back() > max_error) over.push_back(fmt::format("{} ({:.1f} %)", c.name, 100 * errs.back()));
  }
  const double med = osim::median(errs);
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
  const osim::Records rec = osim::read_records(records_path(run_dir));
  const fs::path sched_path = dir / "schedule.yaml";
  if (!fs::exists(sched_path))
    throw osim::InputError(osim::SourceLocation{sched_path.string(), 0, 0},
                           "no schedule beside the records: overlapsim-validate run and overlapsim run --schedule-out write it there");
  const osim::Schedule sched = osim::parse_schedule_file(sched_path.string());
  std::string tp = topo_path;
  if (tp.empty()) {
    if (sched.topology.empty()) throw osim::InputError(osim::SourceLocation{sched_path.string(), 0, 0}, "no topology: pass --topology FILE");
    tp = (sched_path.parent_path() / sched.topology).string();
  }
  const osim::hw::Topology topo(osim::hw::parse_topology_file(tp));
  if (out_dir.empty()) out_dir = dir.string();
  for (const char* f : {"metrics.json", "trace.json", "summary.txt"}) refuse_overwrite(fs::path(out_dir) / f, force);
  const osim::RunRecord run = osim::run_record_of(sched, rec);
  osim::Metrics m = osim::compute_metrics(sched, topo, run);
  m.source = rec.source;
  auto metrics = osim::metrics_json(m, topo, run);
  if (rec.meta.is_object() && !rec.meta.empty()) metrics["meta"] = rec.meta;
  std::string head = fmt::format("schedule {}: {} ranks on {}", sched.name, sched.ranks(), topo.name());
  if (rec.meta.is_object() && rec.meta.contains("makespans_s")) {
    std::string runs;
    for (const auto& ms : rec.meta.at("makespans_s")) runs += fmt::format("{}{:.4f} s", runs.empty() ? "" : ", ", ms.get<double>());
    head = fmt::format("{} schedule {}: {} ranks on {} (the median of {} runs: {})", rec.source, sched.name, sched.ranks(), topo.name(),
                       rec.meta.at("makespans_s").size(), runs);
  }
  const std::string summary = osim::format_summary(m, topo, run, head);
  fs::create_directories(out_dir);
  write_file(fs::path(out_dir) / "metrics.json", metrics.dump(2) + "\n");
  write_file(fs::path(out_dir) / "trace.json", osim::trace_json(sched, topo, run));
  write_file(fs::path(out_dir) / "summary.txt", summary);
  std::cout << summary << fmt::format("wrote {}/metrics.json, trace.json (open in ui.perfetto.dev), summary.txt\n", out_dir);
  return 0;
}

// "i/N" (1-based) -> (i-1, N).
std::pair<int, int> parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  int i = 0, n = 0;
  try {
    if (slash == std::string::npos) throw std::invalid_argument(text);
    size_t u1 = 0, u2 = 0;
    i = std::stoi(text.substr(0, slash), &u1);
    n = std::stoi(text.substr(slash + 1), &u2);
    if (u1 != slash || u2 != text.size() - slash - 1) throw std::invalid_argument(text);
  } catch (const std::exception&) {
    n = 0;
  }
  if (n < 1 || i < 1 || i > n)
    throw osim::InputError(osim::SourceLocation{"--shard " + text, 0, 0}, "expected i/N with 1 <= i <= N, e.g. --shard 3/8 (Slurm: --shard $SLURM_ARRAY_TASK_ID/8 with --array=1-8)");
  return {i - 1, n};
}

// A progress bar with ETA on stderr, redrawn at most 10 times a second.
class ProgressBar {
 public:
  explicit ProgressBar(bool on) : on_(on), start_(std::chrono::steady_clock::now()) {}
  void update(size_t done, size_t total) {
    if (!on_) return;
    const auto now = std::chrono::steady_clock::now();
    if (done < total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double el = std::chrono::duration<double>(now - start_).count();
    const double eta = done > 0 ? el / static_cast<double>(done) * static_cast<double>(total - done) : 0;
    const int width = 30, fill = total ? static_cast<int>(width * done / total) : width;
    std::cerr << fmt::format("\r[{}{}] {}/{} {:3d}%  {:.0f} s elapsed, ETA {:.0f} s ", std::string(fill, '#'), std::string(width - fill, '.'), done,
                             total, total ? static_cast<int>(100 * done / total) : 100, el, eta)
              << std::flush;
    if (done == total) std::cerr << "\n";
  }

 private:
  bool on_;
  std::chrono::steady_clock::time_point start_, last_;
};

int sweep_command(const std::string& path, std::string out, bool force, int threads, const std::string& shard, bool progress, bool no_progress,
                  double tolerance) {
  const osim::SweepSpec spec = osim::parse_sweep_file(path);
#if defined(__GLIBC__)
  // Each point allocates and frees ~100 MB: keep freed memory in the heap
  // for the next point instead of returning it to the OS and faulting it in
  // again (about a quarter of a point's time otherwise).
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
  osim::SweepOptions o;
  o.threads = threads;
  if (!shard.empty()) std::tie(o.shard, o.shards) = parse_shard(shard);
  if (out.empty()) out = o.shards > 1 ? fmt::format("{}.shard{}of{}.csv", spec.name, o.shard + 1, o.shards) : spec.name + ".csv";
  refuse_overwrite(out, force);
  ProgressBar bar(!no_progress && (progress || isatty(STDERR_FILENO)));
  o.progress = [&bar](size_t done, size_t total) { bar.update(done, total); };
  const auto t0 = std::chrono::steady_clock::now();
  const osim::SweepTable t = osim::run_sweep(spec, o);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (const fs::path parent = fs::path(out).parent_path(); !parent.empty()) fs::create_directories(parent);
  write_file(out, osim::to_csv(t));
  std::cout << fmt::format("sweep {}: {} points{} on {} in {:.2f} s; wrote {}\n", spec.name, t.rows.size(),
                           o.shards > 1 ? fmt::format(" (shard {}/{} of {})", o.shard + 1, o.shards, spec.size()) : "", spec.base, secs, out);
  if (o.shards > 1) std::cout << "(the summary covers this shard's points; overlapsim merge joins the shards)\n";
  std::cout << osim::sweep_summary(t, tolerance / 100);
  return 0;
}

int merge_command(const std::vector<std::string>& inputs, const std::string& out, bool force, const std::string& sweep, double tolerance) {
  std::vector<std::pair<std::string, osim::SweepTable>> shards;
  for (const auto& in : inputs) shards.emplace_back(in, osim::read_csv_file(in));
  std::optional<size_t> expected;
  if (!sweep.empty()) expected = osim::parse_sweep_file(sweep).size();
  const osim::SweepTable t = osim::merge_sweep_tables(shards, expected);
  refuse_overwrite(out, force);
  write_file(out, osim::to_csv(t));
  std::cout << fmt::format("merged {} shard files: {} points; wrote {}\n", inputs.size(), t.rows.size(), out);
  std::cout << osim::sweep_summary(t, tolerance / 100);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"overlapsim: a discrete-event simulator of offload and communication scheduling on GPU nodes"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "overlapsim 0.1.0");

  std::string topo_path;
  bool p2p_disable = false;
  auto* topo_cmd = app.add_subcommand("topo", "Show a topology: nodes, GPU path types, and every GPU's routes with bottleneck bandwidth and latency");
  topo_cmd->add_option("topology", topo_path, "topology YAML")->required();
  topo_cmd->add_flag("--p2p-disable", p2p_disable, "route GPU<->GPU traffic as with NCCL_P2P_DISABLE=1");

  std::string scenario_path;
  auto* flows_cmd = app.add_subcommand("flows", "Simulate a list of transfers on a topology's fabric");
  flows_cmd->add_option("scenario", scenario_path, "scenario YAML (transfers: src, dst, bytes, start)")->required();
  flows_cmd->add_option("--topology,-t", topo_path, "topology YAML")->required();
  flows_cmd->add_flag("--p2p-disable", p2p_disable, "route GPU<->GPU traffic as with NCCL_P2P_DISABLE=1");

  std::string schedule_path, run_topo, out_dir, schedule_out, calibration;
  std::vector<std::string> sets;
  bool force = false, show_ops = false, records = false, every_flow = false;
  auto* run_cmd = app.add_subcommand("run", "Simulate a workload (DiT inference) or a schedule; print a summary, write metrics and a trace");
  run_cmd->add_option("input", schedule_path, "workload YAML (has 'model:') or schedule YAML (has 'programs:')")->required();
  run_cmd->add_option("--topology,-t", run_topo, "topology YAML (default: the input's 'topology:', relative to the input)");
  run_cmd->add_option("--set", sets, "override a workload key, e.g. --set offload.prefetch_size=3 (repeatable)");
  run_cmd->add_option("--out", out_dir, "write metrics.json, trace.json (Perfetto) and summary.txt into this folder");
  run_cmd->add_option("--schedule-out", schedule_out, "write the generated schedule (YAML) to this file");
  run_cmd->add_flag("--force", force, "overwrite existing output files");
  run_cmd->add_flag("--ops", show_ops, "print every op's issue, start and end (default for schedule files)");
  run_cmd->add_option("--calibration", calibration, "a calibration file (overlapsim calibrate) for the model's parameters");
  run_cmd->add_flag("--records", records, "also write records.json (every op's times, for overlapsim compare) into --out");
  int runs_before = 0;
  run_cmd->add_option("--runs-before", runs_before,
                      "simulate it as the run after N runs of the same input back to back (the GPUs' sustained-load clock state they leave; default 0: rested GPUs)")
      ->check(CLI::Range(0, 1000));
  run_cmd->add_flag("--every-flow", every_flow,
                    "simulate every flow of every all-to-all (no closed-form replay of recurring ones): slower, same results");

  std::vector<std::string> cmp_inputs;
  std::string cmp_topo, cmp_cal, cmp_timing;
  bool cmp_simulate = false, cmp_layers = false;
  double cmp_max = -1, cmp_max_median = -1;
  auto* cmp_cmd = app.add_subcommand("compare", "Compare a measured run (overlapsim-validate run) with a simulated one: makespan, steps, op classes, layers, overlap windows");
  cmp_cmd->add_option("runs", cmp_inputs, "MEASURED SIMULATED (records.json files or --out folders); with --simulate: measured runs only")->required();
  cmp_cmd->add_flag("--simulate", cmp_simulate, "re-simulate each measured run's schedule (its folder's schedule.yaml) instead of reading simulated records");
  cmp_cmd->add_option("--topology,-t", cmp_topo, "topology for --simulate (default: the schedule's 'topology:')");
  cmp_cmd->add_option("--calibration", cmp_cal, "calibration file for --simulate");
  cmp_cmd->add_option("--timing-events", cmp_timing,
                      "with --simulate: simulate the run's own timing events (overlapsim-validate run records one before and after every op) at "
                      "the GPU event times this calibration file measured (event_gpu_time, event_gpu_time_h2d, event_gpu_time_copy)");
  cmp_cmd->add_option("--max-error", cmp_max, "exit 1 when a run's makespan error exceeds this many percent");
  cmp_cmd->add_option("--max-median-error", cmp_max_median, "exit 1 when the median makespan error over the runs exceeds this many percent");
  cmp_cmd->add_flag("--layers", cmp_layers, "print every layer of rank 0");
  std::string cmp_csv, cmp_sim_out;
  bool cmp_force = false;
  cmp_cmd->add_option("--csv", cmp_csv, "also write each run's measured and simulated makespan (CSV)");
  cmp_cmd->add_option("--simulated-out", cmp_sim_out, "with --simulate: write each run's simulated records.json and trace.json (Perfetto) into DIR/<run name>/");
  cmp_cmd->add_flag("--force", cmp_force, "overwrite an existing --csv file or --simulated-out files");

  std::vector<std::string> bench_inputs;
  std::string cal_topo, cal_out;
  bool cal_force = false;
  std::string rep_dir, rep_topo, rep_out;
  bool rep_force = false;
  auto* rep_cmd = app.add_subcommand("report", "Make metrics.json, trace.json and summary.txt of a run's records (overlapsim-validate run's, or run --records')");
  rep_cmd->add_option("run", rep_dir, "the run's folder (records.json and schedule.yaml), or its records.json")->required();
  rep_cmd->add_option("--topology,-t", rep_topo, "topology YAML (default: the schedule's 'topology:')");
  rep_cmd->add_option("--out", rep_out, "write the three files here (default: the run's folder)");
  rep_cmd->add_flag("--force", rep_force, "overwrite existing files");

  auto* cal_cmd = app.add_subcommand("calibrate", "Fit the model's parameters to overlapsim-validate bench results; compare the calibrated simulator with them");
  cal_cmd->add_option("bench", bench_inputs, "bench JSON files (a NCCL-defaults run first; a NCCL_P2P_DISABLE=1 run may follow)")->required();
  cal_cmd->add_option("--topology,-t", cal_topo, "the measured machine's topology YAML")->required();
  cal_cmd->add_option("-o,--out", cal_out, "write the calibration file here");
  cal_cmd->add_flag("--force", cal_force, "overwrite an existing calibration file or --csv file");
  std::string cal_csv;
  cal_cmd->add_option("--csv", cal_csv, "also write every replayed row: source, class, key, case, measured and simulated us, error %, what is not modelled");
  std::string cal_replay_with;
  cal_cmd->add_option("--replay-with", cal_replay_with,
                      "fit nothing: replay the bench rows with this calibration file (out of sample, e.g. another box's) and report the errors");
  std::vector<std::string> cal_second;
  cal_cmd->add_option("--second-run", cal_second,
                      "the same bench run again (e.g. bench-*-2.json): replayed with the same calibration, reports how much of the error is the "
                      "measurement's (rows whose two runs differ, misses within that, misses the same way in both runs)");

  std::string sweep_path, sweep_out, sweep_shard;
  bool sweep_force = false, sweep_progress = false, sweep_no_progress = false;
  int sweep_threads = 0;
  double tolerance = 1.0;
  auto* sweep_cmd = app.add_subcommand("sweep", "Simulate every point of a sweep (grid / list over workload, topology, schedule keys); write a CSV; print the best points and a recommendation");
  sweep_cmd->add_option("sweep", sweep_path, "sweep YAML (README \"Sweeps\")")->required();
  sweep_cmd->add_option("-o,--out", sweep_out, "CSV to write (default: NAME.csv, or NAME.shardIofN.csv)");
  sweep_cmd->add_flag("--force", sweep_force, "overwrite an existing CSV");
  sweep_cmd->add_option("-j,--threads", sweep_threads, "worker threads (default: every core)")->check(CLI::NonNegativeNumber);
  sweep_cmd->add_option("--shard", sweep_shard, "run shard i of N (1-based, every N-th point), e.g. 3/8; join with overlapsim merge");
  sweep_cmd->add_flag("--progress", sweep_progress, "draw the progress bar even when stderr is not a terminal");
  sweep_cmd->add_flag("--no-progress", sweep_no_progress, "no progress bar");
  sweep_cmd->add_option("--tolerance", tolerance, "recommend the least-VRAM point within this many percent of the best (default 1)");

  std::vector<std::string> merge_inputs;
  std::string merge_out, merge_sweep;
  bool merge_force = false;
  auto* merge_cmd = app.add_subcommand("merge", "Join the CSVs of a sharded sweep into the CSV an unsharded run writes; print the summary");
  merge_cmd->add_option("shards", merge_inputs, "the shards' CSV files (overlapsim sweep --shard i/N)")->required();
  merge_cmd->add_option("-o,--out", merge_out, "merged CSV to write")->required();
  merge_cmd->add_option("--sweep", merge_sweep, "the sweep file: also checks that no shard is missing at the end");
  merge_cmd->add_flag("--force", merge_force, "overwrite an existing CSV");
  merge_cmd->add_option("--tolerance", tolerance, "as for sweep");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*run_cmd) return run_command(schedule_path, run_topo, sets, out_dir, schedule_out, force, show_ops, calibration, records, every_flow, runs_before);
    if (*cmp_cmd) return compare_command(cmp_inputs, cmp_simulate, cmp_topo, cmp_cal, cmp_timing, cmp_max, cmp_max_median, cmp_layers, cmp_csv, cmp_sim_out, cmp_force);
    if (*sweep_cmd) return sweep_command(sweep_path, sweep_out, sweep_force, sweep_threads, sweep_shard, sweep_progress, sweep_no_progress, tolerance);
    if (*merge_cmd) return merge_command(merge_inputs, merge_out, merge_force, merge_sweep, tolerance);
    if (*cal_cmd) return calibrate_command(bench_inputs, cal_topo, cal_out, cal_force, cal_replay_with, cal_csv, cal_second);
    if (*rep_cmd) return report_command(rep_dir, rep_topo, rep_out, rep_force);
    osim::hw::Topology topo(osim::hw::parse_topology_file(topo_path));
    if (*topo_cmd) {
      osim::hw::RouteOptions opt;
      opt.p2p_disabled = p2p_disable;
      std::cout << osim::format_topology_report(topo, opt);
    } else if (*flows_cmd) {
      osim::Scenario sc = osim::parse_scenario_file(scenario_path, topo);
      if (p2p_disable) sc.route_options.p2p_disabled = true;
      const osim::FabricRun run = osim::run_transfers(topo, sc);
      std::cout << osim::format_fabric_report(topo, sc, run);
    }
  } catch (const osim::InputError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const osim::SimulationError& e) {
    std::cerr << "simulation error: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
