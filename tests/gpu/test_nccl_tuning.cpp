// NCCL's tuning model: bandwidths and latencies per algorithm and protocol,
// the choice by size, NCCL_ALGO / NCCL_PROTO, against closed forms from
// NCCL 2.30.7's tuning.cc (sim/gpu/nccl_tuning.hpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "gpu/nccl_tuning.hpp"
#include "hw/topology.hpp"

using namespace osim;
using namespace osim::exec;

namespace {
// 8 H100 on one NVSwitch: NCCL's rings are 12 channels x 30 GB/s (test_nccl_topo).
const char* kHgxH100 = R"(name: hgx
nodes:
  - {name: cpu0, kind: cpu}
  - {name: nvs, kind: nvswitch}
  - {name: "gpu{i}", kind: gpu, model: H100-SXM5, repeat: 8}
links:
  - {a: "gpu{i}", b: cpu0, pcie: gen5 x16, latency: 1 us, repeat: 8}
  - {a: "gpu{i}", b: nvs, nvlinks: 18, latency: 1 us, repeat: 8}
)";
// 4 A100 PCIe under two switches: rings 2 x 12 GB/s over PHB (test_nccl_topo).
const char* kPcie4 = R"(name: pcie
nodes:
  - {name: cpu0, kind: cpu}
  - {name: "sw{i}", kind: pcie_switch, repeat: 2}
  - {name: "gpu{i}", kind: gpu, model: A100-PCIe, repeat: 4}
links:
  - {a: "sw{i}", b: cpu0, pcie: gen4 x16, latency: 1 us, repeat: 2}
  - {a: "gpu{i}", b: "sw{i/2}", pcie: gen4 x16, latency: 1 us, repeat: 4}
)";

struct Model {
  hw::Topology topo;
  NcclView view;
  NcclTuning tune;
  Model(const char* yaml, NcclTuneOptions o = {}) : topo(hw::parse_topology_string(yaml, "t.yaml")), view(nccl_view(topo)), tune(view, o) {}
};
}  // namespace

TEST_CASE("nccl-tests' bus bandwidth factors") {
  CHECK(nccl_busbw_factor(NcclColl::AllReduce, 8) == doctest::Approx(1.75));
  CHECK(nccl_busbw_factor(NcclColl::AllGather, 8) == doctest::Approx(0.875));
  CHECK(nccl_busbw_factor(NcclColl::ReduceScatter, 4) == doctest::Approx(0.75));
  CHECK(nccl_busbw_factor(NcclColl::Broadcast, 4) == 1.0);
}

TEST_CASE("Hopper NVSwitch all-reduce: each protocol's bandwidth and latency as tuning.cc computes them") {
  const Model m(kHgxH100);
  REQUIRE(m.view.ring.channels == 12);
  const auto AR = NcclColl::AllReduce;
  // Ring Simple: busBw 12 x 30 = 360, algbw x 8 / 14; latency 8.4 + 14 steps x 3.4 (NVLink).
  CHECK(m.tune.bandwidth(AR, NcclAlgo::Ring, NcclProto::Simple) == doctest::Approx(360.0 * 8 / 14));
  CHECK(m.tune.latency(AR, NcclAlgo::Ring, NcclProto::Simple) == doctest::Approx(8.4 + 14 * 3.4));
  // Ring LL: min(llMaxBw 141, 360 / 2); latency 6.6 + 14 x 0.6.
  CHECK(m.tune.bandwidth(AR, NcclAlgo::Ring, NcclProto::LL) == doctest::Approx(141.0 * 8 / 14));
  CHECK(m.tune.latency(AR, NcclAlgo::Ring, NcclProto::LL) == doctest::Approx(6.6 + 14 * 0.6));
  // Ring LL128: min(360 x 0.92, 12 x 36.7); latency 14 + 14 x 1.9.
  CHECK(m.tune.bandwidth(AR, NcclAlgo::Ring, NcclProto::LL128) == doctest::Approx(360 * 0.92 * 8 / 14));
  CHECK(m.tune.latency(AR, NcclAlgo::Ring, NcclProto::LL128) == doctest::Approx(14 + 14 * 1.9));
  // Tree Simple: min(360 x 0.92, 12 x 38.7) / 2; latency 8.4 + 2 x 7 x 4.0.
  CHECK(m.tune.bandwidth(AR, NcclAlgo::Tree, NcclProto::Simple) == doctest::Approx(360 * 0.92 / 2));
  CHECK(m.tune.latency(AR, NcclAlgo::Tree, NcclProto::Simple) == doctest::Approx(8.4 + 2 * 7 * 4.0));
  // All-gather has no tree.
  CHECK(m.tune.bandwidth(NcclColl::AllGather, NcclAlgo::Tree, NcclProto::Simple) == 0);
}

