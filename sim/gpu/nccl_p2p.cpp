// NCCL's send/recv channels at work (nccl_p2p.hpp).
#include "gpu/nccl_p2p.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "gpu/nccl_tuning.hpp"

namespace osim::exec {

namespace {

// device.h NCCL_MAX_DEV_WORK_P2P_PER_BATCH; NCCL_MAX_NTHREADS / WARP_SIZE.
constexpr int kMaxWorksPerBatch = 8;
constexpr int kChannelWarps = 640 / 32;
// device.h ncclP2pPartBounds: a part is a multiple of 4 KiB.
constexpr double kPartAlign = 4096;

int reverse_bits(int x, int bits) {
  int r = 0;
  for (int i = 0; i < bits; ++i)
    if ((x >> i) & 1) r |= 1 << (bits - 1 - i);
  return r;
}

int log2_floor(int x) {
  int b = 0;
  while ((2 << b) <= x) ++b;
  return b;
}

}  // namespace

std::vector<NcclP2pWork> nccl_p2p_works(int ranks, double peer_bytes, const NcclP2pChannels& ch) {
  std::vector<NcclP2pWork> works;
  if (ranks < 1 || ch.channels < 1 || peer_bytes <= 0) return works;
  // Every round is Simple here (the rank's own copy always is); its parts
  // as NCCL's plan cuts them.
  const int parts = nccl_p2p_plan(peer_bytes, ch.min_parts, ch.per_peer, ch.step, NcclProto::Simple).channels;
  const double part_bytes = std::ceil(std::ceil(peer_bytes / parts) / kPartAlign) * kPartAlign;
  const int bits = log2_floor(ch.channels);
  std::vector<std::vector<size_t>> on_channel(static_cast<size_t>(ch.channels));
  for (int round = 0; round < ranks; ++round) {
    const int base = reverse_bits(round, bits);
    for (int p = 0; p < parts; ++p) {
      NcclP2pWork w;
      w.round = round;
      w.channel = (base + p) & (ch.channels - 1);
      w.bytes = std::clamp(peer_bytes - p * part_bytes, 0.0, part_bytes);
      on_channel[static_cast<size_t>(w.channel)].push_back(works.size());
      works.push_back(w);
    }
  }
  // A channel's works in round order, in batches of at most 8; each batch
  // splits the channel's warps between its works (sendrecv.h).
  for (const std::vector<size_t>& ids : on_channel)
    for (size_t i = 0; i < ids.size(); ++i) {
      NcclP2pWork& w = works[ids[i]];
      w.batch = static_cast<int>(i) / kMaxWorksPerBatch;
      w.batch_works = std::min(kMaxWorksPerBatch, static_cast<int>(ids.size()) - w.batch * kMaxWorksPerBatch);
      const int per_work = kChannelWarps / w.batch_works;
      const int recv = per_work <= 4 ? per_work / 2 : (per_work - 1) / 2;
      w.send_warps = per_work <= 4 ? recv : recv + 1;
    }
  return works;
}

double nccl_p2p_simple_us(int ranks, double peer_bytes, const NcclP2pChannels& ch, double nvlink_GBps, const NcclP2pRates& r) {
  const std::vector<NcclP2pWork> works = nccl_p2p_works(ranks, peer_bytes, ch);
  // Each peer work's rate alone: its send warps', at most its share of the
  // channel among the batch's peer works.
  std::map<std::pair<int, int>, int> peer_works;  // (channel, batch)
  for (const NcclP2pWork& w : works)
    if (w.round != 0) ++peer_works[{w.channel, w.batch}];
  struct Live {
    double left, ask;
    int channel, batch;
  };
  std::vector<Live> live;
  for (size_t i = 0; i < works.size(); ++i) {
    const NcclP2pWork& w = works[i];
    if (w.round == 0 || w.bytes <= 0) continue;
    const double ask = std::min(w.send_warps * r.send_warp_GBps, r.channel_GBps / peer_works.at({w.channel, w.batch}));
    live.push_back({w.bytes, ask, w.channel, w.batch});
  }
  // Progressive filling: the works of each channel's earliest open batch
  // run; all share the knee's total in proportion to what they ask.
  double t_us = 0;
  const double a = nvlink_GBps > 0 ? nvlink_GBps : 1e30;
  while (!live.empty()) {
    std::vector<int> first(static_cast<size_t>(ch.channels), 1 << 30);
    for (const Live& l : live) first[static_cast<size_t>(l.channel)] = std::min(first[static_cast<size_t>(l.channel)], l.batch);
    double demand = 0;
    for (const Live& l : live)
      if (l.batch == first[static_cast<size_t>(l.channel)]) demand += l.ask;
    const double total = std::pow(std::pow(demand, -r.knee) + std::pow(a, -r.knee), -1 / r.knee);
    const double share = total / demand;
    double dt = 1e300;  // us
    for (const Live& l : live)
      if (l.batch == first[static_cast<size_t>(l.channel)]) dt = std::min(dt, l.left / (1000 * l.ask * share));
    t_us += dt;
    for (Live& l : live)
      if (l.batch == first[static_cast<size_t>(l.channel)]) l.left -= dt * 1000 * l.ask * share;
    std::erase_if(live, [&](const Live& l) { return l.left <= 1e-9 * peer_bytes; });
  }
  return t_us;
}

}  // namespace osim::exec
