// The machine catalogue's topologies (configs/topologies/: h100x8-pcie,
// l40sx8-pcie, gh200x4-c2c, gb200-nvl72) as NCCL sees them: path types,
// transports, the ring search's channels and the bus bandwidth NCCL's tuning
// model expects at 1 GiB, each expected value derived by hand from NCCL
// 2.30.7's rules (sim/gpu/nccl_topo.hpp, nccl_tuning.hpp) in the comments.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "gpu/nccl_topo.hpp"
#include "gpu/nccl_tuning.hpp"
#include "hw/topology.hpp"

using namespace osim;
using namespace osim::exec;

namespace {
const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

struct Machine {
  hw::Topology topo;
  NcclView view;
  explicit Machine(const std::string& name)
      : topo(hw::parse_topology_file(kSrc + "/configs/topologies/" + name + ".yaml")), view(nccl_view(topo)) {}
  const NcclPair& pair(const std::string& a, const std::string& b) const {
    const auto ia = std::find(view.gpus.begin(), view.gpus.end(), topo.find(a)) - view.gpus.begin();
    const auto ib = std::find(view.gpus.begin(), view.gpus.end(), topo.find(b)) - view.gpus.begin();
    return view.pair[static_cast<size_t>(ia)][static_cast<size_t>(ib)];
  }
  // nccl-tests' all-reduce bus bandwidth at 1 GiB, NCCL's own choice.
  double busbw_1g(NcclColl c = NcclColl::AllReduce) const {
    const auto p = NcclTuning(view).predict(c, 1024.0 * 1024 * 1024);
    REQUIRE(p.has_value());
    return p->busbw_GBps;
  }
};

// A ring all-reduce of n ranks on `ch` channels of `bw` GB/s each, with the
// ring's Simple latency `lat_us` and its pipeline's fill `fill_us` (one
// slice at a collective channel's rate; 0 through host memory): nccl-tests'
// busbw at 1 GiB.
double ring_allreduce_busbw(int n, int ch, double bw, double lat_us, double fill_us = 0) {
  const double bytes = 1024.0 * 1024 * 1024;
  const double algbw = ch * bw * n / (2.0 * (n - 1));  // bus bandwidth x ranks / steps
  const double t_us = lat_us + bytes / (1000 * algbw) + fill_us;
  return bytes / (t_us * 1e3) * 2 * (n - 1) / n;
}
}  // namespace

TEST_CASE("catalogue: 8x H100 PCIe, P2P under a switch, SHM across switches and sockets, 2 rings over the sockets' link") {
  const Machine m("h100x8-pcie");
  CHECK(m.view.sm == 90);
  CHECK(m.view.cpu == NcclCpu::IntelSrp);
  // Gen5 x16 = 16 x 240 / 80 = 48 GB/s in NCCL's units.
  CHECK(to_string(m.pair("gpu0", "gpu1").type) == "PIX");
  CHECK(m.pair("gpu0", "gpu1").bw_GBps == doctest::Approx(48.0));
  CHECK(m.pair("gpu0", "gpu1").transport == NcclTransport::P2pPcie);
  // Beyond NCCL_P2P_LEVEL's default PXB: through the receiver's CPU.
  CHECK(to_string(m.pair("gpu0", "gpu2").type) == "PHB");
  CHECK(m.pair("gpu0", "gpu2").transport == NcclTransport::Shm);
  // Across sockets: SYS at SRP_QPI_BW, 22 GB/s.
  CHECK(to_string(m.pair("gpu0", "gpu4").type) == "SYS");
  CHECK(m.pair("gpu0", "gpu4").bw_GBps == doctest::Approx(22.0));
  CHECK(m.pair("gpu0", "gpu4").transport == NcclTransport::Shm);
  // Every ring crosses the sockets' 22 GB/s both ways: one ring at 20, then
  // two at 11 (22 > 20); 6 gives 3 x 6 = 18 and 3/11 < 0.49 stops the search;
  // no duplication below 25 GB/s; connect.cc doubles: 4 channels.
  CHECK(m.view.ring.channels == 2);
  CHECK(m.view.ring.bw_intra_GBps == doctest::Approx(11.0));
  CHECK(to_string(m.view.ring.type_intra) == "SYS");
  CHECK(m.view.coll_channels == 4);
  // Ring/Simple over PCI: 8.4 + 14 steps x 5.7 us.
  CHECK(m.busbw_1g() == doctest::Approx(ring_allreduce_busbw(8, 2, 11.0, 8.4 + 14 * 5.7)).epsilon(1e-6));
  CHECK(m.busbw_1g() == doctest::Approx(21.98).epsilon(0.001));
}