TEST_CASE("the choice by size: LL for small all-reduces, Simple for large, NCCL_PROTO and NCCL_ALGO force theirs") {
  const Model m(kHgxH100);
  // 1 KiB: Ring LL 15.0 + 1024 / 80.57e3 us beats Tree LL (15.2 us + more).
  const auto small = m.tune.predict(NcclColl::AllReduce, 1024);
  REQUIRE(small);
  CHECK(small->algo == NcclAlgo::Ring);
  CHECK(small->proto == NcclProto::LL);
  CHECK(small->time_us == doctest::Approx(15.0 + 1024 / (1000 * 141.0 * 8 / 14)));
  // 1 GiB: Ring Simple, busbw just under 360: NCCL's latency and bandwidth,
  // and the pipeline's fill, one 1 MiB slice at a channel's 360 / 24 GB/s.
  const double big = 1024.0 * 1024 * 1024;
  const auto large = m.tune.predict(NcclColl::AllReduce, big);
  REQUIRE(large);
  CHECK(large->proto == NcclProto::Simple);
  CHECK(large->fill_us == doctest::Approx(1048576 / (1000 * 360.0 / 24)));
  const double t = 56.0 + big / (1000 * 360.0 * 8 / 14) + 1048576 / (1000 * 360.0 / 24);
  CHECK(large->time_us == doctest::Approx(t));
  CHECK(large->busbw_GBps == doctest::Approx(big / (t * 1e3) * 1.75));
  // NCCL_PROTO=Simple at 1 KiB: the ring's 56 us of latency.
  NcclTuneOptions simple;
  simple.proto = NcclProto::Simple;
  const Model s(kHgxH100, simple);
  // (A 1 KiB all-reduce runs on 1 channel of 8 x 128 bytes a rank: its one
  // 128-byte slice at 15 GB/s is the fill.)
  CHECK(s.tune.predict(NcclColl::AllReduce, 1024)->time_us == doctest::Approx(56.0 + 1024 / (1000 * 360.0 * 8 / 14) + 128 / (1000 * 15.0)));
  // NCCL_ALGO=Tree cannot run an all-gather.
  NcclTuneOptions tree;
  tree.algo = NcclAlgo::Tree;
  const Model tr(kHgxH100, tree);
  CHECK_FALSE(tr.tune.predict(NcclColl::AllGather, 1 << 20).has_value());
  CHECK(tr.tune.predict(NcclColl::AllReduce, 1 << 20)->algo == NcclAlgo::Tree);
}

