// Interference (params/interference.hpp): a GEMM and an all-to-all slowing
// each other by channel count, a GEMM beside a copy, and collectives through
// host memory beside copies on the PCIe links (the copy's weight and the
// link cost of the collective's bytes, fitted by simulation, or where no
// collective was measured beside copies, derived from one GPU's kernels
// reading and writing host memory beside copies); copies beside each
// collective kind replayed (copy_collective).
#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <Eigen/Dense>

#include "calib/bench_doc.hpp"
#include "calib/bench_replay.hpp"
#include "calib/families/steps.hpp"
#include "calib/fit.hpp"
#include "core/stats.hpp"
#include "gpu/nccl_model.hpp"
#include "schedule/builder.hpp"

namespace osim {
namespace families::interference {

// A collective beside copies as the bench ran them (interference.cu,
// copy_collective.cu): `reps` collectives of `bytes` (nccl-tests' size) on
// every one of `ranks` ranks, NCCL's default channels; `copy_count` pinned
// copies of `copy_bytes` back to back on the copy stream of GPU 0, or of every
// rank's GPU with `every`.
struct PairSpec {
  CollKind coll = CollKind::AllToAll;
  Bytes bytes = 0;
  int reps = 1;
  CopyKind copy = CopyKind::H2D;
  Bytes copy_bytes = 0;
  int copy_count = 1;
  bool every = false;
  int ranks = 2;
};
struct PairTimes {
  double coll_us = 0, copy_us = 0;
};
// Rank 0's times of the collectives and of the copies, each from its first
// op's start to its last op's end: both sides (`with_coll` and `with_copy`),
// or one alone (the other side's time 0). Host overheads left out: the bench
// queues everything behind a gate.
PairTimes replay_pair(const PairSpec& s, bool with_coll, bool with_copy, bool p2p_off, const hw::Topology& topo, const ModelParams& params) {
  ModelParams p = params;
  p.overheads.memcpy_call = p.overheads.kernel_launch = p.overheads.collective_call = Time::zero();
  // The all-to-all as NCCL's own (nccl_all_to_all's rows), the others as rings (nccl.cpp's replay).
  const Op coll = ops::collective(0, s.coll, 0, s.bytes, s.coll == CollKind::AllToAll ? CollAlgo::Nccl : CollAlgo::Ring);
  const Op cp = bench_copy(s.copy, s.copy_bytes, 1);
  const int copying = with_copy ? (s.every ? s.ranks : 1) : 0;
  std::vector<std::vector<Op>> progs(static_cast<size_t>(with_coll ? s.ranks : copying));
  for (size_t pr = 0; pr < progs.size(); ++pr) {
    if (static_cast<int>(pr) < copying) progs[pr].insert(progs[pr].end(), static_cast<size_t>(s.copy_count), cp);
    if (with_coll) progs[pr].insert(progs[pr].end(), static_cast<size_t>(s.reps), coll);
  }
  const ExecResult res = replay_programs(bench_schedule(static_cast<int>(progs.size()), p2p_off), progs, topo, p);
  const auto& r0 = res.ops[0];
  PairTimes t;
  const size_t first = with_copy ? static_cast<size_t>(s.copy_count) : 0;
  if (with_coll) t.coll_us = (r0[first + static_cast<size_t>(s.reps) - 1].end - r0[first].start).us();
  if (with_copy) t.copy_us = (r0[first - 1].end - r0[0].start).us();
  return t;
}

// The interference testcase's all-to-all beside a copy: the 1 GiB copy on GPU
// 0 (on every rank's GPU with `every`: h2d_all / d2h_all), four 256 MiB
// all-to-alls per rank on `ranks` ranks.
PairTimes replay_interference(bool h2d, bool every, int ranks, bool p2p_off, const hw::Topology& topo, const ModelParams& params) {
  const PairSpec s{.coll = CollKind::AllToAll,
                   .bytes = 268435456,
                   .reps = 4,
                   .copy = h2d ? CopyKind::H2D : CopyKind::D2H,
                   .copy_bytes = 1073741824,
                   .copy_count = 1,
                   .every = every,
                   .ranks = ranks};
  return replay_pair(s, true, true, p2p_off, topo, params);
}

// The bench's GEMM beside the all-to-all (validate/src/testcases/interference.cu,
// which does not record them in the row): four 256 MiB all-to-alls per rank,
// alone or beside 20 bf16 GEMMs of 18900 x 5120 x 5120 on another stream of
// GPU 0 (of every rank's GPU with `every`); the all-to-all's time on rank 0, in us.
double replay_a2a_beside_gemms(bool with_gemm, bool every, int ranks, int channels, bool p2p_off, const hw::Topology& topo,
                               const ModelParams& params) {
  ModelParams p = params;
  p.overheads.memcpy_call = p.overheads.kernel_launch = p.overheads.collective_call = Time::zero();
  Op a2a = bench_a2a(268435456);
  a2a.channels = channels;
  std::vector<std::vector<Op>> progs(static_cast<size_t>(ranks), std::vector<Op>(4, a2a));
  if (with_gemm)
    for (size_t pr = 0; pr < (every ? progs.size() : 1); ++pr) progs[pr].insert(progs[pr].begin(), 20, ops::gemm(1, 18900, 5120, 5120));
  const ExecResult res = replay_programs(bench_schedule(ranks, p2p_off), progs, topo, p);
  const auto& r0 = res.ops[0];
  const size_t first = with_gemm ? 20 : 0;
  return (r0[first + 3].end - r0[first].start).us();
}

// The bench's all-to-all ∥ copy pair: 1 GiB on GPU 0 beside 4 all-to-alls of
// 256 MiB per rank, a rank's flow to each peer carrying 256 MiB / ranks of
// each. Each of a rank's ranks - 1 flows weighs 1/sqrt(ranks - 1) (see the
// executor): the copy weight is the copy's rate over a flow's, times that.
double copy_weight_from_rates(double a2a_us, double copy_us, int ranks) {
  const double copy_rate = 1073741824.0 / copy_us, flow_rate = 4.0 * 268435456.0 / ranks / a2a_us;
  return copy_rate / flow_rate / std::sqrt(static_cast<double>(ranks - 1));
}
void fit_pairs(FitContext& ctx) {
  const json& d = ctx.def;
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  // Interference on the NVLink run: GEMM and all-to-all slowdowns at the
  // channel counts measured; a line through them.
  {
    std::vector<std::pair<int, double>> comm, gemm;
    double copy_slow = 0;
    int copies = 0;
    for (const auto& r : rows(d, "interference")) {
      const std::string a = r.at("a"), b = r.at("b");
      if (a == "gemm" && b == "all_to_all") {
        const int ch = r.at("channels").get<int>() == 0 ? p.nccl.nccl_channels : r.at("channels").get<int>();
        comm.emplace_back(ch, r.at("b_slowdown").get<double>());
        gemm.emplace_back(ch, 1.0 - 1.0 / r.at("a_slowdown").get<double>());
      }
      if (a == "gemm" && b == "h2d") {
        copy_slow += std::max(0.0, 1.0 - 1.0 / r.at("a_slowdown").get<double>());
        ++copies;
      }
    }
    if (comm.size() >= 2) {
      std::sort(comm.begin(), comm.end());
      const double slope = (comm.back().second - comm.front().second) / (comm.back().first - comm.front().first);
      p.interference.comm_slowdown_per_channel = std::max(0.0, slope);
      p.interference.comm_slowdown_base = comm.front().second - p.interference.comm_slowdown_per_channel * comm.front().first;
      double g = 0;
      for (const auto& [ch, s] : gemm) g += std::max(0.0, s);
      p.interference.gemm_slowdown_base = g / static_cast<double>(gemm.size());  // no channel trend measured: a constant
      p.interference.gemm_slowdown_per_channel = 0;
      c.fits.push_back({"interference",
                        "all-to-all slowdown = base + per_channel x channels; GEMM slowdown = mean",
                        {{"comm_base", p.interference.comm_slowdown_base},
                         {"comm_per_channel", p.interference.comm_slowdown_per_channel},
                         {"gemm_slowdown", p.interference.gemm_slowdown_base}},
                        0,
                        static_cast<int>(comm.size())});
    }
    if (copies) p.interference.gemm_slowdown_per_copy = copy_slow / copies;
  }
}

// A GEMM on every rank's GPU beside the all-to-all (gemm_all, NCCL's default
// channels): the factor by which a flow into a computing rank runs slower
// as well (comm_slowdown_receiver), the sender's slowdown (fit_pairs) in
// place. NVLink (P2P) run only: through host memory the model's all-to-all
// is held by the host links, and its measured slowdown beside GEMMs
// (1.2-1.4x) is not modelled (docs/execution-model.md "Interference").
void fit_receiver(FitContext& ctx) {
  const json& d = ctx.def;
  const int ranks = interference_ranks(d);
  if (p2p_disabled_run(d) || ranks < 2 || static_cast<int>(ctx.topo.gpus().size()) < ranks) return;
  for (const auto& r : rows(d, "interference"))
    if (r.at("a") == "gemm_all" && r.at("b") == "all_to_all" && r.at("channels").get<int>() == 0 && r.at("b_slowdown").get<double>() > 0) {
      const double measured = r.at("b_slowdown").get<double>();
      double& factor = ctx.p.interference.comm_slowdown_receiver;
      // Alone, no rank computes: the factor does not enter.
      const double alone = replay_a2a_beside_gemms(false, true, ranks, 0, false, ctx.topo, ctx.p);
      auto slowdown = [&](double v) {
        factor = v;
        return replay_a2a_beside_gemms(true, true, ranks, 0, false, ctx.topo, ctx.p) / alone;
      };
      // The slowdown rises with the factor; at 1 the sender's may explain it already.
      const double fitted = slowdown(1) >= measured ? 1.0 : bisect(1, 10, [&](double mid) { return slowdown(mid) < measured; });
      const double err = slowdown(fitted) / measured - 1;
      ctx.cal.fits.push_back({"interference, every GPU computing",
                              "a GEMM on every GPU beside the all-to-all: the receiving rank's factor, by bisection, under which the replayed "
                              "all-to-all slows as measured (comm_slowdown_receiver)",
                              {{"measured_slowdown", measured}, {"receiver_factor", fitted}},
                              100 * std::abs(err),
                              1});
      return;
    }
}

// The host-memory transport (a run with NCCL_P2P_DISABLE=1): a rank's
// ceiling (NCCL's), and where the simulation below does not run, the copy
// weight from the rates alone.
void fit_host_transport_rates(FitContext& ctx) {
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  const BenchDocs& runs = ctx.runs;
  if (const json* off = find_doc(runs, true)) {
    int ranks = 0;
    for (const auto& r : rows(*off, "nccl_all_to_all")) ranks = std::max(ranks, r.at("ranks").get<int>());
    double bytes = 0, busbw = 0;
    for (const auto& r : rows(*off, "nccl_all_to_all"))
      if (r.at("ranks").get<int>() == ranks && r.at("channels").get<int>() == 0 && r.at("bytes").get<double>() >= bytes) {
        bytes = r.at("bytes").get<double>();
        busbw = r.at("busbw_GBps").get<double>();
      }
    Fit f{"NCCL through host memory",
          "rank ceiling = busbw at the largest size; copy weight from the rates = H2D rate / an all-to-all flow's rate when together / sqrt(peers) "
          "(where the fit by simulation below runs, its start)",
          {},
          0,
          0};
    if (busbw > 0) {
      p.nccl.nccl_host_rank_bandwidth = Bandwidth::from_GBps(busbw);
      f.values.emplace_back("rank_ceiling_GBps", busbw);
      ++f.points;
    }
    const int a2a_ranks = interference_ranks(*off);
    for (const auto& r : rows(*off, "interference"))
      if (r.at("a") == "all_to_all" && r.at("b") == "h2d") {
        p.interference.copy_weight.h2d = copy_weight_from_rates(r.at("a_together_us").get<double>(), r.at("b_together_us").get<double>(), a2a_ranks);
        f.values.emplace_back("copy_weight_from_rates", p.interference.copy_weight.h2d);
        ++f.points;
      }
    if (f.points) c.fits.push_back(f);
  }
}

void fit_host_transport_simulated(FitContext& ctx) {
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  const BenchDocs& runs = ctx.runs;
  const hw::Topology& topo = ctx.topo;
  // The host-memory transport beside copies, fitted by simulation: per
  // direction, the copy's weight and the link cost of the all-to-all's bytes
  // (ModelParams::host_transport_cost_*) that make the bench's pairs (a 1 GiB
  // copy on GPU 0, and where measured on every rank's GPU, beside four
  // all-to-alls) take the measured times: least squares on the log residuals
  // of both times of each pair (Levenberg-Marquardt, the Jacobian by finite
  // differences; with one pair, the exact solve). One weight for both
  // directions fitted neither: beside a D2H copy a 2xH200 box's GPU 0 link
  // carried 50.6 GB/s in all, beside an H2D one 54.3. With every GPU copying
  // the all-to-all took 2.8 % longer on a 2xH200 box (35.1 against 34.2 ms),
  // which the model, whose all-to-all waits for its slowest link either way,
  // does not tell apart: the fit splits it. That case is the one a prefetch
  // beside Ulysses meets (every rank copies its layers).
  if (const json* off = find_doc(runs, true); off && static_cast<int>(topo.gpus().size()) >= interference_ranks(*off)) {
    const int ranks = interference_ranks(*off);
    Fit f{"NCCL through host memory beside a copy (simulated)",
          "per direction: copy weight and the all-to-all's link cost per byte, least squares over both measured times of each pair (one GPU copying, "
          "every GPU; every GPU alone where the host side does not bind it)",
          {},
          0,
          0};
    double worst = 0;
    for (const bool h2d : {true, false}) {
      struct Pair {
        bool every;
        double a2a_us, copy_us;
      };
      std::vector<Pair> pairs;
      for (const bool every : {false, true})
        for (const auto& r : rows(*off, "interference"))
          if (r.at("a") == "all_to_all" && r.at("b") == std::string(h2d ? "h2d" : "d2h") + (every ? "_all" : "") &&
              r.at("a_together_us").get<double>() > 0 && r.at("b_together_us").get<double>() > 0) {
            pairs.push_back({every, r.at("a_together_us").get<double>(), r.at("b_together_us").get<double>()});
            break;
          }
      if (pairs.empty()) continue;
      // Where every GPU copying still gets each copy its own rate (the host
      // side's measured aggregate for `ranks` GPUs within 2 % of `ranks`
      // single copies), the model gives the all-to-all the same time beside
      // one copy or beside every GPU's: the every-GPU pair, the prefetch's
      // case, is then the one fitted. Where the host side binds (4xH200:
      // 149 GB/s for four), the two pairs differ in the model too and both
      // are fitted.
      const auto& agg = h2d ? p.copies.host_h2d_aggregate : p.copies.host_d2h_aggregate;
      if (pairs.size() == 2 && agg.size() >= static_cast<size_t>(ranks) && agg[static_cast<size_t>(ranks) - 1].GBps() >= 0.98 * ranks * agg[0].GBps())
        pairs.erase(pairs.begin());
      double& w = h2d ? p.interference.copy_weight.h2d : p.interference.copy_weight.d2h;
      double& cost = h2d ? p.interference.host_transport_cost.h2d : p.interference.host_transport_cost.d2h;
      auto residual = [&](const Eigen::Vector2d& x) {
        w = std::exp(x(0));
        cost = std::exp(x(1));
        Eigen::VectorXd r(2 * pairs.size());
        for (size_t i = 0; i < pairs.size(); ++i) {
          const PairTimes t = replay_interference(h2d, pairs[i].every, ranks, true, topo, p);
          r(2 * i) = std::log(t.coll_us / pairs[i].a2a_us);
          r(2 * i + 1) = std::log(t.copy_us / pairs[i].copy_us);
        }
        return r;
      };
      // Start: the weight from the first pair's rates when together, a byte costing a byte.
      Eigen::Vector2d x(std::log(copy_weight_from_rates(pairs[0].a2a_us, pairs[0].copy_us, ranks)), 0.0);
      Eigen::VectorXd r = residual(x);
      double lambda = 1e-3;
      for (int it = 0; it < 60 && r.cwiseAbs().maxCoeff() > 1e-5 && lambda < 1e8; ++it) {
        constexpr double h = 1e-3;
        Eigen::MatrixXd J(r.size(), 2);
        J.col(0) = (residual(Eigen::Vector2d(x(0) + h, x(1))) - r) / h;
        J.col(1) = (residual(Eigen::Vector2d(x(0), x(1) + h)) - r) / h;
        const Eigen::Matrix2d A = J.transpose() * J;
        Eigen::Matrix2d D = A;
        D(0, 1) = D(1, 0) = 0;
        Eigen::Vector2d step = -(A + lambda * D).colPivHouseholderQr().solve(J.transpose() * r);
        if (!step.allFinite()) break;
        if (const double n = step.cwiseAbs().maxCoeff(); n > 0.5) step *= 0.5 / n;  // at most x1.65 per step
        // Within sane bounds: a weight in [0.05, 50], a cost in [0.5, 4].
        Eigen::Vector2d next = x + step;
        next(0) = std::clamp(next(0), std::log(0.05), std::log(50.0));
        next(1) = std::clamp(next(1), std::log(0.5), std::log(4.0));
        const Eigen::VectorXd rn = residual(next);
        if (rn.squaredNorm() < r.squaredNorm()) {
          x = next;
          r = rn;
          lambda = std::max(1e-9, lambda / 3);
        } else {
          lambda *= 4;
        }
      }
      w = std::exp(x(0));  // the best point (the trial steps left others)
      cost = std::exp(x(1));
      worst = std::max(worst, 100.0 * (std::exp(r.cwiseAbs().maxCoeff()) - 1.0));
      f.values.emplace_back(h2d ? "copy_weight_h2d" : "copy_weight_d2h", w);
      f.values.emplace_back(h2d ? "link_cost_h2d" : "link_cost_d2h", cost);
      f.points += static_cast<int>(r.size());
    }
    if (f.points) {
      f.values.emplace_back("worst_residual_pct", worst);
      c.fits.push_back(f);
    }
  }
}

// Copies beside NCCL's SHM transport, from one GPU (no collective measured
// beside copies): SM kernels of 1-32 CTAs that load from pinned host memory
// (host_load: what a rank's SHM channels do with a peer's data, the H2D
// direction) or store to it (host_store: its own data, D2H), beside a pinned
// copy (copy_beside_host_memory_kernel). An SM's loads from host memory are
// latency-bound: a CTA reads r1 GB/s (its reads in flight over the round
// trip), a rank's SHM all-to-all with one peer moves R (the model's flow cap
// alone: nccl_host_rank_bandwidth where measured, else NCCL's SHM rate on
// the GPU's PCIe link), about n = R / r1 CTAs' loads. Beside a copy that
// fills the link its loads slow by s(n), the load rows' slowdown at n CTAs
// (linear between the CTA counts measured): the round trip grows behind the
// copy's reads (H2D), or behind its posted writes (D2H), which share the
// way up with the rank's own stores by injection (the store rows' rate
// beside the copy at n CTAs, where lower). A 2-rank all-to-all's flow
// weighs 1: max-min gives it C / (1 + w) beside a copy of weight w on a link
// of C, the copy's rate alone, so the flow keeps X = R / s(n) where
// w = C s(n) / R - 1. Each file is one host (the hosts differ up to 1.7x in
// how writes slow reads): the median over files.
//
// With `ranks` > 2: NCCL gives each peer beyond P2P two channels (one CTA
// each) and runs every peer's round at once on channels of its own, so a
// rank's CTAs loading from host memory grow with its peers: n = (ranks - 1)
// R / r1. Its loads beside the copy grow as the rows' do between n(2) and n
// (X = R / s(n(2)) x beside(n) / beside(n(2))), never beyond R (its rate
// alone); its ranks - 1 flows weigh 1/sqrt(ranks - 1) each (the executor's
// rule), so w = sqrt(ranks - 1) (C / X - 1). Measured 4-rank pairs do not
// bear this out (docs/execution-model.md, "Interference"): the
// calibration takes the 2-rank weights and reports the 4-rank ones.
namespace {
struct HostKernelPoint {
  double ctas, value;
};
// `pts` (sorted by CTAs, at least one) at `ctas`: linear between the
// measured counts, the end values beyond them.
double at_ctas(const std::vector<HostKernelPoint>& pts, double ctas) {
  if (ctas <= pts.front().ctas) return pts.front().value;
  for (size_t i = 1; i < pts.size(); ++i)
    if (ctas <= pts[i].ctas) {
      const double t = (ctas - pts[i - 1].ctas) / (pts[i].ctas - pts[i - 1].ctas);
      return pts[i - 1].value + t * (pts[i].value - pts[i - 1].value);
    }
  return pts.back().value;
}
}  // namespace

HostReaderWeights copy_weights_beside_host_reader(const json& doc, double rank_GBps, int ranks) {
  if (!(rank_GBps > 0)) throw std::invalid_argument("copy weights beside host-memory kernels: the rank's rate through host memory must be above 0");
  if (ranks < 2) throw std::invalid_argument(fmt::format("copy weights beside host-memory kernels: an all-to-all of {} ranks (at least 2)", ranks));
  // Per kernel kind and copy direction, by CTA count: the rows of the largest copy.
  struct Row {
    double copy_bytes, ctas, kernel_alone, kernel_beside, copy_alone;
  };
  std::map<std::pair<std::string, std::string>, std::map<int, Row>> by;
  for (const auto& r : rows(doc, "copy_beside_host_memory_kernel")) {
    const std::string kernel = r.at("kernel");
    const std::string kind = kernel.rfind("host_load_", 0) == 0    ? "load"
                             : kernel.rfind("host_store_", 0) == 0 ? "store"
                             : kernel.rfind("host_both_", 0) == 0  ? "both"
                                                                   : "";
    if (kind.empty())
      throw std::invalid_argument(
          fmt::format("copy_beside_host_memory_kernel row: kernel '{}': expected host_load_N, host_store_N or host_both_N", kernel));
    const std::string copy = one_of(r, "copy", {"h2d", "d2h"});
    const Row row{r.at("copy_bytes").get<double>(), r.at("ctas").get<double>(), r.at("kernel_alone_GBps").get<double>(),
                  r.at("kernel_beside_GBps").get<double>(), r.at("copy_alone_GBps").get<double>()};
    if (!(row.ctas >= 1) || !(row.kernel_alone > 0) || !(row.kernel_beside > 0) || !(row.copy_alone > 0))
      throw std::invalid_argument(fmt::format("copy_beside_host_memory_kernel row {} beside {}: ctas >= 1 and every rate above 0", kernel, copy));
    auto& slot = by[{kind, copy}];
    const int n = static_cast<int>(row.ctas);
    if (auto it = slot.find(n); it == slot.end() || row.copy_bytes >= it->second.copy_bytes) slot[n] = row;
  }
  HostReaderWeights w;
  const auto points = [&](const std::string& kind, const std::string& copy, auto value) {
    std::vector<HostKernelPoint> pts;
    if (auto it = by.find({kind, copy}); it != by.end())
      for (const auto& [n, row] : it->second) pts.push_back({row.ctas, value(row)});
    return pts;
  };
  const auto slowdown = [](const Row& r) { return r.kernel_alone / r.kernel_beside; };
  const auto beside = [](const Row& r) { return r.kernel_beside; };
  const auto copy_alone = [](const Row& r) { return r.copy_alone; };
  const auto per_cta = [](const Row& r) { return r.kernel_alone / r.ctas; };
  const std::vector<HostKernelPoint> load_h2d = points("load", "h2d", slowdown), load_d2h = points("load", "d2h", slowdown);
  if (load_h2d.empty() || load_d2h.empty()) return w;  // no loads beside both directions: nothing to say
  w.ranks = ranks;
  w.one_cta_GBps = points("load", "h2d", per_cta).front().value;
  const double two_rank_ctas = rank_GBps / w.one_cta_GBps, peers = ranks - 1.0;
  w.ctas = peers * two_rank_ctas;
  // The rank's loads beside the copy: R / s(n(2)), grown as the rows' loads
  // beside it grow from n(2) to n CTAs, at most R.
  const auto loads_beside = [&](const std::string& copy, const std::vector<HostKernelPoint>& s) {
    const std::vector<HostKernelPoint> at = points("load", copy, beside);
    return std::min(rank_GBps, rank_GBps / at_ctas(s, two_rank_ctas) * (at_ctas(at, w.ctas) / at_ctas(at, two_rank_ctas)));
  };
  double x_h2d = loads_beside("h2d", load_h2d), x_d2h = loads_beside("d2h", load_d2h);
  if (const std::vector<HostKernelPoint> store = points("store", "d2h", beside); !store.empty()) x_d2h = std::min(x_d2h, at_ctas(store, w.ctas));
  w.slowdown_h2d = rank_GBps / x_h2d;
  w.slowdown_d2h = rank_GBps / x_d2h;
  std::vector<double> c_h2d, c_d2h;
  for (const auto& p : points("load", "h2d", copy_alone)) c_h2d.push_back(p.value);
  for (const auto& p : points("load", "d2h", copy_alone)) c_d2h.push_back(p.value);
  w.copy_h2d_GBps = median(c_h2d);
  w.copy_d2h_GBps = median(c_d2h);
  // The rank's flows weigh sqrt(peers) together: they keep X beside a copy of weight w.
  w.h2d = std::sqrt(peers) * (w.copy_h2d_GBps / x_h2d - 1);
  w.d2h = std::sqrt(peers) * (w.copy_d2h_GBps / x_d2h - 1);
  w.points = static_cast<int>(load_h2d.size() + load_d2h.size());
  return w;
}

void fit_host_reader(FitContext& ctx) {
  // A collective measured beside copies wins: the fits above.
  if (const json* off = find_doc(ctx.runs, true))
    for (const auto& r : rows(*off, "interference"))
      if (const std::string b = r.at("b"); r.at("a") == "all_to_all" && (b.rfind("h2d", 0) == 0 || b.rfind("d2h", 0) == 0)) return;
  ModelParams& p = ctx.p;
  const double rank_GBps =
      p.nccl.nccl_host_rank_bandwidth.is_unlimited() ? exec::NcclModel(ctx.topo).shm_rank_bandwidth() / 1e9 : p.nccl.nccl_host_rank_bandwidth.GBps();
  if (!(rank_GBps > 0)) return;  // no PCIe link to carry a collective through host memory
  std::vector<double> h2d, d2h, ctas, one_cta, s_h2d, s_d2h, h2d_4, d2h_4;
  int points = 0;
  for (const auto& [name, doc] : ctx.docs) {
    const HostReaderWeights w = copy_weights_beside_host_reader(doc, rank_GBps, 2);
    if (!w.points) continue;
    const HostReaderWeights four = copy_weights_beside_host_reader(doc, rank_GBps, 4);
    h2d_4.push_back(four.h2d);
    d2h_4.push_back(four.d2h);
    h2d.push_back(w.h2d);
    d2h.push_back(w.d2h);
    ctas.push_back(w.ctas);
    one_cta.push_back(w.one_cta_GBps);
    s_h2d.push_back(w.slowdown_h2d);
    s_d2h.push_back(w.slowdown_d2h);
    points += w.points;
  }
  if (h2d.empty()) return;
  // Within the fields' range (a weight of 0.01 to 100).
  p.interference.copy_weight.h2d = std::clamp(median(h2d), 0.01, 100.0);
  p.interference.copy_weight.d2h = std::clamp(median(d2h), 0.01, 100.0);
  ctx.cal.fits.push_back({"NCCL through host memory beside a copy, from one GPU's host-memory kernels",
                          "per direction: copy weight = the copy's rate alone x the slowdown of n = R / r1 CTAs' loads from host memory beside "
                          "that copy (D2H: or of their stores' share, where more) / R - 1, R the rank's rate through host memory, r1 one CTA's "
                          "loads; the median over files (one host each); at 4 ranks by NCCL's two channels per peer (n x 3, reported, not "
                          "taken: the executor's 1/sqrt(peers) rule carries the 2-rank weights)",
                          {{"rank_GBps", rank_GBps},
                           {"one_cta_load_GBps", median(one_cta)},
                           {"ctas", median(ctas)},
                           {"slowdown_h2d", median(s_h2d)},
                           {"slowdown_d2h", median(s_d2h)},
                           {"copy_weight_h2d", p.interference.copy_weight.h2d},
                           {"copy_weight_d2h", p.interference.copy_weight.d2h},
                           {"copy_weight_h2d_4_ranks", median(h2d_4)},
                           {"copy_weight_d2h_4_ranks", median(d2h_4)},
                           {"files", static_cast<double>(h2d.size())}},
                          0,
                          points});
}

void replay_row(ReplayContext& ctx, const json& r, Comparison c, std::vector<Comparison>& out) {
  // Through host memory the GEMMs' slowdown of the all-to-all is not modelled: those rows are not replayed.
  if ((r.at("a") == "gemm" || r.at("a") == "gemm_all") && r.at("b") == "all_to_all" && !ctx.p2p_off && ctx.ngpu >= ctx.bench_ranks &&
      ctx.bench_ranks >= 2) {
    const bool every = r.at("a") == "gemm_all";
    const int ch = r.at("channels").get<int>();
    const double together = replay_a2a_beside_gemms(true, every, ctx.bench_ranks, ch, false, ctx.topo, ctx.p);
    c.cls = every ? "interference, every GPU computing" : "interference pairs";
    c.what = fmt::format("all-to-all beside {}{}", every ? "every GPU's GEMMs" : "GPU 0's GEMMs", ch ? fmt::format(", {} channels", ch) : "");
    c.measured_us = r.at("b_together_us");
    c.simulated_us = together;
    out.push_back(c);
    return;
  }
  if (!(r.at("a") == "all_to_all" && (r.at("b") == "h2d" || r.at("b") == "d2h" || r.at("b") == "h2d_all" || r.at("b") == "d2h_all") &&
        ctx.ngpu >= ctx.bench_ranks))
    return;
  const ModelParams& p = ctx.p;
  const hw::Topology& topo = ctx.topo;
  const bool p2p_off = ctx.p2p_off;
  const int bench_ranks = ctx.bench_ranks;
  const std::string b = r.at("b");
  const bool every = b.size() > 3;  // h2d_all / d2h_all: every rank's GPU copies
  const PairTimes sim = replay_interference(b.rfind("h2d", 0) == 0, every, bench_ranks, p2p_off, topo, p);
  const std::string pair = std::string("all-to-all + ") + b + (p2p_off ? ", P2P off" : "");
  c.cls = every ? "interference, every GPU copying" : "interference pairs";
  c.what = pair + ": the all-to-all";
  c.measured_us = r.at("a_together_us");
  c.simulated_us = sim.coll_us;
  out.push_back(c);
  c.what = pair + ": the copy";
  c.measured_us = r.at("b_together_us");
  c.simulated_us = sim.copy_us;
  out.push_back(c);
}

// A copy_collective row (copy_collective.cu): the same ops alone and
// together. Each side's comparison is its time together against the model's
// slowdown applied to its measured time alone, so its error is the slowdown's
// (the times alone are the NCCL and copy families' rows).
void replay_copy_collective(ReplayContext& ctx, const json& r, Comparison c, std::vector<Comparison>& out) {
  const std::string coll = one_of(r, "collective", {"all_to_all", "all_gather", "reduce_scatter", "all_reduce"});
  const std::string copy = one_of(r, "copy", {"h2d", "d2h"});
  PairSpec s;
  s.coll = coll == "all_to_all" ? CollKind::AllToAll : coll == "all_gather" ? CollKind::AllGather : coll == "reduce_scatter" ? CollKind::ReduceScatter : CollKind::AllReduce;
  s.copy = copy == "h2d" ? CopyKind::H2D : CopyKind::D2H;
  s.bytes = r.at("bytes").get<Bytes>();
  s.reps = r.at("reps").get<int>();
  s.copy_bytes = r.at("copy_bytes").get<Bytes>();
  s.copy_count = r.at("copy_count").get<int>();
  s.every = r.at("every").get<bool>();
  s.ranks = r.at("ranks").get<int>();
  const double coll_alone = r.at("collective_alone_us"), copy_alone = r.at("copy_alone_us");
  const double coll_together = r.at("collective_together_us"), copy_together = r.at("copy_together_us");
  if (s.ranks < 2 || s.bytes <= 0 || s.reps < 1 || s.copy_bytes <= 0 || s.copy_count < 1 || !(coll_alone > 0) || !(copy_alone > 0) ||
      !(coll_together > 0) || !(copy_together > 0))
    throw std::invalid_argument(fmt::format("copy_collective row of {} {} beside {}: ranks >= 2, bytes, reps, copy_bytes, copy_count and every time "
                                            "must be above 0",
                                            coll, s.bytes, copy));
  if (s.ranks > ctx.ngpu) return;
  const PairTimes both = replay_pair(s, true, true, ctx.p2p_off, ctx.topo, ctx.p);
  const double sim_coll = replay_pair(s, true, false, ctx.p2p_off, ctx.topo, ctx.p).coll_us;
  const double sim_copy = replay_pair(s, false, true, ctx.p2p_off, ctx.topo, ctx.p).copy_us;
  const std::string pair = fmt::format("{} {} x {} beside {} {} x {} on {}{}", coll, format_bytes(static_cast<double>(s.bytes)), s.reps,
                                       copy, format_bytes(static_cast<double>(s.copy_bytes)), s.copy_count, s.every ? "every GPU" : "GPU 0",
                                       ctx.p2p_off ? ", P2P off" : "");
  const std::string who = s.every ? "every GPU" : "GPU 0";
  c.cls = fmt::format("copy beside collective, {} copying: the collective", who);
  c.what = pair + ": the collective";
  c.measured_us = coll_together;
  c.simulated_us = coll_alone * (both.coll_us / sim_coll);
  out.push_back(c);
  c.cls = fmt::format("copy beside collective, {} copying: the copy", who);
  c.what = pair + ": the copy";
  c.measured_us = copy_together;
  c.simulated_us = copy_alone * (both.copy_us / sim_copy);
  out.push_back(c);
}

}  // namespace families::interference
}  // namespace osim
