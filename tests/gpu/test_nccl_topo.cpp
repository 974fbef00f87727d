// NCCL's view of a topology: path types, bandwidths, transports and the ring
// search's outcome on small topologies, each expected value derived from
// NCCL 2.30.7's rules (sim/gpu/nccl_topo.hpp).
#include <doctest/doctest.h>

#include <string>

#include <fmt/format.h>

#include "gpu/nccl_topo.hpp"
#include "hw/topology.hpp"

using namespace osim;
using namespace osim::exec;

namespace {
exec::NcclView view_of(const std::string& yaml, NcclTopoOptions opt = {}) {
  const hw::Topology topo(hw::parse_topology_string(yaml, "t.yaml"));
  return nccl_view(topo, opt);
}

// n GPUs of `model` on one NVSwitch, `links` NVLinks each; one socket.
std::string nvswitch_box(int n, const char* model, int links) {
  return fmt::format(R"(name: sw
nodes:
  - {{name: cpu0, kind: cpu}}
  - {{name: nvs, kind: nvswitch}}
  - {{name: "gpu{{i}}", kind: gpu, model: {}, repeat: {}}}
links:
  - {{a: "gpu{{i}}", b: cpu0, pcie: gen5 x16, latency: 1 us, repeat: {}}}
  - {{a: "gpu{{i}}", b: nvs, nvlinks: {}, latency: 1 us, repeat: {}}}
)",
                     model, n, n, links, n);
}

// Four A100s, every pair joined by four NVLinks (an HGX A100 4-GPU board), no NVSwitch.
const char* kMesh4 = R"(name: mesh
nodes:
  - {name: cpu0, kind: cpu}
  - {name: "gpu{i}", kind: gpu, model: A100, repeat: 4}
links:
  - {a: "gpu{i}", b: cpu0, pcie: gen4 x16, latency: 1 us, repeat: 4}
  - {a: "gpu{i}", b: "gpu{j}", nvlinks: 4, latency: 1 us, repeat: {i: 4, j: 4}, skip_if: "j <= i"}
)";

// Four A100 PCIe: two Gen4 switches of two GPUs under one (AMD) socket.
const char* kPcie4 = R"(name: pcie
p2p_level: PXB
nodes:
  - {name: cpu0, kind: cpu}
  - {name: "sw{i}", kind: pcie_switch, repeat: 2}
  - {name: "gpu{i}", kind: gpu, model: A100-PCIe, repeat: 4}
links:
  - {a: "sw{i}", b: cpu0, pcie: gen4 x16, latency: 1 us, repeat: 2}
  - {a: "gpu{i}", b: "sw{i/2}", pcie: gen4 x16, latency: 1 us, repeat: 4}
)";
}  // namespace

TEST_CASE("NCCL's link bandwidths: NVLink per generation x links, PCIe width x lane rate / 80") {
  CHECK(nccl_nvlink_bw(70) == 20.0);
  CHECK(nccl_nvlink_bw(80) == 20.0);
  CHECK(nccl_nvlink_bw(90) == doctest::Approx(20.6));
  CHECK(nccl_nvlink_bw(100) == doctest::Approx(40.1));
  CHECK(nccl_sm_of("H100-SXM5") == 90);
  CHECK(nccl_sm_of("A100-PCIe") == 80);
  CHECK(nccl_sm_of("Tesla V100-SXM2-32GB") == 70);
  CHECK(nccl_sm_of("RTX-4090") == 89);
  CHECK_FALSE(nccl_sm_of("MI300X").has_value());
  // 8 H100 on NVSwitch, 18 links: 18 x 20.6 = 370.8 GB/s a pair, P2P over NVLink.
  const NcclView v = view_of(nvswitch_box(8, "H100-SXM5", 18));
  CHECK(v.sm == 90);
  CHECK(v.pair[0][5].type == NcclPath::Nvl);
  CHECK(v.pair[0][5].bw_GBps == doctest::Approx(370.8));
  CHECK(v.pair[0][5].transport == NcclTransport::P2pNvLink);
  // PCIe Gen4 x16: 16 x 120 / 80 = 24 GB/s.
  const NcclView p = view_of(kPcie4);
  CHECK(p.pair[0][1].bw_GBps == doctest::Approx(24.0));
}

