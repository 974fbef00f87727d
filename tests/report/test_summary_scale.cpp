// The summary of a 1,024-rank run stays a screen (report/summary.cpp): alike
// ranks in one row a group, past 8 groups the spread over ranks, never a row
// a rank.
#include <doctest/doctest.h>

#include <algorithm>

#include "hw/fabric.hpp"
#include "hw/topology.hpp"
#include "report/metrics.hpp"

using namespace osim;

namespace {

constexpr int kRanks = 1024;

// The summary names no link here (the run's records move no bytes): any topology will do.
const hw::Topology& topology() {
  static const hw::Topology t(hw::parse_topology_string(
      "name: one\nnodes:\n  - {name: cpu0, kind: cpu, memory: 64 GiB}\n"
      "  - {name: gpu0, kind: gpu, memory: 80 GiB, hbm_bandwidth: 1000 GB/s, sms: 100, copy_engines: 3, peak_tflops: {bf16: 100}}\n"
      "links:\n  - {a: gpu0, b: cpu0, kind: pcie, bandwidth: 10 GB/s, latency: 0 us}\n",
      "one.yaml"));
  return t;
}

// 1,024 ranks whose compute time is 1 ms times (1 + group(r)).
Metrics run_of(int (*group)(int)) {
  Metrics m;
  m.makespan = Time::from_ps(int64_t{2'000'000'000'000});
  for (int r = 0; r < kRanks; ++r) {
    RankMetrics rm;
    rm.rank = r;
    rm.gpu = "gpu" + std::to_string(r % 8);
    rm.compute_busy = Time::from_ps(int64_t{1'000'000'000} * (1 + group(r)));
    rm.peak_vram = Bytes{1} << 30;
    m.per_rank.push_back(rm);
  }
  return m;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  for (size_t at = 0; at < s.size();) {
    const size_t nl = s.find('\n', at);
    out.push_back(s.substr(at, nl - at));
    at = nl == std::string::npos ? s.size() : nl + 1;
  }
  return out;
}

// Bounded: a handful of lines, none past 120 columns, none a single rank's row.
void check_bounded(const std::vector<std::string>& lines) {
  CHECK(lines.size() <= 16);
  for (const std::string& l : lines) {
    CAPTURE(l);
    CHECK(l.size() <= 120);
    CHECK(!l.starts_with("  1023 "));
  }
}

}  // namespace

TEST_CASE("a 1,024-rank run's summary groups alike ranks into a row each") {
  const Metrics m = run_of([](int r) { return r % 4; });  // 4 groups of 256, interleaved
  const std::vector<std::string> lines = lines_of(format_summary(m, topology(), RunRecord{}, "head"));
  check_bounded(lines);
  REQUIRE(std::find(lines.begin(), lines.end(), "  1024 ranks in 4 groups of alike ranks (every column the same):") != lines.end());
  // Group 1 (ranks 1, 5, 9, …): three runs of ranks shown, then the count.
  const auto row = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.starts_with("  1,5,9,… (256) "); });
  REQUIRE(row != lines.end());
  CHECK(row->find(format_time(Time::from_ps(2'000'000'000))) != std::string::npos);
  CHECK(row->ends_with(format_bytes(double(Bytes{1} << 30))));
}

TEST_CASE("a 1,024-rank run of more than 8 kinds of rank prints the spread over ranks") {
  const Metrics m = run_of([](int r) { return r; });  // every rank its own: 1 ms … 1,024 ms
  const std::string summary = format_summary(m, topology(), RunRecord{}, "head");
  const std::vector<std::string> lines = lines_of(summary);
  check_bounded(lines);
  CHECK(summary.find("  1024 ranks, spread over them:") != std::string::npos);
  // min at rank 0, the median of 1 … 1,024 ms (512.5 ms), max at rank 1,023.
  const auto row = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.starts_with("    compute "); });
  REQUIRE(row != lines.end());
  CHECK(row->find(format_time(Time::from_ps(1'000'000'000)) + " (0)") != std::string::npos);
  CHECK(row->find(" " + format_time(Time::from_ps(512'500'000'000)) + " ") != std::string::npos);
  CHECK(row->ends_with(format_time(Time::from_ps(1'024'000'000'000)) + " (1023)"));
}
