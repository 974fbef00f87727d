// NCCL's tuning model over its view of a topology (nccl_topo.hpp): per
// collective, algorithm (ring, tree) and protocol (LL, LL128, Simple) a
// bandwidth and a latency, the choice NCCL makes per size (the least
// latency + bytes / bandwidth) or the one NCCL_ALGO / NCCL_PROTO force, and
// the time that choice predicts.
//
// Constants and rules: NVIDIA/nccl 2.30.7 (commit 5067397) src/graph/tuning.cc
// (ncclTunerConstantsDefaults: baseLatencies, hwLatencies per NVLink / PCI /
// NET, llMaxBws, perChMaxRingLL128Bws, perChMaxTreeBws, perChMaxTreeLL128Bws
// per GPU generation; ncclTopoTuneModel's refinements; LL128's enabling;
// ncclTopoGetAlgoTime with the tree correction factors). NVLS and NVLS-Tree
// (NVLink SHARP) where NcclTuneOptions::nvls turns them on, as
// NCCL_NVLS_ENABLE does (off by default, as NCCL_NVLS_ENABLE=0 gives);
// CollNet and PAT are off (CollNet
// needs a SHARP network plugin; PAT runs only with one GPU per node). All-to-all is not in NCCL's model (it
// runs as grouped send/recv): ours is one step's latency plus the bytes each
// rank sends at the least over ranks of the sum of its peers' NCCL path
// bandwidths (the communicator's peers on its host; peers through host memory
// share the GPU's PCIe link at kNcclShmEfficiency of it), capped by its
// NVLink/PCIe total, and its host's NICs (LL below NCCL_P2P_LL_THRESHOLD,
// 16 KiB a peer, at half the bandwidth; inside one host over NVLink,
// NCCL's send/recv plan instead: nccl_p2p_plan, and in Simple its channels'
// works, nccl_p2p.hpp). Through host memory (SHM) the
// transport's efficiency caps a ring's bus bandwidth too. The time of a
// Simple ring holds its pipeline's fill, by NCCL 2.28.3's launch and chunk
// rules (nccl_launch, nccl_ring_simple_slice): NCCL's model picks without
// it, as NCCL does. Likewise NCCL picks with its per-link NVLink figure,
// while the data moves at what the link delivers (nccl_nvlink_rate).
#pragma once

#include <optional>
#include <string>

#include "core/errors.hpp"
#include "gpu/nccl_p2p.hpp"
#include "gpu/nccl_topo.hpp"

