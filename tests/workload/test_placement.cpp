// `placement:` resolved on a topology: GPU names, or a rule (pack, spread over
// PCIe switches or CPU sockets), on a box whose GPU order interleaves its
// switches and sockets so that each rule picks other GPUs than topology order.
#include <doctest/doctest.h>

#include "workload/dit.hpp"

using namespace osim;

namespace {

// Sockets cpu0, cpu1; switches sw0, sw1 on cpu0, sw2, sw3 on cpu1; GPUs in
// topology order on sw0, sw2, sw0, sw2, sw1, sw3, sw1, sw3.
const char* kBox = R"(
name: interleaved
nodes:
  - {name: "cpu{i}", kind: cpu, memory_bandwidth: 200 GB/s, memory: 512 GiB, repeat: 2}
  - {name: "rc{i}", kind: host_bridge, repeat: 2}
  - {name: "sw{i}", kind: pcie_switch, repeat: 4}
  - {name: "gpu{i}", kind: gpu, model: H100-PCIe, memory: 80 GiB, hbm_bandwidth: 2.0 TB/s, sms: 114, copy_engines: 3, peak_tflops: {bf16: 756}, repeat: 8}
links:
  - {a: "rc{i}", b: "cpu{i}", kind: internal, repeat: 2, latency: 1 us}
  - {a: cpu0, b: cpu1, kind: inter_socket, bandwidth: 64 GB/s, latency: 1 us}
  - {a: "sw{i}", b: "rc{i/2}", pcie: gen5 x16, repeat: 4, latency: 1 us}
  - {a: gpu0, b: sw0, pcie: gen5 x16, latency: 1 us}
  - {a: gpu1, b: sw2, pcie: gen5 x16, latency: 1 us}
  - {a: gpu2, b: sw0, pcie: gen5 x16, latency: 1 us}
  - {a: gpu3, b: sw2, pcie: gen5 x16, latency: 1 us}
  - {a: gpu4, b: sw1, pcie: gen5 x16, latency: 1 us}
  - {a: gpu5, b: sw3, pcie: gen5 x16, latency: 1 us}
  - {a: gpu6, b: sw1, pcie: gen5 x16, latency: 1 us}
  - {a: gpu7, b: sw3, pcie: gen5 x16, latency: 1 us}
)";

DitWorkload workload(int ulysses, const std::string& placement) {
  const std::string yaml = "name: placed\nmodel: {preset: wan2.2-14b}\nsteps: 1\ncfg: none\nparallelism: {ulysses: " + std::to_string(ulysses) +
                           "}\ntokens: 76800\n" + placement;
  return parse_workload_string(yaml, "placed.yaml");
}

std::vector<std::string> placed(int ulysses, const std::string& placement) {
  const hw::Topology topo(hw::parse_topology_string(kBox, "interleaved.yaml"));
  DitWorkload w = workload(ulysses, placement);
  place_on(w, topo);
  return w.gpus;
}

using V = std::vector<std::string>;

}  // namespace

TEST_CASE("placement: without one, ranks take the topology's GPUs in order") { CHECK(placed(4, "").empty()); }

TEST_CASE("placement: pack fills a socket's switches in turn") {
  // cpu0 holds sw0 (gpu0, gpu2) and sw1 (gpu4, gpu6); then cpu1's sw2 (gpu1, gpu3).
  CHECK(placed(4, "placement: pack\n") == V{"gpu0", "gpu2", "gpu4", "gpu6"});
  CHECK(placed(5, "placement: pack\n") == V{"gpu0", "gpu2", "gpu4", "gpu6", "gpu1"});
}

TEST_CASE("placement: spread over switches, then over sockets") {
  // The first GPU of sw0, sw2, sw1, sw3 (the order their first GPU appears), then the second of each.
  CHECK(placed(4, "placement: spread_switches\n") == V{"gpu0", "gpu1", "gpu4", "gpu5"});
  CHECK(placed(8, "placement: spread_switches\n") == V{"gpu0", "gpu1", "gpu4", "gpu5", "gpu2", "gpu3", "gpu6", "gpu7"});
  // cpu0's GPUs are the even ones, cpu1's the odd ones: alternating.
  CHECK(placed(2, "placement: spread_sockets\n") == V{"gpu0", "gpu1"});
  CHECK(placed(4, "placement: spread_sockets\n") == V{"gpu0", "gpu1", "gpu2", "gpu3"});
}

TEST_CASE("placement: GPU names, written into the schedule") {
  CHECK(placed(2, "placement: [gpu7, gpu3]\n") == V{"gpu7", "gpu3"});
  const hw::Topology topo(hw::parse_topology_string(kBox, "interleaved.yaml"));
  DitWorkload w = workload(2, "placement: [gpu7, gpu3]\n");
  place_on(w, topo);
  CHECK(generate_schedule(w).gpus == V{"gpu7", "gpu3"});
}

TEST_CASE("placement: refused with its line") {
  CHECK_THROWS_WITH_AS(placed(2, "placement: [gpu7, gpu9]\n"), doctest::Contains("placed.yaml:7:"), InputError);
  CHECK_THROWS_WITH_AS(placed(2, "placement: [gpu7, gpu9]\n"), doctest::Contains("placement[1] = 'gpu9' is not a GPU of topology 'interleaved'"),
                       InputError);
  CHECK_THROWS_WITH_AS(placed(2, "placement: [gpu7, sw0]\n"), doctest::Contains("'sw0' is not a GPU"), InputError);
  CHECK_THROWS_WITH_AS(placed(2, "placement: [gpu7, gpu7]\n"), doctest::Contains("names gpu7 twice"), InputError);
  CHECK_THROWS_WITH_AS(placed(4, "placement: [gpu7, gpu3]\n"), doctest::Contains("lists 2 GPUs for 4 ranks"), InputError);
  CHECK_THROWS_WITH_AS(placed(20, "placement: pack\n"), doctest::Contains("20 ranks but topology 'interleaved' has 8 GPUs"), InputError);
  CHECK_THROWS_WITH_AS(workload(2, "placement: scatter\n"), doctest::Contains("spread_switches"), InputError);
  CHECK_THROWS_WITH_AS(workload(2, "placement: []\n"), doctest::Contains("lists no GPU"), InputError);
}
