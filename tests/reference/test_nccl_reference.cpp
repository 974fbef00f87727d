// The reference machines' own NCCL benches against NCCL's model (issue 77):
// every collective a reference machine's calibration sources measured on 2
// or more ranks at NCCL's default channels (nccl_all_gather,
// nccl_reduce_scatter, nccl_all_reduce, nccl_all_to_all, with and without
// NCCL_P2P_DISABLE), and the all-to-all as PyTorch calls it
// (framework_all_to_all, all_to_all_single), predicted by NCCL's view and
// tuning model (gpu/nccl_topo.hpp, gpu/nccl_tuning.hpp) on the machine's
// topology with that communicator's ranks, as the executor runs it
// (gpu/nccl_model.hpp). The model's constants are NCCL's own (none fitted, on
// these machines or any other), so each machine is predicted from constants
// that never saw it. Prints each point and, per machine, transport,
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
constexpr const char* kTwoRanks = "NCCL's tuning model gives every collective and rank count one bus bandwidth; 2-rank rings run slower";
constexpr const char* kMidSizes = "Simple at 4-256 MiB: NCCL's tuning model has no term for its chunk pipeline's fill";
constexpr const char* kShm = "through host memory: NCCL prices the PHB path at its PCIe links' rate, the SHM transport moves 60-75 % of it";
constexpr const char* kShmA2a = "all-to-all through host memory: the model adds its peers' path bandwidths, which share one PCIe link";
constexpr const char* kPyTorch = "PyTorch's call, ungated: its span holds the host's issue of the call and the other ranks' arrival";
const std::vector<Expected> kExpected = {
    {"h200x2-nvlink", "P2P", "all_gather", 2, 44.4, 22.6, kTwoRanks},
    {"h200x2-nvlink", "P2P", "all_reduce", 2, 18.4, 18.2, kTwoRanks},
    {"h200x2-nvlink", "P2P", "all_to_all", 2, 20.0, 10.8, kTwoRanks},
    {"h200x2-nvlink", "P2P", "all_to_all (PyTorch)", 2, 80.5, 0.0, kPyTorch},
    {"h200x2-nvlink", "P2P", "reduce_scatter", 2, 36.8, 26.1, kTwoRanks},
    {"h200x2-nvlink", "SHM", "all_gather", 2, 56.0, 14.5, kShm},
    {"h200x2-nvlink", "SHM", "all_reduce", 2, 34.7, 18.4, kShm},
    {"h200x2-nvlink", "SHM", "all_to_all", 2, 432.0, 21.5, kShmA2a},
    {"h200x2-nvlink", "SHM", "reduce_scatter", 2, 55.3, 14.2, kShm},
    {"h200x4-nvlink", "P2P", "all_gather", 2, 44.7, 14.0, kTwoRanks},
    {"h200x4-nvlink", "P2P", "all_gather", 4, 16.4, 8.4, kMidSizes},
    {"h200x4-nvlink", "P2P", "all_reduce", 2, 18.7, 8.7, kTwoRanks},
    {"h200x4-nvlink", "P2P", "all_reduce", 4, 3.6, 4.7, nullptr},
    {"h200x4-nvlink", "P2P", "all_to_all", 2, 19.1, 8.2, kTwoRanks},
    {"h200x4-nvlink", "P2P", "all_to_all", 4, 14.9, 4.4, kMidSizes},
    {"h200x4-nvlink", "P2P", "all_to_all (PyTorch)", 2, 71.0, 0.0, kPyTorch},
    {"h200x4-nvlink", "P2P", "all_to_all (PyTorch)", 4, 49.9, 0.0, kPyTorch},
    {"h200x4-nvlink", "P2P", "reduce_scatter", 2, 37.4, 17.1, kTwoRanks},
    {"h200x4-nvlink", "P2P", "reduce_scatter", 4, 16.4, 9.5, kMidSizes},
    {"h200x4-nvlink", "SHM", "all_gather", 2, 63.5, 15.9, kShm},
    {"h200x4-nvlink", "SHM", "all_gather", 4, 44.7, 20.9, kShm},
    {"h200x4-nvlink", "SHM", "all_reduce", 2, 38.4, 18.0, kShm},
    {"h200x4-nvlink", "SHM", "all_reduce", 4, 46.8, 27.2, kShm},
    {"h200x4-nvlink", "SHM", "all_to_all", 2, 458.4, 23.2, kShmA2a},
    {"h200x4-nvlink", "SHM", "all_to_all", 4, 374.7, 28.1, kShmA2a},
    {"h200x4-nvlink", "SHM", "reduce_scatter", 2, 58.0, 13.6, kShm},
    {"h200x4-nvlink", "SHM", "reduce_scatter", 4, 55.6, 22.1, kShm},
};

