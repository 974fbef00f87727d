// NCCL's model in the executor (gpu/nccl_model.hpp): where a calibration
// measured no NCCL (nccl_model: 1), a collective inside one host takes NCCL's
// channels, latency and protocol by size; a measured table still wins; a
// communicator across hosts, or a host whose rings go through host memory,
// keeps the channel model (through host memory capped at the SHM transport's
// rate). Expected values are the
// closed forms of NCCL 2.30.7's tuning model on an 8x H100 NVSwitch box
// (rings 12 channels x 30 GB/s, 24 collective channels; test_nccl_tuning).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "gpu/executor.hpp"
#include "gpu/nccl_tuning.hpp"
#include "gpu/params_io.hpp"
#include "gpu/sim_fixture.hpp"

using namespace osim;
using namespace osim::test;

namespace {
const std::string kRoot = OVERLAPSIM_SOURCE_DIR;

ModelParams modelled() {
  ModelParams p = quiet();
  p.nccl.nccl_model = 1;
  return p;
}

std::string one(const std::string& kind, const std::string& bytes, int ranks, const std::string& extra = "") {
  return fmt::format(R"(name: m
ranks: {}
streams: [comm]
programs:
  - rank: all
    ops:
      - {{op: collective, kind: {}, group: world, bytes: {}, stream: comm{}}}
)",
                     ranks, kind, bytes, extra);
}

// A ring of `steps` steps: the latency, then the transfer, each step's part
// taking at least 1 ns (the floor of a table's phase, Collectives::tabled).
double ring_us(double latency_us, double transfer_us, int steps) { return latency_us + steps * std::max(transfer_us / steps, 1e-3); }

// The collective's time on 8x H100 (dgx-h100.yaml: 18 NVLinks a GPU, 450 GB/s, above NCCL's 360).
double us_of(const std::string& sched, const ModelParams& p, const std::string& topo = "dgx-h100") {
  const hw::Topology t(hw::parse_topology_file(kRoot + "/configs/topologies/" + topo + ".yaml"));
  const ExecResult r = execute(parse_schedule_string(sched, "s.yaml"), t, p);
  return (r.ops[0][0].end - r.ops[0][0].start).us();
}
}  // namespace

TEST_CASE("without a measured table, an all-gather takes NCCL's ring: latency per step and bus bandwidth by protocol") {
  const double gib = 1024.0 * 1024 * 1024;
  // 1 GiB (the gathered buffer): Ring Simple, 8.4 + 7 steps x 3.4 us, algbw
  // 360 x 8 / 7 GB/s, its 7 link steps at 7 / (7 + 0.29) of it for the
  // rank's own chunk (kNcclOwnChunkSteps), and the pipeline's fill: one
  // 1 MiB slice at a channel's 360 / 24 GB/s (69.9 us): 2820.0 us.
  const double algbw = 360.0 * 8 / 7 * 7 / (7 + 0.29);
  const double fill = 1048576 / (1e3 * 360 / 24);
  CHECK(exec::kNcclOwnChunkSteps == 0.29);
  CHECK(us_of(one("all_gather", "1 GiB", 8), modelled()) == doctest::Approx(8.4 + 7 * 3.4 + gib / (1e3 * algbw) + fill).epsilon(1e-6));
  CHECK(us_of(one("all_gather", "1 GiB", 8), modelled()) == doctest::Approx(2820.0).epsilon(1e-4));
  // The channel model it replaces (24 x 19.5 GB/s a flow, bound here by the
  // 450 GB/s NVLinks, no latency in quiet()) is over 20 % faster.
  CHECK(us_of(one("all_gather", "1 GiB", 8), quiet()) < 0.8 * (8.4 + 7 * 3.4 + gib / (1e3 * algbw)));
  // 12 channels given (NCCL_MAX_NCHANNELS=12): half the model's 24, twice
  // the transfer; the fill is one slice at a channel's rate still.
  CHECK(us_of(one("all_gather", "1 GiB", 8, ", channels: 12"), modelled()) ==
        doctest::Approx(8.4 + 7 * 3.4 + 2 * gib / (1e3 * algbw) + fill).epsilon(1e-6));
}

TEST_CASE("small all-reduces take LL's latency: within a microsecond of NCCL's 15 us") {
  // 1 KiB: Ring LL, 6.6 + 14 x 0.6 us, algbw 141 x 8 / 14 GB/s (llMaxBw, Hopper, one node).
  CHECK(us_of(one("all_reduce", "1 KiB", 8), modelled()) == doctest::Approx(ring_us(15.0, 1024 / (1e3 * 141 * 8 / 14), 14)).epsilon(1e-6));
  // 4 ranks of the box: 6.6 + 6 x 0.6 us.
  CHECK(us_of(one("all_reduce", "1 KiB", 4), modelled()) == doctest::Approx(ring_us(10.2, 1024 / (1e3 * 141 * 4 / 6), 6)).epsilon(1e-6));
  // 8 B all-gather: 6.6 + 7 x 0.6 us (each step's byte at the 1 ns floor).
  CHECK(us_of(one("all_gather", "8 B", 8), modelled()) == doctest::Approx(ring_us(10.8, 8 / (1e3 * 141 * 8 / 7), 7)).epsilon(1e-6));
}