TEST_CASE("catalogue: 8x L40S PCIe, Gen4 GPUs under Gen5 switches: one ring at 20 GB/s") {
  const Machine m("l40sx8-pcie");
  CHECK(m.view.sm == 89);
  CHECK(!m.view.sm_assumed);
  // Gen4 x16 = 24 GB/s; a data-center card: P2P under its switch.
  CHECK(to_string(m.pair("gpu0", "gpu1").type) == "PIX");
  CHECK(m.pair("gpu0", "gpu1").bw_GBps == doctest::Approx(24.0));
  CHECK(m.pair("gpu0", "gpu1").transport == NcclTransport::P2pPcie);
  CHECK(to_string(m.pair("gpu0", "gpu3").type) == "PHB");
  CHECK(m.pair("gpu0", "gpu3").transport == NcclTransport::Shm);
  CHECK(to_string(m.pair("gpu1", "gpu7").type) == "SYS");
  CHECK(m.pair("gpu1", "gpu7").bw_GBps == doctest::Approx(22.0));
  // Speeds of sm < 90 from 20 (the first within the 24 GB/s best path): one
  // ring at 20 (the PHB hop takes 1.2 x 20 = 24 on the GPU's Gen4 link); 10
  // gives 2 x 10, no better, and 9/20 < 0.49 stops. 2 collective channels.
  CHECK(m.view.ring.channels == 1);
  CHECK(m.view.ring.bw_intra_GBps == doctest::Approx(20.0));
  CHECK(m.view.coll_channels == 2);
  // The ring's hops across switches go through host memory (SHM): its bus
  // bandwidth is capped at the SHM transport's share of a GPU's 24 GB/s
  // link (kNcclShmEfficiency x 24 = 12.48 GB/s), under the search's 20.
  CHECK(m.busbw_1g() == doctest::Approx(ring_allreduce_busbw(8, 1, kNcclShmEfficiency * 24.0, 8.4 + 14 * 5.7)).epsilon(1e-6));
  CHECK(m.busbw_1g() == doctest::Approx(12.47).epsilon(0.001));
}

TEST_CASE("catalogue: 4x GH200, an NVLink mesh of 6 links a pair: 6 rings at 60, duplicated to 12 x 30") {
  const Machine m("gh200x4-c2c");
  CHECK(m.view.sm == 90);
  CHECK(m.view.cpu == NcclCpu::Arm);  // a Grace: NVLink-C2C to its GPU
  CHECK(m.view.cpu_grace);
  CHECK(m.view.nvswitches == 0);
  // 6 NVLink4 links x 20.6 GB/s.
  CHECK(to_string(m.pair("gpu0", "gpu3").type) == "NVL");
  CHECK(m.pair("gpu0", "gpu3").bw_GBps == doctest::Approx(123.6));
  CHECK(m.pair("gpu0", "gpu3").transport == NcclTransport::P2pNvLink);
  CHECK(m.view.ring.total_bw_GBps == doctest::Approx(3 * 123.6));
  // At 60 each directed pair link holds 2 rings: the 6 directed Hamiltonian
  // cycles of 4 GPUs, each link in two of them (360 < 370.8, lower speeds do
  // no better); 60 >= 50: duplicated to 12 channels at 30; 24 collective.
  CHECK(m.view.ring.channels == 12);
  CHECK(m.view.ring.bw_intra_GBps == doctest::Approx(30.0));
  CHECK(m.view.coll_channels == 24);
  // Ring/Simple over NVLink: 8.4 + 6 steps x 3.4 us, and the fill: a
  // channel's share of a rank's chunk, 1 GiB / (4 x 24), runs 2 MiB chunks
  // in 1 MiB slices, one of them at 360 / 24 GB/s.
  CHECK(m.busbw_1g() == doctest::Approx(ring_allreduce_busbw(4, 12, 30.0, 8.4 + 6 * 3.4, 1048576 / (1000 * 360.0 / 24))).epsilon(1e-6));
  CHECK(m.busbw_1g() == doctest::Approx(352.2).epsilon(0.001));
}

TEST_CASE("catalogue: GB200 NVL72, 72 GPUs on one NVLink 5 fabric: 16 channels x 45 GB/s") {
  const Machine m("gb200-nvl72");
  REQUIRE(m.view.gpus.size() == 72);
  CHECK(m.view.hosts == 1);  // one NVLink domain, as NCCL's multi-node NVLink fuses it
  CHECK(m.view.sm == 100);
  CHECK(m.view.cpu == NcclCpu::Arm);
  // 18 links x SM100_NVLINK_BW 40.1 GB/s, through the switch between any two GPUs
  // (not through a shared Grace: C2C is a farther path type than NVL).
  CHECK(to_string(m.pair("gpu0", "gpu1").type) == "NVL");
  CHECK(m.pair("gpu0", "gpu71").bw_GBps == doctest::Approx(18 * 40.1));
  CHECK(m.pair("gpu0", "gpu71").transport == NcclTransport::P2pNvLink);
  // 8 rings at 90 (8 x 90 = 720 < 721.8); 80..45 do no better and 40/90 <
  // 0.49 stops; 90 >= 50: duplicated to 16 at 45; 32 collective channels.
  CHECK(m.view.ring.channels == 16);
  CHECK(m.view.ring.bw_intra_GBps == doctest::Approx(45.0));
  CHECK(m.view.coll_channels == 32);
  // 72 ranks: Ring/Simple, 8.4 + 142 steps x 3.4 us, beats LL128 (16 x 40 x 72/142
  // after 14 + 142 x 1.9 us) and the trees at 1 GiB.
  // The fill: a channel's share of a rank's chunk is 1 GiB / (72 x 32),
  // 466 KiB, in 2 slices; one of them at 720 / 32 GB/s.
  CHECK(m.busbw_1g() ==
        doctest::Approx(ring_allreduce_busbw(72, 16, 45.0, 8.4 + 142 * 3.4, 1024.0 * 1024 * 1024 / (72 * 32) / 2 / (1000 * 720.0 / 32))).epsilon(1e-6));
  CHECK(m.busbw_1g() == doctest::Approx(615.1).epsilon(0.001));
}
