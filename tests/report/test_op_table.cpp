// The per-op table's ranks (report/op_table.hpp): every rank's rows within
// kOpTableLines, else the groups of ranks with the same rows once each, in
// order while they fit, and a note saying what was left out.
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
  return format_exec_report(run.s, run.r, sel.everything ? nullptr : &sel.rank, &sel.after);
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
  // One rank is never cut, however long.
  auto one = run_of(1, 1000, [](int) { return 0; });
  CHECK(select_op_table(one->r).everything);
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
