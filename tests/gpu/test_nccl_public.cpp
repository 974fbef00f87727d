// Public NCCL measurements (validate/nccl-public/manifest.yaml) against NCCL's
// view and tuning model: prints model against published per point and the
// median and worst error per machine and collective, and holds each to the
// issue's targets for bus bandwidth at >= 1 MiB (median 10 %, worst 20 %;
// a collective a machine names in `bandwidth_gap`, with why NCCL's model
// misses it, is printed and checked to miss them still), for the time of a
// collective of <= 64 KiB (every point within 25 %, or the tolerance a
// machine states with its reason, or missing it still for a collective the
// machine names in a `latency_gap` map with why) and to NCCL's own logged
// path types and bandwidths exactly. A machine with `nodes` is a run on
// that many of its topology's hosts (a cluster's first nodes). A `set:
// tune` machine (a Volta one: kNvlink2RingGBps is the one constant fitted
// here) refits the rate its NVLink links move at on its own points and
// holds the shipped constant to it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gpu/nccl_tuning.hpp"
#include "hw/topology.hpp"
#include "io/yaml_reader.hpp"

using namespace osim;
using namespace osim::exec;

namespace {
const std::string kRoot = OVERLAPSIM_SOURCE_DIR;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
}  // namespace

TEST_CASE("public nccl-tests results: NCCL's model against what was published") {
  const std::string file = kRoot + "/validate/nccl-public/manifest.yaml";
  const YAML::Node root = load_yaml_file(file);
  const MapReader top(file, root, "manifest", {"machines"});
  int checked = 0;
  std::cout << fmt::format("{:<16} {:<26} {:>10} {:>12} {:>12} {:>8}\n", "machine", "point", "size", "published", "model", "error");
  for (const YAML::Node& m : top.get("machines")) {
    const MapReader mr(file, m, "machine",
                       {"name", "topology", "gpu", "nccl", "set", "cpu", "nvls", "nodes", "latency_tolerance", "latency_gap", "bandwidth_gap", "points"});
    // Small sizes: 25 % unless the machine states another tolerance, and why
    // (latency_gap as text), or names the collectives that miss it, each with
    // why (latency_gap as a map: printed, and checked to miss it still).
    const double latency_tol = mr.opt_num("latency_tolerance").value_or(25.0) / 100;
    std::map<std::string, std::string> latency_gap;
    if (mr.has("latency_gap") && mr.get("latency_gap").IsMap()) {
      REQUIRE_MESSAGE(!mr.has("latency_tolerance"), mr.str("name") << ": latency_gap by collective takes no latency_tolerance");
      for (const auto& kv : mr.get("latency_gap")) {
        const std::string coll = kv.first.as<std::string>();
        REQUIRE_MESSAGE(nccl_coll_from_string(coll).has_value(), "latency_gap: unknown collective " << coll);
        latency_gap[coll] = kv.second.as<std::string>();
      }
    } else if (mr.has("latency_tolerance")) {
      REQUIRE_MESSAGE(mr.has("latency_gap"), "a machine's own latency tolerance needs its reason");
    }
    std::map<std::string, int> latency_gap_points;
    std::vector<double> latency_errors;
    const std::string name = mr.str("name");
    const bool tune_set = mr.choice("set", {"tune", "check"}) == "tune";
    struct BusbwPoint {
      NcclTuneOptions to;
      NcclColl coll;
      double bytes, published;
    };
    std::vector<BusbwPoint> fit_points;  // a tune machine's bus bandwidths >= 1 MiB
    const hw::Topology topo(hw::parse_topology_file(kRoot + "/" + mr.str("topology")));
    NcclTopoOptions vo;
    if (const auto c = mr.opt_str("cpu")) {
      vo.cpu = nccl_cpu_from_string(*c);
      REQUIRE_MESSAGE(vo.cpu.has_value(), "unknown cpu " << *c);
    }
    const NcclView view = nccl_view(topo, vo);
    // NVLS as the run had it (NCCL_NVLS_ENABLE's default where the machine
    // has NVSwitch multicast); off unless the machine says so.
    const bool nvls = mr.boolean("nvls", false);
    if (nvls) REQUIRE_MESSAGE(view.nvls.supported, name << ": nvls on a topology without NVLS");
    // A run on fewer hosts than the topology holds (a cluster's first
    // `nodes` hosts, every GPU of each): the communicator NCCL tunes for.
    int nodes = 0;  // 0: every host (NcclTuneOptions)
    if (mr.has("nodes")) {
      nodes = mr.int32("nodes");
      REQUIRE_MESSAGE((nodes >= 2 && nodes <= view.hosts), name << ": nodes " << nodes << " on a topology of " << view.hosts << " hosts");
    }
    // Bus bandwidth >= 1 MiB: a collective the machine names here misses the
    // targets for the stated reason; it is printed, not held.
    std::map<std::string, std::string> bandwidth_gap;
    if (mr.has("bandwidth_gap"))
      for (const auto& kv : mr.get("bandwidth_gap")) {
        const std::string coll = kv.first.as<std::string>();
        REQUIRE_MESSAGE(nccl_coll_from_string(coll).has_value(), "bandwidth_gap: unknown collective " << coll);
        bandwidth_gap[coll] = kv.second.as<std::string>();
      }
    std::map<std::string, std::vector<double>> errors;  // per collective
    for (const YAML::Node& p : mr.get("points")) {
      const MapReader pr(file, p, "point",
                         {"collective", "algo", "proto", "bytes", "busbw", "time", "path", "type", "bw", "channels", "source", "note"});
      REQUIRE(pr.str("source").rfind("https://", 0) == 0);
      if (pr.has("path")) {
        const YAML::Node ends = pr.get("path");
        const int a = topo.find(ends[0].as<std::string>()), b = topo.find(ends[1].as<std::string>());
        const auto ia = std::find(view.gpus.begin(), view.gpus.end(), a) - view.gpus.begin();
        const auto ib = std::find(view.gpus.begin(), view.gpus.end(), b) - view.gpus.begin();
        const NcclPair& got = view.pair[static_cast<size_t>(ia)][static_cast<size_t>(ib)];
        std::cout << fmt::format("{:<16} {:<26} {:>10} {:>12} {:>12}\n", name, "path " + ends[0].as<std::string>() + "-" + ends[1].as<std::string>(),
                                 "", fmt::format("{} {:.1f}", pr.str("type"), pr.bandwidth("bw").GBps()),
                                 fmt::format("{} {:.1f}", to_string(got.type), got.bw_GBps));
        CHECK(to_string(got.type) == pr.str("type"));
        CHECK(got.bw_GBps == doctest::Approx(pr.bandwidth("bw").GBps()));
        ++checked;
        continue;
      }
      if (pr.has("channels")) {
        std::cout << fmt::format("{:<16} {:<26} {:>10} {:>12} {:>12}\n", name, "collective channels", "", pr.int32("channels"), view.coll_channels);
        CHECK(view.coll_channels == pr.int32("channels"));
        ++checked;
        continue;
      }
      NcclTuneOptions to;
      to.nvls = nvls;
      if (nodes > 0) to.nodes = nodes, to.ranks = nodes * view.ranks_per_host();
      if (const auto al = pr.opt_choice("algo", {"ring", "tree"})) to.algo = *al == "ring" ? NcclAlgo::Ring : NcclAlgo::Tree;
      if (const auto pp = pr.opt_choice("proto", {"LL", "LL128", "Simple"}))
        to.proto = *pp == "LL" ? NcclProto::LL : *pp == "LL128" ? NcclProto::LL128 : NcclProto::Simple;
      const NcclTuning tune(view, to);
      const auto coll = nccl_coll_from_string(pr.str("collective"));
      REQUIRE(coll.has_value());
      const double bytes = static_cast<double>(pr.bytes("bytes"));
      const auto got = tune.predict(*coll, bytes);
      REQUIRE(got.has_value());
      if (pr.has("time")) {  // a small size's time: latency and protocol
        const double published_us = pr.duration("time").us();
        REQUIRE(bytes <= 64 * 1024);
        const double err = got->time_us / published_us - 1;
        const bool gap = latency_gap.count(pr.str("collective")) == 1;
        std::cout << fmt::format("{:<16} {:<26} {:>10} {:>9.2f} us {:>9.2f} us {:>7.1f}%  ({} {}){}\n", name, pr.str("collective") + " time",
                                 format_bytes(bytes), published_us, got->time_us, 100 * err, to_string(got->algo), to_string(got->proto),
                                 gap ? ", not held (latency_gap)" : "");
        if (gap) {  // a stated gap that closed is a note to drop
          ++latency_gap_points[pr.str("collective")];
          CHECK_MESSAGE(std::abs(err) > latency_tol, name << " " << pr.str("collective") << " time meets the target now: drop its latency_gap");
        } else {
          latency_errors.push_back(std::abs(err));
          CHECK_MESSAGE(std::abs(err) <= latency_tol, name << " " << pr.str("collective") << " " << bytes << " B");
        }
        ++checked;
        continue;
      }
      const double published = pr.bandwidth("busbw").GBps();
      const double err = got->busbw_GBps / published - 1;
      std::cout << fmt::format("{:<16} {:<26} {:>10} {:>12.1f} {:>12.1f} {:>7.1f}%\n", name,
                               pr.str("collective") + (pr.has("algo") ? " (" + pr.str("algo") + ")" : ""), format_bytes(bytes), published,
                               got->busbw_GBps, 100 * err);
      if (bytes >= 1024 * 1024) errors[pr.str("collective")].push_back(std::abs(err));
      if (bytes >= 1024 * 1024 && tune_set) fit_points.push_back({to, *coll, bytes, published});
      ++checked;
    }
    for (const auto& entry : errors) {
      const std::string& coll = entry.first;
      const std::vector<double>& errs = entry.second;
      const double med = median(errs), worst = *std::max_element(errs.begin(), errs.end());
      const auto gap = bandwidth_gap.find(coll);
      std::cout << fmt::format("{:<16} {} bus bandwidth >= 1 MiB: median error {:.1f} %, worst {:.1f} % ({} points){}\n", name, coll, 100 * med,
                               100 * worst, errs.size(), gap == bandwidth_gap.end() ? "" : ", not held (bandwidth_gap)");
      if (gap == bandwidth_gap.end()) {
        CHECK_MESSAGE(med <= 0.10, name << " " << coll);
        CHECK_MESSAGE(worst <= 0.20, name << " " << coll);
      } else {  // a stated gap that closed is a note to drop
        CHECK_MESSAGE((med > 0.10 || worst > 0.20), name << " " << coll << " meets the targets now: drop its bandwidth_gap");
      }
    }
    for (const auto& gap : bandwidth_gap)
      REQUIRE_MESSAGE(errors.count(gap.first) == 1, name << " bandwidth_gap names " << gap.first << ", which has no point at >= 1 MiB");
    for (const auto& gap : latency_gap)
      REQUIRE_MESSAGE(latency_gap_points.count(gap.first) == 1, name << " latency_gap names " << gap.first << ", which has no time point");
    if (tune_set) {
      // The NVLink rate (GB/s a link) on a grid of 0.1 that minimises the
      // median |error| of the machine's bus bandwidths >= 1 MiB.
      REQUIRE_MESSAGE(view.sm == 70, name << ": only Volta's NVLink rate (kNvlink2RingGBps) is fitted on public points");
      REQUIRE_MESSAGE(!fit_points.empty(), name << ": a tune machine needs bus bandwidths >= 1 MiB");
      double best = 0, best_err = 1e30;
      for (int k = 150; k <= 300; ++k) {
        std::vector<double> errs;
        for (BusbwPoint fp : fit_points) {
          fp.to.nvlink_rate_GBps = k * 0.1;
          errs.push_back(std::abs(NcclTuning(view, fp.to).predict(fp.coll, fp.bytes)->busbw_GBps / fp.published - 1));
        }
        if (median(errs) < best_err - 1e-12) best = k * 0.1, best_err = median(errs);
      }
      std::cout << fmt::format("{:<16} NVLink rate fitted on its points: {:.1f} GB/s a link (median error {:.1f} %); shipped {:.1f}\n", name, best,
                               100 * best_err, kNvlink2RingGBps);
      CHECK_MESSAGE(std::abs(best - kNvlink2RingGBps) <= 0.15, name << "'s NVLink rate fit moved: " << best);
    }
    if (!latency_errors.empty())
      std::cout << fmt::format("{:<16} time <= 64 KiB: median error {:.1f} %, worst {:.1f} % ({} points)\n", name, 100 * median(latency_errors),
                               100 * *std::max_element(latency_errors.begin(), latency_errors.end()), latency_errors.size());
  }
  CHECK(checked >= 8);
}
