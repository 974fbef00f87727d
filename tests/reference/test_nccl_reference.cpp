// The reference machines' own NCCL benches against NCCL's model (issue 77):
// every collective a reference machine's calibration sources measured on 2
// or more ranks at NCCL's default channels (nccl_all_gather,
// nccl_reduce_scatter, nccl_all_reduce, nccl_all_to_all, with and without
// NCCL_P2P_DISABLE), and the all-to-all as PyTorch calls it
// (framework_all_to_all, all_to_all_single), predicted by NCCL's view and
// tuning model (gpu/nccl_topo.hpp, gpu/nccl_tuning.hpp) on the machine's
// topology with that communicator's ranks, as the executor runs it
// (gpu/nccl_model.hpp). The model's constants are NCCL's own but two, the
// SHM transport's efficiency (kNcclShmEfficiency), fitted here on each
// machine's benches through host memory, and what a ring all-gather's or
// reduce-scatter's own chunk costs (kNcclOwnChunkSteps), fitted on each
// machine's NVLink all-gathers and reduce-scatters at 1 GiB; each machine is
// predicted with the other's fits (leave one machine out), so from constants
// that never saw them, and the shipped constants must agree with both fits.
// (The two act on different rings, NVLink and host memory, so each fit is
// independent of the other.) A third, the LL rate of one channel of NCCL's
// send/recv (kNcclP2pLlChannelGBps), is fitted on each machine's
// all-to-alls at forced channel counts (4-16, NCCL_MIN/MAX_NCHANNELS),
// which no group below holds, and checked on the other's at NCCL's own
// channels; the all-to-all over NVLink at 64 and 256 KiB, which NCCL runs
// as LL on 4-16 channels a peer (nccl_p2p_plan), is held within 10 %. The
// Simple send/recv's three rates (NcclP2pRates: a channel's, a send
// warp's, the NVLink knee; gpu/nccl_p2p.hpp) are fitted the same way on
// the forced-count all-to-alls from 16 MiB, and its points from 4 MiB held
// (15 % from 64 MiB, 30 % below).
// Prints each point and, per machine, transport,
// collective and rank count, the error of the bus bandwidth at >= 1 MiB and
// of the time at <= 64 KiB (median and worst); docs/accuracy.md holds the
// table. The target (bus bandwidth at >= 1 MiB within 10 % median)
// is held where the model meets it; each group where it does not names its
// reason in kExpected, and every group's medians are held where they are so
// that a change to the model shows here. Sizes of 256 KiB are printed but
// in neither figure.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "calib/bench_doc.hpp"
#include "core/stats.hpp"
#include "core/units.hpp"
#include "gpu/nccl_topo.hpp"
#include "gpu/nccl_tuning.hpp"
#include "hw/topology.hpp"
#include "reference/reference.hpp"

using namespace osim;
using namespace osim::exec;
namespace fs = std::filesystem;

