// WindowedSamples keeps what a trace of some windows writes of a run's link
// samples: those in a window, and before each window each resource's last
// sample since the one before (in resource order); a sample at the instant
// and on the resource of the last replaces it.
#include <doctest/doctest.h>

#include <tuple>
#include <vector>

#include "schedule/link_samples.hpp"

using namespace osim;

namespace {

using Row = std::tuple<int64_t, int, double>;  // time (ps), resource, bytes/s

std::vector<Row> rows(const std::vector<LinkSample>& v) {
  std::vector<Row> out;
  for (const LinkSample& s : v) out.emplace_back(s.time.ps(), s.resource, s.bytes_per_s);
  return out;
}

void feed(WindowedSamples& w) {
  const std::vector<Row> in = {{5, 0, 1}, {6, 1, 2}, {7, 0, 3}, {12, 0, 4}, {15, 1, 5}, {25, 1, 6}, {26, 1, 7}, {26, 1, 8}, {27, 0, 9}, {45, 0, 10}};
  for (const auto& [t, r, v] : in) w.add(Time::from_ps(t), r, v);
}

}  // namespace

TEST_CASE("windowed link samples: the windows' own, each resource's last before a window, none after the last") {
  WindowedSamples w({{10, 20}, {30, 40}});
  feed(w);
  // Before [10, 20): resource 0's last (7) and 1's (6), in resource order; in it 12 and 15;
  // before [30, 40): 0's 27 and 1's 26 (8 replaced 7 at its instant); 45 opens no window: dropped.
  const std::vector<Row> want = {{7, 0, 3}, {6, 1, 2}, {12, 0, 4}, {15, 1, 5}, {27, 0, 9}, {26, 1, 8}};
  CHECK(rows(w.take()) == want);
}

TEST_CASE("windowed link samples: no windows keep every sample, one per resource and instant") {
  WindowedSamples w;
  feed(w);
  CHECK(rows(w.take()) == std::vector<Row>{{5, 0, 1}, {6, 1, 2}, {7, 0, 3}, {12, 0, 4}, {15, 1, 5}, {25, 1, 6}, {26, 1, 8}, {27, 0, 9}, {45, 0, 10}});
}
