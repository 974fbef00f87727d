// The records file (`overlapsim.records/v1`): for every op of every rank its
// class, label, and the host issue/return and GPU start/end times, written
// alike by `overlapsim run --records` (simulated) and `overlapsim-validate
// run` (measured: CUDA events on real GPUs), so one report and one
// comparison serve both (docs/formats/records.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedule/run_record.hpp"
#include "schedule/schedule.hpp"

namespace osim {

/// The class an op is compared in: "gemm", "attention (self)", "attention
/// (cross)", "memory kernel", "kernel"; "h2d", "h2d pageable", "d2h", ...;
/// "all_to_all nccl", "all_to_all pairwise", "all_gather", ...; otherwise the
/// op kind ("marker", "stream_sync", ...).
std::string op_class(const Op& op);
/// Whether an op of this class has a duration worth comparing (kernels, copies, collectives).
bool timed_class(const Op& op);

struct RecordOp {
  int index = 0;
  std::string cls, label;
  double issue = 0, returned = 0, start = 0, end = 0;  // ns from the run's start
};
struct RecordRank {
  int rank = 0;
  std::string gpu;
  std::vector<RecordOp> ops;
};
struct Records {
  std::string file, source, name, topology;
  std::vector<RecordRank> ranks;
  nlohmann::ordered_json meta;  // whatever else the writer recorded (environment, repeats), in its order
  double makespan_ns = 0;
};

/// The records file for a run of `s` (every op that ran; of the ranks whose
/// entry in `ranks` is set where `ranks` is given). `meta` is stored as is.
nlohmann::ordered_json records_json(const Schedule& s, const RunRecord& r, const std::string& topology, const std::string& source,
                                    const nlohmann::ordered_json& meta = nlohmann::ordered_json::object(), const std::vector<char>* ranks = nullptr);
/// Text of a records file: one op per line (diffable), deterministic.
std::string records_text(const nlohmann::ordered_json& records);
/// Reads a records file; InputError naming the file on anything malformed.
Records read_records(const std::string& path);
Records parse_records(const nlohmann::json& j, const std::string& file);
/// How many runs of the schedule went back to back before the one recorded:
/// `overlapsim-validate run` runs warm-up + repeat times without a pause and
/// records the median; its meta says which (warmup, makespans_s). 0 for
/// records without that meta. InputError naming the file where the meta does
/// not hold the recorded run.
int runs_before_recorded(const Records& r);

/// The run the records hold, as a run of `s`: each op's times; each rank's
/// GPU (as recorded), end (its last op's end or return) and VRAM (its
/// allocations, as the schedule gives them). InputError when the records are
/// not of this schedule (ranks, op count or labels differ), saying what the
/// writer left out where its meta's `left_out` says so.
RunRecord run_record_of(const Schedule& s, const Records& rec);

}  // namespace osim