TEST_CASE("NVLink: NCCL chooses by its per-link figure, the bytes move at the link's rate (Volta's 22.8 where NCCL plans 20)") {
  const hw::Topology topo(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/dgx1-v100.yaml"));
  const NcclView v = nccl_view(topo);
  REQUIRE(v.sm == 70);
  REQUIRE(v.host_ring.channels == 6);
  REQUIRE(v.host_ring.bw_intra_GBps == doctest::Approx(20.0));
  REQUIRE(v.host_coll_channels == 12);
  const NcclTuning t(v);
  const auto AR = NcclColl::AllReduce;
  const double plan = 6 * 20.0, rate = 6 * kNvlink2RingGBps;  // bus bandwidths
  // Simple: NCCL's plan 6 x 20, moved at 6 x 22.8; algbw x 8 / 14.
  CHECK(t.bandwidth(AR, NcclAlgo::Ring, NcclProto::Simple) == doctest::Approx(plan * 8 / 14));
  CHECK(t.achieved_bandwidth(AR, NcclAlgo::Ring, NcclProto::Simple) == doctest::Approx(rate * 8 / 14));
  // LL: Volta's llMaxBw (39) caps both; LL128: 0.92 x 120 planned, NCCL's
  // per-channel cap (6 x 20) under 0.92 x 136.8 achieved.
  CHECK(t.achieved_bandwidth(AR, NcclAlgo::Ring, NcclProto::LL) == doctest::Approx(39.0 * 8 / 14));
  CHECK(t.bandwidth(AR, NcclAlgo::Ring, NcclProto::LL128) == doctest::Approx(plan * 0.92 * 8 / 14));
  CHECK(t.achieved_bandwidth(AR, NcclAlgo::Ring, NcclProto::LL128) == doctest::Approx(6 * 20.0 * 8 / 14));
  // 1 GiB: NCCL's choice, its bytes at the achieved rate, the fill (a 1 MiB
  // slice) at a collective channel's achieved rate.
  const double gib = 1 << 30;
  const auto p = t.predict(AR, gib);
  REQUIRE(p.has_value());
  CHECK(p->proto == NcclProto::Simple);
  CHECK(p->fill_us == doctest::Approx((1 << 20) / (1000 * rate / 12)));
  CHECK(p->time_us == doctest::Approx(p->latency_us + gib / (1000 * rate * 8 / 14) + p->fill_us));
  // The choice is NCCL's at every size: the links' rate changes times only.
  NcclTuneOptions at_plan;
  at_plan.nvlink_rate_GBps = 20.0;
  const NcclTuning planned(v, at_plan);
  CHECK(planned.achieved_bandwidth(AR, NcclAlgo::Ring, NcclProto::Simple) == doctest::Approx(plan * 8 / 14));
  for (double bytes = 1024; bytes <= gib; bytes *= 4)
    for (NcclColl c : {AR, NcclColl::AllGather, NcclColl::ReduceScatter}) {
      const auto a = t.predict(c, bytes), b = planned.predict(c, bytes);
      CHECK((a->algo == b->algo && a->proto == b->proto));
      CHECK(a->time_us <= b->time_us);
    }
  // Hopper: NCCL's 20.6 is the rate (nccl_nvlink_rate), plan and time agree.
  const Model h(kHgxH100);
  CHECK(nccl_nvlink_rate(90) == nccl_nvlink_bw(90));
  for (NcclProto pr : {NcclProto::LL, NcclProto::LL128, NcclProto::Simple})
    CHECK(h.tune.achieved_bandwidth(AR, NcclAlgo::Ring, pr) == h.tune.bandwidth(AR, NcclAlgo::Ring, pr));
}

TEST_CASE("PCIe rings: no LL128, PCI latencies") {
  const Model m(kPcie4);
  CHECK(m.tune.bandwidth(NcclColl::AllReduce, NcclAlgo::Ring, NcclProto::LL128) == 0);
  // 4 ranks: 8.4 + 6 steps x 5.7; busBw 2 x 12 = 24 as NCCL plans it, but
  // the hop across switches goes through host memory (SHM): capped at
  // kNcclShmEfficiency of a GPU's 24 GB/s Gen4 link; algbw x 4 / 6.
  CHECK(m.tune.latency(NcclColl::AllReduce, NcclAlgo::Ring, NcclProto::Simple) == doctest::Approx(8.4 + 6 * 5.7));
  const double bus = std::min(24.0, kNcclShmEfficiency * 24.0);
  CHECK(bus == doctest::Approx(12.48));
  CHECK(m.tune.bandwidth(NcclColl::AllReduce, NcclAlgo::Ring, NcclProto::Simple) == doctest::Approx(bus * 4 / 6));
  // All-gather: 3 steps, algbw = busBw x 4 / 3.
  CHECK(m.tune.bandwidth(NcclColl::AllGather, NcclAlgo::Ring, NcclProto::Simple) == doctest::Approx(bus * 4 / 3));
}

TEST_CASE("all-to-all: one step's latency plus each rank's bytes on NCCL's send/recv channels within its NCCL bandwidth") {
  const Model m(kHgxH100);
  // 1 GiB a rank, 128 MiB a peer: Simple, on NCCL's send/recv channels
  // (32, 32 a peer, parts from 4: 32 x 8 ranks > 32; 512 KiB steps), 7/8
  // of it leaving each GPU within its 370.8 GB/s of NVLink.
  const double bytes = 1024.0 * 1024 * 1024;
  const auto p = m.tune.predict(NcclColl::AllToAll, bytes);
  REQUIRE(p);
  CHECK(p->proto == NcclProto::Simple);
  const double t = 8.4 + 3.4 + nccl_p2p_simple_us(8, bytes / 8, NcclP2pChannels{32, 32, 4, 512 * 1024.0}, 370.8);
  CHECK(p->time_us == doctest::Approx(t));
  CHECK(t > 8.4 + 3.4 + bytes * 7 / 8 / (1000 * 370.8));
  CHECK(p->busbw_GBps == doctest::Approx(bytes / (t * 1e3) * 7 / 8));
  // 64 KiB a rank = 8 KiB a peer: LL, on one channel (nccl_p2p_plan: parts
  // of at least 8 KiB) at its LL rate, slower than the rank's half of
  // NVLink and NCCL's LL cap (141 GB/s).
  const auto s = m.tune.predict(NcclColl::AllToAll, 65536);
  CHECK(s->proto == NcclProto::LL);
  CHECK(s->time_us == doctest::Approx(6.6 + 0.6 + 8192.0 / (1000 * kNcclP2pLlChannelGBps)));
}

namespace {
// 4 H200 on one NVSwitch, each on a Gen5 x16 link to one CPU (the reference
// boxes' layout): with NCCL_P2P_DISABLE every pair goes through host memory.
const char* kH200x4 = R"(name: h200x4
nodes:
  - {name: cpu0, kind: cpu}
  - {name: nvs, kind: nvswitch}
  - {name: "gpu{i}", kind: gpu, model: H200, repeat: 4}
links:
  - {a: "gpu{i}", b: cpu0, pcie: gen5 x16, latency: 1 us, repeat: 4}
  - {a: "gpu{i}", b: nvs, nvlinks: 18, latency: 1 us, repeat: 4}
)";
struct ShmModel {
  hw::Topology topo;
  NcclView view;
  explicit ShmModel(const char* yaml) : topo(hw::parse_topology_string(yaml, "t.yaml")), view(make(topo)) {}
  static NcclView make(const hw::Topology& t) {
    NcclTopoOptions o;
    o.p2p_disable = true;
    return nccl_view(t, o);
  }
  [[nodiscard]] NcclPrediction predict(NcclColl c, int ranks, double bytes) const {
    NcclTuneOptions o;
    o.ranks = ranks, o.nodes = 1;
    const auto p = NcclTuning(view, o).predict(c, bytes);
    REQUIRE(p.has_value());
    return *p;
  }
};
}  // namespace