TEST_CASE("NVSwitch: 6 rings at 60 GB/s duplicated to 12 x 30 (H100), 6 x 40 to 12 x 20 (A100), collective channels doubled") {
  // H100: search speeds 60, 50, ...; 370.8 / 60 -> 6 rings = 360 < totalBw
  // 370.8; 50 (7 x 50 = 350), 40 (9 x 40 = 360), 30 (12 x 30 = 360) are no
  // better, 24 / 60 < 0.49 ends pass 1; 60 >= 50 so the 6 channels are
  // duplicated at half the bandwidth; connect.cc doubles them again.
  const NcclView h = view_of(nvswitch_box(8, "H100-SXM5", 18));
  CHECK(h.ring.channels == 12);
  CHECK(h.ring.bw_intra_GBps == 30.0);
  CHECK(h.ring.type_intra == NcclPath::Nvl);
  CHECK(h.ring.total_bw_GBps == doctest::Approx(370.8));
  CHECK(h.coll_channels == 24);
  // A100: 12 x 20 = 240 GB/s; 6 rings at 40 reach it at once; Ampere
  // duplicates at >= 25 GB/s.
  const NcclView a = view_of(nvswitch_box(8, "A100", 12));
  CHECK(a.ring.channels == 12);
  CHECK(a.ring.bw_intra_GBps == 20.0);
  CHECK(a.coll_channels == 24);
  // Four GPUs of an 8-GPU HGX H200 (NVSwitch port given by its bandwidth): all 18 links count.
  const NcclView four = view_of(R"(name: h200x4
nodes:
  - {name: cpu0, kind: cpu}
  - {name: nvs, kind: nvswitch}
  - {name: "gpu{i}", kind: gpu, model: H200, repeat: 4}
links:
  - {a: "gpu{i}", b: cpu0, pcie: gen5 x16, latency: 1 us, repeat: 4}
  - {a: "gpu{i}", b: nvs, kind: nvlink, bandwidth: 394 GB/s, latency: 1 us, repeat: 4}
)");
  CHECK(four.pair[1][2].bw_GBps == doctest::Approx(370.8));
  CHECK(four.coll_channels == 24);  // as measured on the 4xH200 (24 collective channels)
}

TEST_CASE("an NVLink mesh without NVSwitch: rings over the distinct links, not one pair's rate") {
  // Each pair 4 x 20 = 80 GB/s; a GPU's total 3 x 80 = 240. At 40 GB/s each
  // directed pair carries two rings: 12 directed pairs x 2 / 4 hops = 6 rings
  // = 240 = totalBw; then duplicated to 12 x 20.
  const NcclView v = view_of(kMesh4);
  CHECK(v.pair[0][3].type == NcclPath::Nvl);
  CHECK(v.pair[0][3].bw_GBps == doctest::Approx(80.0));
  CHECK(v.ring.max_bw_GBps == doctest::Approx(80.0));
  CHECK(v.ring.total_bw_GBps == doctest::Approx(240.0));
  CHECK(v.ring.channels * v.ring.bw_intra_GBps == doctest::Approx(240.0));
  CHECK(v.ring.channels == 12);
  CHECK(v.coll_channels == 24);
}

TEST_CASE("PCIe: PIX under one switch is P2P, PHB through the CPU is SHM unless p2p_level allows it") {
  const NcclView v = view_of(kPcie4);
  CHECK(v.pair[0][1].type == NcclPath::Pix);
  CHECK(v.pair[0][1].transport == NcclTransport::P2pPcie);
  CHECK(v.pair[1][2].type == NcclPath::Phb);
  CHECK(v.pair[1][2].transport == NcclTransport::Shm);
  CHECK(v.pair[1][2].bw_GBps == doctest::Approx(24.0));
  // Rings: every link direction once per ring. maxBw 24 -> first speed 20:
  // 1 ring (20); 18, 15: 1 ring; 12: 2 rings = 24 = totalBw. Below 25 GB/s: no duplication.
  CHECK(v.ring.channels == 2);
  CHECK(v.ring.bw_intra_GBps == 12.0);
  CHECK(v.ring.type_intra == NcclPath::Phb);
  CHECK(v.coll_channels == 4);
  std::string sys(kPcie4);
  sys.replace(sys.find("p2p_level: PXB"), 14, "p2p_level: SYS");
  CHECK(view_of(sys).pair[1][2].transport == NcclTransport::P2pPcie);
  // Switches under a common switch: PXB, P2P by default.
  const NcclView pxb = view_of(R"(name: pxb
nodes:
  - {name: cpu0, kind: cpu}
  - {name: top, kind: pcie_switch}
  - {name: "sw{i}", kind: pcie_switch, repeat: 2}
  - {name: "gpu{i}", kind: gpu, model: L40S, repeat: 2}
links:
  - {a: top, b: cpu0, pcie: gen4 x16, latency: 1 us}
  - {a: "sw{i}", b: top, pcie: gen4 x16, latency: 1 us, repeat: 2}
  - {a: "gpu{i}", b: "sw{i}", pcie: gen4 x16, latency: 1 us, repeat: 2}
)");
  CHECK(pxb.pair[0][1].type == NcclPath::Pxb);
  CHECK(pxb.pair[0][1].transport == NcclTransport::P2pPcie);
}

