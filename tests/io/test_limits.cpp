// Numbers at the edges and shapes a careless input gives: each refused with
// the file, the line and what is wrong, never wrapped, truncated or crashed on.
#include <doctest/doctest.h>

#include <string>

#include "hw/fabric.hpp"
#include "schedule/schedule.hpp"

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
  CHECK(schedule_error("      - {op: kernel, stream: s, duration: 1 us, sm_limit: 4294967297}\n").find("4294967297 is out of range") != std::string::npos);
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