TEST_CASE("NCCL's send/recv plan: LL up to 16 KiB a channel a peer, parts of a step / 8 (enqueue.cc addP2pToPlan, NCCL 2.28.3)") {
  // 2 H200 ranks on NVLink: 32 channels a peer (2 a NVLink, 18 links: 36,
  // the collectives' 24 rounded up), parts from 16 channels (32 x 2 > 32).
  const double kib = 1024, nvl_step = 512 * kib;
  auto plan = [&](double peer_bytes) { return nccl_p2p_plan(peer_bytes, 16, 32, nvl_step); };
  CHECK(plan(32 * kib).proto == NcclProto::LL);
  CHECK(plan(32 * kib).channels == 4);  // 8 KiB parts
  CHECK(plan(128 * kib).channels == 16);
  CHECK(plan(512 * kib).proto == NcclProto::LL);  // 32 x 16 KiB: still LL
  CHECK(plan(512 * kib).channels == 16);
  CHECK(plan(512 * kib + 1).proto == NcclProto::Simple);
  CHECK(plan(2048 * kib).channels == 16);   // 64 KiB parts at least: 32, so 16
  CHECK(plan(256 * kib * kib).channels == 16);  // 8 MiB parts: at most 32 steps (16 MiB)
  CHECK(plan(512 * kib * kib).channels == 32);  // 32 MiB parts: doubled
  // NCCL_PROTO=Simple: Simple's parts (64 KiB at least); a PCIe pair's 128 KiB step.
  CHECK(nccl_p2p_plan(32 * kib, 16, 32, nvl_step, NcclProto::Simple).channels == 1);
  CHECK(nccl_p2p_plan(2048 * kib, 2, 2, 128 * kib).proto == NcclProto::Simple);
  CHECK(nccl_p2p_plan(2048 * kib, 2, 2, 128 * kib).channels == 2);
  CHECK(nccl_p2p_plan(32 * kib, 2, 2, 128 * kib).proto == NcclProto::LL);

  // The reference boxes: 256 KiB on 2 ranks (128 KiB a peer, 16 parts of
  // 8 KiB) and 1 MiB on 4 (256 KiB a peer, 8 parts of 32 KiB), LL: the
  // parts at the channel's LL rate, or the rank's traffic at NCCL's LL cap
  // (141 GB/s), whichever is longer.
  const hw::Topology topo(hw::parse_topology_string(kH200x4, "t.yaml"));
  const NcclView view = nccl_view(topo);
  REQUIRE(view.host_coll_channels == 24);
  auto a2a = [&](int ranks, double bytes) {
    NcclTuneOptions o;
    o.ranks = ranks, o.nodes = 1;
    const auto p = NcclTuning(view, o).predict(NcclColl::AllToAll, bytes);
    REQUIRE(p);
    return *p;
  };
  CHECK(a2a(2, 256 * kib).proto == NcclProto::LL);
  CHECK(a2a(2, 256 * kib).time_us == doctest::Approx(7.2 + 8 * kib / (1000 * kNcclP2pLlChannelGBps)));
  CHECK(a2a(4, 1024 * kib).proto == NcclProto::LL);
  CHECK(a2a(4, 1024 * kib).time_us == doctest::Approx(7.2 + 768 * kib / (1000 * 141.0)));
  // 4 MiB on 4 ranks: 1 MiB a peer, Simple: 8 parts of 128 KiB a peer on
  // 24 channels of one work (the copy to itself on 8 more), each asking a
  // channel's rate; together they move what the NVLink knee leaves of
  // 24 x 20.5 GB/s within 370.8.
  CHECK(a2a(4, 4096 * kib).proto == NcclProto::Simple);
  const double ask = 24 * kNcclP2pSimpleChannelGBps;
  const double total = std::pow(std::pow(ask, -kNcclP2pNvlinkKnee) + std::pow(18 * 20.6, -kNcclP2pNvlinkKnee), -1 / kNcclP2pNvlinkKnee);
  CHECK(total < 18 * 20.6);
  CHECK(a2a(4, 4096 * kib).time_us == doctest::Approx(8.4 + 3.4 + 128 * kib / (1000 * kNcclP2pSimpleChannelGBps * total / ask)));
}

TEST_CASE("through host memory: every peer shares the GPU's PCIe link at the SHM transport's efficiency") {
  const ShmModel m(kH200x4);
  REQUIRE(m.view.pair[0][1].transport == NcclTransport::Shm);
  // NCCL's figure for the GPU's Gen5 x16 link: 16 x 240 / 80 = 48 GB/s.
  CHECK(m.view.gpu_pcie_GBps == doctest::Approx(48.0));
  const double link = kNcclShmEfficiency * 48.0;
  const double gib = 1024.0 * 1024 * 1024;
  // All-to-all, Simple: 8.4 + 5.7 us (one ring step over PCI), then the
  // (n-1)/n of the bytes that leave each GPU, all peers together at the link's
  // SHM rate: the bus bandwidth is that rate whatever the rank count (not the
  // 3 x 48 GB/s of three peers' paths).
  for (const int n : {2, 4}) {
    const NcclPrediction p = m.predict(NcclColl::AllToAll, n, gib);
    CHECK(p.proto == NcclProto::Simple);
    const double t = 8.4 + 5.7 + gib * (n - 1) / n / (1000 * link);
    CHECK(p.time_us == doctest::Approx(t));
    CHECK(p.busbw_GBps == doctest::Approx(gib / (t * 1e3) * (n - 1) / n));
    CHECK(p.busbw_GBps == doctest::Approx(link).epsilon(0.001));
  }
  // A small all-to-all (LL, 1 KiB a peer): one step's latency over PCI, 6.6 + 1.0 us, whatever the ranks.
  CHECK(m.predict(NcclColl::AllToAll, 4, 4096).proto == NcclProto::LL);
  CHECK(m.predict(NcclColl::AllToAll, 4, 4096).latency_us == doctest::Approx(6.6 + 1.0));
  // Rings: NCCL's search plans 2 channels x 20 GB/s over PHB (40 GB/s of
  // bus bandwidth); the SHM transport caps it at the link's rate, the
  // all-gather's algorithm bandwidth is that x n / (n - 1).
  CHECK(m.view.host_ring.channels == 2);
  CHECK(m.view.host_ring.bw_intra_GBps == doctest::Approx(20.0));
  NcclTuneOptions o4;
  o4.ranks = 4, o4.nodes = 1;
  const NcclTuning t4(m.view, o4);
  CHECK(t4.bandwidth(NcclColl::AllGather, NcclAlgo::Ring, NcclProto::Simple) == doctest::Approx(link * 4 / 3));
  CHECK(t4.bandwidth(NcclColl::AllReduce, NcclAlgo::Ring, NcclProto::Simple) == doctest::Approx(link * 4 / 6));
  // LL: half the (capped) bus bandwidth.
  CHECK(t4.bandwidth(NcclColl::AllGather, NcclAlgo::Ring, NcclProto::LL) == doctest::Approx(link * 0.5 * 4 / 3));
  // The efficiency is an option (the reference test fits it): at 1.0 the
  // ring keeps NCCL's 40 GB/s (under the 48 GB/s link).
  o4.shm_efficiency = 1.0;
  CHECK(NcclTuning(m.view, o4).bandwidth(NcclColl::AllGather, NcclAlgo::Ring, NcclProto::Simple) == doctest::Approx(40.0 * 4 / 3));
  // Over NVLink (P2P on) the SHM share plays no part: 2 ranks' all-to-all
  // on NCCL's send/recv channels (32, 32 a peer, parts from 16) within the
  // pair's 18 x 20.6 GB/s.
  const Model nv(kH200x4);
  NcclTuneOptions o2;
  o2.ranks = 2, o2.nodes = 1;
  const auto q = NcclTuning(nv.view, o2).predict(NcclColl::AllToAll, gib);
  REQUIRE(q);
  CHECK(q->time_us == doctest::Approx(8.4 + 3.4 + nccl_p2p_simple_us(2, gib / 2, NcclP2pChannels{32, 32, 16, 512 * 1024.0}, 18 * 20.6)));
  o2.shm_efficiency = 0.1;
  CHECK(NcclTuning(nv.view, o2).predict(NcclColl::AllToAll, gib)->time_us == doctest::Approx(q->time_us));
}

