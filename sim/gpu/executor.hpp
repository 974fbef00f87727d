// The execution model: runs a Schedule on a Topology.
//
// Per rank, one host thread issues the program in order, paying a per-call
// overhead; syncs and host-blocking copies block it. GPU ops go to streams;
// streams are multiplexed onto `device_max_connections` hardware queues,
// which dispatch in submission order (an op that cannot start blocks the ops
// behind it in the same queue). Copies go to the GPU's copy engine for their
// direction (FIFO), then become flows on the fabric. Kernels progress at a
// speed set by the SM share and the interference model. Collectives start
// moving data once every rank of the group has reached them, as flows per
// algorithm. See docs/execution-model.md.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpu/params.hpp"
#include "hw/fabric.hpp"
#include "schedule/run_record.hpp"
#include "schedule/schedule.hpp"
#include "schedule/spans.hpp"

namespace osim {

/// A GPU's sustained-load state (ModelParams::sustained_*): its duty cycle
/// averaged over the fast and the slow time constant. 0 = rested.
struct LoadState {
  // The duty cycle GEMMs see (SDPA counted by sustained_attention_load) and
  // the one SDPA sees (every kernel counted whole), fast and slow averages.
  double duty = 0, duty_slow = 0, attention_duty = 0, attention_duty_slow = 0;
  bool operator==(const LoadState&) const = default;
};

/// A simulated run: what any run records, and the simulator's own counts.
struct ExecResult : RunRecord {
  // NCCL all-to-alls run in closed form (ExecOptions::closed_form_collectives),
  // and how many of those handed their flows back part-way; how many reserved
  // links another flow held (ExecOptions::closed_form_reserve).
  int64_t closed_form = 0, handed_back = 0, reserved = 0;
  // Per rank: the sustained-load state when the run ends (at the makespan),
  // to start a run that follows at once (ExecOptions::initial_load).
  std::vector<LoadState> final_load;
  // Programs generated as they run (Program::source): the most ops one of
  // them held at once (whole chunks of 4,096); 0 for whole programs.
  int64_t most_ops_held = 0;
  // Ranks that ran their representative's timeline (ExecOptions::symmetric_ranks);
  // 0 when every rank was simulated in full.
  int64_t mirrored = 0;
  // With ExecOptions::record_measured_clock: per rank, per op, the mean clock
  // a kernel of measured duration ran at (0: any other op).
  std::vector<std::vector<double>> measured_clock;
};

struct ExecOptions {
  bool link_samples = false;  // record every change of every resource's use (for traces)
  // One OpRecord per op (traces, records.json, the per-op table, compare).
  // Without: ExecResult::spans instead, a few spans per stream in place of
  // 56 bytes per op; compute_metrics gives the same metrics from either.
  bool keep_records = true;
  // With records: the ranks whose records and VRAM timeline are kept, a flag
  // per rank (a trace's TraceSelection::rank); empty: every rank. Then the
  // run also keeps ExecResult::spans for every rank (the metrics read them),
  // so a trace of a few ranks of a large run holds records for those alone.
  // With link_samples, the samples are those of the links the chosen ranks'
  // transfers crossed, each from the first such transfer on.
  std::vector<char> record_ranks;
  // With link_samples: the windows [from, to) in ps whose samples are kept,
  // sorted and disjoint (TraceSelection::windows), and of those between them
  // each resource's last before a window (WindowedSamples); empty: all.
  std::vector<std::pair<int64_t, int64_t>> sample_windows;
  // Without records: a rank's spans before its running ops are summed and
  // dropped once it holds this many (RunSpans::fold); the metrics are the same.
  size_t fold_spans_at = 4096;
  // Replay an NCCL all-to-all alone on its links from one private simulation
  // of it (Executor::try_closed_form) instead of simulating its flows in the
  // shared model each time. Off: every flow simulated (the reference the
  // closed form is tested against). Always off with link_samples.
  bool closed_form_collectives = true;
  // A closed form may replay beside a flow that holds one of its links (a
  // prefetch copy on the PCIe link its flows from the NIC cross), that link's
  // capacity lowered to what the all-to-all leaves the flow while it runs
  // (ClosedForms::reserve): the flow's rate there is the flow-by-flow one,
  // to the bit. Off: such all-to-alls run flow by flow (the reference the
  // reservation is tested against; run --every-flow turns it off with the
  // closed forms).
  bool closed_form_reserve = true;
  // Ranks that run one program on alike GPUs, in lockstep, are simulated
  // once: the others (mirrors) keep only their copies' and collectives'
  // flows, which must end when their representative's do; where one does
  // not, the run is simulated again with every rank in full. Off: every
  // rank in full (the reference the mirrors are tested against). Off with
  // link_samples (a trace's same-instant samples follow the order flows
  // start and end in).
  bool symmetric_ranks = true;
  // Per rank: the sustained-load state at time 0 (a run that follows others
  // at once: the previous run's ExecResult::final_load). Empty: rested.
  std::vector<LoadState> initial_load;
  // Measured kernels re-clocked (run --reclock-measured, docs/import-trace.md):
  // with record_measured_clock, a kernel of measured duration (an imported
  // trace's) loads the duty cycle as a GEMM does and ExecResult::measured_clock
  // gets the mean clock it ran at. With measured_clock (per rank, per op: that
  // clock c as a run of the schedule before its re-plan recorded it; 0: none),
  // its measured duration d is work d * c at clock 1 that slows with the clock.
  bool record_measured_clock = false;
  std::vector<std::vector<double>> measured_clock;
};

/// Runs the schedule. Throws InputError for a schedule that does not fit the
/// topology, SimulationError for deadlock or running out of memory.
ExecResult execute(const Schedule& s, const hw::Topology& topo, const ModelParams& params = {}, const ExecOptions& options = {});

/// Runs the schedule `prior_runs` times back to back (no records; each starts
/// in the sustained-load state the one before ended in), then once more as
/// `execute` does, from the state they left: what a measured run that followed
/// warm-up and earlier repeats at once went through. prior_runs = 0: execute.
ExecResult execute_after_runs(const Schedule& s, const hw::Topology& topo, const ModelParams& params, int prior_runs,
                              const ExecOptions& options = {});

/// Solo duration of a kernel on a GPU (no interference). `where` names the op in errors.
/// `framework`: a framework program's op (schedules with framework: pytorch): a memory-bound kernel at the framework's own rate where calibrated.
Time kernel_time(const Op& op, const hw::NodeSpec& gpu, const ModelParams& p, const SourceLocation& where = {}, bool framework = false);

/// A kernel of measured duration alone: `measured_s` less the share the copies beside it took
/// where it was measured (op.beside_copies_ns; Compute runs a kernel at (1 - gemm_slowdown_per_copy)
/// per busy copy engine), so that beside the same copies it again takes `measured_s`.
double measured_solo_s(const Op& op, double measured_s, const ModelParams& p);

/// The per-op table `overlapsim run` prints (of the ranks set in `ranks` where given; `after`: per
/// rank, a line printed after its rows, none where empty; `rows`: per rank, its first rows printed
/// and a line saying the rest, every row where given none; report/op_table.hpp chooses them).
std::string format_exec_report(const Schedule& s, const ExecResult& r, const std::vector<char>* ranks = nullptr,
                               const std::vector<std::string>* after = nullptr, const std::vector<size_t>* rows = nullptr);

}  // namespace osim
