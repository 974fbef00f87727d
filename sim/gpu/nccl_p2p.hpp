// NCCL's grouped send/recv inside one host at work (its all-to-all, NCCL
// 2.28.3, the reference benches' version): given the parts NCCL's plan cuts
// each peer's bytes into (nccl_p2p_plan, nccl_tuning.hpp), which works each
// channel runs side by side and with how many warps (nccl_p2p_works), and
// how long a rank's Simple transfers take over NVLink (nccl_p2p_simple_us).
//
// The placement and the warps are NCCL's (src/enqueue.cc taskAppend makes
// ncclAlltoAll one send and one recv a peer, the rank itself included;
// scheduleP2pTasksToPlan and addP2pToPlan plan each round; device/sendrecv.h
// runs a channel's works). The time holds three measured rates
// (kNcclP2pSimpleChannelGBps, kNcclP2pSendWarpGBps, kNcclP2pNvlinkKnee),
// fitted on the reference machines' all-to-alls at forced channel counts
// (tests/reference/test_nccl_reference.cpp, docs/accuracy.md).
#pragma once

#include <vector>

namespace osim::exec {

/// What a Simple send/recv work moves over NVLink on one channel (one CTA,
/// one SM) when it has the channel to itself: 10 warps send, 9 receive
/// (sendrecv.h), GB/s each way. The bench's all-to-alls at forced channel
/// counts show it (fits of 20.7 and 20.3 on the two reference machines,
/// with the two below); NCCL's model has no such figure.
inline constexpr double kNcclP2pSimpleChannelGBps = 20.5;

/// What one send warp of a Simple send/recv moves, GB/s, where a channel
/// runs several works at once and splits its warps between them (sendrecv.h:
/// 5 send warps each beside one other work, 3 beside two or three). A send
/// warp loads the source from HBM and stores it into the peer's buffer over
/// NVLink, each load waiting its latency, so fewer warps move less; a
/// channel's works together stay within kNcclP2pSimpleChannelGBps. Fitted
/// with it on the forced-channel all-to-alls (2.85 on both reference
/// machines; the 1 GiB rows, two or four works a channel, set it).
inline constexpr double kNcclP2pSendWarpGBps = 2.85;

/// How sharply a rank's send/recv traffic meets its NVLink bandwidth A
/// (NCCL's reading of the GPU's links): channels that would move D
/// together move (D^-k + A^-k)^(-1/k), near D while D is well below A and
/// near A far above it. With k = 3.75 and A = 370.8, 16 channels of 20.5
/// GB/s (328) move 288 GB/s, 24 channels 343. Many SMs' NVLink stores meet
/// the links' rate gradually, not at a corner: the forced-channel
/// all-to-alls at 8 to 16 channels (64 MiB, 1 GiB) show it (fits of 3.0
/// and 4.5 on the two reference machines: the rows pin it loosely).
inline constexpr double kNcclP2pNvlinkKnee = 3.75;

/// The send/recv channels of a communicator inside one host (NCCL 2.28.3
/// graph/paths.cc ncclTopoComputeP2pChannels, enqueue.cc
/// scheduleP2pTasksToPlan, init.cc computeBuffSizes).
struct NcclP2pChannels {
  int channels = 0;   // p2pnChannels, a power of two
  int per_peer = 0;   // p2pnChannelsPerPeer
  int min_parts = 0;  // the parts a peer starts from (nChannelsMin)
  double step = 0;    // p2pChunkSize, bytes
};

/// One send/recv work of an all-to-all as a channel runs it: round r sends
/// to rank + r's peer and receives from rank - r's (round 0: the rank's copy
/// to itself, one Simple work). A channel runs its works in batches of at
/// most NCCL_MAX_DEV_WORK_P2P_PER_BATCH (8), one after another, and splits
/// its 20 warps (NCCL_MAX_NTHREADS 640) evenly between a batch's works:
/// w = 20 / works, of which w / 2 send when w <= 4, else (w - 1) / 2 + 1
/// (sendrecv.h).
struct NcclP2pWork {
  int channel = 0, round = 0, batch = 0;
  double bytes = 0;  // this part's (ncclP2pPartBounds: parts of 4 KiB multiples)
  int send_warps = 0;
  int batch_works = 1;  // the works in its batch
};
/// Rounds are placed from channel reverseBits(round) (channel.h
/// ncclP2pChannelBaseForRound), part p on (base + p) mod channels.
std::vector<NcclP2pWork> nccl_p2p_works(int ranks, double peer_bytes, const NcclP2pChannels& ch);

struct NcclP2pRates {
  double channel_GBps = kNcclP2pSimpleChannelGBps;
  double send_warp_GBps = kNcclP2pSendWarpGBps;
  double knee = kNcclP2pNvlinkKnee;
};
/// The time, us (latency not included), of one rank's Simple all-to-all
/// over NVLink: `peer_bytes` to each of ranks - 1 peers and itself, on
/// `ch`, within `nvlink_GBps` (the rank's NVLink bandwidth as NCCL reads
/// it). Each peer work asks min(send warps x send_warp_GBps, channel_GBps /
/// peer works in its batch); the rank's works share the knee's total in
/// proportion, and as works end the rest speed up (a channel's next batch
/// starts when its batch ends). The copy to itself crosses no NVLink and
/// takes no time here.
double nccl_p2p_simple_us(int ranks, double peer_bytes, const NcclP2pChannels& ch, double nvlink_GBps, const NcclP2pRates& r = {});

}  // namespace osim::exec
