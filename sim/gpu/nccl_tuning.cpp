// NCCL's tuning model (nccl_tuning.hpp); constants from NVIDIA/nccl 2.30.7
// src/graph/tuning.cc.
#include "gpu/nccl_tuning.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include <fmt/format.h>

namespace osim::exec {

std::string to_string(NcclColl c) {
  switch (c) {
    case NcclColl::AllReduce: return "all_reduce";
    case NcclColl::AllGather: return "all_gather";
    case NcclColl::ReduceScatter: return "reduce_scatter";
    case NcclColl::Broadcast: return "broadcast";
    case NcclColl::AllToAll: return "all_to_all";
  }
  return "?";
}
std::string to_string(NcclAlgo a) {
  switch (a) {
    case NcclAlgo::Tree: return "Tree";
    case NcclAlgo::Ring: return "Ring";
    case NcclAlgo::Nvls: return "NVLS";
    case NcclAlgo::NvlsTree: return "NVLSTree";
  }
  return "?";
}
std::string to_string(NcclProto p) { return p == NcclProto::LL ? "LL" : p == NcclProto::LL128 ? "LL128" : "Simple"; }

std::optional<NcclColl> nccl_coll_from_string(const std::string& s) {
  for (NcclColl c : {NcclColl::AllReduce, NcclColl::AllGather, NcclColl::ReduceScatter, NcclColl::Broadcast, NcclColl::AllToAll})
    if (to_string(c) == s) return c;
  return std::nullopt;
}

double nccl_busbw_factor(NcclColl c, int ranks) {
  const double n = ranks;
  switch (c) {
    case NcclColl::AllReduce: return 2 * (n - 1) / n;
    case NcclColl::Broadcast: return 1;
    default: return (n - 1) / n;
  }
}

namespace {

// ncclTunerConstantsDefaults. [algo Tree, Ring][proto LL, LL128, Simple].
constexpr double kBaseLat[2][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}};
// [hw NVLink, PCI, NET][algo][proto]
constexpr double kHwLat[3][2][3] = {{{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}}, {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}}, {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}}};
// [generation Volta, Ampere, Hopper, Blackwell][nodes 1, 2, 4+]
constexpr double kLlMaxBw[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {2 * 141.0, 2 * 45.0, 2 * 35.0}};
constexpr double kPerChRingLL128[4][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}};
constexpr double kPerChTreeLL128[4][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kPerChTree[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
// NVLS and NVLS-Tree (ncclTunerConstantsDefaults, nvlsEfficiency; Simple
// only): the share of a channel's bwIntra NVLink SHARP moves per GPU
// generation [Volta, Ampere, Hopper, Blackwell]; NVLS-Tree's per-channel
// cap [generation][nodes 1, 2, 4+] (2.28.9 has 43.8 for Blackwell 4+);
// their latencies (baseLatencies 0; hwLatencies NVLink NVLS 25, NVLS-Tree
// 25; NET NVLS 18, NVLS-Tree 20.9; one GPU a node takes the tree's NET
// Simple 14).
constexpr double kNvlsEfficiency[4] = {0, 0, .85, .74};
constexpr double kPerChNvlsTree[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};
constexpr double kNvlsIntraLat = 25, kNvlsTreeIntraLat = 25, kNvlsTreeInterLat = 20.9;
// ncclTopoGetAlgoTime: tree all-reduce correction per power of two from 64 B.
constexpr double kTreeCorrection[3][23] = {{1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
                                           {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
                                           {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};
constexpr double kP2pLlThreshold = 16384;  // enqueue.cc NCCL_P2P_LL_THRESHOLD, bytes a peer (a channel of it, nccl_p2p_plan)
// nccl_p2p_plan's steps (NCCL 2.28.3): init.cc DEFAULT_LL_BUFFSIZE
// (NCCL_LL_LINES_PER_THREAD 8 x NCCL_LL_MAX_NTHREADS 512 x NCCL_STEPS 8 x a
// 16-byte line) / NCCL_STEPS; NCCL_P2P_NVL_CHUNKSIZE, NCCL_P2P_PCI_CHUNKSIZE;
// device.h MAXCHANNELS.
constexpr double kP2pLlStepBytes = 8 * 512 * 16;
constexpr double kP2pNvlChunkBytes = 1 << 19;
constexpr double kP2pPciChunkBytes = 1 << 17;
constexpr int kMaxChannels = 64;

int pow2_up(int x) {
  int p = 1;
  while (p < x) p *= 2;
  return p;
}

int log2i(double x) { return x < 1 ? -1 : static_cast<int>(std::floor(std::log2(x))); }

// A Simple ring's chunk and slice (nccl_ring_simple_slice): init.cc
// DEFAULT_BUFFSIZE / device.h NCCL_STEPS, collectives.h *_CHUNKSTEPS and
// *_SLICESTEPS (NCCL_STEPS/2, NCCL_STEPS/4), prims_simple.h SlicePerChunk.
constexpr double kSimpleStepBytes = (1 << 22) / 8.0;
constexpr double kSimpleChunkBytes = 4 * kSimpleStepBytes;
constexpr double kSimpleSliceBytes = 2 * kSimpleStepBytes;
constexpr double kSlicePerChunk = 2;

}  // namespace

double nccl_nvlink_rate(int sm) { return sm >= 70 && sm < 80 ? kNvlink2RingGBps : nccl_nvlink_bw(sm); }

NcclLaunch nccl_launch(NcclAlgo a, NcclProto p, int channels, int ranks, double bytes, bool slow_ring) {
  // tuning.cc maxThreads and threadThresholds; enqueue.cc topoGetAlgoInfo.
  int nt = p == NcclProto::LL128 ? 640 : (p == NcclProto::Simple && a == NcclAlgo::Ring && slow_ring) ? 256 : 512;
  const double threshold = p == NcclProto::Simple ? 64.0 : p == NcclProto::LL && a == NcclAlgo::Ring ? 8.0 * ranks : 8.0;
  int nc = std::max(1, channels);
  while (bytes < static_cast<double>(nc) * nt * threshold && nc >= 2) --nc;
  while (bytes < static_cast<double>(nc) * nt * threshold && nt % 128 == 0) nt /= 2;
  if (p == NcclProto::Simple) nt += a == NcclAlgo::Ring ? 32 : 4 * 32;
  nt = std::max(nt, 3 * 32);
  if (a == NcclAlgo::Tree) nt = 640;
  return {nc, nt};
}

double nccl_ring_simple_slice(double bytes, int ranks, int channels) {
  const double piece = std::min(kSimpleChunkBytes, bytes / (std::max(1, ranks) * std::max(1, channels)));
  return std::min(piece, std::max(piece / kSlicePerChunk, kSimpleSliceBytes / 32));
}

NcclP2pPlan nccl_p2p_plan(double peer_bytes, int min_channels, int channels_per_peer, double simple_step, std::optional<NcclProto> force) {
  NcclP2pPlan r;
  r.proto = force.value_or(peer_bytes <= channels_per_peer * kP2pLlThreshold ? NcclProto::LL : NcclProto::Simple);
  if (peer_bytes <= 0) return r;
  const double step = r.proto == NcclProto::LL ? kP2pLlStepBytes : simple_step;
  const double min_part = step / 8, max_part = step * 32;  // one host (across hosts NCCL takes step / 2 and step)
  int c = std::max(1, std::min(min_channels, static_cast<int>(std::ceil(peer_bytes / min_part))));
  double part = std::max(min_part, peer_bytes / c);
  while (part > max_part && c <= channels_per_peer / 2) c *= 2, part = peer_bytes / c;
  r.channels = c;
  return r;
}

NcclTuning::NcclTuning(const NcclView& view, NcclTuneOptions opt)
    : v_(view), ring_(std::max(1, opt.nodes > 0 ? opt.nodes : view.hosts) == 1 ? view.host_ring : view.ring), opt_(opt) {
  ranks_ = opt.ranks > 0 ? opt.ranks : static_cast<int>(v_.gpus.size());
  nodes_ = std::max(1, opt.nodes > 0 ? opt.nodes : v_.hosts);
  coll_channels_ = nodes_ == 1 ? v_.host_coll_channels : v_.coll_channels;
  if (ranks_ <= 1) return;
  const int gen = v_.sm >= 100 ? 3 : v_.sm >= 90 ? 2 : v_.sm >= 80 ? 1 : 0;
  const int i2 = nodes_ <= 2 ? nodes_ - 1 : 2;
  const bool amd = v_.cpu == NcclCpu::Amd;
  const int i1 = nodes_ == 1 ? gen : amd ? 1 : 0;
  const int ch = ring_.channels;
  const double ppn = static_cast<double>(ranks_) / nodes_;
  const int intra_hw = ring_.type_intra == NcclPath::Nvl ? 0 : 1;
  const int hw = nodes_ == 1 ? intra_hw : 2;
  // LL128: from Volta on, only over NVLink rings (typeIntra <= NVB).
  const bool ll128 = v_.sm >= 70 && ring_.type_intra <= NcclPath::Nvb;
  // A ring with a hop through host memory (SHM) moves at most the SHM
  // transport's share of a GPU's PCIe link (kNcclShmEfficiency), whatever
  // NCCL's search planned for it.
  const double shm_eff = opt.shm_efficiency.value_or(kNcclShmEfficiency);
  bool ring_shm = false;
  if (!ring_.rings.empty()) {
    const std::vector<int>& r = ring_.rings.front();
    for (size_t k = 0; k < r.size() && r.size() > 1; ++k)
      ring_shm |= v_.pair[static_cast<size_t>(r[k])][static_cast<size_t>(r[(k + 1) % r.size()])].transport == NcclTransport::Shm;
  }
  const double shm_link_GBps = v_.gpu_pcie_GBps > 0 ? shm_eff * v_.gpu_pcie_GBps : 1e30;  // what SHM moves on a GPU's PCIe link
  const double shm_cap = ring_shm ? shm_link_GBps : 1e30;
  const double net_overhead = amd ? 2.0 : 1.0;  // getNetOverhead, us
  // What an NVLink link moves against NCCL's figure for it: NCCL chooses
  // by its plan (bw_), the data moves at what the links deliver (rate_),
  // on NVLink rings inside one host (across hosts the NICs set the pace)
  // and the all-to-all's NVLink peers.
  const double nvlink_rate = opt.nvlink_rate_GBps.value_or(nccl_nvlink_rate(v_.sm)) / nccl_nvlink_bw(v_.sm);
  const bool nvlink_ring = nodes_ == 1 && (ring_.type_intra == NcclPath::Nvl || ring_.type_intra == NcclPath::Nvb);
  const double ring_rate = nvlink_ring ? nvlink_rate : 1.0;
  const double own_chunk = opt.own_chunk_steps.value_or(kNcclOwnChunkSteps);

  for (NcclColl c : {NcclColl::AllReduce, NcclColl::AllGather, NcclColl::ReduceScatter, NcclColl::Broadcast}) {
    const int nsteps = c == NcclColl::AllReduce ? 2 * (ranks_ - 1) : c == NcclColl::Broadcast ? ranks_ : ranks_ - 1;
    for (NcclAlgo a : {NcclAlgo::Tree, NcclAlgo::Ring}) {
      if (a == NcclAlgo::Tree && c != NcclColl::AllReduce) continue;
      const int ai = static_cast<int>(a);
      for (NcclProto p : {NcclProto::LL, NcclProto::LL128, NcclProto::Simple}) {
        const int pi = static_cast<int>(p);
        if (p == NcclProto::LL128 && !ll128) continue;
        // The protocol's share of the links' bus bandwidth, within
        // NCCL's caps (which stay NCCL's whatever the links deliver).
        const auto proto_bus = [&](double link_bus) {
          double bus = std::min(link_bus, shm_cap);
          if (a == NcclAlgo::Ring && p == NcclProto::LL) bus = std::min(kLlMaxBw[i1][i2], bus * .5);
          if (a == NcclAlgo::Ring && p == NcclProto::LL128) bus = std::min(bus * .92, ch * kPerChRingLL128[gen][i2]);
          if (a == NcclAlgo::Tree) bus = std::min(bus * .92, ch * kPerChTree[gen][i2]);
          if (a == NcclAlgo::Tree && p == NcclProto::LL) bus = std::min(bus / 3.8, kLlMaxBw[i1][i2]);
          if (a == NcclAlgo::Tree && p == NcclProto::LL128)
            bus = std::min(bus * (nodes_ == 1 ? 7.0 / 9.0 : 120.0 / 128.0), ch * kPerChTreeLL128[gen][i2]);
          return bus;
        };
        const double bus = proto_bus(ch * ring_.bw_intra_GBps);
        const double rate_bus = ring_rate == 1.0 ? bus : proto_bus(ch * ring_.bw_intra_GBps * ring_rate);
        double ratio = a == NcclAlgo::Ring ? static_cast<double>(ranks_) / nsteps : .5;
        // All-gather and reduce-scatter rings at the link's rate (LL128,
        // Simple): the rank's own chunk costs kNcclOwnChunkSteps of a link
        // step beside the ring's n-1. Not LL, whose half rate leaves the
        // link room for it, nor through host memory, where the PCIe link,
        // not the SMs, sets the pace.
        if (a == NcclAlgo::Ring && p != NcclProto::LL && !ring_shm && (c == NcclColl::AllGather || c == NcclColl::ReduceScatter))
          ratio *= nsteps / (nsteps + own_chunk);
        bw_[idx(c, a, p)] = bus * ratio;
        rate_[idx(c, a, p)] = rate_bus * ratio;
        if (c == NcclColl::AllReduce && a == NcclAlgo::Ring && p == NcclProto::Simple) {
          ring_search_GBps_ = ch * ring_.bw_intra_GBps;
          if (!ring_shm && coll_channels_ > 0) ring_channel_GBps_ = rate_bus / coll_channels_;
        }

        double lat = kBaseLat[ai][pi];
        double intra_lat = kHwLat[intra_hw][ai][pi];
        const double inter_lat = ppn == 1 ? kHwLat[2][0][pi] : kHwLat[2][ai][pi];
        if (a == NcclAlgo::Ring) {
          if (c == NcclColl::Broadcast) {
            lat += kHwLat[hw][ai][pi];
          } else {
            if (nodes_ > 1) intra_lat = std::max(intra_lat, net_overhead * (p == NcclProto::Simple ? 3 : 1));
            const int inter_steps = nodes_ == 1 ? 0 : c == NcclColl::AllReduce ? 2 * (nodes_ - 1) : nodes_ - 1;
            lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
          }
        } else {
          lat += 2 * ((ranks_ / nodes_ - 1) * intra_lat + log2i(nodes_) * inter_lat);
        }
        lat_[idx(c, a, p)] = lat;
      }
    }
  }

  tune_nvls(gen, i2, ppn);

  // All-to-all: each rank's send rate (see the header), over the
  // communicator's peers on its host (the host's first ppn GPUs). Peers
  // through host memory share the GPU's one PCIe link: every byte leaves it
  // as the sender's stores to host memory and enters the receiver as its
  // loads, whatever the peer (kNcclShmEfficiency).
  std::vector<size_t> local;
  for (size_t i = 0; i < v_.gpus.size() && local.size() < static_cast<size_t>(ppn); ++i)
    if (v_.pair[0][i].transport != NcclTransport::Net) local.push_back(i);
  a2a_bw_ = 1e30;
  a2a_nvlink_ = true;
  for (size_t i : local) {
    double p2p = 0, shm = 0;
    for (size_t j : local) {
      if (j == i) continue;
      const NcclPair& pr = v_.pair[i][j];
      (pr.transport == NcclTransport::Shm ? shm : p2p) += pr.bw_GBps * (pr.transport == NcclTransport::P2pNvLink ? nvlink_rate : 1.0);
      a2a_nvlink_ &= pr.transport == NcclTransport::P2pNvLink;
    }
    const double sum = p2p + std::min(shm, shm_link_GBps);
    if (sum > 0) a2a_bw_ = std::min(a2a_bw_, std::min(sum, ring_.total_bw_GBps * (a2a_nvlink_ ? nvlink_rate : 1.0)));
  }
  if (a2a_bw_ >= 1e30) a2a_bw_ = 0;

  // NCCL's send/recv plan inside one host (NCCL 2.28.3 graph/paths.cc
  // ncclTopoComputeP2pChannels, ncclTopoGetNchannels; init.cc
  // computeBuffSizes): p2pnChannels is the collectives' channels (at most
  // MAXCHANNELS) rounded up to a power of two; a peer gets 2 channels a
  // NVLink of its path (2 x path bandwidth / NCCL's per-link NVLink
  // bandwidth), 2 off NVLink, the least over the communicator's pairs and
  // the collectives' channels, rounded up to a power of two and at most
  // p2pnChannels; enqueue.cc scheduleP2pTasksToPlan halves it while it x
  // ranks exceeds p2pnChannels for the parts a peer starts from.
  if (nodes_ == 1 && coll_channels_ > 0 && a2a_nvlink_) {
    const int p2p_channels_raw = std::min(coll_channels_, kMaxChannels);
    int per_peer = p2p_channels_raw;
    bool all_nvlink = true;
    for (size_t i : local)
      for (size_t j : local) {
        if (i == j) continue;
        const NcclPair& pr = v_.pair[i][j];
        const int links = static_cast<int>(pr.bw_GBps / nccl_nvlink_bw(v_.sm));
        per_peer = std::min(per_peer, pr.type == NcclPath::Nvl ? 2 * std::max(1, links) : 2);
        all_nvlink &= pr.type < NcclPath::Pix;
      }
    p2p_.channels = pow2_up(p2p_channels_raw);
    p2p_.per_peer = std::min(pow2_up(per_peer), p2p_.channels);
    p2p_.min_parts = p2p_.per_peer;
    while (p2p_.min_parts * ranks_ > p2p_.channels && p2p_.min_parts > 1) p2p_.min_parts /= 2;
    p2p_.step = all_nvlink ? kP2pNvlChunkBytes : kP2pPciChunkBytes;
  }
}

void nccl_nvls_check(const NcclView& v, const std::string& topology, const SourceLocation& where) {
  if (v.nvls.supported) return;
  throw InputError(where, fmt::format("NVLS (NCCL_NVLS_ENABLE) needs GPUs of sm90 or later on an NVSwitch with multicast (NVLink SHARP); "
                                      "topology {} has {}: leave NVLS off there",
                                      topology,
                                      v.nvswitches == 0 ? "no NVSwitch"
                                      : v.sm < 90       ? fmt::format("sm{} GPUs", v.sm)
                                                        : std::string("a GPU without NVLink to its host's NVSwitch")));
}

// NVLS inside one host, NVLS-Tree across hosts (tuning.cc
// ncclTopoTuneModel; enqueue.cc: NVLS across hosts needs CollNet, off
// here; NVLS-Tree is off inside one host; all-gather and reduce-scatter
// take NVLS inside one host only, all-reduce NVLS or NVLS-Tree). Per NVLS
// graph channel (NcclNvls): bwIntra x the generation's NVLS efficiency x
// (channels - 1) / channels, twice that for an all-reduce (its reduce and
// broadcast halves pipeline), (ppn - 1) / ppn of it for the others; at
// most bwInter (twice it for NVLS-Tree on two hosts) and NVLS-Tree's
// per-channel cap; times the channels. An all-reduce's bus bandwidth
// becomes its algorithm bandwidth as a ring's (ranks / 2(ranks - 1)); the
// all-gather's and reduce-scatter's stays as it is (NCCL converts only a
// ring's), so NCCL plans them at (ranks - 1) / ranks of it in nccl-tests'
// busbw. The data moves at NCCL's figure (no nccl_nvlink_rate: Hopper's
// and Blackwell's are NCCL's own). Latency: NVLS 25 us; NVLS-Tree 25 us
// + 2 log2(nodes) x 20.9 us (the network's own latency, 0 for IB verbs,
// left out).
void NcclTuning::tune_nvls(int gen, int i2, double ppn) {
  if (!opt_.nvls) return;
  const NcclNvls& g = nodes_ == 1 ? v_.nvls_host : v_.nvls;
  if (!g.supported || g.channels < 2) return;
  const double ch = g.channels;
  for (NcclColl c : {NcclColl::AllReduce, NcclColl::AllGather, NcclColl::ReduceScatter}) {
    for (NcclAlgo a : {NcclAlgo::Nvls, NcclAlgo::NvlsTree}) {
      if (a == NcclAlgo::Nvls && nodes_ > 1) continue;
      if (a == NcclAlgo::NvlsTree && (nodes_ == 1 || c != NcclColl::AllReduce)) continue;
      if (c != NcclColl::AllReduce && ppn > 32) continue;  // enqueue.cc: NCCL_MAX_NVLS_ARITY local ranks
      double intra = g.bw_intra_GBps * kNvlsEfficiency[gen] * (ch - 1) / ch;
      intra *= c == NcclColl::AllReduce ? 2.0 : (ppn - 1) / ppn;
      double bw = std::min(intra, g.bw_inter_GBps * (a == NcclAlgo::NvlsTree && nodes_ <= 2 ? 2 : 1));
      if (a == NcclAlgo::NvlsTree) bw = std::min(bw, kPerChNvlsTree[gen][i2]);
      const double ratio = c == NcclColl::AllReduce ? ranks_ / (2.0 * (ranks_ - 1)) : 1.0;
      const size_t k = idx(c, a, NcclProto::Simple);
      bw_[k] = rate_[k] = ch * bw * ratio;
      lat_[k] = a == NcclAlgo::Nvls ? kNvlsIntraLat : kNvlsTreeIntraLat + 2 * log2i(nodes_) * (ppn == 1 ? kHwLat[2][0][2] : kNvlsTreeInterLat);
    }
  }
}

std::optional<NcclPrediction> NcclTuning::all_to_all(double bytes) const {
  const double n = ranks_, ppn = static_cast<double>(ranks_) / nodes_;
  const double per_peer = bytes / n;
  // Inside one host over NVLink NCCL's send/recv plan picks the protocol
  // and splits a peer's bytes over channels (nccl_p2p_plan); elsewhere, LL
  // up to 16 KiB a peer (off NVLink NCCL's plan gives 2 channels a peer, LL
  // up to 32 KiB, at rates through host memory or PCIe no bench measured
  // at small sizes; across hosts, its net channels).
  const bool planned = p2p_.per_peer > 0;
  const NcclP2pPlan plan = planned ? nccl_p2p_plan(per_peer, p2p_.min_parts, p2p_.per_peer, p2p_.step, opt_.proto)
                                   : NcclP2pPlan{per_peer <= kP2pLlThreshold ? NcclProto::LL : NcclProto::Simple, 1};
  const NcclProto p = opt_.proto.value_or(plan.proto);
  if (p == NcclProto::LL128 && !(v_.sm >= 70 && a2a_nvlink_)) return std::nullopt;
  const double proto_bw = p == NcclProto::LL ? .5 : p == NcclProto::LL128 ? .92 : 1.0;
  const int hw = nodes_ > 1 ? 2 : a2a_nvlink_ ? 0 : 1;
  const double lat = kBaseLat[1][static_cast<int>(p)] + kHwLat[hw][1][static_cast<int>(p)];
  double t = 0;
  // Simple over NVLink in NCCL's plan: the works each channel runs and
  // their warps, within the rank's NVLink (nccl_p2p_simple_us).
  if (planned && p == NcclProto::Simple)
    t = nccl_p2p_simple_us(ranks_, per_peer, p2p_, a2a_bw_, opt_.p2p_simple.value_or(NcclP2pRates{}));
  else if (ppn > 1 && a2a_bw_ > 0)
    t = std::max(t, bytes * (ppn - 1) / n / (1000 * a2a_bw_ * proto_bw));
  // LL over NVLink in NCCL's plan: a rank's LL traffic at most NCCL's LL
  // cap for one host (tuning.cc llMaxBws, as its LL rings), and a peer's
  // parts each at a channel's LL rate (kNcclP2pLlChannelGBps), the
  // channels side by side.
  if (planned && p == NcclProto::LL) {
    const int gen = v_.sm >= 100 ? 3 : v_.sm >= 90 ? 2 : v_.sm >= 80 ? 1 : 0;
    t = std::max(t, bytes * (ppn - 1) / n / (1000 * kLlMaxBw[gen][0]));
    t = std::max(t, per_peer / (1000 * plan.channels * opt_.p2p_ll_channel_GBps.value_or(kNcclP2pLlChannelGBps)));
  }
  if (nodes_ > 1) {
    const double net = v_.nics_per_host * v_.nic_bw_GBps / ppn;
    if (net <= 0) return std::nullopt;
    t = std::max(t, bytes * (n - ppn) / n / (1000 * net * proto_bw));
  }
  NcclPrediction r;
  r.algo = NcclAlgo::Ring, r.proto = p, r.time_us = lat + t, r.latency_us = lat;
  r.algbw_GBps = bytes / (r.time_us * 1e3);
  r.busbw_GBps = r.algbw_GBps * nccl_busbw_factor(NcclColl::AllToAll, ranks_);
  return r;
}

// A Simple ring's pipeline fill: the receiver handles the last slice
// (copies it out of its FIFO into the output, or reduces it) after the
// link has moved it, so a ring takes one slice's time at a channel's rate
// beyond its steady stream. The slice grows with the size until a
// channel's share of a rank's chunk reaches NCCL's 2 MiB chunk
// (nccl_ring_simple_slice), which makes the rate rise with size up to
// there and the fill a fixed time beyond. Not through host memory (the
// PCIe link, not the SMs, sets the pace: kNcclShmEfficiency's fit already
// holds what the SHM pipeline costs), nor the broadcast (no bench checks it).
double NcclTuning::ring_fill_us(NcclColl c, double bytes) const {
  if (ring_channel_GBps_ <= 0 || c == NcclColl::Broadcast || c == NcclColl::AllToAll) return 0;
  const NcclLaunch l = nccl_launch(NcclAlgo::Ring, NcclProto::Simple, coll_channels_, ranks_, bytes, ring_search_GBps_ <= 12.0);
  return nccl_ring_simple_slice(bytes, ranks_, l.channels) / (1000 * ring_channel_GBps_);
}

std::optional<NcclPrediction> NcclTuning::predict(NcclColl c, double bytes) const {
  if (ranks_ <= 1) return std::nullopt;
  if (c == NcclColl::AllToAll) return all_to_all(bytes);
  std::optional<NcclPrediction> best;
  double best_planned_us = 0;  // NCCL's own estimate of the best choice
  for (NcclAlgo a : {NcclAlgo::Tree, NcclAlgo::Ring, NcclAlgo::Nvls, NcclAlgo::NvlsTree}) {
    if (opt_.algo && *opt_.algo != a) continue;
    for (NcclProto p : {NcclProto::LL, NcclProto::LL128, NcclProto::Simple}) {
      if (opt_.proto && *opt_.proto != p) continue;
      double bw = bw_[idx(c, a, p)], rate = rate_[idx(c, a, p)];
      double lat = lat_[idx(c, a, p)];
      if (bw <= 0) continue;
      const int log_size = log2i(bytes / 64);
      if (a == NcclAlgo::Tree && c == NcclColl::AllReduce && log_size >= 0 && log_size < 23) {
        bw *= kTreeCorrection[static_cast<int>(p)][log_size];
        rate *= kTreeCorrection[static_cast<int>(p)][log_size];
      }
      if (a == NcclAlgo::Ring && p == NcclProto::Simple && nodes_ > 1 && c == NcclColl::AllReduce && bytes / (coll_channels_ * ranks_) >= 64)
        lat *= v_.sm < 80 ? 1.9 : 1.4;  // "plateau effect of ring"
      // NCCL picks by its own model (latency + bytes / bandwidth); the
      // time it then takes moves the bytes at what the links deliver and
      // holds the Simple ring's pipeline fill too.
      const double t = lat + bytes / (1000 * bw);
      if (!best || t < best_planned_us) {
        const double fill = a == NcclAlgo::Ring && p == NcclProto::Simple ? ring_fill_us(c, bytes) : 0;
        best = NcclPrediction{a, p, lat + bytes / (1000 * rate) + fill, lat, fill, 0, 0};
        best_planned_us = t;
      }
    }
  }
  if (!best) return std::nullopt;
  best->algbw_GBps = bytes / (best->time_us * 1e3);
  best->busbw_GBps = best->algbw_GBps * nccl_busbw_factor(c, ranks_);
  return best;
}

}  // namespace osim::exec