namespace {
const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

// A group: machine, transport, collective (as the table names it), ranks.
using PointGroup = std::tuple<std::string, std::string, std::string, int>;

struct Errors {
  std::vector<double> busbw, small;  // |error| at >= 1 MiB (bus bandwidth), at <= 64 KiB (time)
  std::vector<double> busbw_signed;
};

// Every group's medians as the model gives them today (percent, held within
// 1 point so that a change to the model shows here): bus bandwidth at
// >= 1 MiB, time at <= 64 KiB (0: none measured), and why a group misses
// the 10 % (null: it meets it, and is held to it). The reasons, with
// NCCL's rules and sources, are docs/accuracy.md's ("NCCL on the reference
// machines").
struct Expected {
  const char* machine;
  const char* via;
  const char* collective;
  int ranks;
  double busbw_median_pct, small_median_pct;
  const char* miss;
};
constexpr const char* kShmAllReduce =
    "all-reduce through host memory moves 15-20 % more a link than the all-gather, the reduce-scatter and the all-to-all, whose "
    "efficiency the one SHM constant is";
constexpr const char* kShmA2a4 =
    "4-rank all-to-all through host memory: 3 peers' loads at once on a GPU's link move 15 % more than the 2-rank and ring collectives' "
    "that the one SHM constant is";
constexpr const char* kPyTorch = "PyTorch's call, ungated: its span holds the host's issue of the call and the other ranks' arrival";
const std::vector<Expected> kExpected = {
    {"h200x2-nvlink", "P2P", "all_gather", 2, 1.3, 22.6, nullptr},
    {"h200x2-nvlink", "P2P", "all_reduce", 2, 6.3, 18.2, nullptr},
    {"h200x2-nvlink", "P2P", "all_to_all", 2, 3.1, 12.1, nullptr},
    {"h200x2-nvlink", "P2P", "all_to_all (PyTorch)", 2, 53.1, 0.0, kPyTorch},
    {"h200x2-nvlink", "P2P", "reduce_scatter", 2, 5.9, 26.1, nullptr},
    {"h200x2-nvlink", "SHM", "all_gather", 2, 5.8, 12.3, nullptr},
    {"h200x2-nvlink", "SHM", "all_reduce", 2, 18.9, 15.3, kShmAllReduce},
    {"h200x2-nvlink", "SHM", "all_to_all", 2, 2.5, 18.6, nullptr},
    {"h200x2-nvlink", "SHM", "reduce_scatter", 2, 6.4, 11.3, nullptr},
    {"h200x4-nvlink", "P2P", "all_gather", 2, 2.1, 14.0, nullptr},
    {"h200x4-nvlink", "P2P", "all_gather", 4, 4.4, 8.4, nullptr},
    {"h200x4-nvlink", "P2P", "all_reduce", 2, 6.0, 8.7, nullptr},
    {"h200x4-nvlink", "P2P", "all_reduce", 4, 5.2, 4.7, nullptr},
    {"h200x4-nvlink", "P2P", "all_to_all", 2, 5.1, 7.7, nullptr},
    {"h200x4-nvlink", "P2P", "all_to_all", 4, 9.3, 2.5, nullptr},
    {"h200x4-nvlink", "P2P", "all_to_all (PyTorch)", 2, 38.4, 0.0, kPyTorch},
    {"h200x4-nvlink", "P2P", "all_to_all (PyTorch)", 4, 36.8, 0.0, kPyTorch},
    {"h200x4-nvlink", "P2P", "reduce_scatter", 2, 4.6, 17.1, nullptr},
    {"h200x4-nvlink", "P2P", "reduce_scatter", 4, 6.1, 9.5, nullptr},
    {"h200x4-nvlink", "SHM", "all_gather", 2, 2.9, 14.2, nullptr},
    {"h200x4-nvlink", "SHM", "all_gather", 4, 4.5, 20.4, nullptr},
    {"h200x4-nvlink", "SHM", "all_reduce", 2, 12.1, 15.3, kShmAllReduce},
    {"h200x4-nvlink", "SHM", "all_reduce", 4, 6.6, 24.7, nullptr},
    {"h200x4-nvlink", "SHM", "all_to_all", 2, 8.4, 19.7, nullptr},
    {"h200x4-nvlink", "SHM", "all_to_all", 4, 11.1, 24.0, kShmA2a4},
    {"h200x4-nvlink", "SHM", "reduce_scatter", 2, 1.2, 11.9, nullptr},
    {"h200x4-nvlink", "SHM", "reduce_scatter", 4, 9.2, 21.2, nullptr},
};

double worst(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }
// One measured point: its group, size, time, and the transport it ran on.
struct Point {
  PointGroup group;
  double bytes = 0, measured_us = 0;
  bool p2p_off = false;
  NcclColl coll = NcclColl::AllReduce;
};

// A machine's topology and NCCL's view of it per transport (NcclModel::view).
struct Machine {
  std::string name;
  std::map<bool, NcclView> views;
  std::map<int, NcclView> forced;  // over NVLink, by NCCL_MIN/MAX_NCHANNELS
};

// An all-to-all over NVLink at a forced channel count.
struct ForcedPoint {
  std::string machine;
  int ranks = 0, channels = 0;
  double bytes = 0, measured_us = 0;
};

// The model's two fitted constants, as one machine's benches give them.
struct Fit {
  double shm_efficiency = kNcclShmEfficiency;
  double own_chunk_steps = kNcclOwnChunkSteps;
  double p2p_ll_channel_GBps = kNcclP2pLlChannelGBps;
  NcclP2pRates p2p_simple;
};

NcclPrediction predict(const Machine& m, const Point& p, const Fit& f) {
  NcclTuneOptions o;
  o.ranks = std::get<3>(p.group), o.nodes = 1;
  o.shm_efficiency = f.shm_efficiency;
  o.own_chunk_steps = f.own_chunk_steps;
  o.p2p_ll_channel_GBps = f.p2p_ll_channel_GBps;
  o.p2p_simple = f.p2p_simple;
  const auto r = NcclTuning(m.views.at(p.p2p_off), o).predict(p.coll, p.bytes);
  REQUIRE(r.has_value());
  return *r;
}

NcclPrediction predict(const Machine& m, const ForcedPoint& p, const Fit& f) {
  NcclTuneOptions o;
  o.ranks = p.ranks, o.nodes = 1;
  o.p2p_ll_channel_GBps = f.p2p_ll_channel_GBps;
  o.p2p_simple = f.p2p_simple;
  const auto r = NcclTuning(m.forced.at(p.channels), o).predict(NcclColl::AllToAll, p.bytes);
  REQUIRE(r.has_value());
  return *r;
}

// The LL rate of a send/recv channel (kNcclP2pLlChannelGBps), on a grid of
// 0.1 GB/s: the machine's all-to-alls at forced channel counts that NCCL
// runs in LL with at least 64 KiB a peer (where the parts' time shows
// beside the latency), the median |error| of the time.
double fit_p2p_ll_channel(const Machine& m, const std::vector<ForcedPoint>& points) {
  double best = 0, best_err = 1e30;
  for (int k = 20; k <= 200; ++k) {
    Fit f;
    f.p2p_ll_channel_GBps = k * 0.1;
    std::vector<double> err;
    for (const ForcedPoint& p : points) {
      if (p.machine != m.name || p.bytes / p.ranks < 65536) continue;
      const NcclPrediction r = predict(m, p, f);
      if (r.proto == NcclProto::LL) err.push_back(std::abs(r.time_us / p.measured_us - 1));
    }
    if (!err.empty() && median(err) < best_err - 1e-12) best = k * 0.1, best_err = median(err);
  }
  return best;
}

// The Simple send/recv's three rates (NcclP2pRates: a channel's, a send
// warp's, the NVLink knee), on a grid (0.1 GB/s, 0.05 GB/s, 0.5): the
// machine's all-to-alls at forced channel counts from 16 MiB (64 MiB with
// one work a channel, 1 GiB with two or four), which NCCL runs in Simple,
// the mean square error of the time (three constants on 6-12 points: a
// median would leave them loose).
NcclP2pRates fit_p2p_simple(const Machine& m, const std::vector<ForcedPoint>& points) {
  NcclP2pRates best;
  double best_err = 1e30;
  for (int c = 190; c <= 230; ++c)
    for (int w = 50; w <= 66; ++w)
      for (int k = 3; k <= 16; ++k) {
        Fit f;
        f.p2p_simple = {c * 0.1, w * 0.05, k * 0.5};
        double sum = 0;
        int count = 0;
        for (const ForcedPoint& p : points) {
          if (p.machine != m.name || p.bytes < 16 * 1048576.0) continue;
          const NcclPrediction r = predict(m, p, f);
          if (r.proto != NcclProto::Simple) continue;
          sum += (r.time_us / p.measured_us - 1) * (r.time_us / p.measured_us - 1), ++count;
        }
        if (count > 0 && sum / count < best_err - 1e-15) best = f.p2p_simple, best_err = sum / count;
      }
  return best;
}

double busbw_error(const Point& p, const NcclPrediction& r) {
  const double measured_busbw = p.bytes / (p.measured_us * 1e3) * nccl_busbw_factor(p.coll, std::get<3>(p.group));
  return r.busbw_GBps / measured_busbw - 1;
}

// A constant fitted on one machine's benches: the value k * step (k from
// k_lo to k_hi) that minimises the median |error| of the bus bandwidth over
// the machine's points `keep` selects; `set` puts the value into a Fit.
template <class Set, class Keep>
double fit_on_grid(const Machine& m, const std::vector<Point>& points, int k_lo, int k_hi, double step, Set set, Keep keep) {
  double best = 0, best_err = 1e30;
  for (int k = k_lo; k <= k_hi; ++k) {
    Fit f;
    set(f, k * step);
    std::vector<double> err;
    for (const Point& p : points)
      if (std::get<0>(p.group) == m.name && keep(p)) err.push_back(std::abs(busbw_error(p, predict(m, p, f))));
    if (!err.empty() && median(err) < best_err - 1e-12) best = k * step, best_err = median(err);
  }
  return best;
}

// The SHM transport's efficiency (kNcclShmEfficiency), on a grid of 0.005:
// its NCCL benches through host memory at >= 1 MiB (every collective and
// rank count together; PyTorch's calls are not NCCL's benches).
double fit_shm_efficiency(const Machine& m, const std::vector<Point>& points) {
  return fit_on_grid(
      m, points, 60, 200, 0.005, [](Fit& f, double v) { f.shm_efficiency = v; },
      [](const Point& p) { return p.p2p_off && p.bytes >= 1048576 && std::get<2>(p.group).find(' ') == std::string::npos; });
}

// The cost of a ring's own chunk (kNcclOwnChunkSteps), on a grid of 0.01
// from 0 to 1: its all-gather and reduce-scatter benches over NVLink at
// 1 GiB (both rank counts together), where a channel's 5-11 MiB run
// NCCL's full 2 MiB chunks: the steady rate that the constant is, beside
// the pipeline's fill of one 1 MiB slice that the model adds at every size
// (NcclTuning's ring fill, NCCL's chunk rules: no constant of its own).
double fit_own_chunk_steps(const Machine& m, const std::vector<Point>& points) {
  return fit_on_grid(
      m, points, 0, 100, 0.01, [](Fit& f, double v) { f.own_chunk_steps = v; },
      [](const Point& p) {
        return !p.p2p_off && p.bytes >= 1073741824 && (std::get<2>(p.group) == "all_gather" || std::get<2>(p.group) == "reduce_scatter");
      });
}
}  // namespace