double worst(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }
}  // namespace

TEST_CASE("reference machines' NCCL benches: NCCL's model against them") {
  std::map<PointGroup, Errors> groups;
  int points = 0;
  std::cout << fmt::format("{:<14} {:<4} {:<20} {:>2} {:>10} {:>12} {:>12} {:>8}  {}\n", "machine", "via", "collective", "n", "size", "measured",
                           "model", "error", "model's choice");
  std::vector<std::string> folders;
  for (const auto& e : fs::directory_iterator(kSrc + "/validate/reference"))
    if (fs::is_regular_file(e.path() / "manifest.yaml")) folders.push_back(e.path().string());
  std::sort(folders.begin(), folders.end());
  for (const std::string& folder : folders) {
    const reference::Manifest m = reference::read_manifest(folder);
    const hw::Topology topo(hw::parse_topology_file(m.topology));
    // NCCL's view per transport, as the executor builds it (NcclModel::view).
    std::map<bool, NcclView> views;
    for (const bool off : {false, true}) {
      NcclTopoOptions o;
      o.p2p_disable = off;
      views.emplace(off, nccl_view(topo, o));
    }
    auto predict = [&](bool off, NcclColl c, int ranks, double bytes) {
      NcclTuneOptions o;
      o.ranks = ranks, o.nodes = 1;
      const auto p = NcclTuning(views.at(off), o).predict(c, bytes);
      REQUIRE(p.has_value());
      return *p;
    };
    auto add = [&](const PointGroup& g, double bytes, double measured_us, const NcclPrediction& p) {
      const int ranks = std::get<3>(g);
      const NcclColl c = *nccl_coll_from_string(std::get<2>(g).substr(0, std::get<2>(g).find(' ')));
      const double f = nccl_busbw_factor(c, ranks);
      const double measured_busbw = bytes / (measured_us * 1e3) * f;
      std::string err;
      Errors& e = groups[g];
      if (bytes >= 1048576) {  // bus bandwidth
        const double x = p.busbw_GBps / measured_busbw - 1;
        e.busbw.push_back(std::abs(x)), e.busbw_signed.push_back(x);
        err = fmt::format("{:+.1f}% bw", 100 * x);
      } else {  // time
        const double x = p.time_us / measured_us - 1;
        if (bytes <= 65536) e.small.push_back(std::abs(x));
        err = fmt::format("{:+.1f}% t", 100 * x);
      }
      std::cout << fmt::format("{:<14} {:<4} {:<20} {:>2} {:>10} {:>9.2f} us {:>9.2f} us {:>8}  {}/{} {:.1f} GB/s busbw\n", std::get<0>(g),
                               std::get<1>(g), std::get<2>(g), ranks, format_bytes(bytes), measured_us, p.time_us, err, to_string(p.algo),
                               to_string(p.proto), p.busbw_GBps);
      ++points;
    };
    for (const std::string& src : m.sources) {
      const json doc = upgrade_bench_doc(read_bench_json(src));
      const bool off = p2p_disabled_run(doc);
      const std::string via = off ? "SHM" : "P2P";
      for (const char* key : {"nccl_all_gather", "nccl_reduce_scatter", "nccl_all_reduce", "nccl_all_to_all"})
        for (const json& r : rows(doc, key)) {
          const int n = r.at("ranks").get<int>();
          if (n < 2 || r.at("channels").get<int>() != 0) continue;  // NCCL's own channel count only
          const std::string coll = std::string(key).substr(5);
          const double bytes = r.at("bytes").get<double>();
          add({m.machine, via, coll, n}, bytes, r.at("time_us").get<double>(), predict(off, *nccl_coll_from_string(coll), n, bytes));
        }
      for (const json& r : rows(doc, "framework_all_to_all")) {
        if (r.at("op") != "all_to_all_single") continue;  // the pairwise rounds are not NCCL's all-to-all
        const int n = r.at("ranks").get<int>();
        const double bytes = r.at("bytes").get<double>();
        add({m.machine, via, "all_to_all (PyTorch)", n}, bytes, r.at("time_us").get<double>(), predict(off, NcclColl::AllToAll, n, bytes));
      }
    }
  }
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
  CHECK(points >= 200);
}
