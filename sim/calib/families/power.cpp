// Sustained load (params/power.hpp): the SM clock's drop with the duty cycle
// (gemm_sustained, gemm_sustained_long, the GEMM table's window means), the
// load SDPA, memory-bound kernels and collectives put on it
// (gemm_between_attention, gemm_between_memory_bound,
// gemm_between_all_to_all), the share of it collectives take
// (nccl_all_to_all_loaded), and ranks drifting
// apart under the power cap (nccl_barrier_skew). Replayed as the bench ran
// them: GEMMs after a gap (gemm_after_idle), the all-to-all after GEMMs, the
// workloads' GEMM shapes alone and between SDPA kernels
// (gemm_sustained_shapes: replayed, not fitted).
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "calib/bench_replay.hpp"
#include "calib/families/steps.hpp"
#include "calib/fit.hpp"
#include "calib/sustained.hpp"
#include "core/stats.hpp"

namespace osim {
namespace families::power {

// The fast term (bench gemm_sustained): steady GEMM time at duty cycles 1,
// 0.75, 0.5, 0.25 against the burst time give the slowdown at full duty and
// the threshold; the time constant by least squares over the 100 % run's
// GEMM-by-GEMM times (the GPU starts cool), on a grid.
struct FastTerm {
  double theta = 0, u0 = 0.75, tau_ms = 50, sq_err = 0, burst_us = 0;
  size_t points = 0;
};
std::optional<FastTerm> fit_fast_term(const std::vector<json>& sus) {
  std::map<double, double> slow;  // duty -> steady / burst
  const json* full = nullptr;
  for (const auto& r : sus) {
    slow[r.at("duty").get<double>()] = r.at("slowdown").get<double>();
    if (r.at("duty").get<double>() >= 0.999) full = &r;
  }
  std::vector<double> low;
  for (const auto& [duty, sd] : slow)
    if (duty <= 0.5) low.push_back(sd);
  const double base_sd = low.empty() ? 1.0 : median(low);
  if (!full || !slow.count(1.0)) return std::nullopt;
  FastTerm f;
  f.theta = std::max(0.0, slow[1.0] / base_sd - 1);
  if (slow.count(0.75) && f.theta > 0) {
    const double r = std::clamp((slow[0.75] / base_sd - 1) / f.theta, 0.0, 0.99);
    f.u0 = r > 0 ? (0.75 - r) / (1 - r) : 0.75;
  }
  const auto& t_us = full->at("time_us");
  const auto& start = full->at("start_ms");
  f.burst_us = full->at("burst_time_us").get<double>() * base_sd;
  f.points = t_us.size();
  double best_err = 1e300;
  for (double tau = 2; tau <= 400; tau *= 1.05) {
    double err = 0;
    for (size_t i = 1; i < t_us.size(); ++i) {
      const double u = 1 - std::exp(-start[i].get<double>() / tau);
      const double pred = f.burst_us * (1 + f.theta * std::clamp((u - f.u0) / (1 - f.u0), 0.0, 1.0));
      err += std::pow(pred - t_us[i].get<double>(), 2);
    }
    if (err < best_err) {
      best_err = err;
      f.tau_ms = tau;
    }
  }
  f.sq_err = best_err;
  return f;
}

// The slow term (bench gemm_sustained_long `L`: seconds at full duty, where
// the clock dips again about every second) for its time constant tau2: its
// slowdown by least squares with the fast term fixed, and the rms residual
// (% of the series' own rested burst time, which may come from another GPU).
std::pair<double, double> slow_term_at(const json& L, double theta, double tau_ms, double u0, double tau2) {
  const auto& lt = L.at("time_us");
  const auto& ls = L.at("start_ms");
  const double lb = L.at("burst_time_us").get<double>();
  double num = 0, den = 0;
  for (size_t i = 1; i < lt.size(); ++i) {
    const double ti = ls[i].get<double>(), a = lb * (1 + theta * activation(ti, tau_ms, u0)), bb = lb * activation(ti, tau2, u0);
    num += bb * (lt[i].get<double>() - a);
    den += bb * bb;
  }
  const double th2 = den > 0 ? std::max(0.0, num / den) : 0.0;
  double err = 0;
  for (size_t i = 1; i < lt.size(); ++i) {
    const double ti = ls[i].get<double>();
    err += std::pow(lb * (1 + theta * activation(ti, tau_ms, u0) + th2 * activation(ti, tau2, u0)) - lt[i].get<double>(), 2);
  }
  return {th2, 100 * std::sqrt(err / static_cast<double>(lt.size())) / lb};
}

void fit_sustained(FitContext& ctx) {
  const json& d = ctx.def;
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  const std::vector<WindowRow> window_rows = gemm_window_rows(d);
  const auto fast_term = fit_fast_term(rows(d, "gemm_sustained"));
  if (!fast_term) return;
  const double theta = fast_term->theta, u0 = fast_term->u0, best_tau = fast_term->tau_ms;
  p.power.sustained_slowdown = theta;
  p.power.sustained_duty = u0;
  p.power.sustained_time_constant = Time::from_ms(best_tau);
  Fit fast{"sustained load (power)",
           "steady/burst GEMM time vs duty cycle; time constant by least squares",
           {{"slowdown_at_full_duty", theta}, {"duty_threshold", u0}, {"time_constant_ms", best_tau}},
           100 * std::sqrt(fast_term->sq_err / static_cast<double>(fast_term->points)) / fast_term->burst_us,
           static_cast<int>(fast_term->points)};
  const auto lr = rows(d, "gemm_sustained_long");
  auto slow_at = [&](double tau2) { return slow_term_at(lr.front(), p.power.sustained_slowdown, best_tau, u0, tau2); };
  // Slower than the times the GEMM table and SDPA were taken at back to
  // back (>= 250 ms): those showed the fast term only. On an H100 the
  // clock is lowest at 0.1-0.3 s, recovers at 0.4-0.7 s and dips about
  // every second from 0.8 s; a free fit took the grid's 100 ms and put
  // those replays 7 % slow.
  std::vector<double> tau2_grid;
  for (double tau2 = 100; tau2 <= 5000; tau2 *= 1.05)
    if (tau2 >= 250) tau2_grid.push_back(tau2);
  double slow_rms = 0;
  auto set_slow = [&](double tau2) {
    const auto [th2, rms] = slow_at(tau2);
    p.power.sustained_slow_slowdown = th2;
    p.power.sustained_slow_time_constant = Time::from_ms(tau2);
    slow_rms = rms;
  };
  std::optional<Fit> slow_fit;
  auto slow_fit_of = [&] {
    const json& L = lr.front();
    return Fit{"sustained load, slow term",
               "seconds at full duty (gemm_sustained_long): extra slowdown and its time constant, least squares",
               {{"slow_slowdown", p.power.sustained_slow_slowdown},
                {"slow_time_constant_ms", p.power.sustained_slow_time_constant.ms()},
                {"mean_after_1s_over_burst", L.at("mean_time_us").get<double>() / L.at("burst_time_us").get<double>()}},
               slow_rms,
               static_cast<int>(L.at("time_us").size())};
  };
  if (!lr.empty()) {
    double best_t2 = 1000, best_e2 = 1e300;
    for (double tau2 : tau2_grid)
      if (const double e = slow_at(tau2).second; e < best_e2) best_e2 = e, best_t2 = tau2;
    set_slow(best_t2);
    slow_fit = slow_fit_of();
  }
  // Where the GEMM table has window means (>= 200 ms of each shape after
  // >= 250 ms of it), the full-duty slowdown is
  // theirs: one series of one shape catches one state of a clock that
  // can sit on either of two plateaus (an H100 at 1.10 or 1.15 for
  // seconds), the table's median over every shape the usual one. With a
  // long series, the slow term's time constant is the one whose fit
  // (the fast slowdown and the slow one settled against each other)
  // leaves the least rms over both: the long series, and the windows.
  if (table_theta(window_rows, p)) {
    // With tau2 fixed: the fast slowdown from the windows and the slow
    // one from the long series, each given the other, until they settle;
    // then the rms (%) of the windows' model ratios against theirs.
    auto settle = [&](double tau2) {
      if (!lr.empty()) set_slow(tau2);
      for (int it = 0; it < 100; ++it) {
        const double before = p.power.sustained_slowdown;
        p.power.sustained_slowdown = *table_theta(window_rows, p);
        if (!lr.empty()) set_slow(tau2);
        if (std::abs(p.power.sustained_slowdown - before) < 1e-9) break;
      }
      double sq = 0;
      for (const auto& w : window_rows) {
        const auto [act_fast, act_slow] = window_activations(w, p);
        sq += std::pow((1 + p.power.sustained_slowdown * act_fast + p.power.sustained_slow_slowdown * act_slow) / w.ratio - 1, 2);
      }
      return 100 * std::sqrt(sq / static_cast<double>(window_rows.size()));
    };
    if (lr.empty()) {
      settle(0);
    } else {
      double best_t2 = tau2_grid.front(), best = 1e300;
      for (double tau2 : tau2_grid)
        if (const double e = settle(tau2) + slow_rms; e < best) best = e, best_t2 = tau2;
      settle(best_t2);
      slow_fit = slow_fit_of();
    }
    fast.formula =
        "full-duty slowdown: the GEMM table's window means (median over shapes of (mean / burst - 1 - the slow term) / the "
        "fast term's activation); threshold and time constant from the steady/burst GEMM time vs duty cycle";
    fast.values.front().second = p.power.sustained_slowdown;
    fast.values.emplace_back("series_slowdown_at_full_duty", theta);
    fast.values.emplace_back("table_windows", static_cast<double>(window_rows.size()));
    if (slow_fit)
      slow_fit->formula =
          "seconds at full duty (gemm_sustained_long): extra slowdown by least squares; its time constant the one "
          "leaving the least rms over the long series and the GEMM table's windows together";
  }
  // The GEMM table and SDPA are timed back to back, at full duty: their
  // families scale those rates to burst by this.
  ctx.produce(FitOutput::sustained_scale, 1 + p.power.sustained_slowdown);
  c.fits.push_back(fast);
  if (slow_fit) c.fits.push_back(*slow_fit);
}

// The bench's GEMMs between other kernels (gemm_between_attention: cuDNN
// SDPA; gemm_between_memory_bound: a copy kernel), replayed as it ran: 300 ms
// idle, then cycles of two GEMMs and the other kernel back to back for the
// row's time. The other kernel takes its measured burst time, so the fit sees
// the load alone, not its family's rate. Returns the steady (second half's
// median) / first-cycle time, for the GEMMs and for the other kernel.
struct BetweenRatios {
  double gemm, other;
};
// With `ranks` > 1 every rank runs the cycles (`a` a collective among them);
// rank 0's times.
BetweenRatios replay_between(const json& r, const Op& a, const hw::Topology& topo, const ModelParams& p, int ranks = 1, bool p2p_off = false) {
  const Op g = bench_gemm(json::array({r.at("m"), r.at("n"), r.at("k")}));
  const int cycles = static_cast<int>(r.at("time_us").size()), per = r.at("gemms_per_cycle").get<int>();
  std::vector<Op> prog{bench_idle(Time::from_ms(300))};
  for (int i = 0; i < cycles; ++i) {
    for (int j = 0; j < per; ++j) prog.push_back(g);
    prog.push_back(a);
  }
  const ExecResult res = replay_programs(bench_schedule(ranks, p2p_off), std::vector<std::vector<Op>>(static_cast<size_t>(ranks), prog), topo, p);
  const auto& ops = res.ops[0];
  std::vector<double> gemm, other;
  for (int i = 0; i < cycles; ++i) {
    const size_t at0 = 1 + static_cast<size_t>(i) * static_cast<size_t>(per + 1);
    gemm.push_back((ops[at0 + static_cast<size_t>(per) - 1].end - ops[at0].start).us() / per);
    other.push_back((ops[at0 + static_cast<size_t>(per)].end - ops[at0 + static_cast<size_t>(per)].start).us());
  }
  const std::vector<double> gt(gemm.begin() + cycles / 2, gemm.end()), st(other.begin() + cycles / 2, other.end());
  return {median(gt) / gemm.front(), median(st) / other.front()};
}
// The row's cuDNN SDPA at the burst time in field `burst` (through the op's
// efficiency); none where the GPU has no bf16 peak.
std::optional<Op> row_attention(const json& r, const hw::Topology& topo, const char* burst) {
  const json& at = r.at("attention");
  Op a = bench_attention(AttentionShape{at.at("batch").get<int32_t>(), at.at("heads").get<int32_t>(), at.at("seq").get<int32_t>(),
                                        at.at("seq_kv").get<int32_t>(), at.at("head_dim").get<int32_t>(), AttnBackend::Cudnn});
  const auto& peaks = topo.node(topo.gpus().front()).gpu.peak_tflops;
  const auto bf16 = peaks.find("bf16");
  if (bf16 == peaks.end()) return std::nullopt;
  a.efficiency = static_cast<float>(a.attention->flops() / (bf16->second * 1e12 * r.at(burst).get<double>() * 1e-6));
  return a;
}
BetweenRatios replay_between_attention(const json& r, const hw::Topology& topo, const ModelParams& p) {
  const std::optional<Op> a = row_attention(r, topo, "attention_burst_time_us");
  return a ? replay_between(r, *a, topo, p) : BetweenRatios{1, 1};
}
// `op` back to back as many times as the row's series `times` holds, after
// `idle`, replayed: the steady (second half's median) / first time.
double replay_back_to_back(const json& r, const char* times, const Op& op, Time idle, const hw::Topology& topo, const ModelParams& p) {
  const size_t count = r.at(times).size();
  if (count == 0) throw std::invalid_argument(fmt::format("{} row with no {}", r.at("key").get<std::string>(), times));
  std::vector<Op> prog{bench_idle(idle)};
  prog.insert(prog.end(), count, op);
  const ExecResult res = replay_programs(bench_schedule(1), {prog}, topo, p);
  std::vector<double> us;
  for (size_t i = 1; i <= count; ++i) us.push_back((res.ops[0][i].end - res.ops[0][i].start).us());
  return median(std::vector<double>(us.begin() + static_cast<long>(count / 2), us.end())) / us.front();
}
// gemm_sustained_shapes' SDPA alone, back to back after 1 s idle.
double replay_attention_alone(const json& r, const hw::Topology& topo, const ModelParams& p) {
  const std::optional<Op> a = row_attention(r, topo, "attention_alone_burst_time_us");
  return a ? replay_back_to_back(r, "attention_alone_time_us", *a, Time::from_ms(1000), topo, p) : 1.0;
}
// The copy kernel at its measured burst time: the HBM bytes the memory
// family's rate moves in it.
BetweenRatios replay_between_memory(const json& r, const hw::Topology& topo, const ModelParams& p) {
  const auto& gpu = topo.node(topo.gpus().front()).gpu;
  if (!gpu.hbm_bandwidth) return {1, 1};
  const double burst_s = r.at("memory_burst_time_us").get<double>() * 1e-6;
  const double bytes = std::max(0.0, burst_s - p.memory.hbm_latency.s()) * gpu.hbm_bandwidth->bytes_per_s * p.memory.hbm_efficiency;
  return replay_between(r, bench_memory_kernel(bytes), topo, p);
}
// The all-to-all at the NCCL tables' time (gemm_between_all_to_all), every
// rank cycling; callers skip rows with more ranks than the topology has GPUs.
BetweenRatios replay_between_all_to_all(const json& r, const hw::Topology& topo, const ModelParams& p, bool p2p_off) {
  ModelParams lined_up = p;  // each cycle's all-to-all lines the ranks up
  lined_up.power.straggler_share = 0;
  return replay_between(r, bench_a2a(r.at("bytes").get<Bytes>()), topo, lined_up, r.at("ranks").get<int>(), p2p_off);
}

// The load on the duty cycle (`field`, in [0, 1]) at which the replayed
// GEMMs of row `r` slow (steady / burst) as far as `target_of(their slowdown
// at a GEMM's load)`, by bisection: 0 where they slow that far with none, 1
// where a GEMM's load does not take them there. Set in ctx.p.
struct LoadFit {
  double load = 1, target = 1, as_gemm = 1, none = 1;
};
LoadFit fit_load(FitContext& ctx, double PowerParams::*field, const json& r,
                 const std::function<BetweenRatios(const json&, const hw::Topology&, const ModelParams&)>& replay,
                 const std::function<double(double)>& target_of) {
  auto ratio_at = [&](double load) {
    ModelParams q = ctx.p;
    q.power.*field = load;
    return replay(r, ctx.topo, q).gemm;
  };
  LoadFit f;
  f.as_gemm = ratio_at(1.0);
  f.none = ratio_at(0.0);
  f.target = target_of(f.as_gemm);
  if (f.target <= f.none)
    f.load = 0.0;
  else if (f.target < f.as_gemm)
    f.load = bisect(0.0, 1.0, [&](double w) { return ratio_at(w) < f.target; });
  ctx.p.power.*field = f.load;
  return f;
}

// What SDPA puts on the duty cycle (sustained_attention_load): the load at
// which the replayed GEMMs between SDPA kernels slow as much as the bench's
// did (steady / burst), by bisection; 1 where they slowed as much as GEMMs
// alone would, or more.
void fit_attention_load(FitContext& ctx) {
  const auto rs = rows(ctx.def, "gemm_between_attention");
  if (rs.empty() || ctx.p.power.sustained_slowdown <= 0) return;
  const json& r = rs.front();
  const LoadFit f =
      fit_load(ctx, &PowerParams::sustained_attention_load, r, replay_between_attention, [&](double) { return r.at("slowdown").get<double>(); });
  ctx.cal.fits.push_back({"sustained load, SDPA's share",
                          "GEMMs between cuDNN SDPA kernels for 1.5 s (gemm_between_attention): the load SDPA puts on the duty cycle at which "
                          "the replay's GEMMs slow as the bench's did (steady / burst), by bisection",
                          {{"attention_load", f.load},
                           {"gemm_slowdown", f.target},
                           {"replayed_as_gemm", f.as_gemm},
                           {"replayed_without", f.none},
                           {"attention_slowdown", r.at("attention_slowdown").get<double>()}},
                          0,
                          static_cast<int>(r.at("time_us").size())});
}

// The load on the duty cycle from GEMMs between another kind of work (row
// `r`), the same way as SDPA's. Where the row has the same GEMMs alone on the
// same box (alone_slowdown), the measured slowdown is taken as that share of
// the calibration's full-duty one (the replay's GEMMs alone), so that a box
// that throttles less than the calibration's does not read as a lighter
// load. The fit is reported as `name`, its load as `load_key`, the other
// work's own slowdown from the row's `<other>_slowdown`.
struct ScaledLoad {
  const char *name, *formula, *load_key, *other;
};
void fit_scaled_load(FitContext& ctx, double PowerParams::*field, const json& r,
                     const std::function<BetweenRatios(const json&, const hw::Topology&, const ModelParams&)>& replay, const ScaledLoad& what) {
  const double between = r.at("slowdown").get<double>();
  const double alone = r.contains("alone_slowdown") ? r.at("alone_slowdown").get<double>() : 0;
  const LoadFit f =
      fit_load(ctx, field, r, replay, [&](double as_gemm) { return alone > 1 ? 1 + (between - 1) * (as_gemm - 1) / (alone - 1) : between; });
  const std::string other = std::string(what.other) + "_slowdown";
  ctx.cal.fits.push_back({what.name,
                          what.formula,
                          {{what.load_key, f.load},
                           {"gemm_slowdown", between},
                           {"gemm_alone_slowdown", alone},
                           {"target", f.target},
                           {"replayed_as_gemm", f.as_gemm},
                           {"replayed_without", f.none},
                           {other, r.at(other).get<double>()}},
                          0,
                          static_cast<int>(r.at("time_us").size())});
}

// What a memory-bound kernel puts on the duty cycle (sustained_memory_load),
// from the GEMMs between copy kernels.
void fit_memory_load(FitContext& ctx) {
  const auto rs = rows(ctx.def, "gemm_between_memory_bound");
  if (rs.empty() || ctx.p.power.sustained_slowdown <= 0) return;
  fit_scaled_load(ctx, &PowerParams::sustained_memory_load, rs.front(), replay_between_memory,
                  {"sustained load, memory-bound kernels' share",
                   "GEMMs between HBM-bound copy kernels for 1.5 s (gemm_between_memory_bound): the load a memory-bound kernel puts on "
                   "the duty cycle at which the replay's GEMMs slow as the bench's did (steady / burst), by bisection",
                   "memory_load", "memory"});
}

// What a collective puts on the duty cycle while it holds its SMs
// (sustained_comm_load), from the GEMMs between all-to-alls on each rank
// (gemm_between_all_to_all). After the collectives' clock share, which sets
// how long the replayed all-to-alls take under load.
void fit_comm_load(FitContext& ctx) {
  const auto rs = rows(ctx.def, "gemm_between_all_to_all");
  if (rs.empty() || ctx.p.power.sustained_slowdown <= 0) return;
  if (rs.front().at("ranks").get<int>() > static_cast<int>(ctx.topo.gpus().size())) return;
  fit_scaled_load(ctx, &PowerParams::sustained_comm_load, rs.front(),
                  [](const json& row, const hw::Topology& topo, const ModelParams& p) { return replay_between_all_to_all(row, topo, p, false); },
                  {"sustained load, collectives' share",
                   "GEMMs between all-to-alls on each of the row's ranks for 1.5 s (gemm_between_all_to_all): the load a collective holding its SMs "
                   "puts on the duty cycle at which the replay's GEMMs slow as the bench's did (steady / burst), by bisection",
                   "comm_load", "comm"});
}

void fit_sustained_copy_report(FitContext& ctx) {
  const json& d = ctx.def;
  Calibration& c = ctx.cal;
  // The same GEMM under sustained load with H2D copies beside it (bench
  // gemm_sustained_copy): a check that copies do not add to the load that
  // lowers the clock (the model has no such term). Reported, not fitted.
  if (const auto cp = rows(d, "gemm_sustained_copy"); !cp.empty()) {
    std::map<std::pair<std::string, double>, double> steady;  // (copy, duty) -> steady time
    for (const auto& r : cp) steady[{r.at("copy").get<std::string>(), r.at("duty").get<double>()}] = r.at("steady_time_us").get<double>();
    Fit f{"sustained load with copies",
          "steady GEMM time with H2D copies running / without, per duty cycle (not a model term)",
          {},
          0,
          static_cast<int>(cp.size())};
    for (const auto& [key, t] : steady) {
      if (key.first == "none") continue;
      auto alone = steady.find({"none", key.second});
      if (alone == steady.end() || alone->second <= 0) continue;
      f.values.emplace_back(fmt::format("{}_duty_{:.2f}", key.first, key.second), t / alone->second);
    }
    if (!f.values.empty()) c.fits.push_back(f);
  }
}

void fit_straggler(FitContext& ctx) {
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  const BenchDocs& docs = ctx.docs;
  // Ranks drifting apart under the power cap (bench nccl_barrier_skew, any
  // run, every document: each run's wander differs): half the mean arrival
  // skew over the segment's compute, loaded; the median over the rows.
  {
    std::vector<double> shares, rested;
    for (const auto& [name, doc] : docs)
      for (const auto& r : rows(doc, "nccl_barrier_skew")) {
        const double seg_us = r.at("gemms").get<double>() * r.at("gemm_us").get<double>();
        (r.at("mode") == "loaded" ? shares : rested).push_back(r.at("mean_skew_us").get<double>() / (2 * seg_us));
      }
    if (!shares.empty()) {
      p.power.straggler_share = median(shares);
      c.fits.push_back({"ranks apart under the power cap",
                        "mean arrival skew / 2 / the segment's compute time (bench nccl_barrier_skew, loaded), median over rows and runs",
                        {{"straggler_share", p.power.straggler_share},
                         {"min", *std::min_element(shares.begin(), shares.end())},
                         {"max", *std::max_element(shares.begin(), shares.end())},
                         {"rested_median", rested.empty() ? 0.0 : median(rested)}},
                        0,
                        static_cast<int>(shares.size())});
    }
  }
}

void fit_comm_clock_share(FitContext& ctx) {
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  const BenchDocs& runs = ctx.runs;
  // The all-to-all with the clock down (bench nccl_all_to_all_loaded: after
  // >= 300 ms of GEMMs on every rank, against rested): which share of the
  // GEMM's slowdown at that moment the collective takes, per transport; the
  // median over sizes.
  for (const bool off : {false, true}) {
    const json* doc = find_doc(runs, off);
    if (!doc) continue;
    std::vector<double> shares;
    for (const auto& r : rows(*doc, "nccl_all_to_all_loaded")) {
      // Both modes start after >= 150 ms without NVLink traffic: over NVLink
      // each pays the wake-up once per `iters` all-to-alls, which does not
      // scale with the clock (0 where not calibrated).
      const double wake = off ? 0.0 : p.nvlink.nvlink_wake_latency.us() / r.at("iters").get<double>();
      const double rested = r.at("rested_time_us").get<double>();
      const double g = r.at("gemm_ratio").get<double>() - 1, a = (r.at("time_us").get<double>() - rested) / (rested - wake);
      if (g > 0.02) shares.push_back(std::clamp(a / g, 0.0, 1.0));
    }
    if (shares.empty()) continue;
    (off ? p.power.comm_clock_share_host : p.power.comm_clock_share) = median(shares);
    c.fits.push_back({off ? "NCCL under load, through host memory" : "NCCL under load",
                      "all-to-all with the clock down: (loaded / rested - 1) / (GEMM loaded / rested - 1), median over sizes",
                      {{"clock_share", median(shares)},
                       {"min", *std::min_element(shares.begin(), shares.end())},
                       {"max", *std::max_element(shares.begin(), shares.end())}},
                      0,
                      static_cast<int>(shares.size())});
  }
}

// The bench's all-to-all with the clock down (nccl_all_to_all_loaded): each
// rank runs its GEMM back to back for the load the bench gave (as many as
// took `load_ms` at burst; the sustained-load model slows them as the clock
// falls), then `iters` all-to-alls; the slowest rank's time per all-to-all.
// Without `load`, the all-to-alls alone (its rested time).
double replay_a2a_loaded(const json& r, bool load, bool p2p_off, const hw::Topology& topo, const ModelParams& p) {
  const int n = r.at("ranks"), iters = r.at("iters");
  std::vector<Op> prog;
  if (load) {
    const Op g = bench_gemm(r.at("gemm"));
    const int count = static_cast<int>(std::lround(r.at("load_ms").get<double>() * 1e3 / r.at("gemm_rested_us").get<double>()));
    prog.assign(static_cast<size_t>(std::max(1, count)), g);
  }
  if (!load) {
    // Its 150 ms idle (the NVLink wake-up, where calibrated, both pay).
    prog.push_back(bench_idle(Time::from_ms(150)));
  }
  const size_t first = prog.size();
  prog.insert(prog.end(), static_cast<size_t>(iters), bench_a2a(r.at("bytes").get<Bytes>()));
  const ExecResult res = replay_programs(bench_schedule(n, p2p_off), std::vector<std::vector<Op>>(static_cast<size_t>(n), prog), topo, p);
  double worst = 0;
  for (const auto& ops : res.ops) worst = std::max(worst, (ops.back().end - ops[first].start).us() / iters);
  return worst;
}

// The bench's GEMMs after a gap (gemm_after_idle), replayed as the bench ran
// the testcase, the clock state carried from row to row: per shape its warm
// timing (one GEMM, then `warmup + samples` x 5 back to back) and its copy
// timing (the GPU's compute idle meanwhile), then per row `warmup +
// samples` times: a device sync, the gap the GPU saw (the row's measured
// `idle_ms`: the host asleep, copies only, or a one-thread sleep kernel,
// none of which the sustained-load model counts as load), 12 GEMMs back to
// back. Per row: the shape's simulated warm time (median over samples of
// the 5-GEMM mean) and the mean over positions of each position's median
// GEMM time, as the bench reports them.
struct AfterIdleTimes {
  double warm_us, mean_us;
};
std::vector<AfterIdleTimes> replay_after_idle_doc(const json& doc, const hw::Topology& topo, const ModelParams& p) {
  const int warmup = doc.at("options").value("warmup", 2), samples = doc.at("options").value("samples", 5);
  Op sync;
  sync.kind = OpKind::DeviceSync;
  Op gap;
  gap.kind = OpKind::HostWork;
  std::vector<Op> prog;
  std::vector<const json*> rs;
  std::vector<size_t> warm_at;                  // per row: its shape's first timed warm GEMM
  std::vector<std::vector<size_t>> first_gemm;  // per row, per timed sample: its first GEMM
  json shape;
  size_t warm_first = 0;
  for (const auto& r : doc.at("results")) {
    if (r.at("key") != "gemm_after_idle") continue;
    const json sh = json::array({r.at("m"), r.at("n"), r.at("k")});
    const Op g = bench_gemm(sh);
    if (sh != shape) {
      shape = sh;
      prog.push_back(g);  // time_stream_us's ungated call
      prog.push_back(sync);
      warm_first = prog.size() + static_cast<size_t>(warmup) * 6;
      for (int it = 0; it < warmup + samples; ++it) {
        prog.insert(prog.end(), 5, g);
        prog.push_back(sync);
      }
      gap.duration = Time::from_us(r.at("copy_chunk_us").get<double>() * (1 + warmup + samples));
      prog.push_back(gap);
    }
    rs.push_back(&r);
    warm_at.push_back(warm_first);
    auto& firsts = first_gemm.emplace_back();
    gap.duration = Time::from_ms(r.at("idle_ms").get<double>());
    for (int it = 0; it < warmup + samples; ++it) {
      prog.push_back(sync);
      prog.push_back(gap);
      if (it >= warmup) firsts.push_back(prog.size());
      prog.insert(prog.end(), 12, g);
    }
  }
  if (rs.empty()) return {};
  const ExecResult res = replay_programs(bench_schedule(1), {prog}, topo, p);
  const auto& ops = res.ops[0];
  auto us = [&](size_t i) { return (ops[i].end - ops[i].start).us(); };
  std::vector<AfterIdleTimes> out;
  for (size_t i = 0; i < rs.size(); ++i) {
    std::vector<double> warm;
    for (int it = 0; it < samples; ++it) {
      const size_t at = warm_at[i] + static_cast<size_t>(it) * 6;
      warm.push_back((ops[at + 4].end - ops[at].start).us() / 5);
    }
    double mean = 0;
    for (size_t pos = 0; pos < 12; ++pos) {
      std::vector<double> v;
      for (const size_t at : first_gemm[i]) v.push_back(us(at + pos));
      mean += median(v) / 12;
    }
    out.push_back({median(warm), mean});
  }
  return out;
}

// The gemm_after_idle testcase replayed whole, once per document.
struct AfterIdle {
  std::optional<std::vector<AfterIdleTimes>> times;
  size_t seen = 0;
};

struct AttentionAloneReported {
  bool done = false;
};

void replay_row(ReplayContext& ctx, const json& r, Comparison c, std::vector<Comparison>& out) {
  const ModelParams& p = ctx.p;
  const hw::Topology& topo = ctx.topo;
  const std::string key = c.key;
  if (key == "gemm_after_idle") {
    AfterIdle& st = ctx.state<AfterIdle>();
    auto& after_idle = st.times;
    size_t& after_idle_seen = st.seen;
    const json& doc = ctx.doc;
    // The sustained-load model at the duty cycles the gaps leave, scored
    // on the slowdown: the simulated mean / warm ratio at the row's own
    // warm time (the GEMM rate itself is the GEMM table's business).
    if (!after_idle) after_idle = replay_after_idle_doc(doc, topo, p);
    const AfterIdleTimes& sim = (*after_idle)[after_idle_seen++];
    const auto& t = r.at("time_us");
    double mean = 0;
    for (const auto& x : t) mean += x.get<double>() / static_cast<double>(t.size());
    c.cls = "GEMMs after a gap (sustained-load clock)";
    c.what = fmt::format("{}x{}x{} after {} ms, {}", r.at("m").get<int>(), r.at("n").get<int>(), r.at("k").get<int>(), r.at("gap_ms").get<double>(),
                         r.at("mode").get<std::string>());
    c.measured_us = mean;
    c.simulated_us = r.at("warm_time_us").get<double>() * sim.mean_us / sim.warm_us;
    out.push_back(c);
  } else if (key == "nccl_all_to_all_loaded") {
    if (r.at("ranks").get<int>() > ctx.ngpu) return;
    // Benches that line the ranks up before their all-to-alls replay without the straggler wait.
    ModelParams lined_up = p;
    lined_up.power.straggler_share = 0;
    const bool p2p_off = ctx.p2p_off;
    // Scored on the slowdown: the simulated loaded / rested ratio at the
    // row's own rested time. The rested time itself is the NCCL tables'
    // business: after its 150 ms idle the NVLink all-to-all runs 10-47 us
    // longer than the gated tables (which its "warm" mode, without the
    // idle, matches): the GPU's state, which the loaded mode's GEMMs do not
    // leave either.
    c.cls = p2p_off ? "NCCL all-to-all with the clock down (slowdown), through host memory" : "NCCL all-to-all with the clock down (slowdown)";
    c.what = fmt::format("{} ranks, {} after the GEMMs", r.at("ranks").get<int>(), format_bytes(r.at("bytes").get<double>()));
    c.measured_us = r.at("time_us");
    c.simulated_us = r.at("rested_time_us").get<double>() * replay_a2a_loaded(r, true, p2p_off, topo, lined_up) /
                     replay_a2a_loaded(r, false, p2p_off, topo, lined_up);
    out.push_back(c);
  }
  // GEMMs between other kernels: scored on the slowdowns, at the row's own
  // burst times, the GEMMs' and the other kernel's (`other`: its field prefix).
  const auto between = [&](const BetweenRatios& sim, const std::string& what, const char* gemm_cls, const char* other_cls, const std::string& other) {
    Comparison o = c;
    c.cls = gemm_cls;
    c.what = what;
    c.measured_us = r.at("steady_time_us");
    c.simulated_us = r.at("burst_time_us").get<double>() * sim.gemm;
    out.push_back(c);
    o.cls = other_cls;
    o.what = what;
    o.measured_us = r.at(other + "_steady_time_us");
    o.simulated_us = r.at(other + "_burst_time_us").get<double>() * sim.other;
    out.push_back(o);
  };
  const auto gemm_shape = [&] { return fmt::format("{}x{}x{}", r.at("m").get<int>(), r.at("n").get<int>(), r.at("k").get<int>()); };
  if (key == "gemm_between_attention" || key == "gemm_sustained_shapes")
    between(replay_between_attention(r, topo, p),
            fmt::format("{} between SDPA of {} heads x {}", gemm_shape(), r.at("attention").at("heads").get<int>(),
                        r.at("attention").at("seq").get<int>()),
            "GEMMs between SDPA kernels (sustained-load clock)", "SDPA between GEMMs (sustained-load clock)", "attention");
  // The same GEMMs alone, and SDPA alone (the one series every row carries: once).
  if (key == "gemm_sustained_shapes") {
    c.cls = "GEMMs alone back to back (sustained-load clock)";
    c.what = gemm_shape() + " alone";
    c.measured_us = r.at("alone_steady_time_us");
    c.simulated_us =
        r.at("alone_burst_time_us").get<double>() *
        replay_back_to_back(r, "alone_time_us", bench_gemm(json::array({r.at("m"), r.at("n"), r.at("k")})), Time::from_ms(1000), topo, p);
    out.push_back(c);
    if (bool& reported = ctx.state<AttentionAloneReported>().done; !reported) {
      reported = true;
      c.cls = "SDPA alone back to back (sustained-load clock)";
      c.what = fmt::format("SDPA of {} heads x {} alone", r.at("attention").at("heads").get<int>(), r.at("attention").at("seq").get<int>());
      c.measured_us = r.at("attention_alone_steady_time_us");
      c.simulated_us = r.at("attention_alone_burst_time_us").get<double>() * replay_attention_alone(r, topo, p);
      out.push_back(c);
    }
  }
  if (key == "gemm_between_memory_bound")
    between(replay_between_memory(r, topo, p),
            fmt::format("{} between copy kernels of {}", gemm_shape(), format_bytes(r.at("hbm_bytes").get<double>())),
            "GEMMs between memory-bound kernels (sustained-load clock)", "memory-bound kernels between GEMMs (sustained-load clock)", "memory");
  if (key == "gemm_between_all_to_all" && r.at("ranks").get<int>() <= ctx.ngpu)
    between(
        replay_between_all_to_all(r, topo, p, ctx.p2p_off),
        fmt::format("{} between all-to-alls of {} on {} ranks", gemm_shape(), format_bytes(r.at("bytes").get<double>()), r.at("ranks").get<int>()),
        ctx.p2p_off ? "GEMMs between all-to-alls (sustained-load clock), through host memory" : "GEMMs between all-to-alls (sustained-load clock)",
        ctx.p2p_off ? "all-to-alls between GEMMs (sustained-load clock), through host memory" : "all-to-alls between GEMMs (sustained-load clock)",
        "comm");
  // nccl_barrier_skew is fitted (straggler_share); the simulator's ranks never drift apart to replay it.
}

}  // namespace families::power
}  // namespace osim
