// The per-op table's ranks (report/op_table.hpp): every rank's rows within
// kOpTableLines, else the groups of ranks with the same rows once each, in
// order while they fit (the first's rows cut where they alone pass it), and a
// note saying what was left out.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>

#include "gpu/executor.hpp"
#include "report/op_table.hpp"

using namespace osim;

namespace {

// `ranks` ranks of `ops` kernels each on one stream; rank r's k-th op runs
// [k, k+1) us shifted by variant(r) ns and is labelled "k" + label(r).
struct Run {
  Schedule s;
  ExecResult r;
  std::vector<std::unique_ptr<Op>> storage;
};

std::unique_ptr<Run> run_of(
    int ranks, int ops, int (*variant)(int), std::string (*label)(int) = [](int) { return std::string(); }) {
  auto run = std::make_unique<Run>();
  run->s.name = "gen";
  run->s.streams = {StreamDecl{"compute", 0}};
  run->s.programs.resize(static_cast<size_t>(ranks));
  for (int rank = 0; rank < ranks; ++rank) {
    std::vector<OpRecord> recs;
    const int64_t shift = int64_t{1000} * variant(rank);
    for (int k = 0; k < ops; ++k) {
      auto op = std::make_unique<Op>();
      op->kind = OpKind::Kernel;
      op->stream = 0;
      op->label = std::to_string(k) + label(rank);
      OpRecord rec;
      rec.op = op.get();
      rec.issue = Time::from_ps(shift);
      rec.start = Time::from_ps(int64_t{1'000'000} * k + shift);
      rec.end = Time::from_ps(int64_t{1'000'000} * (k + 1) + shift);
      recs.push_back(rec);
      run->storage.push_back(std::move(op));
    }
    run->r.ops.push_back(std::move(recs));
    RankSummary sum;
    sum.gpu = "gpu" + std::to_string(rank);
    sum.end = Time::from_ps(int64_t{1'000'000} * ops + shift);
    run->r.ranks.push_back(sum);
  }
  return run;
}

size_t lines(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

std::string table(const Run& run, const OpTableSelection& sel) {
  return format_exec_report(run.s, run.r, sel.everything ? nullptr : &sel.rank, &sel.after, &sel.rows);
}

}  // namespace

TEST_CASE("a table within the bound holds every rank, unchanged") {
  // 2 ranks of 60 ops: 1 + 2 x (3 + 60) = 127 lines.
  auto two = run_of(2, 60, [](int r) { return r; });
  CHECK(op_table_lines(two->r) == 127);
  const OpTableSelection all = select_op_table(two->r);
  CHECK(all.everything);
  CHECK(all.note.empty());
  CHECK(table(*two, all) == format_exec_report(two->s, two->r));
  CHECK(lines(table(*two, all)) == 127);
  // One rank within the bound: 1 + 3 + 196 = 200 lines, whole.
  auto one = run_of(1, 196, [](int) { return 0; });
  CHECK(select_op_table(one->r).everything);
}

TEST_CASE("one rank past the bound: its first ops and a line saying the rest") {
  auto one = run_of(1, 1000, [](int) { return 0; });
  CHECK(op_table_lines(one->r) == 1004);
  const OpTableSelection sel = select_op_table(one->r);
  REQUIRE_FALSE(sel.everything);
  CHECK(sel.rank[0] == 1);
  // 200 = 1 heading + 3 for the rank + 195 ops + 1 line saying the rest.
  REQUIRE(sel.rows.size() == 1);
  CHECK(sel.rows[0] == 195);
  CHECK(sel.note == "the per-op table holds ops 0-194 of rank 0's 1000 (the default past 200 lines; all of it: 1004): --ops-all for every op");
  const std::string text = table(*one, sel);
  CHECK(lines(text) == kOpTableLines);
  CHECK(text.find("\n   194 kernel ") != std::string::npos);
  CHECK(text.find("\n   195 kernel ") == std::string::npos);
  CHECK(text.ends_with("\n  (ops 195-999 of rank 0 left out)\n"));
  // A smaller bound cuts sooner: 1 + 3 + 10 + 1.
  const OpTableSelection small = select_op_table(one->r, 15);
  CHECK(small.rows[0] == 10);
  CHECK(lines(table(*one, small)) == 15);
  // Without the selection (--ops-all) every row.
  CHECK(lines(format_exec_report(one->s, one->r)) == 1004);
}

TEST_CASE("several ranks whose first group alone passes the bound: its rows cut, the alike ranks named, the others counted") {
  // Ranks 0 and 2 alike, 1 and 3 alike: rank 0's 500 rows cut, its alike line, ranks 1 and 3 left out.
  auto run = run_of(4, 500, [](int r) { return r % 2; });
  const OpTableSelection sel = select_op_table(run->r);
  REQUIRE_FALSE(sel.everything);
  CHECK(std::count(sel.rank.begin(), sel.rank.end(), 1) == 1);
  CHECK(sel.rows[0] == 194);  // 200 = 1 + 3 + 194 + 1 + the alike line
  CHECK(sel.after[0] == "(rank 2: the same ops at the same times)");
  CHECK(sel.note ==
        "the per-op table holds ops 0-193 of rank 0's 500, 1 more rank with the same ops at the same times, 2 other ranks left out (the default "
        "past 200 lines; all of it: 2013): --ops-all for every op");
  const std::string text = table(*run, sel);
  CHECK(lines(text) == kOpTableLines);
  CHECK(text.ends_with("  (ops 194-499 of rank 0 left out)\n  (rank 2: the same ops at the same times)\n"));
}

TEST_CASE("64 ranks that ran the same ops at the same times: rank 0's rows and a line naming the others") {
  auto run = run_of(64, 15, [](int) { return 0; });
  CHECK(op_table_lines(run->r) == 1 + 64 * 18);  // 1,153 lines with every rank
  const OpTableSelection sel = select_op_table(run->r);
  REQUIRE_FALSE(sel.everything);
  CHECK(std::count(sel.rank.begin(), sel.rank.end(), 1) == 1);
  CHECK(sel.rank[0] == 1);
  CHECK(sel.after[0] == "(ranks 1-63: the same ops at the same times)");
  CHECK(sel.note ==
        "the per-op table holds rank 0 of 64, 63 more with the same ops at the same times (the default past 200 lines; every rank's: 1153): "
        "--ops-all for every rank");
  const std::string text = table(*run, sel);
  CHECK(lines(text) == 1 + 3 + 15 + 1);
  CHECK(text.find("rank 1 on") == std::string::npos);
}

TEST_CASE("64 ranks in 8 groups: one rank a group, in order, within the bound") {
  auto run = run_of(64, 15, [](int r) { return r % 8; });
  const OpTableSelection sel = select_op_table(run->r);
  REQUIRE_FALSE(sel.everything);
  for (int r = 0; r < 64; ++r) CHECK(sel.rank[static_cast<size_t>(r)] == (r < 8 ? 1 : 0));
  CHECK(sel.after[3] == "(ranks 11,19,27,35,43,51,59: the same ops at the same times)");
  CHECK(sel.note.starts_with("the per-op table holds ranks 0-7 of 64, 56 more with the same ops at the same times (the default"));
  CHECK(lines(table(*run, sel)) == 1 + 8 * 19);
}

TEST_CASE("64 ranks all different: the first ones that fit, the rest left out and said") {
  auto run = run_of(64, 15, [](int r) { return r; });
  const OpTableSelection sel = select_op_table(run->r);
  // 1 + 18 k <= 200: 11 ranks.
  for (int r = 0; r < 64; ++r) CHECK(sel.rank[static_cast<size_t>(r)] == (r < 11 ? 1 : 0));
  CHECK(sel.note ==
        "the per-op table holds ranks 0-10 of 64, 53 left out (the default past 200 lines; every rank's: 1153): --ops-all for every rank");
  const std::string text = table(*run, sel);
  CHECK(lines(text) == 1 + 11 * 18);
  CHECK(lines(text) <= kOpTableLines);
  // A larger bound holds more ranks; the whole table with a bound of its size.
  const OpTableSelection wider = select_op_table(run->r, 1 + 20 * 18);
  CHECK(std::count(wider.rank.begin(), wider.rank.end(), 1) == 20);
  CHECK(select_op_table(run->r, 1153).everything);
}

TEST_CASE("ranks at the same times under other labels are not alike") {
  // Equal times hash alike; the labels still tell them apart.
  auto run = run_of(
      16, 15, [](int) { return 0; }, [](int r) { return std::string(r % 2 ? "b" : "a"); });
  const OpTableSelection sel = select_op_table(run->r, 50);
  CHECK(sel.rank[0] == 1);
  CHECK(sel.rank[1] == 1);
  CHECK(sel.after[0] == "(ranks 2,4,6,8,10,12,14: the same ops at the same times)");
  CHECK(sel.after[1] == "(ranks 3,5,7,9,11,13,15: the same ops at the same times)");
  CHECK(lines(table(*run, sel)) == 1 + 2 * 19);
}

TEST_CASE("among some ranks (a run past kOpsRecordedAll ops: the trace's ranks' records alone): the same bound, the others left out") {
  // 8 ranks, records for ranks 0, 1 and 5 alone (the others hold none, as a bounded run's).
  auto run = run_of(8, 500, [](int r) { return r % 2; });
  const std::vector<char> traced = {1, 1, 0, 0, 0, 1, 0, 0};
  for (size_t r = 0; r < traced.size(); ++r)
    if (traced[r] == 0) run->r.ops[r].clear();
  const OpTableSelection sel = select_op_table(run->r, kOpTableLines, &traced);
  REQUIRE_FALSE(sel.everything);
  // Rank 0's rows cut to the bound (ranks 2, 4, 6 are not candidates, so not its alike ranks), ranks 1 and 5 left out with the rest.
  CHECK(std::count(sel.rank.begin(), sel.rank.end(), 1) == 1);
  CHECK(sel.rank[0] == 1);
  CHECK(sel.rows[0] == 195);
  CHECK(sel.after[0].empty());
  CHECK(sel.note ==
        "the per-op table holds ops 0-194 of rank 0's 500, 7 other ranks left out (the default past 1000000 ops in the run: the trace's ranks, "
        "within 200 lines): --ops-all for every op of every rank");
  CHECK(lines(table(*run, sel)) == kOpTableLines);
  // Candidates whose rows fit: all of them, no note (the caller names them), no other rank.
  auto small = run_of(8, 20, [](int r) { return r; });
  const OpTableSelection fit = select_op_table(small->r, kOpTableLines, &traced);
  CHECK_FALSE(fit.everything);
  CHECK(fit.rank == traced);
  CHECK(fit.note.empty());
  CHECK(lines(table(*small, fit)) == 1 + 3 * 23);
  // Ranks 1 and 5 alike among the candidates: 1 + 3 + 20 rows of rank 0 + 3 + 20 of rank 1 + its alike line fit, "rank 5".
  auto pairs = run_of(8, 40, [](int r) { return r % 2; });
  const OpTableSelection alike = select_op_table(pairs->r, 90, &traced);
  CHECK(alike.rank == std::vector<char>{1, 1, 0, 0, 0, 0, 0, 0});
  CHECK(alike.after[1] == "(rank 5: the same ops at the same times)");
  CHECK(alike.note ==
        "the per-op table holds ranks 0-1 of 8, 1 more with the same ops at the same times, 5 left out (the default past 1000000 ops in the run: "
        "the trace's ranks, within 90 lines): --ops-all for every rank");
}
