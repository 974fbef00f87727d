// Statistics the reports share: the median and Spearman's rank correlation.
#include <doctest/doctest.h>

#include "core/stats.hpp"

using namespace osim;

TEST_CASE("median of odd and even counts, and of none") {
  CHECK(median({3, 1, 2}) == 2);
  CHECK(median({4, 1, 3, 2}) == 2.5);
  CHECK(median({}) == 0);
}

TEST_CASE("Spearman's rank correlation: same order 1, reversed -1, ties at their mean rank") {
  CHECK(spearman({1, 2, 3, 4}, {10, 20, 30, 400}) == doctest::Approx(1));
  CHECK(spearman({1, 2, 3, 4}, {4, 3, 2, 1}) == doctest::Approx(-1));
  CHECK(ranks_of({5, 1, 5, 2}) == std::vector<double>{3.5, 1, 3.5, 2});
  // Ranks (1, 2, 3, 4) against (1, 3, 2, 4): 1 - 6 * 2 / (4 * 15) = 0.8.
  CHECK(spearman({1, 2, 3, 4}, {1, 3, 2, 4}) == doctest::Approx(0.8));
  CHECK(spearman({1, 1, 1}, {1, 2, 3}) == 0);  // no spread: no correlation to speak of
}
