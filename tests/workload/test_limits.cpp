// Numbers at the edges and shapes a careless input gives: each refused with
// the file, the line and what is wrong, never wrapped, truncated or crashed on.
#include <doctest/doctest.h>

#include <string>

#include <fmt/format.h>

#include "gpu/params_io.hpp"
#include "hw/fabric.hpp"
#include "io/limits.hpp"
#include "schedule/schedule.hpp"
#include "workload/dit.hpp"

using namespace osim;

namespace {

std::string schedule_error(const std::string& ops, const std::string& head = "streams: [s]\n") {
  try {
    parse_schedule_string("name: edge\nranks: 2\n" + head + "programs:\n  - rank: all\n    ops:\n" + ops, "edge.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string topology_error(const std::string& yaml) {
  try {
    hw::Topology t(hw::parse_topology_string(yaml, "edge.yaml"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const std::string kTopo = "name: t\nnodes:\n  - {name: cpu0, kind: cpu}\n";

}  // namespace

TEST_CASE("expressions: no 64-bit overflow, no unbounded nesting") {
  CHECK(schedule_error("      - {op: marker, name: \"x{9223372036854775807 + rank + 1}\"}\n").find("overflows 64 bits") != std::string::npos);
  CHECK(schedule_error("      - {op: marker, name: \"x{99999999999999999999}\"}\n").find("overflows 64 bits") != std::string::npos);
  CHECK(schedule_error("      - {op: marker, name: \"x{(0 - 9223372036854775807 - 1) / (rank - 1 - rank)}\"}\n").find("overflows 64 bits") !=
        std::string::npos);
  const std::string deep = std::string(500, '(') + "1" + std::string(500, ')');
  CHECK(schedule_error("      - {op: marker, name: \"x{" + deep + "}\"}\n").find("nested deeper than 200 levels") != std::string::npos);
  // Within range, as before.
  CHECK(schedule_error("      - {op: marker, name: \"x{(rank + 1) * 3 % 4 - -2}\"}\n").empty());
}

TEST_CASE("numbers: finite, within their type, sizes, rates and times in range") {
  CHECK(schedule_error("      - {op: kernel, stream: s, flops: inf}\n").find("'inf' is not a finite number") != std::string::npos);
  CHECK(schedule_error("      - {op: kernel, stream: s, flops: 1e9, efficiency: nan}\n").find("'nan' is not a finite number") != std::string::npos);
  CHECK(schedule_error("      - {op: kernel, stream: s, duration: 10000000 s}\n").find("is over a day") != std::string::npos);
  CHECK(schedule_error("      - {op: memcpy, kind: h2d, bytes: 1e19, stream: s}\n").find("over the largest size overlapsim holds (1 EiB)") !=
        std::string::npos);
  CHECK(schedule_error("      - {op: kernel, stream: s, duration: 1 us, sm_limit: 4294967297}\n").find("4294967297 is out of range") !=
        std::string::npos);
  CHECK(schedule_error("      - {op: marker, name: m}\n", "streams: [{name: s, priority: 4294967295}]\n").find("out of range") != std::string::npos);
  CHECK(topology_error(kTopo + "  - {name: gpu0, kind: gpu, sms: 4294967297}\nlinks:\n  - {a: gpu0, b: cpu0, pcie: gen4 x16, latency: 1 us}\n")
            .find("edge.yaml:4:") == 0);
  CHECK(topology_error(kTopo + "  - {name: gpu0, kind: gpu}\nlinks:\n  - {a: gpu0, b: cpu0, kind: pcie, bandwidth: 1e308 GB/s, latency: 1 us}\n")
            .find("over 10 PB/s") != std::string::npos);
  CHECK(topology_error(kTopo + "  - {name: gpu0, kind: gpu}\nlinks:\n  - {a: gpu0, b: cpu0, kind: pcie, bandwidth: 10 GB/s, latency: 1e7 s}\n")
            .find("is over a day") != std::string::npos);
}

TEST_CASE("shapes: a list where a whole number goes is named, not a conversion error") {
  CHECK(schedule_error("      - {op: marker, name: m}\n").empty());
  try {
    parse_schedule_string("name: e\nranks: 2\nstreams: [s]\nprograms:\n  - rank: [x, 1]\n    ops: [{op: marker, name: m}]\n", "e.yaml");
    FAIL("expected an error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("e.yaml:5:") == 0);
    CHECK(std::string(e.what()).find("each rank in a rank list is a whole number") != std::string::npos);
  }
}

TEST_CASE("shapes: a list or mapping as a key, or aliases expanding without bound, are refused when read") {
  CHECK(schedule_error("      - {op: marker, name: m, ? [a, b] : 1}\n").find("edge.yaml:7:") == 0);
  CHECK(schedule_error("      - {op: marker, name: m, ? [a, b] : 1}\n").find("a key must be a plain name") != std::string::npos);
  CHECK_THROWS_WITH_AS(parse_calibration_string("model:\n  ? {a: 1}\n  : 2\n", "c.yaml"),
                       doctest::Contains("c.yaml:2:5: error: a key must be a plain name"), InputError);
  // Seven levels of ten aliases each: 10^7 values from a few hundred bytes.
  std::string laughs = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 7; ++i) {
    laughs += fmt::format("l{}: &l{} [", i, i);
    for (int k = 0; k < 10; ++k) laughs += fmt::format("{}*l{}", k ? ", " : "", i - 1);
    laughs += "]\n";
  }
  CHECK_THROWS_WITH_AS(hw::parse_topology_string(laughs, "laughs.yaml"), doctest::Contains("expands to more than"), InputError);
}

TEST_CASE("sizes: loops, repeats and workloads that would exhaust memory are refused before they allocate") {
  // A loop past the limit on what programs unroll to, even an empty one (no hang).
  const size_t limit = limits::max_unrolled_ops();
  CHECK(schedule_error("      - {op: loop, count: 1000000000000000000, ops: []}\n").find("edge.yaml:7:27: error: loop 'count'") == 0);
  CHECK(schedule_error("      - {op: loop, count: 1000000000000000000, ops: []}\n").find("unroll to more than") != std::string::npos);
  limits::set_max_unrolled_ops(100);
  // Ops naming the rank unroll per rank: 2 ranks x (50 iterations + 50 ops) = 200 > 100; 2 x (20 + 20) = 80 fits.
  CHECK(schedule_error("      - {op: loop, count: 50, ops: [{op: marker, name: \"m{rank}\"}]}\n").find("unroll to more than 100 ops") !=
        std::string::npos);
  CHECK(schedule_error("      - {op: loop, count: 20, ops: [{op: marker, name: \"m{rank}\"}]}\n").empty());
  // The same ops on every rank unroll once, shared: 50 + 50 = 100 fits.
  CHECK(schedule_error("      - {op: loop, count: 50, ops: [{op: marker, name: m}]}\n").empty());
  limits::set_max_unrolled_ops(limit);
  // A repeat over too many combinations, or with a variable twice (it never ended).
  CHECK(topology_error(kTopo + "  - {name: \"gpu{i}\", kind: gpu, repeat: {i: 100000, j: 100000}, skip_if: \"i != j\"}\n")
            .find("more than 1048576 combinations") != std::string::npos);
  CHECK(topology_error(kTopo + "  - {name: \"gpu{i}\", kind: gpu, repeat: {i: 3, i: 4}}\n").find("repeat variable 'i' is given twice") !=
        std::string::npos);
  // A workload's steps x blocks x programs (one per CFG half): refused with the keys named.
  const std::string wan = std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/workloads/wan22-720p-dgx-sp8-layerwise.yaml";
  CHECK_THROWS_WITH_AS(generate_schedule(parse_workload_file(wan, std::vector<std::string>{"steps=100000", "cfg=parallel"})),
                       doctest::Contains("100000 steps (100000 forwards a rank) x 40 blocks x 2 CFG halves"), InputError);
  // The advice says what is true: the first steps (and the last) differ, the rest repeat.
  CHECK_THROWS_WITH_AS(generate_schedule(parse_workload_file(wan, std::vector<std::string>{"steps=100000", "cfg=parallel"})),
                       doctest::Contains("simulate fewer steps (the step time settles after the first few"), InputError);
  CHECK_THROWS_WITH_AS(parse_workload_file(wan, {"steps=4294967297"}), doctest::Contains("'steps'"), InputError);
  CHECK_THROWS_WITH_AS(parse_workload_file(wan, {"steps=2000000"}), doctest::Contains("1..1,000,000 (the step time settles after the first few"),
                       InputError);
}