TEST_CASE("reference machines' NCCL benches: NCCL's model against them") {
  std::vector<Machine> machines;
  std::vector<Point> points;
  std::vector<ForcedPoint> forced;
  std::vector<std::string> folders;
  for (const auto& e : fs::directory_iterator(kSrc + "/validate/reference"))
    if (fs::is_regular_file(e.path() / "manifest.yaml")) folders.push_back(e.path().string());
  std::sort(folders.begin(), folders.end());
  for (const std::string& folder : folders) {
    const reference::Manifest m = reference::read_manifest(folder);
    const hw::Topology topo(hw::parse_topology_file(m.topology));
    Machine mc{m.machine, {}, {}};
    for (const bool off : {false, true}) {
      NcclTopoOptions o;
      o.p2p_disable = off;
      mc.views.emplace(off, nccl_view(topo, o));
    }
    for (const int ch : {4, 8, 16}) {
      NcclTopoOptions o;
      o.min_channels = o.max_channels = ch;
      mc.forced.emplace(ch, nccl_view(topo, o));
    }
    const size_t before = points.size();
    for (const std::string& src : m.sources) {
      const json doc = upgrade_bench_doc(read_bench_json(src));
      const bool off = p2p_disabled_run(doc);
      const std::string via = off ? "SHM" : "P2P";
      for (const char* key : {"nccl_all_gather", "nccl_reduce_scatter", "nccl_all_reduce", "nccl_all_to_all"})
        for (const json& r : rows(doc, key)) {
          const int n = r.at("ranks").get<int>();
          const int ch = r.at("channels").get<int>();
          if (n >= 2 && ch != 0 && !off && std::string(key) == "nccl_all_to_all")
            forced.push_back({m.machine, n, ch, r.at("bytes").get<double>(), r.at("time_us").get<double>()});
          if (n < 2 || ch != 0) continue;  // NCCL's own channel count only
          const std::string coll = std::string(key).substr(5);
          points.push_back(
              {{m.machine, via, coll, n}, r.at("bytes").get<double>(), r.at("time_us").get<double>(), off, *nccl_coll_from_string(coll)});
        }
      for (const json& r : rows(doc, "framework_all_to_all")) {
        if (r.at("op") != "all_to_all_single") continue;  // the pairwise rounds are not NCCL's all-to-all
        const int n = r.at("ranks").get<int>();
        points.push_back(
            {{m.machine, via, "all_to_all (PyTorch)", n}, r.at("bytes").get<double>(), r.at("time_us").get<double>(), off, NcclColl::AllToAll});
      }
    }
    if (points.size() > before) machines.push_back(std::move(mc));
  }
  REQUIRE(machines.size() == 2);

  // Leave one machine out: each machine is predicted with the constants
  // fitted on the other's benches.
  std::map<std::string, Fit> fitted;
  for (const Machine& m : machines)
    fitted[m.name] = Fit{fit_shm_efficiency(m, points), fit_own_chunk_steps(m, points), fit_p2p_ll_channel(m, forced), fit_p2p_simple(m, forced)};
  std::cout << fmt::format("SHM transport's efficiency (share of a GPU's PCIe link), fitted per machine:");
  for (const Machine& m : machines) std::cout << fmt::format(" {} {:.3f};", m.name, fitted.at(m.name).shm_efficiency);
  std::cout << fmt::format(" shipped (kNcclShmEfficiency) {:.3f}\n", kNcclShmEfficiency);
  std::cout << fmt::format("A ring's own chunk (all-gather, reduce-scatter) in link steps, fitted per machine:");
  for (const Machine& m : machines) std::cout << fmt::format(" {} {:.2f};", m.name, fitted.at(m.name).own_chunk_steps);
  std::cout << fmt::format(" shipped (kNcclOwnChunkSteps) {:.2f}\n", kNcclOwnChunkSteps);
  std::cout << fmt::format("A send/recv channel's LL rate (GB/s), fitted per machine at forced channel counts:");
  for (const Machine& m : machines) std::cout << fmt::format(" {} {:.1f};", m.name, fitted.at(m.name).p2p_ll_channel_GBps);
  std::cout << fmt::format(" shipped (kNcclP2pLlChannelGBps) {:.1f}\n", kNcclP2pLlChannelGBps);
  std::cout << fmt::format(
      "A send/recv's Simple rates (a channel's GB/s, a send warp's GB/s, NVLink knee), fitted per machine at forced channel counts:");
  for (const Machine& m : machines) {
    const NcclP2pRates& r = fitted.at(m.name).p2p_simple;
    std::cout << fmt::format(" {} {:.1f}, {:.2f}, {:.2f};", m.name, r.channel_GBps, r.send_warp_GBps, r.knee);
  }
  std::cout << fmt::format(" shipped {:.1f}, {:.2f}, {:.2f}\neach machine below is predicted with the other's fits\n\n", kNcclP2pSimpleChannelGBps,
                           kNcclP2pSendWarpGBps, kNcclP2pNvlinkKnee);
  for (const Machine& m : machines) {
    // The shipped constants are what both machines' fits agree on, not third values.
    CHECK_MESSAGE(std::abs(fitted.at(m.name).shm_efficiency - kNcclShmEfficiency) <= 0.03,
                  m.name << "'s SHM fit moved: " << fitted.at(m.name).shm_efficiency);
    CHECK_MESSAGE(std::abs(fitted.at(m.name).own_chunk_steps - kNcclOwnChunkSteps) <= 0.05,
                  m.name << "'s own-chunk fit moved: " << fitted.at(m.name).own_chunk_steps);
    CHECK_MESSAGE(std::abs(fitted.at(m.name).p2p_ll_channel_GBps - kNcclP2pLlChannelGBps) <= 0.5,
                  m.name << "'s send/recv LL fit moved: " << fitted.at(m.name).p2p_ll_channel_GBps);
    const NcclP2pRates& simple = fitted.at(m.name).p2p_simple;
    CHECK_MESSAGE(std::abs(simple.channel_GBps - kNcclP2pSimpleChannelGBps) <= 0.5,
                  m.name << "'s send/recv channel fit moved: " << simple.channel_GBps);
    CHECK_MESSAGE(std::abs(simple.send_warp_GBps - kNcclP2pSendWarpGBps) <= 0.15, m.name << "'s send warp fit moved: " << simple.send_warp_GBps);
    CHECK_MESSAGE(std::abs(simple.knee - kNcclP2pNvlinkKnee) <= 0.75, m.name << "'s NVLink knee fit moved: " << simple.knee);
  }

  // The forced-channel all-to-alls in Simple (the Simple rates' fit), each
  // machine with the other's fits: printed, not held.
  std::cout << fmt::format("{:<14} {:>2} {:>3} {:>10} {:>12} {:>12} {:>8}  (all-to-all at forced channels, Simple)\n", "machine", "n", "ch", "size",
                           "measured", "model", "error");
  for (const ForcedPoint& p : forced) {
    const Machine& m = *std::find_if(machines.begin(), machines.end(), [&](const Machine& x) { return x.name == p.machine; });
    const Machine& other = *std::find_if(machines.begin(), machines.end(), [&](const Machine& x) { return x.name != p.machine; });
    const NcclPrediction r = predict(m, p, fitted.at(other.name));
    if (r.proto != NcclProto::Simple) continue;
    std::cout << fmt::format("{:<14} {:>2} {:>3} {:>10} {:>9.2f} us {:>9.2f} us {:>+7.1f}%\n", p.machine, p.ranks, p.channels, format_bytes(p.bytes),
                             p.measured_us, r.time_us, 100 * (r.time_us / p.measured_us - 1));
  }
  std::cout << "\n";

  std::map<PointGroup, Errors> groups;
  std::cout << fmt::format("{:<14} {:<4} {:<20} {:>2} {:>10} {:>12} {:>12} {:>8}  {}\n", "machine", "via", "collective", "n", "size", "measured",
                           "model", "error", "model's choice");
  for (const Point& p : points) {
    const PointGroup& g = p.group;
    const Machine& m = *std::find_if(machines.begin(), machines.end(), [&](const Machine& x) { return x.name == std::get<0>(g); });
    const Machine& other = *std::find_if(machines.begin(), machines.end(), [&](const Machine& x) { return x.name != std::get<0>(g); });
    const NcclPrediction r = predict(m, p, fitted.at(other.name));
    std::string err;
    Errors& e = groups[g];
    if (p.bytes >= 1048576) {  // bus bandwidth
      const double x = busbw_error(p, r);
      e.busbw.push_back(std::abs(x)), e.busbw_signed.push_back(x);
      err = fmt::format("{:+.1f}% bw", 100 * x);
      // NCCL's send/recv in Simple (nccl_p2p_simple_us): within 15 % from
      // 64 MiB, 30 % at 4-16 MiB (parts of one step or less on 16-24
      // channels, slower than the model: docs/accuracy.md).
      if (std::get<1>(g) == "P2P" && std::get<2>(g) == "all_to_all" && r.proto == NcclProto::Simple)
        CHECK_MESSAGE(std::abs(x) <= (p.bytes >= 64 * 1048576.0 ? 0.15 : 0.30),
                      std::get<0>(g) << " all_to_all " << std::get<3>(g) << " ranks at " << p.bytes << " B: " << 100 * x << " %");
    } else {  // time
      const double x = r.time_us / p.measured_us - 1;
      if (p.bytes <= 65536) e.small.push_back(std::abs(x));
      err = fmt::format("{:+.1f}% t", 100 * x);
      // NCCL's send/recv in LL on 4-16 channels a peer (nccl_p2p_plan).
      if (std::get<1>(g) == "P2P" && std::get<2>(g) == "all_to_all" && (p.bytes == 65536 || p.bytes == 262144))
        CHECK_MESSAGE(std::abs(x) <= 0.10, std::get<0>(g) << " all_to_all " << std::get<3>(g) << " ranks at " << p.bytes << " B: " << 100 * x << " %");
    }
    std::cout << fmt::format("{:<14} {:<4} {:<20} {:>2} {:>10} {:>9.2f} us {:>9.2f} us {:>8}  {}/{} {:.1f} GB/s busbw\n", std::get<0>(g),
                             std::get<1>(g), std::get<2>(g), std::get<3>(g), format_bytes(p.bytes), p.measured_us, r.time_us, err, to_string(r.algo),
                             to_string(r.proto), r.busbw_GBps);
  }
  const size_t n_points = points.size();
  std::cout << fmt::format("\n{:<14} {:<4} {:<20} {:>2}  {:>24}  {:>24}  {}\n", "machine", "via", "collective", "n", "busbw >= 1 MiB: median/worst",
                           "time <= 64 KiB: median/worst", "the issue's 10 % median");
  for (const auto& [g, e] : groups) {
    // Named references, not a structured binding: clang's lambdas and doctest's messages cannot capture one.
    const auto& machine = std::get<0>(g);
    const auto& via = std::get<1>(g);
    const auto& coll = std::get<2>(g);
    const auto& n = std::get<3>(g);
    const auto x = std::find_if(kExpected.begin(), kExpected.end(),
                                [&](const Expected& k) { return k.machine == machine && k.via == via && k.collective == coll && k.ranks == n; });
    std::cout << fmt::format("{:<14} {:<4} {:<20} {:>2}  {:>10.1f} % {:>6.1f} % ({:>2})  {:>10.1f} % {:>6.1f} % ({:>2})  {}\n", machine, via, coll, n,
                             100 * median(e.busbw), 100 * worst(e.busbw), e.busbw.size(), 100 * median(e.small), 100 * worst(e.small),
                             e.small.size(), x == kExpected.end() ? "?" : x->miss ? std::string("missed: ") + x->miss : std::string("met"));
    REQUIRE_MESSAGE(x != kExpected.end(), machine << " " << via << " " << coll << " " << n << " ranks: add it to kExpected");
    const std::string what = fmt::format("{} {} {} {} ranks", machine, via, coll, n);
    CHECK_MESSAGE(std::abs(100 * median(e.busbw) - x->busbw_median_pct) <= 1.0, what << ": bus bandwidth median moved");
    CHECK_MESSAGE(std::abs(100 * median(e.small) - x->small_median_pct) <= 1.0, what << ": small sizes' median moved");
    if (!x->miss)
      CHECK_MESSAGE(median(e.busbw) <= 0.10, what << ": the issue's target");
    else
      CHECK_MESSAGE(median(e.busbw) > 0.10, what << " now meets the target: drop its reason");
  }
  CHECK(groups.size() == kExpected.size());
  CHECK(n_points >= 200);
}
