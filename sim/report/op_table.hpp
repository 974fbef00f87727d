// Which ranks the per-op table (`overlapsim run --ops`, and a small schedule
// file's default) prints. Every op of every rank is a line: a 64-rank schedule
// of 15 ops a rank is 1,153 lines. The default keeps the table within
// kOpTableLines: every rank where that fits, else the ranks in order, each
// group of ranks that ran the same ops at the same times printed once (its
// first rank's rows, then a line naming the others), while the groups fit;
// at least the first, whose rows are cut to the bound where they alone pass
// it (a single rank of 1,000 ops: its first ops and a line saying how many
// more). A note says what was left out and that --ops-all prints it all.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "schedule/run_record.hpp"

namespace osim {

/// The default table's bound in lines.
inline constexpr size_t kOpTableLines = 200;

struct OpTableSelection {
  bool everything = true;          // every rank's rows
  std::vector<char> rank;          // per rank: its rows printed
  std::vector<std::string> after;  // per rank: the line after its rows ("ranks 1-7: ..."), "" for none
  std::vector<size_t> rows;        // per rank: its first rows printed, the rest said in a line; empty: every row
  std::string note;                // what was left out and how to get it ("" when nothing was)
};

/// The lines the whole table of `r` takes (its heading, and per rank a blank
/// line, the rank's line, the column heading and a line an op); with `among`
/// (per rank: a candidate), of those ranks alone.
size_t op_table_lines(const RunRecord& r, const std::vector<char>* among = nullptr);

/// The selection above of `r`'s ranks (every one with per-op records) within
/// `max_lines` lines. With `among` (per rank: a candidate), of those ranks
/// alone, the others left out (a run past kOpsRecordedAll ops keeps the
/// trace's ranks' records alone): where their rows fit, all of them and no
/// note (the caller says which ranks), else the note says why.
OpTableSelection select_op_table(const RunRecord& r, size_t max_lines = kOpTableLines, const std::vector<char>* among = nullptr);

}  // namespace osim
