// A reference machine's manifest run: its calibration refitted, every bench
// row replayed, its validation runs re-simulated and its programs predicted.
#include <algorithm>
#include <filesystem>
#include <utility>

#include "calib/calibrate.hpp"
#include "calib/family_fill.hpp"
#include "calibrations/carry.hpp"
#include "core/stats.hpp"
#include "gpu/params_io.hpp"
#include "hw/topology.hpp"
#include "io/text_file.hpp"
#include "reference/reference.hpp"

namespace osim::reference {

namespace fs = std::filesystem;

namespace {

// The calibration refitted from the sources against the file (its "# Fits"
// on: the sources above it are named as the caller gave the folder), or
// written over it.
CalibrationState refit(const Manifest& m, const Options& o, const hw::Topology& topo, Figures& f, Calibration& c) {
  BenchDocs docs;
  for (const std::string& s : m.sources) docs.emplace_back(s, read_bench_json(s));
  check_bench_gpus(docs, topo);
  c = calibrate(docs, topo);
  if (m.fill_from_family) fill_from_family(c, docs, topo, family_gaps(c.params, topo, m.calibration));
  f.bench_files = docs.size();
  const std::string yaml = calibration_yaml(c);
  // Every row replayed: the held rows (effects the model holds) over 5 %,
  // apart from those a time the hand-off's phase allows is within 5 % of.
  for (const auto& [name, d] : merge_bench_runs(docs))
    for (const Comparison& r : compare_bench(d, topo, c.params)) {
      ++f.rows;
      if (!r.outside.empty()) continue;
      ++f.held;
      f.held_over_5pct += std::abs(r.error_pct()) > 5 && !r.within_phase();
    }
  if (o.write_calibration) {
    write_file(m.calibration, yaml);
    return CalibrationState::written;
  }
  const auto fits_on = [](const std::string& t) {
    const size_t i = t.find("# Fits");
    return i == std::string::npos ? t : t.substr(i);
  };
  const std::string committed = fs::is_regular_file(m.calibration) ? read_maybe_gzip(m.calibration) : std::string();
  return fits_on(committed) == fits_on(yaml) ? CalibrationState::same : CalibrationState::differs;
}

ErrorFigures error_figures(const std::vector<double>& errs) {
  const auto [median_pct, worst_pct] = median_worst_pct(errs);
  return {errs.size(), median_pct, worst_pct};
}

// A set's first folder predicted, and its repeats: each one's programs run
// again, every session pooled.
// Requests (`stages`): the first folder's stages too.
ProgramSetFigures program_set(const ProgramSet& s, const hw::Topology& topo, const ModelParams& params, bool stages) {
  ProgramSetFigures f;
  if (stages) {
    RequestFigures r = predict_requests(program_files(s.runs), topo, params);
    f.first = std::move(r.programs);
    if (!r.stages.stages.empty()) f.stages = std::move(r.stages);
  } else {
    f.first = predict_programs(program_files(s.runs), topo, params);
  }
  if (s.repeats.empty()) return f;
  std::vector<ProgramPrediction> all = f.first.runs;
  for (const std::string& dir : s.repeats)
    for (auto& run : predict_programs(program_files(dir), topo, params).runs) all.push_back(std::move(run));
  f.repeated = RepeatedSet{1 + static_cast<int>(s.repeats.size()), repeated_figures(all), program_figures(all)};
  return f;
}

}  // namespace

namespace {

// Every set of runs the manifest names, simulated with the calibration file
// on the machine's topology (the timing-event figures only with `timing_events`).
// `carry_from`: the GPU the calibration was measured on, its rates carried to
// each run's GPU where that is another (null: as it is).
void simulate_sets(const Manifest& m, const hw::Topology& topo, const std::string& calibration, bool timing_events, const GpuFigures* carry_from,
                   Figures& f) {
  if (m.validation) {
    ResimulateOptions o;
    o.calibration = calibration;
    o.carry_from = carry_from;
    f.validation = error_figures(validation_errors(*m.validation, o));
    if (timing_events && m.timing_events) {
      o.timing_events = *m.timing_events;
      f.validation_timing_events = error_figures(validation_errors(*m.validation, o));
    }
  }
  const ModelParams params = carry_from ? carry_calibration(load_calibration(calibration), *carry_from, gpu_figures(topo)).params
                                        : load_calibration(calibration);
  // Reference programs (framework programs run on the machine, none of them a calibration input).
  for (const auto& [set, out] : {std::pair{&m.programs, &f.programs}, std::pair{&m.fp8_programs, &f.fp8_programs},
                                 std::pair{&m.requests, &f.requests}, std::pair{&m.models, &f.models}})
    if (*set) *out = program_set(**set, topo, params, set == &m.requests);
  if (m.memory) {
    // Programs run for their peak memory (the allocator's statistics), against their twins' peak VRAM.
    f.memory = predict_programs(program_files(m.memory->runs), topo, params);
    if (f.memory->memory_runs == 0)
      throw InputError(m.memory->at,
                       "memory 'runs': none of these program results measured its memory (validate/programs/dit_offload.py writes memory:)");
  }
  // Programs' torch.profiler traces imported and simulated: step time against the program's own (no profiler).
  for (const auto& [set, out] : {std::pair{&m.traces, &f.traces}, std::pair{&m.traces_default, &f.traces_default}}) {
    if (!*set) continue;
    TraceSetFigures t{trace_figures((*set)->runs, topo, params, (*set)->steps), 0, 0};
    for (const TraceFigure& tf : t.traces) {
      double& worst = tf.pageable ? t.pageable_worst_pct : t.pinned_worst_pct;
      worst = std::max(worst, 100 * std::abs(tf.error()));
      t.waits_inferred += tf.waits_inferred;
      t.inferred_timed += tf.inferred_timed;
    }
    *out = std::move(t);
  }
}

}  // namespace

Figures run(const Manifest& m, const Options& o) {
  const hw::Topology topo(hw::parse_topology_file(m.topology));
  Figures f;
  Calibration c;
  f.calibration = refit(m, o, topo, f, c);
  // What the calibration file (as it is now, or was just written) left at its defaults that a sibling measured.
  for (const FamilyGap& g : family_gaps(load_calibration(m.calibration), topo, m.calibration))
    f.family_gaps.push_back(family_gap_warning(g));
  // The runs simulated with the calibration file as it is now (or was just written).
  simulate_sets(m, topo, m.calibration, true, nullptr, f);
  return f;
}

Figures predict_from(const Manifest& target, const Manifest& source) {
  const hw::Topology topo(hw::parse_topology_file(target.topology));
  Figures f;
  f.bench_files = source.sources.size();
  // What the borrowed calibration left at its defaults that a sibling
  // measured: the warnings `reference` prints for the source machine itself.
  const hw::Topology source_topo(hw::parse_topology_file(source.topology));
  const ModelParams borrowed = load_calibration(source.calibration);
  for (const FamilyGap& g : family_gaps(borrowed, source_topo, source.calibration)) f.family_gaps.push_back(family_gap_warning(g));
  // The host's limits on copies from several GPUs, measured with fewer GPUs than the target has.
  if (std::string w = host_limit_gap(borrowed, topo); !w.empty()) f.family_gaps.push_back(std::move(w));
  // Measured on another GPU: its rates carried to the target's through the datasheets.
  const GpuFigures from = gpu_figures(source_topo);
  f.carried = carry_note(carry_calibration(borrowed, from, gpu_figures(topo)), from, gpu_figures(topo));
  simulate_sets(target, topo, source.calibration, false, &from, f);
  return f;
}

const CrossExpected* cross_expected(const Manifest& target, const std::string& source_folder) {
  std::error_code ec;
  const fs::path want = fs::weakly_canonical(source_folder, ec);
  for (const CrossExpected& x : target.predicted_from)
    if (fs::weakly_canonical(x.folder, ec) == want) return &x;
  return nullptr;
}

}  // namespace osim::reference
