// NCCL's send/recv channels at work (gpu/nccl_p2p.hpp): where an
// all-to-all's works land, the warps each gets, and a rank's Simple time.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "gpu/nccl_p2p.hpp"

using namespace osim::exec;

namespace {
constexpr double kMiB = 1024.0 * 1024;
// 2 or 4 H200 ranks on NVLink (h200x4-nvlink.yaml): 32 channels, 32 a
// peer, parts from 32 halved while x ranks exceeds 32, 512 KiB steps.
NcclP2pChannels h200(int ranks) {
  NcclP2pChannels c{32, 32, 32, 512 * 1024.0};
  while (c.min_parts * ranks > c.channels) c.min_parts /= 2;
  return c;
}
std::map<int, std::vector<NcclP2pWork>> by_channel(const std::vector<NcclP2pWork>& works) {
  std::map<int, std::vector<NcclP2pWork>> m;
  for (const NcclP2pWork& w : works) m[w.channel].push_back(w);
  return m;
}
}  // namespace

TEST_CASE("an all-to-all's works: rounds from reverseBits(round), a channel's warps split between its batch's works") {
  // 2 ranks, 8 MiB a peer: 16 parts of 512 KiB each round; the copy to
  // itself (round 0) on channels 0-15, the peer (round 1, base
  // reverseBits(1) = 16) on 16-31: one work a channel, 10 send warps.
  const auto small = nccl_p2p_works(2, 8 * kMiB, h200(2));
  REQUIRE(small.size() == 32);
  for (const NcclP2pWork& w : small) {
    CHECK(w.bytes == 512 * 1024.0);
    CHECK(w.channel / 16 == w.round);
    CHECK(w.batch_works == 1);
    CHECK(w.send_warps == 10);
  }
  // 512 MiB a peer: parts over 16 MiB double to 32 a round, so each channel
  // runs the copy and the peer's part together: 10 warps each, 5 send.
  const auto large = by_channel(nccl_p2p_works(2, 512 * kMiB, h200(2)));
  REQUIRE(large.size() == 32);
  for (const auto& [ch, ws] : large) {
    REQUIRE(ws.size() == 2);
    CHECK(ws[0].round == 0);
    CHECK(ws[1].round == 1);
    CHECK(ws[1].send_warps == 5);
  }
  // 4 ranks at 256 MiB a peer: 16 parts a round from bases 0, 16, 8, 24:
  // every channel two works; channels 16-31 carry two peers' parts.
  const auto four = by_channel(nccl_p2p_works(4, 256 * kMiB, h200(4)));
  for (const auto& [ch, ws] : four) {
    REQUIRE(ws.size() == 2);
    const bool has_copy = std::any_of(ws.begin(), ws.end(), [](const NcclP2pWork& w) { return w.round == 0; });
    CHECK(has_copy == (ch < 16));
  }
  // 16 ranks on 4 channels (forced), 4 parts each: 16 works a channel, two
  // batches of 8 run one after another, 2 warps a work, 1 sending.
  const auto crowded = by_channel(nccl_p2p_works(16, 64 * kMiB, NcclP2pChannels{4, 4, 1, 512 * 1024.0}));
  for (const auto& [ch, ws] : crowded) {
    REQUIRE(ws.size() == 16);
    std::set<int> batches;
    for (const NcclP2pWork& w : ws) {
      batches.insert(w.batch);
      CHECK(w.send_warps == 1);
      CHECK(w.batch_works == 8);
    }
    CHECK(batches.size() == 2);
  }
}

TEST_CASE("a rank's Simple time: its works at their channel's rate, the total within the NVLink knee") {
  // 2 ranks, 64 MiB a peer on 16 channels: 4 MiB parts, each at the
  // channel rate scaled so the 16 together move the knee's total.
  const NcclP2pRates r{20.0, 3.0, 4.0};
  const double a = 370.8, demand = 16 * 20.0;
  const double total = std::pow(std::pow(demand, -4.0) + std::pow(a, -4.0), -0.25);
  CHECK(total < demand);
  CHECK(total > 0.8 * demand);
  CHECK(nccl_p2p_simple_us(2, 64 * kMiB, h200(2), a, r) == doctest::Approx(4 * kMiB / (1000 * total / 16)));
  // Far from the links' rate the channels move their own: 2 parts.
  const NcclP2pChannels two{4, 4, 2, 512 * 1024.0};
  const double alone = std::pow(std::pow(2 * 20.0, -4.0) + std::pow(a, -4.0), -0.25);
  CHECK(alone == doctest::Approx(40.0).epsilon(0.001));
  CHECK(nccl_p2p_simple_us(2, 32 * kMiB, two, a, r) == doctest::Approx(16 * kMiB / (1000 * alone / 2)));
  // 512 MiB a peer: the peer's part shares its channel with the copy, so
  // asks 5 send warps' 15 GB/s, not the channel's 20.
  const double shared = std::pow(std::pow(32 * 15.0, -4.0) + std::pow(a, -4.0), -0.25);
  CHECK(nccl_p2p_simple_us(2, 512 * kMiB, h200(2), a, r) == doctest::Approx(16 * kMiB / (1000 * shared / 32)));
  // Two peers' parts on one channel split it; where parts end early the
  // rest speed up, so the time lies between the even split and the
  // slowest part alone.
  const double t4 = nccl_p2p_simple_us(4, 256 * kMiB, h200(4), a, r);
  CHECK(t4 > 3 * 256 * kMiB / (1000 * a));
  CHECK(t4 < 16 * kMiB / (1000 * 10.0 * std::pow(std::pow(16 * 15.0 + 16 * 20.0, -4.0) + std::pow(a, -4.0), -0.25) / (16 * 15.0 + 16 * 20.0)));
}
