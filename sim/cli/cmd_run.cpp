// overlapsim run: a workload (generated into a schedule) or a schedule,
// simulated; the summary, and with --out the metrics, Perfetto trace and
// records.
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "calib/family_fill.hpp"
#include "calibrations/measured_defaults.hpp"
#include "cli/common.hpp"
#include "gpu/executor.hpp"
#include "gpu/params_io.hpp"
#include "io/out_folder.hpp"
#include "io/paths.hpp"
#include "kineto/replan.hpp"
#include "reference/reference_runs.hpp"
#include "reference/trace_rates.hpp"
#include "report/metrics.hpp"
#include "report/op_table.hpp"
#include "report/trace.hpp"
#include "schedule/records.hpp"
#include "schedule/whatif.hpp"
#include "workload/dit.hpp"

namespace osim::cli {

namespace {

std::string headline(const DitWorkload& w, const std::string& topo) {
  std::string off = to_string(w.offload);
  if (w.offload == OffloadPolicy::Layerwise) off += fmt::format(" prefetch {}", w.prefetch_size);
  if (w.offload != OffloadPolicy::None) off += w.host_memory == HostMem::Pinned ? " (pinned)" : " (pageable)";
  const char* cfg = w.cfg == CfgMode::Serial ? "serial" : w.cfg == CfgMode::Parallel ? "parallel" : "none";
  // A workload given by `tokens:` has no video of its own (its width, height and frames are the defaults).
  const bool from_video = w.tokens == ((w.frames - 1) / 4 + 1) * (w.height / 16) * (w.width / 16);
  const std::string size =
      from_video ? fmt::format("{}x{}x{} ({} tokens)", w.width, w.height, w.frames, w.tokens) : fmt::format("{} tokens", w.tokens);
  std::string line =
      fmt::format("{}: {} {}, {} steps, CFG {}, Ulysses {} ({}, {} all-to-alls/layer, {}){}, offload {}, on {}{}", w.name, w.model.preset, size,
                  w.steps, cfg, w.ring > 1 ? fmt::format("{} x ring {}", w.ulysses, w.ring) : std::to_string(w.ulysses), to_string(w.all_to_all),
                  w.attention_comm, to_string(w.comm_dtype), w.tp > 1 ? fmt::format(", tensor parallel {}", w.tp) : "", off, topo,
                  std::string(w.runtime.nccl_p2p_disable ? " (NCCL_P2P_DISABLE=1)" : "") + (w.runtime.nccl_nvls_enable ? " (NCCL_NVLS_ENABLE=1)" : ""));
  // What the model amounts to on one rank: blocks, weights, work per forward.
  const ForwardCost c = workload_cost(w);
  std::string blocks;
  const RepeatVars vars = w.vars();
  for (const BlockType& t : w.model.spec.blocks) blocks += fmt::format("{}{} x {}", blocks.empty() ? "" : " + ", block_count(t, vars), t.name);
  line += fmt::format("\n  model: {}, {:.2f} B parameters a rank ({:.1f} GB {}{}), {:.1f} TFLOP a forward a rank (GEMM {:.1f}, attention {:.1f})",
                      blocks, c.params * 1e-9, c.params * dtype_bytes(w.model.dtype) * 1e-9, to_string(w.model.dtype),
                      w.model.experts > 1 ? fmt::format(", x{} experts", w.model.experts) : "", (c.gemm_flops + c.attention_flops) * 1e-12,
                      c.gemm_flops * 1e-12, c.attention_flops * 1e-12);
  return line;
}

constexpr size_t kOpsPrintedByDefault = 1000;

/// Per rank, per op of `now` (a re-plan of `recorded`): the mean clock each
/// kernel of measured duration ran at in a run of `recorded` (run
/// --reclock-measured). The re-plan moves copies and their host time, never a
/// kernel: each rank's measured kernels are the same, in the same order, in both.
std::vector<std::vector<double>> reclock_map(const Schedule& recorded, const Schedule& now, const std::vector<std::vector<double>>& clock,
                                             const std::string& input) {
  auto measured = [](const Program& p) {
    std::vector<size_t> out;
    for (size_t i = 0; i < p.ops->size(); ++i)
      if ((*p.ops)[i].kind == OpKind::Kernel && (*p.ops)[i].duration) out.push_back(i);
    return out;
  };
  std::vector<std::vector<double>> out(now.programs.size());
  for (size_t r = 0; r < now.programs.size(); ++r) {
    const Program &a = recorded.programs[r], &b = now.programs[r];
    const std::vector<size_t> from = measured(a), to = measured(b);
    if (from.size() != to.size())
      throw std::logic_error(
          fmt::format("--reclock-measured: {} rank {} has {} measured kernels before the re-plan, {} after", input, r, from.size(), to.size()));
    out[r].assign(b.ops->size(), 0.0);
    for (size_t k = 0; k < from.size(); ++k) {
      const Op &x = (*a.ops)[from[k]], &y = (*b.ops)[to[k]];
      if (x.label != y.label || x.duration != y.duration)
        throw std::logic_error(
            fmt::format("--reclock-measured: {} rank {}: measured kernel {} is '{}' before the re-plan, '{}' after", input, r, k, x.label, y.label));
      out[r][to[k]] = from[k] < clock[r].size() ? clock[r][from[k]] : 0.0;
    }
  }
  return out;
}

// What `run` was asked (its flags).
struct RunOptions {
  std::string input, topology, out_dir, schedule_out, calibration;
  std::vector<std::string> sets;
  bool force = false, show_ops = false, records = false, every_flow = false, reserve_links = false, every_rank = false, remodel_kernels = false;
  std::string trace_ranks, trace_steps;
  bool trace_all = false, trace_all_links = false, trace_gzip = false, records_all = false, ops_all = false;
  std::string host_memory;
  int runs_before = 0;
  int prefetch = -1;  // -1: the schedule's prefetch as it is
  int prefetch_cycle = 0;
  bool reclock_measured = false;
  bool keep_measured_clock = false;
  bool copy_rates_as_traced = false;
  bool pageable_rate_from_calibration = false;
};

/// run --copy-rates-as-traced: the schedule's measured copy rates
/// (settings.copy_rates) in place of the calibration's copy-engine and
/// pageable bandwidths; the line the run prints first.
std::string take_copy_rates(ModelParams& params, const Schedule& sched, const std::string& input) {
  const auto& c = sched.runtime.copy_rates;
  if (!c.any())
    throw InputError(SourceLocation{"--copy-rates-as-traced", 0, 0},
                     fmt::format("{} holds no measured copy rates (settings.copy_rates: import-trace writes them from a trace's host "
                                 "copies of 1 MiB or more)",
                                 input));
  return fmt::format("copy rates: as the trace's copies ran ({}; settings.copy_rates)\n", take_measured_rates(params.copies, c, 0, false));
}

/// By default, a schedule's measured pageable rates (settings.copy_rates) in
/// place of the calibration's pageable bandwidth (take_pageable_rates); the
/// line the run prints ("" where none).
std::string pageable_rates_line(ModelParams& params, const Schedule& sched, bool other_topology) {
  const PageableRatesTaken t = take_pageable_rates(params, sched, other_topology);
  switch (t.state) {
    case PageableRatesTaken::State::none: return "";
    case PageableRatesTaken::State::other_topology:
      return "copy rates: the schedule's measured pageable rates (settings.copy_rates) not taken: they are the recorded box's, and -t "
             "gives another topology; pageable copies at the calibration's rate (--copy-rates-as-traced takes them anyway)\n";
    case PageableRatesTaken::State::taken: break;
  }
  return fmt::format("copy rates: pageable copies at the rates the trace's ran at ({}; settings.copy_rates), pinned ones at the "
                     "calibration's: --pageable-rate-from-calibration keeps its pageable rate\n",
                     t.rates);
}

int run_command(const RunOptions& o, const WhatIf& what_if, const TraceRequest& trace) {
  const std::string& input = o.input;
  std::string topo_path = o.topology;
  const std::string &out_dir = o.out_dir, &schedule_out = o.schedule_out, &calibration = o.calibration;
  const bool force = o.force, records = o.records, records_all = o.records_all, ops_all = o.ops_all, trace_gzip = o.trace_gzip;
  const int runs_before = o.runs_before;
  bool show_ops = o.show_ops || o.ops_all;
  if (o.prefetch_cycle != 0 && o.prefetch < 0) throw InputError(SourceLocation{}, "--prefetch-cycle goes with --prefetch N");
  Schedule sched;
  ModelParams params;
  std::string head;
  std::optional<DitWorkload> workload;
  // The topology, then the parameters on it (a calibration, else the
  // measured defaults of its GPUs), then the schedule.
  auto topology_of = [&](const std::string& named) {
    if (topo_path.empty()) {
      if (named.empty()) throw InputError(SourceLocation{input, 0, 0}, "no topology: pass --topology FILE or add 'topology: FILE' to the input");
      topo_path = resolve_named_path(input, named);
    }
    return hw::parse_topology_file(topo_path);
  };
  std::optional<hw::Topology> topology;
  BaseParams base;
  std::string host_calls;  // the schedule's measured call costs, where taken
  kineto::ReplanSummary replanned;
  std::optional<Schedule> recorded;  // --reclock-measured: the schedule before its re-plan and what-ifs
  if (is_workload_file(input)) {
    if (o.reclock_measured)
      throw InputError(SourceLocation{"--reclock-measured", 0, 0},
                       fmt::format("it re-clocks a schedule's measured kernels; {} is a workload", input));
    if (o.copy_rates_as_traced)
      throw InputError(SourceLocation{"--copy-rates-as-traced", 0, 0},
                       fmt::format("it takes an imported trace's measured copy rates; {} is a workload", input));
    if (o.pageable_rate_from_calibration)
      throw InputError(SourceLocation{"--pageable-rate-from-calibration", 0, 0},
                       fmt::format("it keeps the calibration's pageable rate for an imported trace's measured one; {} is a workload", input));
    if (o.prefetch >= 0)
      throw InputError(SourceLocation{"--prefetch", 0, 0},
                       fmt::format("it re-plans a schedule's prefetch (an imported trace's); {} is a workload: --set offload.prefetch_size={}", input,
                                   o.prefetch));
    workload = parse_workload_file(input, o.sets);
    topology.emplace(topology_of(workload->topology));
    place_on(*workload, *topology);
    if (calibration.empty() && !workload->calibration.empty()) {
      // Its parameters hold it already (parse_workload_file read it).
      base.file = workload->calibration;
      base.origin = workload->calibration_origin;
    } else {
      base = base_params(calibration, *topology);
      set_base_params(*workload, base.params);
    }
    // Without outputs that read every op, the programs are generated as the
    // run reaches them: memory for the ops in flight, not for every step.
    const bool every_op = !out_dir.empty() || show_ops || !schedule_out.empty() || what_if.any();
    sched = every_op ? generate_schedule(*workload) : generate_schedule_as_run(*workload);
    for (int st : trace.steps)
      if (st >= workload->steps)
        throw InputError(SourceLocation{"--trace-steps", 0, 0}, fmt::format("the run has no step {} (its steps are 0-{})", st, workload->steps - 1));
    params = workload->params;
  } else {
    if (o.copy_rates_as_traced && o.pageable_rate_from_calibration)
      throw InputError(SourceLocation{"--pageable-rate-from-calibration", 0, 0},
                       "--copy-rates-as-traced takes every measured rate, the pageable ones too: give one of the two");
    sched = parse_schedule_file(input, o.sets);
    if (o.reclock_measured && o.keep_measured_clock)
      throw InputError(SourceLocation{"--keep-measured-clock", 0, 0}, "it keeps the clock --reclock-measured changes: give one of the two");
    // Re-clocked by default where a what-if re-plans an imported trace (its
    // measured call costs mark it): the measured kernels ran at the clock of
    // the traced program's load, which the new plan changes.
    const bool what_if_on_trace = (o.prefetch >= 0 || what_if.host_memory.has_value()) && sched.runtime.host_calls.any();
    // As recorded: before the re-plan and the host-memory what-if; kernels that
    // --remodel-kernels times from their shape are modelled in both runs.
    if (o.reclock_measured || (what_if_on_trace && !o.keep_measured_clock)) recorded = what_if.remodel_kernels ? apply_what_if(sched, WhatIf{.remodel_kernels = true, .host_memory = {}}) : sched;
    if (o.prefetch >= 0) sched = kineto::replan_prefetch(sched, {o.prefetch, o.prefetch_cycle}, input, &replanned);
    // A schedule's ops are printed unless there are too many to read (an
    // imported trace's): then only with --ops.
    size_t total = 0;
    for (const Program& p : sched.programs) total += p.ops->size();
    if (!show_ops && total > kOpsPrintedByDefault) std::cout << fmt::format("({} ops: pass --ops to print each one's times)\n", total);
    show_ops = show_ops || total <= kOpsPrintedByDefault;
    topology.emplace(topology_of(sched.topology));
    base = base_params(calibration, *topology);
    params = base.params;
    host_calls = take_host_calls(params, sched.runtime, calibration);
    if (o.copy_rates_as_traced) host_calls += take_copy_rates(params, sched, input);
  }
  sched = apply_what_if(sched, what_if);
  if (!workload && !o.copy_rates_as_traced && !o.pageable_rate_from_calibration) {
    // Another topology than the schedule's own (-t naming another file than
    // its `topology:`) is another box.
    host_calls += pageable_rates_line(params, sched, other_topology_than_named(o.topology, input, sched));
  }
  const hw::Topology& topo = *topology;
  // Check every output first, so nothing is written when one would be refused.
  if (!schedule_out.empty()) claim_new_output(schedule_out, force);
  // The run's folder is written aside and appears whole at the end (OutputFolder).
  std::optional<OutputFolder> out;
  if (!out_dir.empty()) {
    claim_output(out_dir);
    uninterrupted([&] {
      out.emplace(out_dir, std::vector<std::string>{"metrics.json", "trace.json", "trace.json.gz", "summary.txt", "records.json"}, force);
    });
  }
  if (records && out_dir.empty()) throw InputError(SourceLocation{input, 0, 0}, "--records writes into the --out folder: give --out DIR");
  if (records_all && !records) throw InputError(SourceLocation{input, 0, 0}, "--records-all is for --records: add --records");
  if ((trace.all || trace.all_links || trace_gzip || !trace.ranks.empty() || !trace.steps.empty()) && out_dir.empty())
    throw InputError(SourceLocation{input, 0, 0}, "--trace-* options choose what the --out folder's trace holds: give --out DIR");
  if (!trace.ranks.empty() && trace.ranks.back() >= sched.ranks())
    throw InputError(SourceLocation{"--trace-ranks", 0, 0},
                     fmt::format("the run has no rank {} (its ranks are 0-{})", trace.ranks.back(), sched.ranks() - 1));
  if (!schedule_out.empty()) {
    if (const fs::path parent = fs::path(schedule_out).parent_path(); !parent.empty()) fs::create_directories(parent);
    // The topology it ran on, named so that it resolves from the written file's folder.
    sched.topology = path_to_write(schedule_out, topo_path);
    write_file(schedule_out, to_yaml(sched));
  }
  // Past kOpsRecordedAll ops, records.json and the per-op table hold the
  // trace's ranks alone (every op of theirs) unless asked for every rank.
  size_t total_ops = 0;
  for (const Program& p : sched.programs) total_ops += p.ops->size();
  const bool records_bounded = records && !records_all && total_ops > kOpsRecordedAll;
  const bool ops_bounded = show_ops && !ops_all && total_ops > kOpsRecordedAll;
  ExecOptions opts;
  opts.keep_records = show_ops;  // the per-op table reads them
  opts.closed_form_collectives = !o.every_flow;
  opts.closed_form_reserve = !o.every_flow;
  opts.symmetric_ranks = !o.every_rank;
  // --runs-before N: the GPUs come from N runs of the same input back to back
  // (a serving loop's steady state: the sustained-load clock already down).
  auto run_with = [&](const ExecOptions& exec) { return execute_after_runs(sched, topo, params, runs_before, exec); };
  // --reclock-measured: the clock each measured kernel ran at in a run of the
  // schedule as recorded (measured kernels loading the duty cycle), then its
  // duration re-clocked in this one.
  std::string reclocked;
  if (recorded) {
    ExecOptions first;
    first.keep_records = false;
    first.record_measured_clock = true;
    const ExecResult rec = execute_after_runs(*recorded, topo, params, runs_before, first);
    opts.measured_clock = reclock_map(*recorded, sched, rec.measured_clock, input);
    size_t n = 0;
    double lo = 1, hi = 0, sum = 0;
    for (const auto& rank : opts.measured_clock)
      for (const double c : rank)
        if (c > 0) ++n, lo = std::min(lo, c), hi = std::max(hi, c), sum += c;
    reclocked = n ? fmt::format("  measured kernels re-clocked: {}, at clock {:.3f}-{:.3f} (mean {:.3f}) as recorded\n", n, lo, hi,
                                sum / static_cast<double>(n))
                  : "  measured kernels re-clocked: none (the schedule has no kernel of measured duration)\n";
  }
  ExecResult res;
  Metrics m;
  TraceSelection trace_sel;
  if (!out) {
    res = run_with(opts);
    m = compute_metrics(sched, topo, res);
  } else {
    opts.link_samples = true;
    opts.keep_records = true;  // the trace and records.json read them
    // What the trace holds (its ranks, its steps' windows) follows from the
    // run's metrics. Unless it holds everything, a run without records or
    // link samples (mirrored ranks, closed forms: a fraction of the traced
    // run's time) gives them first, so that the traced run keeps records and
    // samples for that alone: a large run's trace needs memory for the few
    // ranks and steps it holds, not for every op of every rank.
    std::optional<TraceSelection> planned;
    if (!trace.all) {
      ExecOptions first = opts;
      first.keep_records = first.link_samples = false;
      planned = select_trace(trace, compute_metrics(sched, topo, run_with(first)));
    }
    for (int attempt = 0;; ++attempt) {
      opts.record_ranks.clear();
      opts.sample_windows.clear();
      if (planned && !planned->everything) {
        opts.sample_windows = planned->windows;
        // records.json and the per-op table read every rank's, or the traced ranks' past kOpsRecordedAll ops.
        const bool every_rank_traced = std::find(planned->rank.begin(), planned->rank.end(), 0) == planned->rank.end();
        if ((!records || records_bounded) && (!show_ops || ops_bounded) && !every_rank_traced) opts.record_ranks = planned->rank;
      }
      res = run_with(opts);
      m = compute_metrics(sched, topo, res);
      trace_sel = select_trace(trace, m);
      // The same run gives the same selection (the closed forms and mirrors
      // change no time); were it not so, the run is traced again as it chose.
      if (!planned || planned->everything || (planned->rank == trace_sel.rank && planned->windows == trace_sel.windows)) break;
      if (attempt == 2) throw std::logic_error("run --out: the trace's selection changed from one run of the input to the next");
      planned = trace_sel;
    }
  }
  // The ranks the bounded outputs hold (the trace's) and the line that says so; none where that is every rank.
  const TraceSelection op_ranks = out ? trace_sel : select_trace(TraceRequest{}, m);
  const bool ranks_left_out = std::find(op_ranks.rank.begin(), op_ranks.rank.end(), 0) != op_ranks.rank.end();
  auto left_out = [&](const std::string& what, const std::string& flag) {
    std::vector<int> kept;
    for (size_t r = 0; r < op_ranks.rank.size(); ++r)
      if (op_ranks.rank[r]) kept.push_back(static_cast<int>(r));
    return fmt::format("{} holds rank{} {} of {}, every op of theirs (the default past {} ops; the run has {}): {} for every rank", what,
                       kept.size() == 1 ? "" : "s", index_ranges(kept), op_ranks.rank.size(), kOpsRecordedAll, total_ops, flag);
  };
  if (show_ops) {
    // Within kOpTableLines (report/op_table.hpp): past kOpsRecordedAll ops, of the trace's ranks alone (the records kept).
    OpTableSelection table;
    if (ops_bounded && ranks_left_out) {
      // The trace's ranks (their records alone are kept), within kOpTableLines as any table.
      table = select_op_table(res, kOpTableLines, &op_ranks.rank);
      if (table.note.empty()) table.note = left_out("the per-op table", "--ops-all");
    } else if (!ops_all) {
      table = select_op_table(res);
    }
    std::cout << format_exec_report(sched, res, table.everything ? nullptr : &table.rank, table.after.empty() ? nullptr : &table.after, &table.rows)
              << "\n";
    if (!table.note.empty()) std::cout << "(" << table.note << ")\n";
  }
  head = workload ? headline(*workload, topo.name()) : fmt::format("schedule {}: {} ranks on {}", sched.name, sched.ranks(), topo.name());
  // A calibration measured elsewhere is said first: what follows leans on it.
  std::string summary = borrowed_calibration_note(base, topo) + format_summary(m, topo, res, head);
  if (o.prefetch >= 0) summary += replanned.text();
  summary += reclocked;
  // The fabric's counters count in the trace's budget (--trace-all and --trace-all-links: every link's).
  if (!trace.all && !trace.all_links && out) select_trace_links(trace_sel, topo, res);
  if (!trace_sel.note.empty()) summary += "  " + trace_sel.note + "\n";
  const std::string records_note = records_bounded && ranks_left_out ? left_out("records.json", "--records-all") : "";
  if (!records_note.empty()) summary += "  " + records_note + "\n";
  std::cout << summary;
  std::cout << base_params_note(base, &topo);
  // A calibration of fewer GPUs than the topology's: the families it could not measure for them, of those the run uses.
  RunUses uses{.collectives = m.bytes_collective > 0, .framework_pairwise = false};
  if (sched.runtime.framework != Framework::None) {
    if (workload) uses.framework_pairwise = workload->all_to_all == CollAlgo::Pairwise && workload->ulysses > 1;
    for (const Program& p : sched.programs)
      for (const Op& op : *p.ops) uses.framework_pairwise |= op.kind == OpKind::Collective && op.coll == CollKind::AllToAll && op.algo == CollAlgo::Pairwise;
  }
  if (const std::string gap = gpu_count_gap(base.params, base.origin.gpus, topo, uses); !gap.empty()) std::cout << gap << "\n";
  std::cout << host_calls;
  if (out) {
    write_file(out->path("metrics.json"), metrics_json(m, topo, res).dump(2) + "\n");
    // Streamed: the trace of a large run is more than memory should hold at once.
    const std::string trace_name = trace_gzip ? "trace.json.gz" : "trace.json";
    write_trace_file(out->path(trace_name), sched, topo, res, trace_sel);
    write_file(out->path("summary.txt"), summary);
    if (records) {
      nlohmann::ordered_json meta = nlohmann::ordered_json::object();
      if (!records_note.empty()) meta["left_out"] = records_note;
      write_file(out->path("records.json"),
                 records_text(records_json(sched, res, topo.name(), "simulated", meta, records_note.empty() ? nullptr : &op_ranks.rank)));
    }
    uninterrupted([&] { out->commit(); });  // an earlier run's records.json, with --force, goes: not this run's
    std::cout << fmt::format("wrote {}/metrics.json, {} (open in ui.perfetto.dev), summary.txt{}\n", out_dir, trace_name,
                             records ? ", records.json" : "");
  }
  return 0;
}


WhatIf what_if_of(bool remodel_kernels, const std::string& host_memory) {
  WhatIf w;
  w.remodel_kernels = remodel_kernels;
  if (!host_memory.empty()) w.host_memory = host_memory == "pinned" ? HostMem::Pinned : HostMem::Pageable;
  return w;
}

}  // namespace

Command add_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  auto* c = app.add_subcommand("run", "Simulate a workload (DiT inference) or a schedule; print a summary, write metrics and a trace");
  c->add_option("input", o->input, "workload YAML (has 'model:') or schedule YAML (has 'programs:')")->required();
  c->add_option("--topology,-t", o->topology, "topology YAML (default: the input's 'topology:', relative to the input)");
  c->add_option("--set", o->sets, "override a workload key, e.g. --set offload.prefetch_size=3 (repeatable)");
  c->add_option("--out", o->out_dir, "write metrics.json, trace.json (Perfetto) and summary.txt into this folder");
  c->add_option("--schedule-out", o->schedule_out, "write the generated schedule (YAML) to this file");
  c->add_flag("--force", o->force, "overwrite existing output files");
  c->add_flag("--ops", o->show_ops,
              fmt::format("print every op's issue, start and end (default for schedule files of at most 1000 ops): every rank's within {} lines, "
                          "else the first ranks', ranks with the same ops and times once, a single rank's first ops, and a note (past {} ops in the "
                          "run: of the traced ranks alone)",
                          kOpTableLines, kOpsRecordedAll));
  c->add_option("--calibration", o->calibration,
                "a calibration file (overlapsim calibrate) for the model's parameters (default: the workload's, else the measured defaults of the "
                "topology's GPUs; none: the datasheet defaults)");
  c->add_flag("--records", o->records,
              fmt::format("also write records.json (every op's times, for overlapsim compare) into --out (past {} ops in the run: the traced "
                          "ranks' ops)",
                          kOpsRecordedAll));
  c->add_flag("--records-all", o->records_all, "with --records: every rank's ops however many");
  c->add_flag("--ops-all", o->ops_all, "print every op of every rank, however many lines (--ops without its bound)");
  c->add_option(
       "--runs-before", o->runs_before,
       "simulate it as the run after N runs of the same input back to back (the GPUs' sustained-load clock state they leave; default 0: rested GPUs)")
      ->check(CLI::Range(0, 1000));
  c->add_flag("--every-flow", o->every_flow,
              "simulate every flow of every all-to-all (no closed-form replay of recurring ones): slower, same results");
  c->add_flag("--reserve-links", o->reserve_links,
              "accepted for older command lines, no effect: all-to-alls replay beside a flow that holds one of their links (a prefetch copy) "
              "by default, the same results to the bit (--every-flow turns it off with the closed forms)");
  c->add_flag("--every-rank", o->every_rank,
              "simulate every rank in full (no mirroring of ranks that run one program in lockstep): slower, same results");
  c->add_flag(
      "--remodel-kernels", o->remodel_kernels,
      "time kernels that carry a shape (GEMM, attention, HBM bytes) by the model, not by their measured duration (an imported trace on another GPU)");
  auto* trace_steps = c->add_option("--trace-steps", o->trace_steps,
                fmt::format("trace only these steps, e.g. 0-1,39 (default: every step up to {} ranks x steps, else the first ones within it)",
                            kTraceRankSteps));
  auto* trace_ranks = c->add_option("--trace-ranks", o->trace_ranks,
                fmt::format("trace only these ranks, e.g. 0-7 (default: every rank up to {} ranks x steps or {} ranks, else the first {} of each "
                            "group of alike ranks, {} at most)",
                            kTraceRankSteps, kTraceRanksAll, kTraceRanksPerGroup, kTraceRanks));
  c->add_flag("--trace-all", o->trace_all, "trace every rank and step, however large the trace");
  c->add_flag("--trace-all-links", o->trace_all_links,
              fmt::format("keep every link's bandwidth counter in the trace (default: past {} samples, or {} per traced rank where ranks are "
                          "left out, the busiest links' alone)",
                          kTraceLinkSamples, kTraceLinkSamplesPerRank));
  c->add_flag("--trace-gzip", o->trace_gzip, "write the trace gzip-compressed, as trace.json.gz (Perfetto opens it as it is)");
  c->add_option("--prefetch", o->prefetch,
                "what-if on a schedule (an imported trace's): re-plan its layer-weight prefetch to copy each block's weights N blocks ahead (0: a "
                "blocking copy before each block), as import-trace --prefetch does (docs/import-trace.md)")
      ->check(CLI::Range(0, 1000));
  c->add_option("--prefetch-cycle", o->prefetch_cycle,
                "with --prefetch: blocks per cycle of the batches (the model's layers when a step runs them more than once; default: every block)")
      ->check(CLI::Range(0, 1000000));
  c->add_flag("--reclock-measured", o->reclock_measured,
              "a schedule's kernels of measured duration slow with the model's clock: each ran at the clock a run of the schedule as recorded "
              "gives it, before --prefetch and --host-memory; with --remodel-kernels the shaped kernels are modelled in both (the default for "
              "an imported trace under --prefetch or --host-memory; docs/import-trace.md)");
  c->add_flag("--keep-measured-clock", o->keep_measured_clock,
              "under --prefetch or --host-memory, an imported trace's measured kernels keep their measured time whatever the new plan's clock");
  c->add_flag("--copy-rates-as-traced", o->copy_rates_as_traced,
              "an imported trace's host copies at the rates they ran at where it was recorded (settings.copy_rates), in place of the "
              "calibration's copy-engine and pageable bandwidths");
  c->add_flag("--pageable-rate-from-calibration", o->pageable_rate_from_calibration,
              "an imported trace's pageable host copies at the calibration's pageable bandwidth (default: at the rates the trace's own "
              "pageable copies ran at, settings.copy_rates, where it runs on the topology it names)");
  c->add_option("--host-memory", o->host_memory, "what-if: every H2D/D2H copy from this host memory (pinned or pageable)")
      ->check(CLI::IsMember({"pinned", "pageable"}));
  return {c, [o, trace_steps, trace_ranks] {
            if (!o->host_memory.empty() && o->host_memory != "pinned" && o->host_memory != "pageable")
              throw InputError(SourceLocation{}, "--host-memory: pinned or pageable");
            TraceRequest trace;
            trace.all = o->trace_all;
            trace.all_links = o->trace_all_links;
            if (trace_ranks->count() > 0) trace.ranks = parse_index_ranges(o->trace_ranks, "--trace-ranks");
            if (trace_steps->count() > 0) trace.steps = parse_index_ranges(o->trace_steps, "--trace-steps");
            if (trace.all && (!trace.ranks.empty() || !trace.steps.empty()))
              throw InputError(SourceLocation{"--trace-all", 0, 0}, "it traces every rank and step: drop --trace-ranks and --trace-steps");
            return run_command(*o, what_if_of(o->remodel_kernels, o->host_memory), trace);
          }};
}

}  // namespace osim::cli