TEST_CASE("over NVLink a ring all-gather's and reduce-scatter's own chunk costs 0.29 of a link step") {
  // 4 H200 on one NVSwitch: NCCL's rings give a bus bandwidth of
  // channels x bwIntra; an all-gather or reduce-scatter of n ranks runs its
  // n - 1 link steps at (n - 1) / (n - 1 + kNcclOwnChunkSteps) of it (LL128,
  // Simple), so its algorithm bandwidth is bus x n / (n - 1 + 0.29).
  const Model nv(kH200x4);
  const double bus = nv.view.host_ring.channels * nv.view.host_ring.bw_intra_GBps;
  CHECK(kNcclOwnChunkSteps == 0.29);
  for (const int n : {2, 4}) {
    NcclTuneOptions o;
    o.ranks = n, o.nodes = 1;
    const NcclTuning t(nv.view, o);
    CHECK(t.bandwidth(NcclColl::AllGather, NcclAlgo::Ring, NcclProto::Simple) == doctest::Approx(bus * n / (n - 1 + 0.29)));
    CHECK(t.bandwidth(NcclColl::ReduceScatter, NcclAlgo::Ring, NcclProto::Simple) == doctest::Approx(bus * n / (n - 1 + 0.29)));
    // LL128: NCCL's 0.92 of the ring (under its per-channel cap), the same share.
    CHECK(t.bandwidth(NcclColl::AllGather, NcclAlgo::Ring, NcclProto::LL128) ==
          doctest::Approx(std::min(bus * 0.92, nv.view.host_ring.channels * 36.7) * n / (n - 1 + 0.29)));
    // The all-reduce carries its own chunk in a step it sends anyway; LL is
    // left at NCCL's (its half rate leaves the link room).
    CHECK(t.bandwidth(NcclColl::AllReduce, NcclAlgo::Ring, NcclProto::Simple) == doctest::Approx(bus * n / (2.0 * (n - 1))));
    CHECK(t.bandwidth(NcclColl::AllGather, NcclAlgo::Ring, NcclProto::LL) == doctest::Approx(std::min(141.0, bus * 0.5) * n / (n - 1)));
    // At 0 (an option; the reference test fits it) NCCL's own n / (n - 1).
    o.own_chunk_steps = 0.0;
    CHECK(NcclTuning(nv.view, o).bandwidth(NcclColl::AllGather, NcclAlgo::Ring, NcclProto::Simple) == doctest::Approx(bus * n / (n - 1)));
  }
  // 2 ranks, 1 GiB: 8.4 + 3.4 us, 1 GiB at 357 x 2 / 1.29 GB/s and the
  // fill of one 1 MiB slice at 357 / 24 GB/s: 268 GB/s of bus bandwidth
  // (the reference boxes measure 267-270).
  NcclTuneOptions o2;
  o2.ranks = 2, o2.nodes = 1;
  const auto r = NcclTuning(nv.view, o2).predict(NcclColl::AllGather, 1024.0 * 1024 * 1024);
  REQUIRE(r);
  CHECK(r->proto == NcclProto::Simple);
  CHECK(bus == doctest::Approx(357.0).epsilon(0.01));
  CHECK(r->time_us == doctest::Approx(8.4 + 3.4 + 1024.0 * 1024 * 1024 / (1000 * bus * 2 / 1.29) + 1048576 / (1000 * bus / 24)));
  CHECK(r->busbw_GBps == doctest::Approx(267.7).epsilon(0.002));
}

