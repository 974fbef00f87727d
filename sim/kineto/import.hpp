// Imports torch.profiler traces (the Chrome-trace JSON Kineto writes; one
// file per rank) as a schedule, with the timeline the trace measured as the
// records of that schedule (docs/import-trace.md).
//
// The host thread that issues the CUDA calls becomes the rank's program: each
// call that puts work on the GPU becomes an op (kernels keep their measured
// time and carry their GEMM/attention shape or HBM bytes where the profiler
// recorded the op's input shapes; NCCL kernels become collectives; copies keep
// direction, host memory kind and bytes), event records, stream waits and
// synchronisations become the schedule's, and the host's own time between
// calls becomes host work. Kineto does not say on which stream an event was
// recorded nor which record a wait waits on: the record's stream is the one
// this thread last put work on, and the wait binds the record whose work had
// finished when the waiting stream went on (see pair_waits in waits.cpp).
// Without the profiler's cuda_sync events a wait's own stream is inferred
// too: the stream of the next work the thread issued (infer_waiting_stream).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "schedule/run_record.hpp"
#include "schedule/schedule.hpp"

namespace osim::kineto {

struct ImportOptions {
  /// Ranges (user annotations, cpu ops) whose names match this ECMAScript
  /// regex start steps; "" = torch.profiler's `ProfilerStep#N`, else ranges
  /// named `step N` (record_function), whichever the first trace has.
  std::string steps;
  /// The schedule's name; "" = the first trace's file name.
  std::string name;
  /// One rank's trace of a larger job replayed as every rank of it (its
  /// distributedInfo's world size), each the same program: its collectives
  /// over the whole job are simulated with peers assumed symmetric.
  bool symmetric_ranks = false;
  /// Each call's measured host time kept: a call that did not wait and took
  /// longer than its kind's cost (the trace's median, else the model's) has
  /// the difference as host work before it, one that took less gives it back
  /// from the host's time after it, and a wait's return over wait_return is
  /// host work after it (import-trace --calls-as-measured: the profiled
  /// timeline reproduced). false, the default: every call at its kind's cost,
  /// to predict the program without the profiler (the profiler's calls are
  /// not the program's: on the reference machines the measured call times
  /// moved the predictions away from the unprofiled runs).
  bool call_times = false;
  /// What a run charges a kind of call the trace has too few of to take its
  /// cost (the model's own, OverheadParams; the caller gives them, for the
  /// importer does not link the GPU model). A kind unset keeps no difference.
  RuntimeSettings::HostCalls model_costs;
};

/// What became of the trace's events: nothing is dropped without a count.
struct ImportSummary {
  int ranks = 0;
  int64_t events = 0;
  std::map<std::string, int64_t> ops;           // ops written, by kind ("kernel (gemm)", "memcpy h2d pinned", ...)
  std::map<std::string, int64_t> host_only;     // CUDA calls that put no work on the GPU: their time is host time
  std::map<std::string, int64_t> not_imported;  // events left out, by what they are and why
  int64_t waits_timed = 0;                      // waits bound to the record whose work ended as the waiting stream went on
  int64_t waits_untimed = 0;                    // waits the timeline does not decide (not binding): bound by program order
  int64_t waits_recorded = 0;                   // stream waits whose cuda_sync event gave their stream
  int64_t inferred_timed = 0;                   // waits without a cuda_sync event (their stream inferred), bound by the timeline
  int64_t inferred_untimed = 0;                 // ... and by program order
  int64_t other_threads = 0;                    // calls from other host threads that put work on the GPU (merged in time order)
  int64_t long_calls = 0;                       // launches and event calls that took over kLongCallNs with the GPU idle: host work
  int64_t long_call_ns = 0;                     // ... the time they kept as host work
  int64_t over_cost_calls = 0;                  // calls that did not wait, of host time over their kind's cost: kept as host work
  int64_t over_cost_ns = 0;                     // ... the time kept
  int64_t late_returns = 0;                     // waits that returned later after their work than wait_return: kept as host work
  int64_t late_return_ns = 0;                   // ... the time kept
  int64_t under_cost_ns = 0;                    // host time between calls taken for calls that took less than their kind's cost
  int64_t steps = 0;
  std::string host_calls;          // the medians written as settings.host_calls, each with its count of calls
  std::string host_calls_too_few;  // ... and those of kinds with too few calls to be written (kMinCostCalls)
  std::string copy_rates;          // settings.copy_rates as written, each with its count of copies and bytes
  std::string wait_returns;        // the waits' returns (wait_return's samples) by kind of call: median and count
  std::string steps_from;  // which ranges became steps, where --steps did not say
  std::vector<std::string> notes;
  /// A few lines for the terminal.
  std::string text() const;
};

/// A rank's GPU as its trace's deviceProperties describe it (sms, memory 0: not given).
struct TraceGpu {
  std::string file, name;
  int sms = 0;
  int64_t memory = 0;  // bytes (totalGlobalMem)
};

struct ImportedTrace {
  Schedule schedule;
  std::vector<TraceGpu> gpus;  // per rank
  /// The trace's own timeline as a run of `schedule` (times from the first call).
  RunRecord measured;
  ImportSummary summary;
};

/// Imports one trace per rank (ranks from each trace's distributedInfo, else
/// the order given). InputError naming the file on a missing, malformed or
/// unusable trace.
ImportedTrace import_traces(const std::vector<std::string>& paths, const ImportOptions& options = {});

}  // namespace osim::kineto
