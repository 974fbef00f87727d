// NCCL collectives (params/nccl.hpp): the channel model from the all-to-all
// at 4-16 channels, a rank's ceiling, the ring's step latency, and the
// measured tables per collective, rank count, transport and channel count
// (nccl_all_to_all, _pairwise, nccl_all_gather, nccl_reduce_scatter,
// nccl_all_reduce; the pairwise all-to-all as PyTorch calls it,
// framework_all_to_all; nccl_reps reported).
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "calib/bench_replay.hpp"
#include "calib/families/steps.hpp"
#include "calib/fit.hpp"
#include "core/stats.hpp"

namespace osim {
namespace families::nccl {

// A value's name for a size, e.g. "steady_1.00MiB_us".
std::string sized(const std::string& prefix, double bytes) {
  std::string size = format_bytes(bytes);
  std::erase(size, ' ');
  return fmt::format("{}{}_us", prefix, size);
}

void fit_reps_report(FitContext& ctx) {
  const json& d = ctx.def;
  Calibration& c = ctx.cal;
  // The all-to-all per gated burst (nccl_reps): time per op = steady(size)
  // + burst / iters per rank count (one burst for all sizes): what a
  // collective timed alone pays over the table, whose rows run 20, 5 or 2
  // per burst. Reported only.
  {
    std::map<int, std::vector<BurstPoint>> by_ranks;
    for (const auto& r : rows(d, "nccl_reps"))
      by_ranks[r.at("ranks").get<int>()].push_back({r.at("bytes").get<double>(), r.at("iters").get<double>(), r.at("time_us").get<double>()});
    for (const auto& [n, pts] : by_ranks) {
      const auto b = fit_burst(pts, false);
      if (!b) continue;
      Fit f{fmt::format("all-to-all per gated burst (nccl_reps), {} ranks", n),
            "time per op = steady(size) + burst / iters, relative least squares (reported only)",
            {{"burst_us", b->burst}},
            b->rms_pct,
            static_cast<int>(pts.size())};
      for (const auto& [bytes, steady] : b->steady) f.values.emplace_back(sized("steady_", bytes), steady);
      c.fits.push_back(f);
    }
  }
  // The all-to-all as PyTorch calls it (framework_all_to_all: CUDA events
  // around each call, the GPU otherwise idle, the slowest rank's median),
  // each way of calling it beside the bench's table. all_to_all_single is
  // reported only (the runner's table and its host call time it); the
  // pairwise rows also make the framework's pairwise table (fit_tables).
  {
    std::map<std::pair<std::string, int>, std::vector<std::pair<double, double>>> by_op;
    for (const auto& r : rows(d, "framework_all_to_all"))
      by_op[{r.at("op").get<std::string>(), r.at("ranks").get<int>()}].emplace_back(r.at("bytes").get<double>(), r.at("time_us").get<double>());
    for (auto& [key, pts] : by_op) {
      std::sort(pts.begin(), pts.end());
      Fit f{fmt::format("all-to-all as PyTorch calls it (framework_all_to_all), {}, {} ranks", key.first, key.second),
            "GPU time per call, the GPU otherwise idle, the slowest rank's median",
            {},
            0,
            static_cast<int>(pts.size())};
      for (const auto& [bytes, us] : pts) f.values.emplace_back(sized("", bytes), us);
      c.fits.push_back(f);
    }
  }
}

void fit_channels(FitContext& ctx) {
  const json& d = ctx.def;
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  // NCCL all-to-all. Where the channels bind (4-16 channels, >= 4 MiB, the
  // largest rank count): time = latency + outgoing bytes / (channels x
  // per-channel bandwidth), fitted jointly. With NCCL's default channels the
  // rank's whole traffic binds: its ceiling is the busbw at the largest size.
  {
    int ranks = 0;
    for (const auto& r : rows(d, "nccl_all_to_all")) ranks = std::max(ranks, r.at("ranks").get<int>());
    std::vector<std::pair<double, double>> pts;        // (outgoing bytes per channel, time)
    std::map<int, std::pair<double, double>> largest;  // ranks -> (bytes, busbw) at default channels
    for (const auto& r : rows(d, "nccl_all_to_all")) {
      const int n = r.at("ranks").get<int>(), ch = r.at("channels").get<int>();
      const double bytes = r.at("bytes").get<double>();
      if (n == ranks && ch > 0 && ch <= 16 && bytes >= 4.0 * 1048576) pts.emplace_back(bytes * (n - 1) / n / ch, r.at("time_us").get<double>());
      if (ch == 0 && bytes >= largest[n].first) largest[n] = {bytes, r.at("busbw_GBps").get<double>()};
    }
    Fit f = fit_alpha_beta("NCCL all-to-all", pts);
    if (!f.values.empty()) {
      f.formula = "time = latency + outgoing bytes / (channels x channel bandwidth), 4-16 channels, >= 4 MiB";
      p.nccl.nccl_channel_bandwidth = Bandwidth::from_GBps(f.values[1].second);
      p.nccl.nccl_latency = Time::from_us(f.values[0].second);
      f.values = {{"channel_GBps", f.values[1].second}, {"latency_us", f.values[0].second}};
    }
    std::vector<double> ceil;
    for (const auto& [n, v] : largest) ceil.push_back(v.second);
    if (!ceil.empty()) {
      p.nccl.nccl_rank_bandwidth = Bandwidth::from_GBps(median(ceil));
      f.values.emplace_back("rank_ceiling_GBps", median(ceil));
    }
    // Ring steps after the first: all-reduce (2(U-1) steps) against
    // all-gather (U-1) at the smallest size, the largest rank count.
    double t_ar = 0, t_ag = 0, smallest = 1e300;
    for (const auto& key : {"nccl_all_reduce", "nccl_all_gather"})
      for (const auto& r : rows(d, key))
        if (r.at("ranks").get<int>() == ranks && r.at("channels").get<int>() == 0 && r.at("bytes").get<double>() <= smallest) {
          smallest = r.at("bytes").get<double>();
          (std::string(key) == "nccl_all_reduce" ? t_ar : t_ag) = r.at("time_us").get<double>();
        }
    if (t_ar > 0 && t_ag > 0 && ranks > 1) {
      p.nccl.nccl_step_latency = Time::from_us(std::max(0.0, (t_ar - t_ag) / (ranks - 1)));
      f.values.emplace_back("ring_step_latency_us", p.nccl.nccl_step_latency.us());
    }
    if (!pts.empty()) c.fits.push_back(f);
  }
}

// A table's points from each size's measured times (the median where a size
// was measured more than once), made non-decreasing by pooling adjacent
// violators: where a larger size measured faster than a smaller one (launch
// latency, host noise), both take their mean instead of the later one being raised.
std::vector<std::pair<double, double>> pooled_points(const std::map<double, std::vector<double>>& sizes) {
  std::vector<std::pair<double, int>> blocks;  // (mean time, sizes pooled)
  for (const auto& [bytes, times] : sizes) {
    blocks.emplace_back(median(times), 1);
    while (blocks.size() > 1 && blocks[blocks.size() - 2].first > blocks.back().first) {
      const auto [m1, n1] = blocks[blocks.size() - 2];
      const auto [m2, n2] = blocks.back();
      blocks.pop_back();
      blocks.back() = {(m1 * n1 + m2 * n2) / (n1 + n2), n1 + n2};
    }
  }
  std::vector<std::pair<double, double>> points;
  auto sz = sizes.begin();
  for (const auto& [mean, count] : blocks)
    for (int i = 0; i < count; ++i, ++sz) points.emplace_back(sz->first, mean);
  return points;
}

void fit_tables(FitContext& ctx) {
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  const BenchDocs& runs = ctx.runs;
  // Measured collective tables: time against bytes per rank, per collective,
  // rank count, transport and channel count (0: NCCL's choice), non-decreasing.
  {
    Fit f{"NCCL collective tables",
          "time at each measured size and channel count (used inside one host, nearest rank count); 1 GiB at NCCL's default channels",
          {},
          0,
          0};
    p.nccl.nccl_tables.clear();
    for (const bool off : {false, true}) {
      const json* doc = find_doc(runs, off);
      if (!doc) continue;
      for (const auto coll : kTableColls) {
        if (coll == TableColl::FrameworkAllToAllPairwise) continue;  // below
        const std::string key = std::string("nccl_") + table_coll_name(coll);
        std::map<std::pair<int, int>, std::map<double, std::vector<double>>> by_ranks;  // (channels, ranks)
        for (const auto& r : rows(*doc, key))
          by_ranks[{r.at("channels").get<int>(), r.at("ranks").get<int>()}][r.at("bytes").get<double>()].push_back(r.at("time_us").get<double>() *
                                                                                                                   1e-6);
        for (const auto& [chn, sizes] : by_ranks) {
          const auto [ch, n] = chn;
          NcclTable t{coll, n, off, pooled_points(sizes), ch};
          if (ch == 0)
            f.values.emplace_back(fmt::format("{}{}_{}r_1GiB_us", table_coll_name(coll), off ? "_host" : "", n), t.time_at(1073741824.0) * 1e6);
          f.points += static_cast<int>(t.points.size());
          p.nccl.nccl_tables.push_back(std::move(t));
        }
      }
    }
    if (f.points) c.fits.push_back(f);
  }
  // The pairwise all-to-all as PyTorch calls it (framework_all_to_all, the
  // slowest rank's median per size): a table of its own, which a framework
  // program's pairwise exchange runs by (docs/execution-model.md "Collectives").
  {
    Fit f{"pairwise all-to-all as PyTorch calls it (framework_all_to_all)",
          "time per call from before it, the GPU otherwise idle, at each measured size (non-decreasing), per rank count; 24 MiB a rank",
          {},
          0,
          0};
    for (const bool off : {false, true}) {
      const json* doc = find_doc(runs, off);
      if (!doc) continue;
      std::map<int, std::map<double, std::vector<double>>> by_ranks;
      for (const auto& r : rows(*doc, "framework_all_to_all"))
        if (r.at("op") == "all_to_all_pairwise")
          by_ranks[r.at("ranks").get<int>()][r.at("bytes").get<double>()].push_back(r.at("time_us").get<double>() * 1e-6);
      for (const auto& [n, sizes] : by_ranks) {
        NcclTable t{TableColl::FrameworkAllToAllPairwise, n, off, pooled_points(sizes), 0};
        f.values.emplace_back(fmt::format("pairwise{}_{}r_24MiB_us", off ? "_host" : "", n), t.time_at(24.0 * 1048576) * 1e6);
        f.points += static_cast<int>(t.points.size());
        p.nccl.nccl_tables.push_back(std::move(t));
      }
    }
    if (f.points) c.fits.push_back(f);
  }
}

void replay_row(ReplayContext& ctx, const json& r, Comparison c, std::vector<Comparison>& out) {
  const int ngpu = ctx.ngpu;
  if (r.at("ranks").get<int>() > ngpu) return;
  const ModelParams& p = ctx.p;
  const hw::Topology& topo = ctx.topo;
  const bool p2p_off = ctx.p2p_off;
  const std::string key = c.key;
  const int n = r.at("ranks"), ch = r.at("channels");
  Op op;
  op.kind = OpKind::Collective;
  op.stream = 0;
  op.group = 0;
  op.channels = ch;
  op.bytes = r.at("bytes").get<Bytes>();
  std::string name;
  if (key == "nccl_all_to_all" || key == "nccl_reps")
    op.coll = CollKind::AllToAll, name = "all-to-all";
  else if (key == "nccl_all_to_all_pairwise")
    op.coll = CollKind::AllToAll, op.algo = CollAlgo::Pairwise, name = "pairwise all-to-all";
  else if (key == "nccl_all_gather")
    op.coll = CollKind::AllGather, op.algo = CollAlgo::Ring, name = "all-gather";
  else if (key == "nccl_reduce_scatter")
    op.coll = CollKind::ReduceScatter, op.algo = CollAlgo::Ring, name = "reduce-scatter";
  else if (key == "nccl_all_reduce")
    op.coll = CollKind::AllReduce, op.algo = CollAlgo::Ring, name = "all-reduce";
  c.what =
      fmt::format("{} ranks, {} channels, {}", n, ch == 0 ? std::string("default") : std::to_string(ch), format_bytes(static_cast<double>(op.bytes)));
  if (key == "nccl_reps") {
    // The all-to-all per gated burst: each op the table's time.
    c.what += fmt::format(" x {}", r.at("iters").get<int>());
    c.cls = "NCCL all-to-all per gated burst (nccl_reps)";
  } else if (op.coll == CollKind::AllToAll && op.algo == CollAlgo::Nccl)
    c.cls = op.bytes < (64 << 20) ? "NCCL all-to-all < 64 MiB"
            : ch == 0             ? "NCCL all-to-all >= 64 MiB, default channels"
                                  : "NCCL all-to-all >= 64 MiB, 4-16 channels";
  else
    c.cls = fmt::format("NCCL {} {}", name, op.bytes < (64 << 20) ? "< 64 MiB" : ">= 64 MiB");
  // Rows timed ungated (older benches launched every rank's collective from
  // one host thread with the clock running): below a few MiB they time the
  // host's launches as much as NCCL, so they are a class apart.
  if (op.bytes < (64 << 20) && !r.value("gated", false)) c.cls += ", timed ungated";
  c.measured_us = r.at("time_us");
  c.simulated_us = replay(bench_schedule(n, p2p_off), std::vector<Op>(n, op), topo, p);
  out.push_back(c);
}

}  // namespace families::nccl
}  // namespace osim