TEST_CASE("across sockets: SYS at the CPU's inter-socket figure, through host memory") {
  const std::string two = R"(name: sys
nodes:
  - {name: "cpu{i}", kind: cpu, repeat: 2}
  - {name: "rc{i}", kind: host_bridge, repeat: 2}
  - {name: "gpu{i}", kind: gpu, model: H100-PCIe, repeat: 2}
links:
  - {a: "rc{i}", b: "cpu{i}", kind: internal, repeat: 2}
  - {a: cpu0, b: cpu1, kind: inter_socket, bandwidth: 80 GB/s, latency: 1 us}
  - {a: "gpu{i}", b: "rc{i}", pcie: gen5 x16, latency: 1 us, repeat: 2}
)";
  const NcclView v = view_of(two);  // Hopper: Sapphire Rapids assumed, SRP_QPI_BW 22
  CHECK(v.pair[0][1].type == NcclPath::Sys);
  CHECK(v.pair[0][1].bw_GBps == doctest::Approx(22.0));
  CHECK(v.pair[0][1].transport == NcclTransport::Shm);
  NcclTopoOptions skl;
  skl.cpu = NcclCpu::IntelSkl;
  CHECK(view_of(two, skl).pair[0][1].bw_GBps == doctest::Approx(10.0));
}

TEST_CASE("P2P off: NCCL_P2P_DISABLE, a card without P2P, a disabled pair go through host memory (SHM)") {
  NcclTopoOptions off;
  off.p2p_disable = true;
  const NcclView v = view_of(kMesh4, off);
  CHECK(v.pair[0][1].transport == NcclTransport::Shm);
  CHECK(v.pair[0][1].type == NcclPath::Phb);
  CHECK(v.pair[0][1].bw_GBps == doctest::Approx(24.0));  // Gen4 x16 up and down
  std::string pair(kPcie4);
  pair.replace(pair.find("p2p_level: PXB"), 14, "p2p_disabled_pairs: [[gpu0, gpu1]]");
  const NcclView d = view_of(pair);
  CHECK(d.pair[0][1].transport == NcclTransport::Shm);
  CHECK(d.pair[2][3].transport == NcclTransport::P2pPcie);
}

TEST_CASE("NVB: a GPU reached over NVLink through another GPU") {
  // gpu0 - gpu1 - gpu2 in a line over NVLink: 0 -> 2 is NVB, P2P over NVLink.
  const NcclView v = view_of(R"(name: line
nodes:
  - {name: cpu0, kind: cpu}
  - {name: "gpu{i}", kind: gpu, model: V100, repeat: 3}
links:
  - {a: "gpu{i}", b: cpu0, pcie: gen3 x16, latency: 1 us, repeat: 3}
  - {a: gpu0, b: gpu1, nvlinks: 2, latency: 1 us}
  - {a: gpu1, b: gpu2, nvlinks: 1, latency: 1 us}
)");
  CHECK(v.pair[0][1].type == NcclPath::Nvl);
  CHECK(v.pair[0][1].bw_GBps == doctest::Approx(40.0));
  CHECK(v.pair[0][2].type == NcclPath::Nvb);
  CHECK(v.pair[0][2].bw_GBps == doctest::Approx(20.0));
  CHECK(v.pair[0][2].transport == NcclTransport::P2pNvLink);
}

TEST_CASE("two hosts: NET between them, channels by NIC") {
  // Two hosts of 2 H100 on an NVSwitch, one 400 Gb/s NIC each: inter-node
  // speed 48 (the highest within 50 GB/s), one channel per NIC, duplicated
  // at half the bandwidth (one channel, not over 4); doubled at connection
  // (not again: that needs bwIntra > 45).
  const NcclView v = view_of(R"(name: two
nodes:
  - {name: "h{h}_cpu", kind: cpu, repeat: {h: 2}}
  - {name: "h{h}_nvs", kind: nvswitch, repeat: {h: 2}}
  - {name: "h{h}_gpu{i}", kind: gpu, model: H100-SXM5, repeat: {h: 2, i: 2}}
  - {name: "h{h}_nic", kind: nic, repeat: {h: 2}}
  - {name: ib, kind: network_switch}
links:
  - {a: "h{h}_gpu{i}", b: "h{h}_cpu", pcie: gen5 x16, latency: 1 us, repeat: {h: 2, i: 2}}
  - {a: "h{h}_nic", b: "h{h}_cpu", pcie: gen5 x16, latency: 1 us, repeat: {h: 2}}
  - {a: "h{h}_gpu{i}", b: "h{h}_nvs", nvlinks: 18, latency: 1 us, repeat: {h: 2, i: 2}}
  - {a: "h{h}_nic", b: ib, kind: infiniband, bandwidth: 400 Gb/s, latency: 1 us, repeat: {h: 2}}
)");
  CHECK(v.hosts == 2);
  CHECK(v.pair[0][2].transport == NcclTransport::Net);
  CHECK(v.pair[0][1].transport == NcclTransport::P2pNvLink);
  CHECK(v.nics_per_host == 1);
  CHECK(v.nic_bw_GBps == doctest::Approx(50.0));
  CHECK(v.ring.channels == 2);
  CHECK(v.ring.bw_intra_GBps == 24.0);
  CHECK(v.coll_channels == 4);
}