TEST_CASE("NCCL's launch: channels and threads by size (enqueue.cc topoGetAlgoInfo, NCCL 2.28.3)") {
  // Simple ring, 24 channels of 512 threads: one fewer channel while the
  // size is under channels x 512 x 64 bytes (32 KiB a channel).
  auto simple = [](double bytes) { return nccl_launch(NcclAlgo::Ring, NcclProto::Simple, 24, 2, bytes); };
  CHECK(simple(1 << 20).channels == 24);  // 768 KiB <= 1 MiB: all 24
  CHECK(simple(1 << 20).threads == 544);  // 512 and the sync warp
  CHECK(simple(256 << 10).channels == 8);
  CHECK(simple(102400).channels == 3);  // 3 x 32 KiB = 96 KiB < 100 KiB
  // 8 KiB: one channel, whose threads halve while 8 KiB < 1 x threads x 64: 128, then the sync warp.
  CHECK(simple(8192).channels == 1);
  CHECK(simple(8192).threads == 160);
  // A ring at most PCI_BW (12 GB/s): 256 threads, 16 KiB a channel.
  CHECK(nccl_launch(NcclAlgo::Ring, NcclProto::Simple, 24, 2, 256 << 10, true).channels == 16);
  // LL: 8 bytes a thread times the ranks (2: 8 KiB a channel of 512).
  CHECK(nccl_launch(NcclAlgo::Ring, NcclProto::LL, 24, 2, 64 << 10).channels == 8);
  CHECK(nccl_launch(NcclAlgo::Ring, NcclProto::LL, 24, 8, 64 << 10).channels == 2);
  // LL128: 640 threads x 8 bytes, 5 KiB a channel: 64 KiB keeps 12.
  CHECK(nccl_launch(NcclAlgo::Ring, NcclProto::LL128, 24, 4, 64 << 10).channels == 12);
  CHECK(nccl_launch(NcclAlgo::Ring, NcclProto::LL128, 24, 4, 64 << 10).threads == 640);
  // A tree runs every thread.
  CHECK(nccl_launch(NcclAlgo::Tree, NcclProto::Simple, 24, 8, 4096).threads == 640);
}

TEST_CASE("a Simple ring's slice grows with the size to half of NCCL's 2 MiB chunk: the pipeline's fill") {
  // A channel's share of a rank's chunk, in 2 slices of at least 32 KiB (1 MiB / 32), at most the share.
  const double mib = 1 << 20;
  CHECK(nccl_ring_simple_slice(4 * mib, 2, 24) == doctest::Approx(4 * mib / 48 / 2));    // 43.7 KiB
  CHECK(nccl_ring_simple_slice(16 * mib, 2, 24) == doctest::Approx(16 * mib / 48 / 2));  // 174.8 KiB
  CHECK(nccl_ring_simple_slice(1 * mib, 2, 24) == doctest::Approx(mib / 48));            // 21.8 KiB: the whole share
  CHECK(nccl_ring_simple_slice(2 * mib, 2, 24) == doctest::Approx(32768));               // 43.7 KiB share: 32 KiB and the rest
  CHECK(nccl_ring_simple_slice(256 * mib, 2, 24) == doctest::Approx(mib));               // shares of 5.3 MiB: 2 MiB chunks
  CHECK(nccl_ring_simple_slice(1024 * mib, 8, 24) == doctest::Approx(mib));
  // 2 H200 on NVLink: all-gathers at 4, 16, 64 MiB and 1 GiB take NCCL's
  // model's time and one slice at a channel's 357 / 24 GB/s; the fill's
  // share of the time falls from 14 % to 3.5 %: the ramp of bus bandwidth
  // with size that NCCL's tuning model alone does not have.
  const Model nv(kH200x4);
  const double bus = nv.view.host_ring.channels * nv.view.host_ring.bw_intra_GBps;
  NcclTuneOptions o;
  o.ranks = 2, o.nodes = 1;
  const NcclTuning t(nv.view, o);
  for (const double mb : {4.0, 16.0, 64.0, 1024.0}) {
    const auto r = t.predict(NcclColl::AllGather, mb * mib);
    REQUIRE(r);
    CHECK(r->proto == NcclProto::Simple);
    const double fill = std::min(mb * mib / 48 / 2, mib) / (1000 * bus / 24);
    CHECK(r->fill_us == doctest::Approx(fill));
    CHECK(r->time_us == doctest::Approx(8.4 + 3.4 + mb * mib / (1000 * bus * 2 / 1.29) + fill));
  }
  CHECK(t.predict(NcclColl::AllGather, 4 * mib)->fill_us / t.predict(NcclColl::AllGather, 4 * mib)->time_us == doctest::Approx(0.143).epsilon(0.02));
  // LL (1 MiB) has no such fill, nor an all-to-all, nor a ring through host memory.
  CHECK(t.predict(NcclColl::AllGather, mib)->proto == NcclProto::LL);
  CHECK(t.predict(NcclColl::AllGather, mib)->fill_us == 0);
  CHECK(t.predict(NcclColl::AllToAll, 64 * mib)->fill_us == 0);
  CHECK(ShmModel(kH200x4).predict(NcclColl::AllGather, 2, 64 * mib).fill_us == 0);
}

namespace {
// 4 H100 on one NVSwitch (half an HGX board's GPUs): NVLS has 4 channels.
const char* kNvs4H100 = R"(name: hgx4
nodes:
  - {name: cpu0, kind: cpu}
  - {name: nvs, kind: nvswitch}
  - {name: "gpu{i}", kind: gpu, model: H100-SXM5, repeat: 4}
links:
  - {a: "gpu{i}", b: cpu0, pcie: gen5 x16, latency: 1 us, repeat: 4}
  - {a: "gpu{i}", b: nvs, nvlinks: 18, latency: 1 us, repeat: 4}
)";
// 8 A100 on one NVSwitch: NVSwitch, but no NVLS before sm90.
const char* kHgxA100 = R"(name: hgx-a100
nodes:
  - {name: cpu0, kind: cpu}
  - {name: nvs, kind: nvswitch}
  - {name: "gpu{i}", kind: gpu, model: A100, repeat: 8}