namespace osim::exec {

enum class NcclColl { AllReduce, AllGather, ReduceScatter, Broadcast, AllToAll };
/// Nvls: NVLink SHARP inside one host (all-reduce, all-gather,
/// reduce-scatter); NvlsTree: NVLS in each host and a tree across hosts
/// (all-reduce). Both Simple only (tuning.cc).
enum class NcclAlgo { Tree, Ring, Nvls, NvlsTree };
enum class NcclProto { LL, LL128, Simple };
std::string to_string(NcclColl c);
std::string to_string(NcclAlgo a);
std::string to_string(NcclProto p);
std::optional<NcclColl> nccl_coll_from_string(const std::string& s);

/// The SHM transport's bandwidth as a share of a GPU's PCIe link (NCCL's
/// figure for it, NcclView::gpu_pcie_GBps), each direction. Through host
/// memory (NCCL 2.28.3 and 2.30.7 src/transport/shm.cc, SHM/direct, the
/// default) the sender's SMs store a step into a pinned buffer in host
/// memory and the receiver's SMs load it from there; every byte crosses the
/// sender's PCIe link up and the receiver's down, and a GPU in a ring or an
/// all-to-all does both at once on its one link. Loads from host memory are
/// PCIe reads that each wait a round trip, so the link moves about half
/// its rate; NCCL's search and tuning model do not count it. Fitted on one
/// reference machine's SHM benches and checked on the other
/// (tests/reference/test_nccl_reference.cpp, docs/accuracy.md).
inline constexpr double kNcclShmEfficiency = 0.52;

/// What a ring all-gather's or reduce-scatter's own chunk costs, in link
/// steps. The ring moves n-1 chunks a rank over its links but its SMs
/// handle n: the all-gather's first step copies the rank's input into its
/// own output as it sends it (directCopySend, out of place), the
/// reduce-scatter's last reduces the received chunk with the rank's input
/// into its output and sends nothing (recvReduceCopy; NVIDIA/nccl
/// src/device/all_gather.h, reduce_scatter.h at commit 0f900e1). NCCL's
/// tuning model prices only the n-1 link steps (tuning.cc: busBw x nRanks /
/// nSteps); the model runs LL128 and Simple rings at (n-1) / (n-1 +
/// kNcclOwnChunkSteps) of that bus bandwidth. Not LL (its half rate leaves
/// the link room), nor rings through host memory (the PCIe link sets their
/// pace), nor the all-reduce (its own chunk rides in a step that sends).
/// Fitted at 1 GiB (the steady rate, beside the Simple ring's pipeline
/// fill that predict() adds) on each reference machine's NVLink
/// all-gathers and reduce-scatters (0.28 and 0.29) and checked on the
/// other (tests/reference/test_nccl_reference.cpp, docs/accuracy.md).
inline constexpr double kNcclOwnChunkSteps = 0.29;

/// What NCCL launches a collective with (NVIDIA/nccl 2.28.3 src/enqueue.cc,
/// topoGetAlgoInfo's ring/tree channel tuning): from the communicator's
/// `channels`, one fewer while the size is below channels x threads x the
/// protocol's per-thread threshold (comm.h NCCL_SIMPLE_THREAD_THRESHOLD 64,
/// NCCL_LL_THREAD_THRESHOLD 8 and, for a ring, times the ranks,
/// NCCL_LL128_THREAD_THRESHOLD 8); then the threads halve while the same
/// holds (down to a multiple of 128 no more). Threads start at
/// tuning.cc's maxThreads: Simple 512 (NCCL_SIMPLE_MAX_NTHREADS; a ring
/// whose search bandwidth x channels is at most PCI_BW, 12 GB/s, gets
/// 256), LL 512, LL128 640. The Simple ring adds a sync warp (32 threads),
/// the Simple tree 4 warps, a tree runs 640 (NCCL_MAX_NTHREADS), and none
/// runs fewer than 3 warps.
struct NcclLaunch {
  int channels = 1;
  int threads = 0;
};
NcclLaunch nccl_launch(NcclAlgo a, NcclProto p, int channels, int ranks, double bytes, bool slow_ring = false);

/// A Simple ring's chunk pipeline (NVIDIA/nccl 2.28.3): each channel moves
/// its share of every rank's chunk, nBytes / (ranks x launched channels)
/// (enqueue.cc scheduleCollTasksToPlan splits the size over the channels),
/// in loops of at most one chunk, stepSize x chunkSteps = NCCL_BUFFSIZE
/// (init.cc DEFAULT_BUFFSIZE 4 MiB) / NCCL_STEPS (8) x 4
/// (collectives.h ALLGATHER/REDUCESCATTER/ALLREDUCE_CHUNKSTEPS, NCCL_STEPS/2)
/// = 2 MiB (enqueue.cc calcCollChunking leaves a Simple ring's chunk as
/// it is). prims_simple.h genericOp moves a loop's piece in SlicePerChunk
/// (2) slices of max(piece / 2, sliceSize / 32) bytes, sliceSize =
/// stepSize x SLICESTEPS (NCCL_STEPS/4) = 1 MiB. This returns that slice,
/// in bytes, for a ring of `ranks` over `channels` launched channels.
double nccl_ring_simple_slice(double bytes, int ranks, int channels);

/// What a grouped send/recv (NCCL's all-to-all inside one host) moves
/// each peer's bytes with (NVIDIA/nccl 2.28.3, the bench's version:
/// enqueue.cc taskAppend makes ncclAlltoAll one send and one recv a rank;
/// scheduleP2pTasksToPlan and addP2pToPlan plan each). LL where the peer's
/// bytes are at most channels_per_peer (comm->p2pnChannelsPerPeer) x
/// NCCL_P2P_LL_THRESHOLD (16 KiB), else Simple; the bytes split into
/// channels parts: from min_channels (p2pnChannelsPerPeer halved while
/// it x ranks exceeds p2pnChannels) or fewer, one a step / 8 of bytes,
/// doubled while a part exceeds 32 steps and the count is at most half
/// channels_per_peer. A step is an LL buffer's (init.cc DEFAULT_LL_BUFFSIZE
/// / NCCL_STEPS = 64 KiB) or p2pChunkSize (`simple_step`; init.cc
/// NCCL_P2P_NVL_CHUNKSIZE 512 KiB where every GPU pair is NVLink, else
/// NCCL_P2P_PCI_CHUNKSIZE 128 KiB). NCCL 2.30.7 picks the parts first and
/// LL by the parts' count; the bench ran 2.28.3.
struct NcclP2pPlan {
  NcclProto proto = NcclProto::Simple;
  int channels = 1;
};
NcclP2pPlan nccl_p2p_plan(double peer_bytes, int min_channels, int channels_per_peer, double simple_step,
                          std::optional<NcclProto> force = std::nullopt);

/// What one channel's part of a send/recv moves in LL, GB/s each way over
/// NVLink. NCCL's tuning model has no send/recv; this is the rate the
/// bench's all-to-alls at forced channel counts (NCCL_MIN/MAX_NCHANNELS, 4
/// to 16) show at 256 KiB (64-128 KiB a peer), where NCCL's plan
/// (nccl_p2p_plan) runs LL on 1 to 8 channels a peer: fitted on each reference machine's (6.7 and 6.1)
/// and checked on the other's default-channel runs
/// (tests/reference/test_nccl_reference.cpp, docs/accuracy.md).
inline constexpr double kNcclP2pLlChannelGBps = 6.4;

/// What one NVLink2 link (Volta) moves a direction under NCCL's rings,
/// GB/s. NCCL plans Volta's links at 20 GB/s (topo.h SM70_NVLINK_BW; 21
/// in NCCL 2.5-2.9, 22 in 2.10-2.17) and its ring search at 20 GB/s a
/// channel (search.cc speedArrayIntra), but nothing in NCCL paces its data
/// to those figures: its kernels copy as fast as the link takes them. An
/// NVLink2 link carries 25 GB/s of data a direction (V100 datasheet: 6
/// links, 300 GB/s both directions; the copy engine moves 96 % of it); a
/// DGX-1V's 6 rings, one link each, move 22.8 of it, 91 %. Fitted on the
/// public Volta point marked `set: tune` (validate/nccl-public/manifest.yaml)
/// and checked on the other Volta table there (tests/gpu/test_nccl_public.cpp).
inline constexpr double kNvlink2RingGBps = 22.8;

/// The rate one NVLink link moves a direction under NCCL's traffic, per
/// GPU generation: Volta's kNvlink2RingGBps; elsewhere NCCL's own planning
/// figure (nccl_nvlink_bw), with which the public A100 (20.0 of NVLink3's
/// 25) and H100 (20.6 of NVLink4's 25) points meet their targets
/// (validate/nccl-public, docs/accuracy.md); Pascal (18.0), the SM86
/// bridges (12.0) and Blackwell (40.1) have no run to tell, so NCCL's
/// figure stands there.
double nccl_nvlink_rate(int sm);

struct NcclTuneOptions {
  std::optional<NcclAlgo> algo;    // NCCL_ALGO
  std::optional<NcclProto> proto;  // NCCL_PROTO
  // A communicator of `ranks` GPUs over `nodes` hosts (0: every GPU of the
  // view). One host: the host's own rings (NcclView::host_ring).
  int ranks = 0, nodes = 0;
  std::optional<double> shm_efficiency;  // default kNcclShmEfficiency (a fit's candidate in the tests)
  std::optional<double> own_chunk_steps; // default kNcclOwnChunkSteps (a fit's candidate in the tests)
  std::optional<double> p2p_ll_channel_GBps;  // default kNcclP2pLlChannelGBps (a fit's candidate in the tests)
  std::optional<NcclP2pRates> p2p_simple;     // default NcclP2pRates{} (a fit's candidate in the tests)
  std::optional<double> nvlink_rate_GBps;     // default nccl_nvlink_rate(sm) (a fit's candidate in the tests)
  /// NCCL_NVLS_ENABLE: NVLS and NVLS-Tree join the choice where the view
  /// has an NVLS graph (NcclView::nvls; a caller refuses the setting on a
  /// topology without one: nccl_nvls_check).
  bool nvls = false;
};

struct NcclPrediction {
  NcclAlgo algo = NcclAlgo::Ring;
  NcclProto proto = NcclProto::Simple;
  double time_us = 0;
  double latency_us = 0;  // the part of time_us that does not grow with bytes
  double fill_us = 0;     // a Simple ring's pipeline fill (in time_us; NcclTuning::predict)
  double algbw_GBps = 0;  // bytes / time
  double busbw_GBps = 0;  // nccl-tests' bus bandwidth
};

/// Refuses NCCL_NVLS_ENABLE on a view without NCCL's NVLS graph (no
/// NVSwitch in a host, or a GPU before sm90): an InputError at `where`
/// (the setting's file:line) that names `topology` and why.
void nccl_nvls_check(const NcclView& v, const std::string& topology, const SourceLocation& where);

/// nccl-tests' bus bandwidth factor: all-reduce 2(n-1)/n; all-gather,
/// reduce-scatter, all-to-all (n-1)/n; broadcast 1.
double nccl_busbw_factor(NcclColl c, int ranks);

class NcclTuning {
 public:
  explicit NcclTuning(const NcclView& view, NcclTuneOptions opt = {});
  /// `bytes` as nccl-tests gives its size: all-reduce and broadcast the
  /// buffer, all-gather the output, reduce-scatter the input, all-to-all each
  /// rank's send buffer. nullopt when the forced algorithm/protocol cannot run it.
  [[nodiscard]] std::optional<NcclPrediction> predict(NcclColl c, double bytes) const;
  /// The model's bandwidth (algorithm bandwidth, GB/s) and latency (us) of one
  /// choice, as NCCL plans with them; bandwidth 0 when NCCL would not use it.
  [[nodiscard]] double bandwidth(NcclColl c, NcclAlgo a, NcclProto p) const { return bw_[idx(c, a, p)]; }
  /// The bandwidth the same choice moves its data at: NCCL's plan with its
  /// NVLink figure replaced by the rate the links deliver (nccl_nvlink_rate).
  [[nodiscard]] double achieved_bandwidth(NcclColl c, NcclAlgo a, NcclProto p) const { return rate_[idx(c, a, p)]; }
  [[nodiscard]] double latency(NcclColl c, NcclAlgo a, NcclProto p) const { return lat_[idx(c, a, p)]; }

