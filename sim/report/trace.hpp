// The Perfetto (Chrome JSON) trace of a run, written event by event to a
// sink (a file as it is produced: memory for one event, not the document),
// of every rank and step or of a selection: a trace of every op of a
// 40-step, 4-rank run is ~200 MB, so past kTraceRankSteps ranks × steps the
// default keeps the first steps and a few ranks of each group of alike
// ranks, and says so in the trace and the summary.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "report/metrics.hpp"

namespace osim {

/// Default selection: at most this many ranks × steps traced (a rank-step of
/// a 4-rank Wan 2.2 720p run is ~1.2 MB of trace).
inline constexpr int kTraceRankSteps = 32;
/// Past kTraceRankSteps, every rank of a run of at most this many ranks; of a
/// larger one, the first kTraceRanksPerGroup of each group of alike ranks, up
/// to kTraceRanks in all.
inline constexpr int kTraceRanksAll = 8;
inline constexpr int kTraceRanksPerGroup = 2;
inline constexpr int kTraceRanks = 16;
/// The fabric's counters (a sample per change of a link's use, ~90 bytes of
/// trace each) are part of the budget: past kTraceLinkSamples samples, or
/// with ranks left out kTraceLinkSamplesPerRank per traced rank if fewer
/// (their links carry the ranks left out too), the busiest links' alone.
/// The README walk-through's 4 ranks write 328 k; the 128-rank cluster's 2
/// traced ranks cross 44 links, 2.4 M samples.
inline constexpr size_t kTraceLinkSamples = 400'000;
inline constexpr size_t kTraceLinkSamplesPerRank = 100'000;

/// Past this many ops in a run, records.json (run --records) and the per-op
/// table (--ops) hold the trace's ranks alone, every op of theirs, and say so
/// (--records-all, --ops-all: every rank); ~100 bytes an op either way.
inline constexpr size_t kOpsRecordedAll = 1'000'000;

/// What the user asked for (run's --trace-ranks, --trace-steps, --trace-all).
struct TraceRequest {
  std::vector<int> ranks, steps;  // chosen indices (parse_index_ranges); empty: the default
  bool all = false;               // every rank and step, however large
  bool all_links = false;         // every link's counter, however many samples (all: too)
};

/// "0-1,39" as the indices it holds, ascending, once each. InputError naming
/// `flag` and the form to write for anything else (a negative or reversed
/// range, an empty part, a non-number).
std::vector<int> parse_index_ranges(const std::string& text, const std::string& flag);

/// "0-7,16,18-19": sorted indices as ranges.
std::string index_ranges(const std::vector<int>& sorted);

/// The ranks and times a trace holds.
struct TraceSelection {
  bool everything = true;          // nothing left out: every event, as the full trace has it
  std::vector<char> rank;          // per rank: traced
  std::vector<int> steps;          // the traced steps' indices (all of them with everything)
  std::vector<std::pair<int64_t, int64_t>> windows;  // traced [from, to) in ps, sorted, disjoint
  std::vector<char> link;                            // per topology resource: its counter traced (empty: every one)
  std::string note;                                  // what was left out and how to get it ("" when nothing was)
};

/// The selection `req` makes of the run `m` (its ranks, its steps: the time
/// from each "step N" marker to the next on rank 0's compute stream; what
/// runs before the first step and after the last is always traced). With no
/// choice, every rank and step up to kTraceRankSteps ranks × steps, else the
/// default above. InputError naming the flag for a rank or step the run does
/// not have, or --trace-all beside a choice.
TraceSelection select_trace(const TraceRequest& req, const Metrics& m);

/// The fabric counters `sel` keeps of `r`'s link samples: every link's when
/// the trace would hold at most `budget` of their samples (0: the default
/// above), else those of the busiest links
/// (most bytes over the run, RunRecord::resource_bytes) whose samples fit in
/// it, with a sentence added to `sel.note` saying how many links and samples
/// were left out and that --trace-all-links keeps them.
void select_trace_links(TraceSelection& sel, const hw::Topology& topo, const RunRecord& r, size_t budget = 0);

using TraceSink = std::function<void(std::string_view)>;

/// Chrome/Perfetto trace JSON of the selected ranks and windows: tracks per
/// host thread, stream and copy engine; counters for VRAM and (with link
/// samples) every resource's bandwidth; arrows from event records to the
/// waits they satisfy. A slice, instant or arrow is kept when it starts in a
/// window; a counter also keeps, at each window's start, its last sample
/// before it (its value then); of the links in `sel.link` alone. With a
/// note (something left out), the note is the trace's otherData and a global
/// instant at 0.
void write_trace(const Schedule& s, const hw::Topology& topo, const RunRecord& r, const TraceSelection& sel, const TraceSink& out);
/// write_trace into the file `path` as it is made, in bounded memory (io's
/// OutputFile: atomic, gzip-compressed where `path` ends in .gz).
void write_trace_file(const std::filesystem::path& path, const Schedule& s, const hw::Topology& topo, const RunRecord& r,
                      const TraceSelection& sel = {});
/// The whole trace as one string (every rank and step).
std::string trace_json(const Schedule& s, const hw::Topology& topo, const RunRecord& r);

}  // namespace osim
