#include "report/op_table.hpp"

#include <cstdint>
#include <functional>
#include <unordered_map>

#include <fmt/format.h>

#include "report/trace.hpp"

namespace osim {

namespace {

// The table's rows of two ranks read the same but for the rank and its GPU.
bool same_rows(const RunRecord& r, size_t a, size_t b) {
  const RankSummary &x = r.ranks[a], &y = r.ranks[b];
  if (x.end != y.end || x.peak_vram != y.peak_vram || x.peak_parts != y.peak_parts) return false;
  const std::vector<OpRecord>&p = r.ops[a], &q = r.ops[b];
  if (p.size() != q.size()) return false;
  for (size_t i = 0; i < p.size(); ++i) {
    const OpRecord &u = p[i], &v = q[i];
    if (u.issue != v.issue || u.start != v.start || u.end != v.end || u.op->kind != v.op->kind || u.op->stream != v.op->stream ||
        u.op->label != v.op->label)
      return false;
  }
  return true;
}

// A hash of what same_rows compares: ranks that differ mostly differ here.
size_t rows_hash(const RunRecord& r, size_t rank) {
  size_t h = std::hash<int64_t>{}(r.ranks[rank].end.ps()) ^ (r.ops[rank].size() * 0x9e3779b97f4a7c15ULL);
  for (const OpRecord& rec : r.ops[rank])
    h = (h * 1099511628211ULL) ^ static_cast<size_t>(rec.start.ps() * 31 + rec.end.ps() + static_cast<int64_t>(rec.op->kind));
  return h;
}

// "0-3,8" for sorted ranks; past 8 runs of ranks, the first 3 and the count ("4,8,12,… (60)").
std::string short_ranges(const std::vector<int>& ranks) {
  size_t runs = 0;
  for (size_t i = 0; i < ranks.size(); ++i) runs += i == 0 || ranks[i] != ranks[i - 1] + 1;
  if (runs <= 8) return index_ranges(ranks);
  std::vector<int> head;
  for (size_t i = 0, n = 0; i < ranks.size(); ++i) {
    n += i == 0 || ranks[i] != ranks[i - 1] + 1;
    if (n > 3) break;
    head.push_back(ranks[i]);
  }
  return fmt::format("{},… ({})", index_ranges(head), ranks.size());
}

}  // namespace

size_t op_table_lines(const RunRecord& r, const std::vector<char>* among) {
  size_t lines = 1;
  for (size_t rank = 0; rank < r.ops.size(); ++rank)
    if (among == nullptr || (*among)[rank] != 0) lines += 3 + r.ops[rank].size();
  return lines;
}

OpTableSelection select_op_table(const RunRecord& r, size_t max_lines, const std::vector<char>* among) {
  const size_t nranks = r.ops.size();
  const auto candidate = [among](size_t rank) { return among == nullptr || (*among)[rank] != 0; };
  OpTableSelection sel;
  sel.rank.assign(nranks, 1);
  sel.after.assign(nranks, "");
  const size_t whole = op_table_lines(r, among);  // the candidates' whole table
  if (whole <= max_lines) {
    if (among != nullptr) sel.everything = false, sel.rank = *among;
    return sel;
  }
  // Why ranks or ops were left out, and how to have them all.
  const std::string why = among == nullptr
                              ? fmt::format("the default past {} lines; every rank's: {}", max_lines, whole)
                              : fmt::format("the default past {} ops in the run: the trace's ranks, within {} lines", kOpsRecordedAll, max_lines);

  // Groups of ranks with the same rows, ordered by their first rank.
  std::vector<std::vector<int>> groups;
  std::unordered_multimap<size_t, size_t> by_hash;  // hash -> group
  for (size_t rank = 0; rank < nranks; ++rank) {
    if (!candidate(rank)) continue;
    const size_t h = rows_hash(r, rank);
    bool placed = false;
    for (auto [it, end] = by_hash.equal_range(h); it != end && !placed; ++it)
      if (same_rows(r, static_cast<size_t>(groups[it->second].front()), rank)) groups[it->second].push_back(static_cast<int>(rank)), placed = true;
    if (!placed) by_hash.emplace(h, groups.size()), groups.push_back({static_cast<int>(rank)});
  }
  // The groups in order while they fit (the first always, its rows cut where they alone pass the bound).
  sel.everything = false;
  sel.rank.assign(nranks, 0);
  size_t lines = 1, shown = 0, alike = 0, cut_rank = 0, cut_rows = 0;
  std::vector<int> printed;
  for (const std::vector<int>& g : groups) {
    const size_t first = static_cast<size_t>(g.front());
    const size_t alike_line = g.size() > 1 ? 1 : 0;
    size_t need = 3 + r.ops[first].size() + alike_line;
    if (shown > 0 && lines + need > max_lines) break;
    if (lines + need > max_lines) {
      // Its rank line, column heading, first rows, the line saying the rest, the alike line.
      cut_rank = first;
      cut_rows = max_lines > lines + 4 + alike_line ? max_lines - lines - 4 - alike_line : 1;
      sel.rows.assign(nranks, SIZE_MAX);
      sel.rows[first] = cut_rows;
      need = 4 + cut_rows + alike_line;
    }
    lines += need;
    ++shown;
    sel.rank[first] = 1;
    printed.push_back(g.front());
    alike += g.size() - 1;
    if (g.size() > 1)
      sel.after[first] = fmt::format("(rank{} {}: the same ops at the same times)", g.size() == 2 ? "" : "s",
                                     short_ranges(std::vector<int>(g.begin() + 1, g.end())));
  }
  const size_t left_out = nranks - printed.size() - alike;
  if (!sel.rows.empty()) {
    // One rank's rows, cut: said by op, and the other ranks by count.
    sel.note = fmt::format(
        "the per-op table holds ops 0-{} of rank {}'s {}{}{} ({}): --ops-all for every op{}", cut_rows - 1, cut_rank, r.ops[cut_rank].size(),
        alike > 0 ? fmt::format(", {} more rank{} with the same ops at the same times", alike, alike == 1 ? "" : "s") : "",
        left_out > 0 ? fmt::format(", {} other rank{} left out", left_out, left_out == 1 ? "" : "s") : "",
        among == nullptr ? fmt::format("the default past {} lines; all of it: {}", max_lines, whole) : why, among == nullptr ? "" : " of every rank");
    return sel;
  }
  sel.note = fmt::format("the per-op table holds rank{} {} of {}{}{} ({}): --ops-all for every rank", printed.size() == 1 ? "" : "s",
                         short_ranges(printed), nranks, alike > 0 ? fmt::format(", {} more with the same ops at the same times", alike) : "",
                         left_out > 0 ? fmt::format(", {} left out", left_out) : "", why);
  return sel;
}

}  // namespace osim
