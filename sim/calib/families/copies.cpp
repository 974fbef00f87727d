// Copies between host and GPU memory (params/copies.hpp): the pinned lines
// per direction (h2d_pinned, d2h_pinned, the burst held from copy_reps),
// pageable copies, both directions at once (bidir_pinned, copy_span,
// copy_reps both ways), a host bridge's aggregate with several GPUs copying
// (multi_h2d_pinned, multi_d2h_pinned; both ways: multi_bidir_pinned), and the
// host's on pageable copies from several processes at once
// (multi_h2d_pageable, multi_d2h_pageable).
#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "calib/bench_replay.hpp"
#include "calib/families/steps.hpp"
#include "calib/fit.hpp"
#include "core/stats.hpp"

namespace osim {
namespace families::copies {

// The burst each direction's gated copies pay, as the model has it.
double burst_us(const FitContext& ctx, bool d2h) {
  const ModelParams& p = ctx.p;
  return p.handoff.copy_after_kernel_latency[copy_direction(d2h)].us() + (ctx.engine_bandwidth().h2d.is_unlimited() ? 0.0 : ctx.close_us());
}

// Pinned copies on GPU 0, as the bench timed them: `reps` copies per burst
// (the row's, or the bench's rule) behind a spin kernel, between two events.
// Per copy: latency + bytes / bandwidth + burst / reps, relative least
// squares over every size; the burst (the hand-off from the gate's kernel,
// copy_after_kernel_latency, and the closing event) held where copy_reps
// measured it, else fitted from how the rows' reps change with the size.
// The rate is the engine's over GPU 0's kind of host link: PCIe's
// copy_engine_bandwidth (_d2h), or over a Grace Hopper's nvlink_c2c
// copy_engine_bandwidth_c2c (_c2c_d2h), the PCIe fields then left as they were.
void fit_pinned(FitContext& ctx) {
  const json& d = ctx.def;
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  const double route_latency_us = ctx.route_latency_us, close_us = ctx.close_us();
  const std::optional<double> reps_burst[2] = {ctx.consume(FitOutput::copy_burst_h2d_us), ctx.consume(FitOutput::copy_burst_d2h_us)};
  std::vector<CopyPoint> pts_dir[2];  // H2D, D2H
  for (int dir = 0; dir < 2; ++dir)
    for (const auto& r : rows(d, dir ? "d2h_pinned" : "h2d_pinned"))
      if (r.at("gpus")[0] == 0 && r.at("bytes").get<double>() > 0)
        pts_dir[dir].push_back({r.at("bytes").get<double>(), r.at("reps").get<double>(), r.at("time_us").get<double>()});
  CopyLine line[2] = {fit_copy_burst_line(pts_dir[0], reps_burst[0]), fit_copy_burst_line(pts_dir[1], reps_burst[1])};
  for (int dir = 0; dir < 2; ++dir) {
    Fit f;
    f.name = std::string(dir ? "d2h_pinned" : "h2d_pinned") + " (GPU 0)";
    f.formula = reps_burst[dir] ? "time per copy = latency + bytes / bandwidth + burst / reps, the burst from copy_reps"
                                : "time per copy = latency + bytes / bandwidth + burst / reps";
    // Over nvlink_c2c the report names the fields the rate goes to (over
    // PCIe, as always: copy_engine_bandwidth).
    if (ctx.host_c2c)
      f.formula += fmt::format("; GPU 0's host link is nvlink_c2c: the rate is {}, the PCIe fields keep theirs", ctx.engine_fields()[dir]);
    f.points = static_cast<int>(pts_dir[dir].size());
    const CopyLine& cl = line[dir];
    if (cl.ok) {
      f.values = {{"latency_us", cl.latency_us}, {"bandwidth_GBps", 1e-3 / cl.inv_beta}, {"burst_us", cl.burst_us}};
      f.rms_residual_pct = 100 * std::sqrt(cl.sq / cl.n);
    }
    c.fits.push_back(f);
  }
  if (line[0].ok) {
    ctx.engine_bandwidth().h2d = Bandwidth::from_GBps(1e-3 / line[0].inv_beta);
    p.copies.copy_latency.h2d = Time::from_us(std::max(0.0, line[0].latency_us - route_latency_us));
    p.handoff.copy_after_kernel_latency.h2d = Time::from_us(std::max(0.0, line[0].burst_us - close_us));
    // D2H's own set-up (posted writes: no completion to wait for) and rate
    // (within 0.5 % of H2D's on most machines; 4 % faster on a 2xH200).
    if (line[1].ok) {
      p.copies.copy_latency.d2h = Time::from_us(std::max(0.0, line[1].latency_us - route_latency_us));
      ctx.engine_bandwidth().d2h = Bandwidth::from_GBps(1e-3 / line[1].inv_beta);
      p.handoff.copy_after_kernel_latency.d2h = Time::from_us(std::max(0.0, line[1].burst_us - close_us));
    }
  }
}

void fit_pageable(FitContext& ctx) {
  const json& d = ctx.def;
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  // Pageable, per direction: where the bench took copies from (to) a host
  // buffer not held in the CPU's caches (`host_buffer: rotating`), latency +
  // bytes / rate over those; else the staged rate at the largest size (the
  // same buffer each time: below the L3's size the CPU's copy runs from its
  // cache, faster than a workload's weights would).
  for (const char* key : {"h2d_pageable", "d2h_pageable"}) {
    const bool d2h = key[0] == 'd';
    std::vector<std::pair<double, double>> cold;
    double best_bytes = 0, gbps = 0;
    for (const auto& r : rows(d, key)) {
      if (r.value("host_buffer", "same") == "rotating")
        cold.emplace_back(r.at("bytes").get<double>(), r.at("time_us").get<double>());
      else if (r.at("bytes").get<double>() > best_bytes) {
        best_bytes = r.at("bytes").get<double>();
        gbps = r.at("GBps").get<double>();
      }
    }
    Bandwidth rate;
    if (Fit f = fit_alpha_beta(std::string(key) + ", host buffer not in the CPU's caches", cold); f.values.size() == 2 && f.values[0].second >= 0) {
      rate = Bandwidth::from_GBps(f.values[1].second);
      (d2h ? p.copies.pageable_latency.d2h : p.copies.pageable_latency.h2d) = Time::from_us(f.values[0].second);
      c.fits.push_back(f);
    } else if (gbps > 0) {
      rate = Bandwidth::from_GBps(gbps);
      c.fits.push_back({std::string(key), "bytes / time at the largest size", {{"bandwidth_GBps", gbps}}, 0, 1});
    } else {
      continue;
    }
    (d2h ? p.copies.pageable_bandwidth.d2h : p.copies.pageable_bandwidth.h2d) = rate;
  }
}

void fit_bidir_factor(FitContext& ctx) {
  const json& d = ctx.def;
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  // Both directions at once on one GPU (bench bidir_pinned, copies >= 64 MiB
  // on every GPU measured): per direction the median share of its engine's
  // rate a copy keeps (copy_bidir_factor, copy_bidir_factor_d2h).
  if (const auto bd = rows(d, "bidir_pinned"); !bd.empty() && !ctx.engine_bandwidth().h2d.is_unlimited()) {
    Fit f{"both directions at once (bidir_pinned)",
          "per direction, the median over copies >= 64 MiB of bytes / (time - set-up - burst / reps) / the engine's one-way rate: the share "
          "kept while the other direction copies",
          {},
          0,
          0};
    for (const bool d2h : {false, true}) {
      std::vector<double> share;
      for (const auto& r : bd) {
        const double bytes = r.at("bytes").get<double>();
        if (bytes < 64.0 * 1048576) continue;
        const double setup = p.copies.host_copy_setup(d2h, false).s() + burst_us(ctx, d2h) * 1e-6 / r.at("reps").get<int>();
        share.push_back(bytes / (r.at(d2h ? "d2h_time_us" : "h2d_time_us").get<double>() * 1e-6 - setup) /
                        ctx.engine_bandwidth()[copy_direction(d2h)].bytes_per_s);
      }
      if (share.empty()) continue;
      const double k = std::min(1.0, median(share));
      (d2h ? p.copies.copy_bidir_factor.d2h : p.copies.copy_bidir_factor.h2d) = k;
      f.values.emplace_back(d2h ? "d2h_share" : "h2d_share", k);
      f.points += static_cast<int>(share.size());
    }
    if (!f.values.empty()) c.fits.push_back(f);
  }
}

void fit_bidir_table(FitContext& ctx) {
  const json& d = ctx.def;
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  const hw::Topology& topo = ctx.topo;
  const double route_latency_us = ctx.route_latency_us;
  // Both ways at once per size (bench bidir_pinned with reps, copy_span,
  // copy_reps both ways behind the spin kernel with more than 5 per burst):
  // per measured size and direction, time = the longer direction's set-up +
  // bytes / (share x the engine's one-way rate) + burst / reps, the share by
  // relative least squares on 1 / share over the size's rows (every span and
  // burst size pooled), for the sizes whose bytes take 1 us or more at the
  // engine's rate; bidir_pinned's older rows of >= 16 MiB without reps
  // join a size where the bench has rows with reps. Per size, not in tiers:
  // the share climbs from ~0.6 at 64 KiB to ~0.95 by 16 MiB, and a tier
  // between left its middle size 5-9 % fast.
  // Benches without rows with reps (the 2xH200 and 4xH200 references) keep the large
  // share alone (copy_bidir_table).
  const PerDirection<Bandwidth>& engine = ctx.engine_bandwidth();
  if (!engine.h2d.is_unlimited()) {
    std::map<double, std::vector<std::pair<double, std::array<double, 2>>>> by_size;  // bytes -> (reps, times)
    bool with_reps = false;
    for (const char* key : {"bidir_pinned", "copy_span"})
      for (const auto& r : rows(d, key)) {
        if (r.at("gpus")[0] != 0 || r.value("dir", "both") != "both") continue;
        const double b = r.at("bytes").get<double>();
        if (b <= 0 || (one_copy_per_gate(r) && b < 16.0 * 1048576)) continue;
        with_reps = with_reps || !one_copy_per_gate(r);
        by_size[b].push_back({r.at("reps").get<double>(), {r.at("h2d_time_us").get<double>(), r.at("d2h_time_us").get<double>()}});
      }
    // copy_reps both ways behind the spin kernel (the burst fitted above), more than 5 per burst.
    for (const auto& r : rows(d, "copy_reps"))
      if (r.at("gpus")[0] == 0 && r.value("dir", "") == "both" && r.value("gate", "") == "kernel" && r.at("reps").get<int>() > 5)
        by_size[r.at("bytes").get<double>()].push_back(
            {r.at("reps").get<double>(), {r.at("h2d_time_us").get<double>(), r.at("d2h_time_us").get<double>()}});
    // Both directions beside each other take the longer set-up.
    const double longer_us = route_latency_us + std::max(p.copies.host_copy_setup(false, false).us(), p.copies.host_copy_setup(true, false).us());
    std::vector<std::array<double, 3>> table;
    for (const auto& [b, rs] : by_size) {
      // A share means something where the bytes take a while: from 1 us at
      // the engine's rate (64 KiB up); below, the smallest fitted size's holds.
      if (b / engine.h2d.bytes_per_s < 1e-6) continue;
      std::array<double, 3> e{b, 1, 1};
      bool ok = true;
      for (const bool d2h : {false, true}) {
        const double a = b / engine[copy_direction(d2h)].bytes_per_s * 1e6;
        double num = 0, den = 0;
        for (const auto& [reps, t] : rs) {
          num += a * (t[d2h] - longer_us - burst_us(ctx, d2h) / reps) / (t[d2h] * t[d2h]);
          den += a * a / (t[d2h] * t[d2h]);
        }
        if (num > 0)
          e[d2h ? 2 : 1] = std::clamp(den / num, 0.05, 1.0);
        else
          ok = false;
      }
      if (ok) table.push_back(e);
    }
    if (with_reps && !table.empty()) {
      // The closed form above takes each direction's share over its whole
      // copy; the model gives it only while the other direction copies (the
      // faster one's end leaves the slower alone at its full rate: an H100's
      // 1 GiB H2D beside a D2H 20 % quicker kept 0.79 of its rate overall,
      // 0.71 while both ran). So each size's shares are refined by replaying its
      // rows as the bench ran them: a share times the geometric mean of
      // simulated / measured over the size's rows, eight rounds.
      ModelParams q = p;
      q.copies.copy_bidir_table = table;
      // A row of `bytes` both ways, `reps` per burst behind the spin gate, on GPU 0: per copy (H2D, D2H).
      const auto replay_row = [&](double bytes, double reps) {
        return replay_gated({bench_copy(CopyKind::H2D, static_cast<Bytes>(bytes)), bench_copy(CopyKind::D2H, static_cast<Bytes>(bytes))},
                            static_cast<int>(reps), "kernel", 0, topo, q);
      };
      for (int round = 0; round < 8; ++round)
        for (auto& e : q.copies.copy_bidir_table) {
          const auto& rs = by_size.at(e[0]);
          std::array<double, 2> log_ratio{0, 0};
          for (const auto& [reps, t] : rs) {
            const std::vector<double> sim = replay_row(e[0], reps);
            for (const size_t k : {size_t{0}, size_t{1}}) log_ratio[k] += std::log(sim[k] / t[k]) / static_cast<double>(rs.size());
          }
          for (const size_t k : {size_t{0}, size_t{1}}) e[k + 1] = std::clamp(e[k + 1] * std::exp(log_ratio[k]), 0.05, 1.0);
        }
      table = q.copies.copy_bidir_table;
      double sq = 0;
      int n = 0;
      for (const auto& e : table)
        for (const auto& [reps, t] : by_size.at(e[0])) {
          const std::vector<double> sim = replay_row(e[0], reps);
          for (const size_t k : {size_t{0}, size_t{1}}) {
            sq += std::pow(sim[k] / t[k] - 1, 2);
            ++n;
          }
        }
      p.copies.copy_bidir_table = table;
      c.fits.push_back(
          {"both directions at once per size (bidir_pinned, copy_span, copy_reps)",
           "per measured size and direction, time = the longer set-up + bytes / (share x the engine's one-way rate) + burst / reps, "
           "relative least squares on 1 / share over the size's rows, then refined by replaying them (the share holds while the other "
           "direction copies): eight rounds of share x the geometric mean of simulated / measured; rms over the replayed rows (copy_bidir_table)",
           {{"sizes", static_cast<double>(table.size())}, {"rms_pct", n ? 100 * std::sqrt(sq / n) : 0.0}},
           0,
           n});
    }
  }
}

void fit_host_aggregate(FitContext& ctx) {
  const json& d = ctx.def;
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  // Host-side aggregate at each count of GPUs copying at once: the host
  // bridge's limit while that many H2D (D2H) copies run (host_h2d_aggregate,
  // host_d2h_aggregate; the topology's throughput_from_host / _to_host stays
  // the ceiling). Counts 1..n, each once.
  for (const bool h2d : {true, false}) {
    const std::string key = h2d ? "multi_h2d_pinned" : "multi_d2h_pinned";
    const std::string field = h2d ? "host_h2d_aggregate" : "host_d2h_aggregate";
    Fit f{h2d ? "host aggregate" : "host aggregate, D2H",
          fmt::format("multi-GPU pinned {}, aggregate at each GPU count ({})", h2d ? "H2D" : "D2H", field),
          {},
          0,
          0};
    std::map<int, double> by_count;
    for (const auto& r : rows(d, key)) {
      const int k = r.at("gpus").get<int>();
      const double gbps = r.at("aggregate_GBps").get<double>();
      f.values.emplace_back(fmt::format("{}_gpus_GBps", k), gbps);
      ++f.points;
      if (k >= 1 && gbps > 0) by_count[k] = gbps;  // a later row of a count replaces an earlier one
    }
    std::vector<Bandwidth>& table = h2d ? p.copies.host_h2d_aggregate : p.copies.host_d2h_aggregate;
    table.clear();
    for (int k = 1; by_count.contains(k); ++k) table.push_back(Bandwidth::from_GBps(by_count.at(k)));
    if (f.points) c.fits.push_back(f);
  }
}

// Every one of k GPUs copying `bytes` H2D and D2H at once (multi_bidir_pinned):
// when each direction's last copy ends, in us.
std::array<double, 2> replay_both_ways(int k, Bytes bytes, const hw::Topology& topo, const ModelParams& p) {
  const std::vector<std::vector<Op>> programs(static_cast<size_t>(k), {bench_copy(CopyKind::H2D, bytes, 0), bench_copy(CopyKind::D2H, bytes, 1)});
  const ExecResult res = replay_programs(bench_schedule(k), programs, topo, p);
  std::array<double, 2> last{0, 0};
  for (const auto& rank : res.ops)
    for (size_t d = 0; d < 2; ++d) last[d] = std::max(last[d], rank[d].end.us());
  return last;
}

// The host bridge's limit on both directions together at each count k >= 2
// of GPUs copying both ways (host_bidir_aggregate): the limit under which the
// replayed run ends when the measured one did (each direction's own
// aggregates in place), by bisection; entry 1 is the one GPU's measured
// aggregate, which the model never applies.
void fit_host_bidir_aggregate(FitContext& ctx) {
  ModelParams& p = ctx.p;
  const int ngpu = static_cast<int>(ctx.topo.gpus().size());
  std::map<int, std::pair<double, json>> by_count;  // k -> (aggregate GB/s, row)
  for (const auto& r : rows(ctx.def, "multi_bidir_pinned"))
    if (const int k = r.at("gpus").get<int>(); k >= 1 && k <= ngpu) by_count[k] = {r.at("aggregate_GBps").get<double>(), r};
  if (!by_count.contains(1)) return;
  Fit f{"host aggregate, both ways",
        "multi-GPU pinned H2D and D2H at once, k GPUs: the limit on both together under which the replay ends when the run did, by bisection "
        "(host_bidir_aggregate; entry 1 the one GPU's aggregate)",
        {},
        0,
        0};
  std::vector<Bandwidth>& table = p.copies.host_bidir_aggregate;
  table = {Bandwidth::from_GBps(by_count.at(1).first)};
  f.values.emplace_back("1_gpus_GBps", by_count.at(1).first);
  double sq = 0;
  int fitted = 0;
  for (int k = 2; by_count.contains(k); ++k) {
    const json& row = by_count.at(k).second;
    const Bytes bytes = row.at("bytes_per_gpu").get<Bytes>();
    const double measured = row.at("time_us").get<double>();
    auto ends_at = [&](double gbps) {
      table.push_back(Bandwidth::from_GBps(gbps));
      const auto last = replay_both_ways(k, bytes, ctx.topo, p);
      table.pop_back();
      return std::max(last[0], last[1]);
    };
    // The replay's end falls as the limit rises: find where it meets the run's.
    double lo = 0.5 * by_count.at(k).first, hi = 4 * by_count.at(k).first;
    if (ends_at(lo) <= measured) {
      // Even at half the measured aggregate the replay ends early: the limit
      // does not bind here (the topology's host bridge has no throughput), and
      // any entry would be a number nothing checks.
      table.clear();
      ctx.cal.fits.push_back({"host aggregate, both ways",
                              fmt::format("not fitted: a limit on both directions together does not bind {} GPUs' copies in this topology (its host "
                                          "bridge has no throughput_from_host / throughput_to_host: set them, e.g. from the bench's multi_h2d_pinned "
                                          "and multi_d2h_pinned aggregates, as `overlapsim topo --import-nvidia-smi BENCH.json` does)",
                                          k),
                              {},
                              0,
                              0});
      return;
    }
    const double limit = bisect(lo, hi, [&](double mid) { return ends_at(mid) > measured; });
    const double err = ends_at(limit) / measured - 1;
    sq += err * err;
    ++fitted;
    table.push_back(Bandwidth::from_GBps(limit));
    f.values.emplace_back(fmt::format("{}_gpus_GBps", k), limit);
  }
  f.rms_residual_pct = fitted ? 100 * std::sqrt(sq / fitted) : 0.0;
  f.points = fitted + 1;
  ctx.cal.fits.push_back(f);
}

// Pageable copies from several processes at once: the host's limit on k
// processes' pageable copies of a direction together, at each k
// (pageable_h2d_aggregate, pageable_d2h_aggregate).
// - One process per GPU (framework.py multi_*_pageable), where the box has the
//   GPUs: the measured aggregate (k x bytes / the slowest process's time).
// - Else, from the CPU's side alone (processes_host_to_pinned: k processes
//   each copying pageable memory into a pinned buffer on one thread, as the
//   driver stages a pageable copy): each process keeps e(k) = aggregate(k) /
//   (k x aggregate(1)) of its rate alone, the median over the files at each k
//   (the runs spread by tens of percent); the limit is k x e(k) x one copy's
//   pageable rate. The copies' DMA halves go to their own GPUs, so only the
//   CPU's side is shared. Several processes on one GPU (processes_*_pageable)
//   are not that: they share its copy path as well, and are reported only.
void fit_pageable_aggregate(FitContext& ctx) {
  std::map<int, std::vector<double>> cpu_share;  // k -> e(k), one per file
  int cpu_points = 0;
  for (const auto& [name, doc] : ctx.docs) {
    std::map<int, double> agg;
    for (const auto& r : rows(doc, "processes_host_to_pinned")) {
      agg[r.at("processes").get<int>()] = r.at("aggregate_GBps").get<double>();
      ++cpu_points;
    }
    if (agg.contains(1) && agg.at(1) > 0)
      for (const auto& [k, gbps] : agg) cpu_share[k].push_back(gbps / (k * agg.at(1)));
  }
  for (const bool h2d : {true, false}) {
    const std::string multi = h2d ? "multi_h2d_pageable" : "multi_d2h_pageable";
    const bool per_gpu = !rows(ctx.def, multi).empty();
    std::vector<Bandwidth>& table = h2d ? ctx.p.copies.pageable_h2d_aggregate : ctx.p.copies.pageable_d2h_aggregate;
    const std::string field = h2d ? "pageable_h2d_aggregate" : "pageable_d2h_aggregate";
    Fit f{h2d ? "pageable aggregate" : "pageable aggregate, D2H",
          per_gpu ? fmt::format("pageable {} from k processes (one per GPU) at once: the aggregate at each k ({})", h2d ? "H2D" : "D2H", field)
                  : fmt::format("pageable {} from k processes at once: k x one copy's pageable rate x the share e(k) each process's CPU copy "
                                "keeps beside k-1 others (processes_host_to_pinned, the median over files) ({})",
                                h2d ? "H2D" : "D2H", field),
          {},
          0,
          0};
    table.clear();
    if (per_gpu) {
      std::map<int, double> by_count;
      for (const auto& r : rows(ctx.def, multi)) {
        const int k = r.at("gpus").get<int>();
        const double gbps = r.at("aggregate_GBps").get<double>();
        f.values.emplace_back(fmt::format("{}_gpus_GBps", k), gbps);
        ++f.points;
        if (k >= 1 && gbps > 0) by_count[k] = gbps;
      }
      for (int k = 1; by_count.contains(k); ++k) table.push_back(Bandwidth::from_GBps(by_count.at(k)));
    } else if (!cpu_share.empty()) {
      const Bandwidth one = h2d ? ctx.p.copies.pageable_bandwidth.h2d : ctx.p.copies.pageable_bandwidth.d2h;
      if (one.is_unlimited()) continue;
      f.points = cpu_points;
      for (int k = 1; cpu_share.contains(k); ++k) {
        const double share = median(cpu_share.at(k));
        f.values.emplace_back(fmt::format("share_{}_processes", k), share);
        table.push_back(Bandwidth::from_GBps(k * share * one.GBps()));
      }
    }
    if (f.points) ctx.cal.fits.push_back(f);
  }
}

void replay_row(ReplayContext& ctx, const json& r, Comparison c, std::vector<Comparison>& out) {
  const ModelParams& p = ctx.p;
  const hw::Topology& topo = ctx.topo;
  const int ngpu = ctx.ngpu;
  const std::string key = c.key;
  if (key == "bidir_pinned") {
    // Both directions at once on two streams of one GPU (ranks below it
    // idle), both behind spin kernels, `reps` copies each (older
    // benches: one) between their own events.
    const int dev = r.at("gpus")[0].get<int>();
    if (dev >= ngpu) return;
    const Bytes bytes = r.at("bytes").get<Bytes>();
    c.cls = bytes >= (16 << 20)    ? "both directions at once >= 16 MiB"
            : one_copy_per_gate(r) ? "both directions at once < 16 MiB, one copy per sample behind two gates (older benches)"
            : bytes < (1 << 20)    ? "both directions at once < 1 MiB"
                                   : "both directions at once 1-16 MiB";
    // One copy per direction behind two gates (older benches): as copy_reps both ways with 1-5 copies per burst, how
    // the two lined up decided (4 KiB-1 MiB: H2D up to 40 % fast, D2H
    // up to 80 % slow, on one row the other way round).
    if (bytes < (16 << 20) && one_copy_per_gate(r)) c.outside = "how the two directions' first copies line up behind the gate";
    const std::vector<double> per_copy =
        replay_gated({bench_copy(CopyKind::H2D, bytes), bench_copy(CopyKind::D2H, bytes)}, r.at("reps").get<int>(), "kernel", dev, topo, p);
    for (const bool d2h : {false, true}) {
      c.what = fmt::format("GPU {}, {}, {}", dev, format_bytes(static_cast<double>(bytes)), d2h ? "D2H" : "H2D");
      c.measured_us = r.at(d2h ? "d2h_time_us" : "h2d_time_us");
      c.simulated_us = per_copy[d2h ? 1 : 0];
      out.push_back(c);
    }
  } else if (key == "h2d_two_streams" || key == "h2d_pageable" || key == "d2h_pageable") {
    // One GPU's copies as the bench ran them, on that GPU (ranks below it
    // idle), ungated: two H2D copies on two streams, timed together; a
    // pageable copy, timed by the host from the call to the sync's return.
    const int dev = r.at("gpus")[0].get<int>();
    if (dev >= ngpu) return;
    const Bytes bytes = r.at("bytes").get<Bytes>();
    const bool pageable = key != "h2d_two_streams";
    Op a = bench_copy(key[0] == 'd' ? CopyKind::D2H : CopyKind::H2D, bytes);
    if (pageable) a.host_mem = HostMem::Pageable;
    std::vector<std::vector<Op>> progs(static_cast<size_t>(dev) + 1);
    auto& prog = progs[static_cast<size_t>(dev)];
    prog.push_back(a);
    if (!pageable) prog.push_back(bench_copy(CopyKind::H2D, bytes, 1));
    const ExecResult res = replay_programs(bench_schedule(dev + 1), progs, topo, p);
    const auto& ops = res.ops[static_cast<size_t>(dev)];
    c.what = fmt::format("GPU {}, {}", dev, format_bytes(static_cast<double>(bytes)));
    c.measured_us = r.value("time_us", 0.0);
    if (!pageable) {
      c.cls = "two H2D copies on two streams (one engine)";
      c.simulated_us = (std::max(ops[0].end, ops[1].end) - std::min(ops[0].start, ops[1].start)).us();
    } else {
      const bool cold = r.value("host_buffer", "same") == "rotating";
      c.cls = cold ? "pageable copy, host buffer not in the CPU's caches" : "pageable copy, the same host buffer every time (the CPU's caches)";
      if (!cold) c.outside = "the CPU's caches hold the host buffer";
      if (cold) c.what += ", rotating buffer";
      c.simulated_us = (ops[0].end - ops[0].start).us();
    }
    out.push_back(c);
  } else if (key == "copy_span") {
    // Pinned copies walking a host span (each the next slice), one way or
    // both ways at once on two streams, `reps` per stream behind one spin
    // gate, per copy between each stream's events (as bidir_pinned).
    const int dev = r.at("gpus")[0].get<int>();
    if (dev >= ngpu) return;
    const Bytes bytes = r.at("bytes").get<Bytes>();
    const std::string dir = one_of(r, "dir", {"h2d", "d2h", "both"});
    const bool run_h2d = dir != "d2h", run_d2h = dir != "h2d";
    std::vector<Op> lanes;
    const auto spanned = [&](CopyKind k) {
      Op o = bench_copy(k, bytes);
      o.host_span = std::max(bytes, r.at(k == CopyKind::H2D ? "h2d_span_bytes" : "d2h_span_bytes").get<Bytes>());
      return o;
    };
    if (run_h2d) lanes.push_back(spanned(CopyKind::H2D));
    if (run_d2h) lanes.push_back(spanned(CopyKind::D2H));
    const std::vector<double> per_copy = replay_gated(lanes, r.at("reps").get<int>(), "kernel", dev, topo, p);
    c.cls = dir == "both" ? "both directions at once, walking a host span (copy_span)" : "one way, walking a host span (copy_span)";
    for (size_t i = 0; i < lanes.size(); ++i) {
      const bool d2h = lanes[i].copy == CopyKind::D2H;
      const std::string spans =
          dir == "both" ? fmt::format(" beside {}, spans {} / {}", d2h ? "H2D" : "D2H", format_bytes(static_cast<double>(lanes[0].host_span)),
                                      format_bytes(static_cast<double>(lanes[1].host_span)))
                        : fmt::format(", span {}", format_bytes(static_cast<double>(lanes[i].host_span)));
      c.what = fmt::format("GPU {}, {} {}{}", dev, format_bytes(static_cast<double>(bytes)), d2h ? "D2H" : "H2D", spans);
      c.measured_us = r.at(d2h ? "d2h_time_us" : "h2d_time_us").get<double>();
      c.simulated_us = per_copy[i];
      out.push_back(c);
    }
  } else if (key == "p2p_copy") {
    const int a = r.at("gpus")[0].get<int>(), b = r.at("gpus")[1].get<int>();
    if (std::max(a, b) >= ngpu) return;
    std::vector<std::vector<Op>> progs(static_cast<size_t>(std::max(a, b)) + 1);
    Op op = bench_copy(CopyKind::P2P, r.at("bytes").get<Bytes>());
    op.peer = b;
    progs[static_cast<size_t>(a)] = {op};
    const ExecResult res = replay_programs(bench_schedule(std::max(a, b) + 1), progs, topo, p);
    c.cls = "P2P copy";
    c.what = fmt::format("GPU {} -> {}, {}", a, b, format_bytes(static_cast<double>(op.bytes)));
    c.measured_us = r.at("time_us");
    c.simulated_us = (res.ops[static_cast<size_t>(a)][0].end - res.ops[static_cast<size_t>(a)][0].start).us();
    out.push_back(c);
  } else if (key == "multi_h2d_pipelined") {
    if (r.at("gpus").get<int>() > ngpu) return;
    // Every GPU copying back to back, GPU g starting g/n of a copy late;
    // per GPU the median copy of the middle (every GPU copying).
    const int n = r.at("gpus").get<int>();
    const Bytes bytes = r.at("bytes_per_copy").get<Bytes>();
    const int count = 16;
    std::vector<std::vector<Op>> progs(static_cast<size_t>(n));
    for (int g = 0; g < n; ++g) {
      const Op cp = bench_copy(CopyKind::H2D, bytes);
      if (g > 0) progs[static_cast<size_t>(g)].push_back(bench_idle(Time::from_s(g * (static_cast<double>(bytes) / 45e9) / n)));
      progs[static_cast<size_t>(g)].insert(progs[static_cast<size_t>(g)].end(), count, cp);
    }
    const ExecResult res = replay_programs(bench_schedule(n), progs, topo, p);
    for (int g = 0; g < n; ++g) {
      const auto& ops = res.ops[static_cast<size_t>(g)];
      const size_t first = g > 0 ? 1 : 0;
      std::vector<double> t;
      for (size_t i = 2; i + 2 < static_cast<size_t>(count); ++i) t.push_back((ops[first + i + 1].start - ops[first + i].start).us());
      c.cls = "multi-GPU H2D, pipelined";
      c.what = fmt::format("{} GPUs, GPU {}: a {} copy", n, g, format_bytes(static_cast<double>(bytes)));
      c.measured_us = static_cast<double>(bytes) / r.at("per_gpu_GBps")[static_cast<size_t>(g)].get<double>() * 1e-3;
      c.simulated_us = median(t);
      out.push_back(c);
    }
  } else if (key == "h2d_pinned" || key == "d2h_pinned") {
    if (r.at("gpus")[0] != 0) return;
    const Op op = bench_copy(key[0] == 'h' ? CopyKind::H2D : CopyKind::D2H, r.at("bytes").get<Bytes>());
    c.what = format_bytes(static_cast<double>(op.bytes));
    c.cls = op.bytes >= (16 << 20) ? "pinned copy >= 16 MiB" : "pinned copy < 16 MiB";
    c.measured_us = r.at("time_us");
    c.simulated_us = replay_gated({op}, r.at("reps").get<int>(), "kernel", 0, topo, p)[0];
    out.push_back(c);
  } else if (key == "multi_bidir_pinned") {
    const int n = r.at("gpus");
    if (n > ngpu) return;
    const Bytes bytes = r.at("bytes_per_gpu").get<Bytes>();
    const auto last = replay_both_ways(n, bytes, topo, p);
    c.cls = "multi-GPU both ways";
    c.what = fmt::format("{} GPUs x {} each way, the last copy", n, format_bytes(static_cast<double>(bytes)));
    c.measured_us = r.at("time_us");
    c.simulated_us = std::max(last[0], last[1]);
    out.push_back(c);
    // Each direction's own end: the bridge shares its limit fairly in the
    // model; on the runs measured D2H ended first.
    c.cls = "multi-GPU both ways, each direction";
    if (n > 1) c.outside = "how the host bridge splits its both-ways limit between the directions";
    for (const bool d2h : {false, true}) {
      c.what = fmt::format("{} GPUs x {} each way, {}", n, format_bytes(static_cast<double>(bytes)), d2h ? "D2H" : "H2D");
      c.measured_us = r.at(d2h ? "d2h_time_us" : "h2d_time_us");
      c.simulated_us = last[d2h ? 1 : 0];
      out.push_back(c);
    }
  } else if (key == "multi_h2d_pageable" || key == "multi_d2h_pageable") {
    const int n = r.at("gpus");
    if (n > ngpu) return;
    const bool h2d = key == "multi_h2d_pageable";
    Op op = bench_copy(h2d ? CopyKind::H2D : CopyKind::D2H, r.at("bytes_per_gpu").get<Bytes>());
    op.host_mem = HostMem::Pageable;
    c.what = fmt::format("{} GPUs x {}, one process each", n, format_bytes(static_cast<double>(op.bytes)));
    c.cls = h2d ? "multi-GPU pageable H2D" : "multi-GPU pageable D2H";
    c.measured_us = r.at("time_us");
    c.simulated_us = replay(bench_schedule(n), std::vector<Op>(static_cast<size_t>(n), op), topo, p);
    out.push_back(c);
  } else {
    if (r.at("gpus").get<int>() > ngpu) return;
    const int n = r.at("gpus");
    const bool h2d = key == "multi_h2d_pinned";
    const Op op = bench_copy(h2d ? CopyKind::H2D : CopyKind::D2H, r.at("bytes_per_gpu").get<Bytes>());
    c.what = fmt::format("{} GPUs x {}", n, format_bytes(static_cast<double>(op.bytes)));
    c.cls = h2d ? "multi-GPU H2D" : "multi-GPU D2H";
    c.measured_us = r.at("time_us");
    c.simulated_us = replay(bench_schedule(n), std::vector<Op>(n, op), topo, p);
    out.push_back(c);
  }
}

}  // namespace families::copies
}  // namespace osim
