#include "reference/reference_runs.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <regex>
#include <tuple>

#include <fmt/format.h>

#include "calibrations/carry.hpp"
#include "calibrations/measured_defaults.hpp"
#include "core/errors.hpp"
#include "core/stats.hpp"
#include "gpu/as_run.hpp"
#include "gpu/params_io.hpp"
#include "hw/topology.hpp"
#include "io/text_file.hpp"
#include "kineto/import.hpp"
#include "reference/trace_rates.hpp"
#include "report/compare.hpp"
#include "report/metrics.hpp"
#include "schedule/realise.hpp"

namespace osim {

namespace fs = std::filesystem;

std::string take_host_calls(ModelParams& params, const RuntimeSettings& settings, const std::string& calibration) {
  const auto& c = settings.host_calls;
  if (!calibration.empty() || !c.any()) return "";
  OverheadParams& o = params.overheads;
  using H = RuntimeSettings::HostCalls;
  // Each to the model's field of the same name, in HostCalls::kFields' order.
  const std::array<Time*, H::kFields.size()> to{&o.kernel_launch, &o.memcpy_call, &o.event_call, &o.sync_call, &o.collective_call, &o.wait_return};
  std::string taken;
  for (size_t i = 0; i < H::kFields.size(); ++i)
    if (const auto& [key, field] = H::kFields[i]; c.*field) {
      *to[i] = *(c.*field);
      taken += fmt::format("{}{} {:.1f} us", taken.empty() ? "" : ", ", key, (c.*field)->us());
    }
  return fmt::format("host calls: the schedule's measured costs ({}; settings.host_calls), not a calibration's: pass --calibration FILE for "
                     "a calibrated host's\n",
                     taken);
}

Resimulation resimulate(const std::string& measured, const Records& measured_records, const ResimulateOptions& o) {
  const fs::path dir = fs::is_directory(measured) ? fs::path(measured) : fs::path(measured).parent_path();
  const fs::path sched_path = plain_or_gz(dir.string(), "schedule.yaml");
  if (!fs::exists(sched_path))
    throw InputError(
        SourceLocation{sched_path.string(), 0, 0},
        "no schedule next to the measured records: overlapsim-validate run writes it there; or give the simulated records as a second argument");
  Resimulation out;
  out.schedule_path = sched_path.string();
  Schedule sched = apply_what_if(parse_schedule_file(sched_path.string()), o.what_if);
  std::string tp = o.topology;
  if (tp.empty()) {
    if (sched.topology.empty()) throw InputError(SourceLocation{sched_path.string(), 0, 0}, "no topology: pass --topology FILE");
    tp = (sched_path.parent_path() / sched.topology).string();
  }
  out.topology = std::make_unique<hw::Topology>(hw::parse_topology_file(tp));
  const hw::Topology& topo = *out.topology;
  ModelParams params = base_params(o.calibration, topo).params;  // without one: the measured defaults of its GPUs
  if (o.carry_from) params = carry_calibration(params, *o.carry_from, gpu_figures(topo)).params;
  const std::string host_calls = take_host_calls(params, sched.runtime, o.calibration);  // without one: an imported trace's own calls
  std::string copy_rates;  // the line on the pageable rates taken, where asked
  if (o.pageable_rate_from_trace) {
    const PageableRatesTaken t = take_pageable_rates(params, sched, other_topology_than_named(o.topology, sched_path.string(), sched));
    if (t.state == PageableRatesTaken::State::taken)
      copy_rates = fmt::format("copy rates: pageable copies at the rates the trace's ran at ({}; settings.copy_rates), pinned ones at the "
                               "calibration's (--pageable-rate-from-trace)",
                               t.rates);
    else if (t.state == PageableRatesTaken::State::other_topology)
      copy_rates = "copy rates: the schedule's measured pageable rates (settings.copy_rates) not taken: they are the recorded box's, and -t "
                   "gives another topology; pageable copies at the calibration's rate";
  }
  // The run's own timing events (an event before and after every op), at the
  // GPU event times `timing_events` measured.
  if (!o.timing_events.empty()) {
    const ModelParams ev = load_calibration(o.timing_events);
    if (ev.overheads.event_gpu_time <= Time::zero() && ev.overheads.event_gpu_time_h2d <= Time::zero())
      throw InputError(SourceLocation{o.timing_events, 0, 0},
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
  const Schedule timed = o.timing_events.empty() ? Schedule{} : with_timing_events(sched, at);
  out.result = o.timing_events.empty() ? execute_after_runs(sched, topo, params, before)
                                       : without_timing_events(sched, execute_after_runs(timed, topo, params, before), at);
  nlohmann::ordered_json meta;
  meta["runs_before"] = before;
  if (!host_calls.empty()) meta["host_calls"] = host_calls.substr(0, host_calls.size() - 1);
  if (!copy_rates.empty()) meta["copy_rates"] = copy_rates;
  out.records = records_json(sched, out.result, topo.name(), "simulated", meta);
  out.simulated = parse_records(nlohmann::json::parse(out.records.dump()), "simulation of " + sched_path.string());
  out.schedule = std::move(sched);
  return out;
}

std::vector<double> validation_errors(const std::string& runs_dir, const ResimulateOptions& o) {
  std::vector<std::string> runs;
  for (const auto& e : fs::directory_iterator(runs_dir))
    if (fs::exists(plain_or_gz(e.path().string(), "records.json"))) runs.push_back(e.path().string());
  std::sort(runs.begin(), runs.end());
  std::vector<double> errs;
  for (const auto& run : runs) {
    const Records m = read_records(plain_or_gz(run, "records.json"));
    const Resimulation sim = resimulate(run, m, o);
    errs.push_back(std::abs(compare_records(m, sim.simulated).makespan_error()));
  }
  return errs;
}

ProgramFigures predict_programs(const std::vector<std::string>& files, const hw::Topology& topo, const ModelParams& params) {
  std::vector<ProgramPrediction> runs;
  for (const auto& f : files) runs.push_back(predict_program(read_program_run(f), topo, params));
  return program_figures(std::move(runs));
}

namespace {
// The twin's stages as `overlapsim run` reports them (compute_metrics), by
// start: each one's window and its peak allocated bytes (the VRAM its live
// tensors held less what the run holds from start to end: the CUDA context,
// the allocator's reserve, NCCL's buffers, as prediction_of's peak
// allocated); the DiT steps as "dit" where no stage has that name.
struct SimulatedStage {
  std::string name;
  Time start, time;
  std::optional<double> allocated;
};
std::vector<SimulatedStage> simulated_stages(const TwinRun& t, const hw::Topology& topo) {
  const Metrics m = compute_metrics(t.schedule, topo, t.result);
  std::vector<SimulatedStage> out;
  for (const StageMetrics& st : m.stages)  // with the parts held at the stage's own peak
    out.push_back({st.name, st.start, st.end - st.start,
                   st.peak_vram ? std::optional<double>(allocated_as_torch_counts(*st.peak_vram, st.peak_parts)) : std::nullopt});
  const bool has_dit = std::any_of(out.begin(), out.end(), [](const SimulatedStage& s) { return s.name == "dit"; });
  if (!has_dit && !m.steps.empty()) out.push_back({"dit", m.steps.front().start, request_steps_time(m), std::nullopt});
  std::stable_sort(out.begin(), out.end(), [](const SimulatedStage& a, const SimulatedStage& b) { return a.start < b.start; });
  return out;
}
}  // namespace

std::pair<double, double> median_worst_pct(const std::vector<double>& errs) {
  return {100 * median(errs), errs.empty() ? 0 : 100 * *std::max_element(errs.begin(), errs.end())};
}

RequestFigures predict_requests(const std::vector<std::string>& files, const hw::Topology& topo, const ModelParams& params) {
  std::vector<ProgramPrediction> runs;
  StageFigures sf;
  for (const auto& f : files) {
    const ProgramRun run = read_program_run(f);
    const TwinRun twin = simulate_twin(run, topo, params);
    runs.push_back(prediction_of(run, twin.result));
    for (const SimulatedStage& sim : simulated_stages(twin, topo)) {
      const auto m = std::find_if(run.stages.begin(), run.stages.end(), [&](const ProgramRun::Stage& s) { return s.name == sim.name; });
      if (m == run.stages.end()) continue;
      StageComparison c{run.name, sim.name, m->time_s, sim.time.s(), std::nullopt, std::nullopt};
      if (m->peak_allocated && sim.allocated) {
        c.measured_allocated = m->peak_allocated;
        c.simulated_allocated = sim.allocated;
      }
      sf.stages.push_back(std::move(c));
    }
  }
  std::vector<double> errs, allocated;
  for (const StageComparison& c : sf.stages) {
    errs.push_back(std::abs(c.error()));
    if (c.measured_allocated) allocated.push_back(std::abs(c.allocated_error()));
  }
  std::tie(sf.median_pct, sf.worst_pct) = median_worst_pct(errs);
  sf.memory_stages = static_cast<int>(allocated.size());
  std::tie(sf.allocated_median_pct, sf.allocated_worst_pct) = median_worst_pct(allocated);
  return {program_figures(std::move(runs)), std::move(sf)};
}

std::string format_stage_figures(const StageFigures& f) {
  std::string out = fmt::format("  {:<66} {:<7} {:>12} {:>12} {:>8}  {:>12} {:>12} {:>8}\n", "request", "stage", "measured", "simulated", "error",
                                "peak alloc.", "simulated", "error");
  for (const StageComparison& c : f.stages) {
    out += fmt::format("  {:<66} {:<7} {:>12} {:>12} {:>+7.1f}%", c.request, c.stage, format_time(Time::from_s(c.measured_s)),
                       format_time(Time::from_s(c.simulated_s)), 100 * c.error());
    out += c.measured_allocated ? fmt::format("  {:>12} {:>12} {:>+7.1f}%\n", format_bytes(*c.measured_allocated),
                                              format_bytes(*c.simulated_allocated), 100 * c.allocated_error())
                                : "\n";
  }
  // Per stage name, in the order the table first names them.
  std::vector<std::string> names;
  for (const StageComparison& c : f.stages)
    if (std::find(names.begin(), names.end(), c.stage) == names.end()) names.push_back(c.stage);
  for (const std::string& n : names) {
    std::vector<double> errs, allocated;
    for (const StageComparison& c : f.stages)
      if (c.stage == n) {
        errs.push_back(std::abs(c.error()));
        if (c.measured_allocated) allocated.push_back(std::abs(c.allocated_error()));
      }
    const auto [time_median, time_worst] = median_worst_pct(errs);
    out += fmt::format("    {}: {} runs, time error median {:.1f} %, worst {:.1f} %", n, errs.size(), time_median, time_worst);
    const auto [allocated_median, allocated_worst] = median_worst_pct(allocated);
    out += allocated.empty() ? std::string("; peak allocated not compared\n")
                             : fmt::format("; peak allocated error median {:.1f} %, worst {:.1f} %\n", allocated_median, allocated_worst);
  }
  return out;
}

namespace {
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
    if (!fs::exists(result))
      throw InputError(SourceLocation{files[0], 0, 0}, "no " + result.filename().string() + " (the program's result) beside this trace");
    const ProgramRun run = read_program_run(result.string());
    kineto::ImportOptions io;
    io.steps = steps;
    io.call_times = false;  // the machine's calibrated calls predict the program run without the profiler
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
    f.waits_inferred = t.summary.inferred_timed + t.summary.inferred_untimed;
    f.inferred_timed = t.summary.inferred_timed;
    f.steps_from = t.summary.steps_from;
    out.push_back(f);
  }
  return out;
}

std::string format_trace_figures(const std::vector<TraceFigure>& figures) {
  std::string out =
      fmt::format("  {:<46} {:>12} {:>12} {:>12} {:>9} {:>9}\n", "trace (step time)", "program", "profiled", "simulated", "vs prog.", "vs prof.");
  for (const TraceFigure& f : figures)
    out += fmt::format("  {:<46} {:>9.3f} ms {:>9.3f} ms {:>9.3f} ms {:>+8.1f}% {:>+8.1f}%\n", f.name, f.program_s * 1e3, f.trace_s * 1e3,
                       f.simulated_s * 1e3, 100 * f.error(), 100 * (f.simulated_s / f.trace_s - 1));
  return out;
}

}  // namespace osim
