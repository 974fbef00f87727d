// NCCL's view of a topology: the graph NCCL builds from a node (GPUs, PCIe
// switches, CPUs, NVSwitches, NICs), the path type and bandwidth it computes
// per GPU pair, the transport it picks per pair, and the outcome of its ring
// channel search (how many channels, at what bandwidth each).
//
// The rules are NCCL's (NVIDIA/nccl 2.30.7, commit 5067397): src/graph/topo.h
// and topo.cc (link bandwidths), paths.cc (path types and bandwidths, the P2P
// check, traffic diverted through the CPU when P2P is off), search.cc (the
// bandwidth levels the channel search tries, channel duplication) and
// connect.cc (channels doubled at connection). Figures are NCCL's own
// constants, not measurements: NCCL's view is what it plans with.
//
// Simplifications, each written down: a host bridge is its CPU (NCCL has no
// root-complex node: two bridges of one socket are PHB, not NODE); NVLink
// links given by `bandwidth:` count as bandwidth / 25 GB/s links (NVLink 2-4;
// 50 GB/s for NVLink 5); the channel search packs rings greedily, one per
// channel, where NCCL searches with time limits (same outcome on the
// topologies the tests cover); trees use the rings' channels.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hw/fabric.hpp"

namespace osim::exec {

/// NCCL's path types (src/include/graph.h), nearest first.
enum class NcclPath { Loc = 0, Nvl = 1, Nvb = 2, C2c = 3, Pix = 4, Pxb = 5, P2c = 6, Pxn = 7, Phb = 8, Sys = 9, Net = 10, Dis = 11 };
std::string to_string(NcclPath p);

enum class NcclTransport { P2pNvLink, P2pPcie, Shm, Net };
std::string to_string(NcclTransport t);

/// The CPU NCCL finds: its inter-socket bandwidth and the Intel P2P overhead
/// depend on it (topo.h: BDW/SKL/SRP/ERP QPI, AMD, ARM).
enum class NcclCpu { IntelBdw, IntelSkl, IntelSrp, IntelErp, Amd, Arm };
/// "intel-bdw", "intel-skl", "intel-spr", "intel-emr", "amd", "arm".
std::string to_string(NcclCpu c);
std::optional<NcclCpu> nccl_cpu_from_string(const std::string& s);

struct NcclTopoOptions {
  bool p2p_disable = false;    // NCCL_P2P_DISABLE=1
  std::optional<NcclCpu> cpu;  // default: by GPU generation (see nccl_topo.cpp)
  int min_channels = 0;        // NCCL_MIN_NCHANNELS (0: unset)
  int max_channels = 0;        // NCCL_MAX_NCHANNELS (0: unset)
};

struct NcclPair {
  NcclPath type = NcclPath::Dis;
  double bw_GBps = 0;  // NCCL's path bandwidth (min over its links)
  NcclTransport transport = NcclTransport::Shm;
};

/// The ring search's outcome for one host.
struct NcclRings {
  int channels = 0;          // search channels (before connect.cc doubles them)
  double bw_intra_GBps = 0;  // per channel
  NcclPath type_intra = NcclPath::Loc;
  std::vector<std::vector<int>> rings;  // per channel: GPU order (indices into NcclView::gpus)
  double max_bw_GBps = 0;               // system->maxBw: the best single path
  double total_bw_GBps = 0;             // system->totalBw: the most a GPU has (NVLink sum, or PCIe)
};

/// NCCL's NVLS graph (NVIDIA/nccl 2.30.7 src/graph/search.cc, pattern
/// NCCL_TOPO_PATTERN_NVLS; the same in 2.28.9): NVLink SHARP's channels,
/// one a head GPU, each pulling every GPU's data through the NVSwitch.
/// NCCL searches it only where a host has an NVSwitch and every GPU is
/// sm90 or later (ncclTopoCompute); its runtime then needs the driver's
/// multicast (transport/nvls.cc, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED),
/// which the topology cannot tell and NCCL_NVLS_ENABLE=0 turns off.
/// - channels: min(NCCL_MAX_NVLS_ARITY 32, GPUs of a host); across hosts
///   one a NIC with its own GPU as head, at most that many.
/// - bw_intra: a channel moves bw_intra over every GPU's link to the switch
///   and twice it over its head's, so ngpus channels fit where (channels
///   + 1) x bw_intra is within a GPU's NVLink bandwidth to the switch: the
///   highest intra-node speed (inter-node across hosts) that fits, from
///   where the search starts (speed x channels within the GPU's total x
///   ngpus / (ngpus - 1)); across hosts also within the GPU-NIC path.
/// - bw_inter: search pass 2 raises it one speed at a time while it is
///   under 2 x bw_intra (the first speed if it never gets there); inside
///   one host nothing bounds it, across hosts the GPU-NIC path does.
/// Simplified: NCCL's search may settle on fewer channels at a higher
/// speed where (channels x bw_inter) is larger; on the shipped NVSwitch
/// topologies the full count wins both ways.
struct NcclNvls {
  bool supported = false;  // NVSwitch in the host, every GPU sm90 or later
  int channels = 0;        // the NVLS graph's nChannels
  double bw_intra_GBps = 0, bw_inter_GBps = 0;
  /// The CTAs NCCL runs NVLS on (transport/nvls.cc NVLS_NCHANNELS_SM90 16;
  /// sm100: 32 across hosts, 24 inside one; NCCL_NVLS_NCHANNELS).
  int cuda_channels = 0;
};

struct NcclView {
  std::vector<int> gpus;  // topology node index per GPU, in node order
  int sm = 90;            // compute capability of the slowest GPU (e.g. 80, 90)
  bool sm_assumed = false;
  NcclCpu cpu = NcclCpu::IntelSrp;
  bool cpu_grace = false;  // the CPU taken as ARM because a GPU reaches it over NVLink-C2C (a Grace)
  int hosts = 1;
  int nvswitches = 0;
  std::vector<std::vector<NcclPair>> pair;  // [i][j] for GPUs i, j (index into gpus)
  NcclRings ring;                           // the first host's (hosts are alike); across hosts, as its NICs allow
  NcclRings host_ring;                      // the first host's own, for a communicator inside one host
  int nics_per_host = 0;
  double nic_bw_GBps = 0;  // one NIC's bandwidth as NCCL reads it (port speed / 8)
  /// The least of the first host's GPUs' own PCIe links as NCCL reads them
  /// (topo.cc: width x lane rate / 80; 48 GB/s for Gen5 x16): what a GPU's
  /// traffic through host memory (SHM) crosses, 0 where a GPU has none.
  double gpu_pcie_GBps = 0;
  /// Channels NCCL runs collectives on (connect.cc: search channels doubled,
  /// then NCCL_MIN/MAX_NCHANNELS).
  int coll_channels = 0;
  int host_coll_channels = 0;  // the same for a communicator inside one host
  /// NCCL's NVLS graph across the view's hosts, and nvls_host inside one.
  NcclNvls nvls, nvls_host;
  [[nodiscard]] int ranks_per_host() const { return static_cast<int>(gpus.size()) / hosts; }
};

/// Compute capability from a GPU model name ("H100-SXM5" 90, "A100" 80,
/// "V100" 70, "RTX-4090" 89, "B200" 100); nullopt when unknown.
std::optional<int> nccl_sm_of(const std::string& model);
/// NCCL's per-link NVLink bandwidth for a compute capability (topo.h SMxx_NVLINK_BW).
double nccl_nvlink_bw(int sm);

NcclView nccl_view(const hw::Topology& topo, const NcclTopoOptions& opt = {});

}  // namespace osim::exec