TEST_CASE("an all-to-all takes one step's latency and each rank's bytes on NCCL's send/recv channels") {
  // 1 GiB a rank, 7/8 to peers, Simple: 8.4 + 3.4 us and the time NCCL's
  // channels take within 18 x 20.6 = 370.8 GB/s of NVLink (32 channels, 32
  // a peer, parts from 4 on 8 ranks; nccl_p2p_simple_us).
  const double gib = 1024.0 * 1024 * 1024;
  const double simple = exec::nccl_p2p_simple_us(8, gib / 8, exec::NcclP2pChannels{32, 32, 4, 512 * 1024.0}, 370.8);
  CHECK(simple > gib * 7 / 8 / (1e3 * 370.8));
  CHECK(us_of(one("all_to_all", "1 GiB", 8), modelled()) == doctest::Approx(11.8 + simple).epsilon(1e-6));
  // 64 KiB a rank (8 KiB a peer): LL, 6.6 + 0.6 us, one part of NCCL's
  // send/recv plan at a channel's LL rate (nccl_p2p_plan).
  CHECK(us_of(one("all_to_all", "64 KiB", 8), modelled()) == doctest::Approx(7.2 + 8192 / (1e3 * exec::kNcclP2pLlChannelGBps)).epsilon(1e-6));
}

TEST_CASE("a measured table wins over NCCL's model, and across hosts the channel model stays") {
  ModelParams p = modelled();
  p.nccl.nccl_tables.push_back({TableColl::AllGather, 8, false, {{1e3, 30e-6}, {1.5e9, 20e-3}}});
  CHECK(us_of(one("all_gather", "1.5 GB", 8), p) == doctest::Approx(20000.0).epsilon(1e-6));
  // Two ranks on two hosts: NCCL's model is not used (nor a table).
  const std::string two = std::string(one("all_to_all", "1 GB", 2)).insert(0, "gpus: [n0_gpu0, n1_gpu0]\n");
  CHECK(us_of(two, modelled(), "h100-2node-ib") == us_of(two, quiet(), "h100-2node-ib"));
}

TEST_CASE("through host memory the channel model stays, a rank's traffic capped at NCCL's SHM share of its PCIe link") {
  // 4 H100 PCIe on CPU root ports, no P2P: SHM. A ring all-gather of 64 MiB
  // takes 3 steps of 16 MiB, each flow at kNcclShmEfficiency x the 48 GB/s
  // NCCL gives a Gen5 x16 link (24.96 GB/s), where the links alone
  // (55 GB/s a direction, UPI 64 GB/s) would carry more.
  const double shm = exec::kNcclShmEfficiency * 48.0;
  CHECK(shm == doctest::Approx(24.96));
  const double mib16 = 16.0 * 1024 * 1024;
  const double t = us_of(one("all_gather", "64 MiB", 4), modelled(), "aces-4xh100-pcie");
  // The transfer, and each step's hops through the host (2.5 us: the routes' latencies).
  CHECK(t == doctest::Approx(3 * (mib16 / (1e3 * shm) + 2.5)).epsilon(1e-6));
  // Uncapped (no NCCL model): the links' rate, faster.
  CHECK(us_of(one("all_gather", "64 MiB", 4), quiet(), "aces-4xh100-pcie") < 0.6 * t);
  // A measured ceiling wins over NCCL's: only the transfer changes.
  ModelParams p = modelled();
  p.nccl.nccl_host_rank_bandwidth = Bandwidth::from_GBps(20.0);
  CHECK(us_of(one("all_gather", "64 MiB", 4), p, "aces-4xh100-pcie") - t == doctest::Approx(3 * mib16 / 1e3 * (1 / 20.0 - 1 / shm)).epsilon(1e-6));
}

TEST_CASE("the calibrations that measured no NCCL take its model, the measured ones their tables") {
  CHECK(read_calibration_file(kRoot + "/configs/calibrations/h100-sxm.yaml").params.nccl.nccl_model == 1);
  CHECK(read_calibration_file(kRoot + "/configs/calibrations/h200.yaml").params.nccl.nccl_model == 1);
  const ModelParams m = read_calibration_file(kRoot + "/configs/calibrations/h200x4-nvlink.yaml").params;
  CHECK(m.nccl.nccl_model == 0);
  CHECK_FALSE(m.nccl.nccl_tables.empty());
}