 private:
  static size_t idx(NcclColl c, NcclAlgo a, NcclProto p) {
    return (static_cast<size_t>(c) * 4 + static_cast<size_t>(a)) * 3 + static_cast<size_t>(p);
  }
  void tune_nvls(int gen, int i2, double ppn);
  [[nodiscard]] std::optional<NcclPrediction> all_to_all(double bytes) const;
  [[nodiscard]] double ring_fill_us(NcclColl c, double bytes) const;
  const NcclView& v_;
  const NcclRings& ring_;  // the rings this communicator runs on
  int coll_channels_ = 0;
  NcclTuneOptions opt_;
  int ranks_ = 1, nodes_ = 1;
  double bw_[5 * 4 * 3] = {};    // NCCL's plan: what it chooses by
  double rate_[5 * 4 * 3] = {};  // what the choice moves data at (achieved_bandwidth)
  double lat_[5 * 4 * 3] = {};
  double ring_channel_GBps_ = 0;  // a Simple ring channel's bus bandwidth (0: no fill, see ring_fill_us)
  double ring_search_GBps_ = 0;   // the ring search's bandwidth x channels (nccl_launch's slow_ring)
  double a2a_bw_ = 0;             // per rank, GB/s
  bool a2a_nvlink_ = false;
  // NCCL's send/recv plan inside one host over NVLink (nccl_p2p_plan,
  // nccl_p2p_simple_us; per_peer 0: not planned).
  NcclP2pChannels p2p_;
};

}  // namespace osim::exec
