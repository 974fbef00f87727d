// What `overlapsim run` reports: metrics (a stable JSON schema, documented in
// docs/formats/metrics.md; measured runs get the same one), a ten-second summary, the
// copy bandwidth histogram, bottleneck attribution (the Perfetto trace:
// report/trace.hpp).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hw/fabric.hpp"
#include "schedule/run_record.hpp"

namespace osim {

struct RankMetrics {
  int rank = 0;
  std::string gpu;
  Time end;
  Bytes peak_vram = 0;
  std::array<Bytes, kMemParts> peak_parts{};  // what each part (MemPart) held at the peak
  Bytes peak_vram_held = 0;                   // with memory freed on streams not there yet
  Time compute_busy;                          // union of kernel intervals
  Time comm;                                  // union of collective intervals (including waiting for peers)
  Time comm_exposed;                          // collective time with no kernel running
  Time copy;                                  // union of copy intervals
  Time copy_stall;                            // compute stream idle while a copy runs, plus copies on the compute stream
  Time idle_other;                            // other compute-stream gaps (host, launch, syncs)
  double overlap_efficiency = 0;              // seed 004: (compute + comm - total) / comm, comm = collectives and copies
};

struct StepMetrics {
  int index = 0;
  Time start, end;
};

// A request stage on rank 0 (report/stages.cpp): its window and where its
// time went: its kernels, its copies in and out, its collectives with none
// of its kernels running (exchange), and `other`, the window less its ops'
// union (a CPU stage's host work, launches, gaps).
struct StageMetrics {
  std::string name;
  Time start, end;
  Time compute, copy_in, copy_out, exchange, other;
  std::optional<Bytes> peak_vram;  // the most VRAM live tensors held while it ran; none where the run kept no VRAM of it
  std::array<Bytes, kMemParts> peak_parts{};  // what each part (MemPart) held at that peak
};

struct HistogramBin {
  double lo_GBps, hi_GBps;
  int64_t count = 0;
  double bytes = 0;
  Time time;
};

struct Metrics {
  std::string name, topology;
  std::string source = "simulated";  // or "measured" (overlapsim-validate run)
  int ranks = 0;
  Time makespan;
  std::vector<StepMetrics> steps;  // rank 0's compute stream, from "step N" markers
  std::vector<StageMetrics> stages;  // rank 0's request stages, from "stage NAME" markers (none: the steps alone)
  std::vector<RankMetrics> per_rank;
  double bytes_h2d = 0, bytes_d2h = 0, bytes_p2p = 0, bytes_d2d = 0, bytes_collective = 0;
  std::vector<HistogramBin> copy_histogram;
};

/// From the run's spans (ExecOptions::keep_records = false) or else its records.
Metrics compute_metrics(const Schedule& s, const hw::Topology& topo, const RunRecord& r);
/// From spans gathered elsewhere (the records of a measured run).
Metrics compute_metrics(const Schedule& s, const hw::Topology& topo, const RunRecord& r, const RunSpans& spans);
nlohmann::ordered_json metrics_json(const Metrics& m, const hw::Topology& topo, const RunRecord& r);
std::string format_summary(const Metrics& m, const hw::Topology& topo, const RunRecord& r, const std::string& headline);
/// Groups of alike ranks (every column of the summary's rank table the
/// same), each ascending, ordered by their first rank.
std::vector<std::vector<int>> alike_rank_groups(const Metrics& m);
/// Rank 0's request stages from its stage spans and VRAM windows.
std::vector<StageMetrics> stage_metrics(const StageTally& tally, const RunRecord& r);
/// The steps' time: the first step's start to the last's end (zero without steps).
Time request_steps_time(const Metrics& m);
/// The stages' windows, summed.
Time request_stages_time(const Metrics& m);
/// metrics.json's "request" and "stages" (where the run has stages).
void stages_json(nlohmann::ordered_json& j, const Metrics& m);
/// The summary's request line and stage table (where the run has stages).
std::string format_stages(const Metrics& m);
/// The slices of the trace's request track, from rank 0's records: each
/// stage's window and the steps' (first "step N" marker to the steps' end).
struct RequestSlice {
  std::string name;
  Time start, end;
};
std::vector<RequestSlice> request_slices(const Schedule& s, const RunRecord& r);

}  // namespace osim
