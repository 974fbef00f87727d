// Which ranks and steps a trace holds (report/trace.hpp): the flags' ranges
// read or refused, the default selection past kTraceRankSteps, and a choice
// the run cannot meet refused by its flag.
#include <doctest/doctest.h>

#include "core/errors.hpp"
#include "report/trace.hpp"

using namespace osim;

namespace {

// A run of `ranks` ranks (alike in groups of `group`) and `steps` steps of 1 s after 0.5 s of set-up.
Metrics run_of(int ranks, int steps, int group) {
  Metrics m;
  for (int r = 0; r < ranks; ++r) {
    RankMetrics rm;
    rm.rank = r;
    rm.compute_busy = Time::from_ps(int64_t{1000000} * (1 + r / group));  // alike within a group
    m.per_rank.push_back(rm);
  }
  for (int i = 0; i < steps; ++i)
    m.steps.push_back(StepMetrics{i, Time::from_ps(500'000'000'000 + int64_t{i} * 1'000'000'000'000),
                                  Time::from_ps(500'000'000'000 + int64_t{i + 1} * 1'000'000'000'000)});
  return m;
}

}  // namespace

TEST_CASE("index ranges are read as the indices they hold, and anything else is refused with the form to write") {
  CHECK(parse_index_ranges("0-1,39", "--trace-steps") == std::vector<int>{0, 1, 39});
  CHECK(parse_index_ranges("5,2-3,3", "--trace-ranks") == std::vector<int>{2, 3, 5});
  CHECK(parse_index_ranges("7", "--trace-ranks") == std::vector<int>{7});
  CHECK(index_ranges({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8");
  for (const char* bad : {"", "a", "1-", "-1", "1,,2", "0-x", "1.5", "2 ", "99999999999"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(parse_index_ranges(bad, "--trace-steps"), doctest::Contains("--trace-steps: error: "), InputError);
    CHECK_THROWS_WITH_AS(parse_index_ranges(bad, "--trace-steps"), doctest::Contains("e.g. '0-1,39'"), InputError);
  }
  CHECK_THROWS_WITH_AS(parse_index_ranges("9-3", "--trace-ranks"), "--trace-ranks: error: the range '9-3' runs backwards: write it '3-9'", InputError);
}

TEST_CASE("a run within the rank-step limit is traced whole, a larger one its first steps") {
  const TraceSelection small = select_trace({}, run_of(4, kTraceRankSteps / 4, 4));
  CHECK(small.everything);
  CHECK(small.note.empty());

  // 4 ranks x 40 steps: every rank, the first 32 / 4 = 8 steps, and the time before and after the steps.
  const TraceSelection big = select_trace({}, run_of(4, 40, 4));
  REQUIRE_FALSE(big.everything);
  CHECK(big.rank == std::vector<char>{1, 1, 1, 1});
  CHECK(big.steps == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  REQUIRE(big.windows.size() == 2);
  CHECK(big.windows[0].second == 500'000'000'000 + 8 * int64_t{1'000'000'000'000});  // up to step 8's start
  CHECK(big.windows[1].first == 500'000'000'000 + 40 * int64_t{1'000'000'000'000});  // from the last step's end
  CHECK(big.note ==
        "the trace holds steps 0-7 of 0-39, all 4 ranks (the default past 32 ranks x steps): --trace-all for all of it, --trace-steps and "
        "--trace-ranks to choose");

  TraceRequest all;
  all.all = true;
  CHECK(select_trace(all, run_of(4, 40, 4)).everything);
}

TEST_CASE("a large run's default traces the first ranks of each group of alike ranks") {
  // 64 ranks in 4 groups of 16: ranks 0-1, 16-17, 32-33, 48-49; 32 / 8 = 4 steps.
  const TraceSelection sel = select_trace({}, run_of(64, 40, 16));
  REQUIRE_FALSE(sel.everything);
  std::vector<int> ranks;
  for (size_t r = 0; r < sel.rank.size(); ++r)
    if (sel.rank[r]) ranks.push_back(static_cast<int>(r));
  CHECK(ranks == std::vector<int>{0, 1, 16, 17, 32, 33, 48, 49});
  CHECK(sel.steps == std::vector<int>{0, 1, 2, 3});
  // 1,024 ranks each unlike the others: 16 ranks (the first of each group: 0-15), 2 steps.
  const TraceSelection wide = select_trace({}, run_of(1024, 40, 1));
  CHECK(std::count(wide.rank.begin(), wide.rank.end(), 1) == kTraceRanks);
  CHECK(wide.steps == std::vector<int>{0, 1});
  CHECK(wide.note.find("ranks 0-15 of 1024") != std::string::npos);
}

TEST_CASE("a chosen selection holds what was asked, and a rank or step the run lacks is refused by its flag") {
  TraceRequest req;
  req.steps = {0, 1, 39};
  req.ranks = {2};
  const TraceSelection sel = select_trace(req, run_of(4, 40, 4));
  CHECK(sel.rank == std::vector<char>{0, 0, 1, 0});
  CHECK(sel.steps == std::vector<int>{0, 1, 39});
  // Before step 0 and steps 0-1 joined; step 39 and after it joined.
  REQUIRE(sel.windows.size() == 2);
  CHECK(sel.windows[0].second == 500'000'000'000 + 2 * int64_t{1'000'000'000'000});
  CHECK(sel.windows[1].first == 500'000'000'000 + 39 * int64_t{1'000'000'000'000});
  CHECK(sel.note.find("steps 0-1,39 of 0-39, rank 2 of 4 (as asked)") != std::string::npos);
  // Asking for everything by name is the full trace.
  req.ranks = {0, 1, 2, 3};
  req.steps = {};
  for (int i = 0; i < 40; ++i) req.steps.push_back(i);
  CHECK(select_trace(req, run_of(4, 40, 4)).everything);

  TraceRequest bad;
  bad.ranks = {4};
  CHECK_THROWS_WITH_AS(select_trace(bad, run_of(4, 40, 4)), "--trace-ranks: error: the run has no rank 4 (its ranks are 0-3)", InputError);
  bad.ranks = {};
  bad.steps = {40};
  CHECK_THROWS_WITH_AS(select_trace(bad, run_of(4, 40, 4)), "--trace-steps: error: the run has no step 40 (its steps are 0-39)", InputError);
  CHECK_THROWS_WITH_AS(select_trace(bad, run_of(4, 0, 4)), doctest::Contains("the run has no steps"), InputError);
  bad.all = true;
  bad.steps = {1};
  CHECK_THROWS_WITH_AS(select_trace(bad, run_of(4, 40, 4)), doctest::Contains("--trace-all: error: it traces every rank"), InputError);
}