links:
  - {a: "gpu{i}", b: cpu0, pcie: gen4 x16, latency: 1 us, repeat: 8}
  - {a: "gpu{i}", b: nvs, nvlinks: 12, latency: 1 us, repeat: 8}
)";
NcclTuneOptions nvls_on() {
  NcclTuneOptions o;
  o.nvls = true;
  return o;
}
}  // namespace

TEST_CASE("NVLS graph: a channel a GPU, (channels + 1) x bwIntra within a GPU's NVLink to the switch (search.cc)") {
  // 8 H100: 18 x 20.6 = 370.8 GB/s a GPU into the switch. The search starts
  // at 50 (60 x 8 channels exceeds 370.8 x 8/7) and settles at 40 (9 x 50 =
  // 450 does not fit, 9 x 40 = 360 does); pass 2 raises bwInter 40 -> 50
  // -> 60, the first sm90 speed, still under 2 x 40.
  const Model m8(kHgxH100);
  CHECK(m8.view.nvls.supported);
  CHECK(m8.view.nvls.channels == 8);
  CHECK(m8.view.nvls.bw_intra_GBps == 40.0);
  CHECK(m8.view.nvls.bw_inter_GBps == 60.0);
  CHECK(m8.view.nvls.cuda_channels == 16);
  // 4 H100: 5 x 60 = 300 fits at the first speed.
  const Model m4(kNvs4H100);
  CHECK(m4.view.nvls.channels == 4);
  CHECK(m4.view.nvls.bw_intra_GBps == 60.0);
  CHECK(m4.view.nvls.bw_inter_GBps == 60.0);
  // No NVLS before sm90, nor without an NVSwitch.
  CHECK_FALSE(Model(kHgxA100).view.nvls.supported);
  CHECK_FALSE(Model(kPcie4).view.nvls.supported);
}

TEST_CASE("NVLS all-reduce: tuning.cc's bandwidth and latency, NCCL's choice by size, its time in closed form") {
  const auto AR = NcclColl::AllReduce;
  const double gib = 1024.0 * 1024 * 1024;
  // 8 channels: per channel min(40 x 0.85 x 7/8 x 2, bwInter 60) = 59.5;
  // busBw 8 x 59.5 = 476; algorithm bandwidth x 8/14; latency 25 us.
  const Model m8(kHgxH100, nvls_on());
  const double bw8 = 8 * 59.5 * 8 / 14;
  CHECK(m8.tune.bandwidth(AR, NcclAlgo::Nvls, NcclProto::Simple) == doctest::Approx(bw8));
  CHECK(m8.tune.latency(AR, NcclAlgo::Nvls, NcclProto::Simple) == doctest::Approx(25.0));
  CHECK(m8.tune.bandwidth(AR, NcclAlgo::Nvls, NcclProto::LL) == 0);  // Simple only
  CHECK(m8.tune.bandwidth(AR, NcclAlgo::NvlsTree, NcclProto::Simple) == 0);  // one host
  const auto big = m8.tune.predict(AR, gib);
  REQUIRE(big.has_value());
  CHECK(big->algo == NcclAlgo::Nvls);
  CHECK(big->proto == NcclProto::Simple);
  CHECK(big->time_us == doctest::Approx(25.0 + gib / (1000 * bw8)));
  CHECK(big->busbw_GBps == doctest::Approx(gib / ((25.0 + gib / (1000 * bw8)) * 1e3) * 1.75));
  CHECK(big->busbw_GBps > 470);  // 476 less the latency's share
  // Small sizes stay on the LL ring (6.6 + 14 x 0.6 = 15 us against 25).
  const auto small = m8.tune.predict(AR, 1024);
  REQUIRE(small.has_value());
  CHECK(small->algo == NcclAlgo::Ring);
  CHECK(small->proto == NcclProto::LL);
  // 4 channels: per channel min(60 x 0.85 x 3/4 x 2 = 76.5, 60) = 60, bwInter bound.
  // There NCCL keeps the ring (busBw 360 against NVLS's 240); NCCL_ALGO=NVLS forces it.
  const Model m4(kNvs4H100, nvls_on());
  const double bw4 = 4 * 60.0 * 4 / 6;
  CHECK(m4.tune.bandwidth(AR, NcclAlgo::Nvls, NcclProto::Simple) == doctest::Approx(bw4));
  const auto ring4 = m4.tune.predict(AR, 256.0 * 1024 * 1024);
  REQUIRE(ring4.has_value());
  CHECK(ring4->algo == NcclAlgo::Ring);
  NcclTuneOptions forced = nvls_on();
  forced.algo = NcclAlgo::Nvls;
  const Model f4(kNvs4H100, forced);
  const auto p4 = f4.tune.predict(AR, 256.0 * 1024 * 1024);
  REQUIRE(p4.has_value());
  CHECK(p4->algo == NcclAlgo::Nvls);
  CHECK(p4->time_us == doctest::Approx(25.0 + 256.0 * 1024 * 1024 / (1000 * bw4)));
  CHECK(p4->busbw_GBps < ring4->busbw_GBps);
}

