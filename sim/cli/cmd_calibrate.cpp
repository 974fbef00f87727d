// overlapsim calibrate: the model's parameters fitted to bench results, the
// calibration file, and every measurement replayed on the calibrated
// simulator (or, --replay-with, on a calibration made elsewhere).
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "calib/calibrate.hpp"
#include "calib/family_fill.hpp"
#include "cli/common.hpp"
#include "core/stats.hpp"
#include "gpu/params_io.hpp"
#include "sweep/sweep.hpp"

namespace osim::cli {

namespace {

// Every row of these bench files replayed with `params`, runs of one kind merged (a later
// run's testcases replace an earlier one's of the same key): (merged run's name, kind's
// position, row); with `label`, each merged run's table printed.
std::vector<std::tuple<std::string, size_t, Comparison>> replay_bench(const std::vector<std::pair<std::string, nlohmann::json>>& docs,
                                                                      const hw::Topology& topo, const ModelParams& params, const std::string& label) {
  std::vector<std::tuple<std::string, size_t, Comparison>> all;
  size_t kind = 0;
  for (const auto& [name, d] : merge_bench_runs(docs)) {
    std::vector<Comparison> rows;
    // A field missing or of the wrong type (nlohmann::json), or a value
    // outside the testcase's cases (std::invalid_argument).
    const auto malformed = [&name = name](const char* what) {
      return InputError(SourceLocation{name, 0, 0},
                        fmt::format("a bench testcase is malformed ({}): re-run overlapsim-validate bench, or fix that row", what));
    };
    try {
      rows = compare_bench(d, topo, params);
    } catch (const nlohmann::json::exception& e) {
      throw malformed(e.what());
    } catch (const std::invalid_argument& e) {
      throw malformed(e.what());
    }
    if (!label.empty()) std::cout << label << " vs " << name << ":\n" << format_comparison(rows) << "\n";
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
void second_run_report(const std::vector<std::tuple<std::string, size_t, Comparison>>& first,
                       const std::vector<std::tuple<std::string, size_t, Comparison>>& second, const std::string& names,
                       const std::set<std::string>& again_keys) {
  std::map<std::tuple<size_t, std::string, std::string>, const Comparison*> again;
  for (const auto& [name, kind, c] : second) again[{kind, c.key, c.what}] = &c;
  long both = 0, differ = 0, missed = 0, within = 0, phase = 0, phase_both = 0;
  std::vector<std::pair<const Comparison*, const Comparison*>> own;
  for (const auto& [name, kind, c] : first) {
    const auto it = again.find({kind, c.key, c.what});
    if (!c.outside.empty() || it == again.end() || !again_keys.contains(c.key)) continue;
    const Comparison& c2 = *it->second;
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
      if (c.within_phase() && c2.within_phase())
        ++phase_both;
      else
        own.emplace_back(&c, &c2);
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
  for (const auto& [a, b] : own)
    std::cout << fmt::format("    {:+.1f}% / {:+.1f}%  {} {} ({})\n", a->error_pct(), b->error_pct(), a->key, a->what, a->cls);
}

int calibrate_command(const std::vector<std::string>& inputs, const std::string& topo_path, const std::string& out, bool force,
                      const std::string& replay_with, const std::string& csv, const std::vector<std::string>& second_run, bool allow_gpu_mismatch,
                      bool fill_family) {
  if (!replay_with.empty() && !out.empty())
    throw InputError(SourceLocation{out, 0, 0}, "--replay-with fits nothing, so there is no calibration to write: drop -o");
  if (!replay_with.empty() && fill_family)
    throw InputError(SourceLocation{replay_with, 0, 0}, "--replay-with fits nothing, so there is nothing to fill: drop --fill-from-family");
  // Check every output first, so nothing is written when one would be refused.
  for (const std::string& p : {out, csv})
    if (!p.empty()) claim_new_output(p, force);
  hw::Topology topo(hw::parse_topology_file(topo_path));
  std::vector<std::pair<std::string, nlohmann::json>> docs;
  for (const auto& in : inputs) docs.emplace_back(in, read_bench_json(in));
  if (allow_gpu_mismatch) {
    try {
      check_bench_gpus(docs, topo);
    } catch (const InputError& e) {
      std::cerr << "warning (--allow-gpu-mismatch): " << e.message() << "\n";
    }
  } else {
    check_bench_gpus(docs, topo);
  }
  ModelParams params;
  std::string label = "calibrated simulator";
  if (replay_with.empty()) {
    Calibration cal = calibrate(docs, topo);
    // Fields left at their defaults that a shipped machine of the GPU family measured: warned of, or taken.
    const auto gaps = family_gaps(cal.params, topo, out);
    for (const FamilyGap& g : gaps) std::cerr << (fill_family ? family_gap_taken(g) : family_gap_warning(g)) << "\n";
    if (fill_family) fill_from_family(cal, docs, topo, gaps);
    const std::string yaml = calibration_yaml(cal);
    if (!out.empty()) write_file(out, yaml);
    std::cout << yaml << "\n";
    params = cal.params;
  } else {
    // Out of sample: these measurements replayed with a calibration fitted elsewhere.
    params = load_calibration(replay_with);
    label = "simulator with " + replay_with;
  }
  // Read before anything is replayed, so a bad second-run file is refused first.
  std::vector<std::pair<std::string, nlohmann::json>> again;
  for (const auto& in : second_run) again.emplace_back(in, read_bench_json(in));
  const auto replayed = replay_bench(docs, topo, params, label);
  std::vector<std::pair<std::string, Comparison>> all;
  for (const auto& [name, kind, c] : replayed) all.emplace_back(name, c);
  // --csv: every replayed row (source, class, testcase, case, measured,
  // simulated, error, and what the model leaves out where it does).
  if (!csv.empty()) {
    SweepTable t;
    // simulated_lo_us / _hi_us: with the hand-off at either end of its phase (empty: none).
    t.header = {"source", "class", "key", "case", "measured_us", "simulated_us", "error_pct", "not_modelled", "simulated_lo_us", "simulated_hi_us"};
    for (const auto& [name, c] : all)
      t.rows.push_back({name, c.cls, c.key, c.what, fmt::format("{:.4f}", c.measured_us), fmt::format("{:.4f}", c.simulated_us),
                        fmt::format("{:.3f}", c.error_pct()), c.outside, c.has_phase() ? fmt::format("{:.4f}", c.simulated_lo_us) : "",
                        c.has_phase() ? fmt::format("{:.4f}", c.simulated_hi_us) : ""});
    write_file(csv, to_csv(t));
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
      return Stats{median(e), worst, static_cast<long>(std::count_if(e.begin(), e.end(), [](double x) { return x > 5.0; }))};
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
      const Comparison& c = all[i].second;
      if (c.outside.empty() && c.has_phase()) {
        ++phased;
        in_phase += errs[i] > 5.0 && c.within_phase();
      }
      if (errs[i] > 5.0)
        std::cout << fmt::format(
            "  {:+.1f}%  {} {} ({}; {}){}{}\n", c.error_pct(), c.key, c.what, c.cls, all[i].first,
            c.outside.empty() ? "" : " [not modelled: " + c.outside + "]",
            c.within_phase() ? fmt::format(" [within the hand-off's phase: {:.2f}-{:.2f} us]", c.simulated_lo_us, c.simulated_hi_us) : "");
    }
    if (!held.empty() && held.size() < all.size()) {
      const Stats h = stats(held);
      const auto& hw = all[h.worst].second;
      std::cout << fmt::format("rows of effects the model holds: {} of {}: median |err| {:.1f}%, worst {:.1f}% ({} {}, {}); over 5%: {}\n",
                               held.size(), all.size(), h.median, errs[h.worst], hw.key, hw.what, all[h.worst].first, h.over);
    }
    // The hand-off's phase (handoff_phase_min / _max): the rows it moves, and
    // those over 5 % whose measurement a time it allows is within 5 % of.
    if (phased > 0) {
      std::vector<size_t> rest;
      for (const size_t i : held.empty() ? every : held)
        if (!(errs[i] > 5.0 && all[i].second.within_phase())) rest.push_back(i);
      const Stats r = stats(rest);
      std::cout << fmt::format(
          "rows with a hand-off, whose phase ({:.2f}-{:.2f} us) moves them: {}; over 5% but within it: {}; the rest over 5%: {}, worst {:.1f}% ({} "
          "{}, {})\n",
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

struct CalibrateOptions {
  std::vector<std::string> inputs, second_run;
  std::string topology, out, csv, replay_with;
  bool force = false, allow_gpu_mismatch = false, fill_from_family = false;
};

}  // namespace

Command add_calibrate(CLI::App& app) {
  auto o = std::make_shared<CalibrateOptions>();
  auto* c =
      app.add_subcommand("calibrate", "Fit the model's parameters to overlapsim-validate bench results; compare the calibrated simulator with them");
  c->add_option("bench", o->inputs, "bench JSON files (a NCCL-defaults run first; a NCCL_P2P_DISABLE=1 run may follow)")->required();
  c->add_option("--topology,-t", o->topology, "the measured machine's topology YAML")->required();
  c->add_option("-o,--out", o->out, "write the calibration file here");
  c->add_flag("--force", o->force, "overwrite an existing calibration file or --csv file");
  c->add_option("--csv", o->csv, "also write every replayed row: source, class, key, case, measured and simulated us, error %, what is not modelled");
  c->add_option("--replay-with", o->replay_with,
                "fit nothing: replay the bench rows with this calibration file (out of sample, e.g. another box's) and report the errors");
  c->add_option("--second-run", o->second_run,
                "the same bench run again (e.g. bench-*-2.json): replayed with the same calibration, reports how much of the error is the "
                "measurement's (rows whose two runs differ, misses within that, misses the same way in both runs)");
  c->add_flag("--allow-gpu-mismatch", o->allow_gpu_mismatch,
              "fit a bench measured on another GPU family than the topology's (a warning instead of an error)");
  c->add_flag("--fill-from-family", o->fill_from_family,
              "take the per-GPU fields these benches left at their defaults (clock under load, kernel rates, overheads) from the nearest shipped "
              "calibration of the same GPU family that measured them, said in the file's provenance (taken_from_family); without it, "
              "calibrate only warns of them");
  return {c, [o] {
            return calibrate_command(o->inputs, o->topology, o->out, o->force, o->replay_with, o->csv, o->second_run, o->allow_gpu_mismatch,
                                     o->fill_from_family);
          }};
}

Command add_calibration_fields(CLI::App& app) {
  auto* c = app.add_subcommand(
      "calibration-fields", "Print every calibration field (family, key, unit, meaning) as a Markdown table: docs/formats/calibration.md holds it");
  return {c, [] {
            std::cout << model_fields_markdown();
            return 0;
          }};
}

}  // namespace osim::cli