namespace {
// An 8-rank all-reduce of `bytes` with NVLS on (NCCL_NVLS_ENABLE=1) or
// off, and on rank 0 a P2P copy of `copy` to rank 1 beside it (none where
// empty); `reduce` false: the copy alone.
std::string nvls_all_reduce(const std::string& bytes, bool nvls, const std::string& copy = "", bool reduce = true) {
  const std::string ar = reduce ? fmt::format("      - {{op: collective, kind: all_reduce, group: world, bytes: {}, stream: comm}}\n", bytes)
                                : "      - {op: kernel, name: k, stream: comm, duration: 1 us}\n";
  const std::string cp = copy.empty() ? "" : fmt::format("      - {{op: memcpy, kind: p2p, peer: 1, bytes: {}, stream: copy}}\n", copy);
  return fmt::format(R"(name: nvls
ranks: 8
streams: [comm, copy]
{}programs:
  - rank: 0
    ops:
{}{}  - rank: [1, 2, 3, 4, 5, 6, 7]
    ops:
{})",
                     nvls ? "settings: {nccl_nvls_enable: true}\n" : "", ar, cp, ar);
}

ExecResult run_on_h100(const std::string& sched) {
  const hw::Topology t(hw::parse_topology_file(kRoot + "/configs/topologies/dgx-h100.yaml"));
  return execute(parse_schedule_string(sched, "s.yaml"), t, modelled());
}
}  // namespace

TEST_CASE("an NVLS all-reduce moves over each GPU's switch port at NCCL's NVLS rate, not as a ring's steps") {
  const double gib = 1024.0 * 1024 * 1024;
  // NCCL's NVLS all-reduce on 8 H100 (test_nccl_tuning): busbw 8 channels x
  // min(2 x 40 x 0.85 x 7/8, 60) = 476 GB/s, algbw 476 x 8/14 = 272 GB/s,
  // latency 25 us. Each GPU's port carries 9/8 of the buffer each way
  // (306 GB/s of its 450 at that rate): NCCL's rate sets the pace.
  const double algbw = 8 * std::min(2 * 40 * 0.85 * 7 / 8, 60.0) * 8 / 14;
  CHECK(algbw == doctest::Approx(272.0));
  const double nvls_us = 25.0 + gib / (1e3 * algbw);
  CHECK(us_of(nvls_all_reduce("1 GiB", true), modelled()) == doctest::Approx(nvls_us).epsilon(1e-6));
  CHECK(nvls_us == doctest::Approx(3972.5).epsilon(1e-4));
  // As ring steps the links alone would need 14/8 of the buffer a port
  // (4175 us at 450 GB/s): the NVLS time is below what a ring could carry.
  CHECK(nvls_us < gib * 14 / 8 / (1e3 * 450.0));
  // NVLS off: NCCL's Simple ring, slower.
  CHECK(us_of(nvls_all_reduce("1 GiB", false), modelled()) > 1.3 * nvls_us);
  // Half the buffer: half the transfer, the same latency.
  CHECK(us_of(nvls_all_reduce("512 MiB", true), modelled()) == doctest::Approx(25.0 + gib / 2 / (1e3 * algbw)).epsilon(1e-6));
}

TEST_CASE("an NVLS all-reduce beside a P2P copy on one GPU's port shares it max-min") {
  const double gib = 1024.0 * 1024 * 1024;
  // Rank 0 copies 2 GiB to rank 1 (gpu0 -> switch -> gpu1, weight 1,
  // uncapped) while the all-reduce runs. Rank 0's and rank 1's NVLS flows
  // cross gpu0's way up and gpu1's way down at 9/8 a byte, the copy at 1:
  // 450 = (9/8 + 1) x L, so each moves L = 450 / 2.125 = 211.8 GB/s (below
  // NCCL's 272); the other ranks' flows keep 272. Every rank ends with the
  // slowest flow, 25 us + 1 GiB / L; the copy outlasts it.
  const double share = 450.0 / (9.0 / 8 + 1);
  CHECK(share == doctest::Approx(211.76).epsilon(1e-4));
  const ExecResult r = run_on_h100(nvls_all_reduce("1 GiB", true, "2 GiB"));
  const double ar_us = (r.ops[0][0].end - r.ops[0][0].start).us();
  CHECK(ar_us == doctest::Approx(25.0 + gib / (1e3 * share)).epsilon(1e-6));
  for (size_t k = 1; k < 8; ++k) CHECK(r.ops[k][0].end == r.ops[0][0].end);  // every rank ends together
  CHECK(r.ops[0][1].end > r.ops[0][0].end);
  // The copy loses (1 - L / 450) of the time the all-reduce's flows move
  // beside it (1 GiB / L) against the same copy alone.
  const ExecResult alone = run_on_h100(nvls_all_reduce("", true, "2 GiB", false));
  const double copy_alone_us = (alone.ops[0][1].end - alone.ops[0][1].start).us();
  const double copy_us = (r.ops[0][1].end - r.ops[0][1].start).us();
  CHECK(copy_us - copy_alone_us == doctest::Approx(gib / (1e3 * share) * (1 - share / 450.0)).epsilon(1e-4));
}