TEST_CASE("NVLS all-gather and reduce-scatter: (ppn-1)/ppn of the intra bandwidth, no ring conversion, so the ring wins on 8 H100") {
  const Model m8(kHgxH100, nvls_on());
  // 8 x min(40 x 0.85 x 7/8 x 7/8, 60) = 208.25, taken as algorithm bandwidth.
  for (NcclColl c : {NcclColl::AllGather, NcclColl::ReduceScatter}) {
    CHECK(m8.tune.bandwidth(c, NcclAlgo::Nvls, NcclProto::Simple) == doctest::Approx(8 * 40 * 0.85 * 7 / 8 * 7 / 8));
    const auto p = m8.tune.predict(c, 1024.0 * 1024 * 1024);
    REQUIRE(p.has_value());
    CHECK(p->algo == NcclAlgo::Ring);
  }
  CHECK(m8.tune.bandwidth(NcclColl::Broadcast, NcclAlgo::Nvls, NcclProto::Simple) == 0);
}

TEST_CASE("NVLS off by default: no NVLS bandwidth, every prediction as without it on a view that has none") {
  const Model off(kHgxH100);
  CHECK(off.tune.bandwidth(NcclColl::AllReduce, NcclAlgo::Nvls, NcclProto::Simple) == 0);
  const auto p = off.tune.predict(NcclColl::AllReduce, 1024.0 * 1024 * 1024);
  REQUIRE(p.has_value());
  CHECK(p->algo == NcclAlgo::Ring);
  // On a view without NVLS the setting changes nothing.
  const Model a(kHgxA100), b(kHgxA100, nvls_on());
  for (double bytes = 1024; bytes <= 4.0 * 1024 * 1024 * 1024; bytes *= 4)
    for (NcclColl c : {NcclColl::AllReduce, NcclColl::AllGather, NcclColl::ReduceScatter}) {
      const auto x = a.tune.predict(c, bytes), y = b.tune.predict(c, bytes);
      REQUIRE(x.has_value());
      REQUIRE(y.has_value());
      CHECK(x->time_us == y->time_us);
      CHECK(x->algo == y->algo);
    }
}

TEST_CASE("NVLS on a topology without NVSwitch multicast: a typed error at the setting's file:line") {
  const SourceLocation at{"run.yaml", 7, 3};
  const Model pcie(kPcie4), a100(kHgxA100), h100(kHgxH100);
  CHECK_NOTHROW(nccl_nvls_check(h100.view, "hgx.yaml", at));
  for (const auto& [m, why] : {std::pair{&pcie, "no NVSwitch"}, std::pair{&a100, "sm80 GPUs"}}) {
    try {
      nccl_nvls_check(m->view, "t.yaml", at);
      FAIL("no error");
    } catch (const InputError& e) {
      const std::string what = e.what();
      CHECK(e.where().file == "run.yaml");
      CHECK(e.where().line == 7);
      CHECK(what.find("run.yaml:7") != std::string::npos);
      CHECK(what.find("t.yaml") != std::string::npos);
      CHECK(what.find(why) != std::string::npos);
    }
  }
}

TEST_CASE("NVLS-Tree across two H100 nodes: each node's NVLS, a tree of the reduced shares over 8 NICs") {
  // h100-2node-ib: 8 NICs a node at 50 GB/s behind Gen5 x16 (NCCL: 48).
  // NVLS graph: 8 channels (a NIC each, its GPU the head), bwIntra 40 (9 x
  // 45 = 405 exceeds 370.8), bwInter 40 -> 42 -> 45 -> 48 (the GPU-NIC path).
  const hw::Topology topo(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/h100-2node-ib.yaml"));
  const NcclView view = nccl_view(topo);
  REQUIRE(view.hosts == 2);
  CHECK(view.nvls.channels == 8);
  CHECK(view.nvls.bw_intra_GBps == 40.0);
  CHECK(view.nvls.bw_inter_GBps == 48.0);
  CHECK(view.nvls_host.bw_inter_GBps == 60.0);
  NcclTuneOptions o;
  o.nvls = true;
  const NcclTuning tune(view, o);
  const auto AR = NcclColl::AllReduce;
  // Per channel min(40 x 0.85 x 7/8 x 2 = 59.5, 2 x 48, Hopper's 2-node cap
  // 57.7) = 57.7; busBw 8 x 57.7 = 461.6, algorithm bandwidth x 16/30;
  // latency 25 + 2 x log2(2) x 20.9. NVLS alone needs CollNet across nodes.
  const double bw = 8 * 57.7 * 16 / 30;
  CHECK(tune.bandwidth(AR, NcclAlgo::NvlsTree, NcclProto::Simple) == doctest::Approx(bw));
  CHECK(tune.latency(AR, NcclAlgo::NvlsTree, NcclProto::Simple) == doctest::Approx(25 + 2 * 20.9));
  CHECK(tune.bandwidth(AR, NcclAlgo::Nvls, NcclProto::Simple) == 0);
  const double gib = 1024.0 * 1024 * 1024;
  const auto p = tune.predict(AR, gib);
  REQUIRE(p.has_value());
  CHECK(p->algo == NcclAlgo::NvlsTree);
  CHECK(p->time_us == doctest::Approx(25 + 2 * 20.9 + gib / (1000 * bw)));
  // All-gather and reduce-scatter keep the ring across nodes.
  CHECK(tune.bandwidth(NcclColl::AllGather, NcclAlgo::Nvls, NcclProto::Simple) == 0);
}
