// Attention (params/attention.hpp): PyTorch SDPA's efficiency against the
// GPU's bf16 peak (attention_sdpa, from any document: validate/src/testcases/attention.py),
// self- and cross-attention apart, cross-attention over the query count, and
// the share of the sustained-load slow term it takes.
#include "calib/families/attention.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <Eigen/Dense>
#include <fmt/format.h>

#include "calib/bench_replay.hpp"
#include "calib/family.hpp"
#include "calib/sustained.hpp"
#include "core/stats.hpp"

namespace osim {

std::optional<std::pair<double, double>> fit_cross_attention(const std::vector<std::pair<double, double>>& points, size_t skip) {
  std::vector<std::pair<double, double>> pts;
  for (size_t i = 0; i < points.size(); ++i)
    if (i != skip && points[i].first > 0 && points[i].second > 0) pts.push_back(points[i]);
  if (pts.size() < 3 || std::all_of(pts.begin(), pts.end(), [&](const auto& q) { return q.first == pts.front().first; })) return std::nullopt;
  Eigen::MatrixXd X(static_cast<Eigen::Index>(pts.size()), 2);
  Eigen::VectorXd y(static_cast<Eigen::Index>(pts.size()));
  for (size_t i = 0; i < pts.size(); ++i) {
    X(static_cast<Eigen::Index>(i), 0) = 1;
    X(static_cast<Eigen::Index>(i), 1) = 1 / pts[i].first;
    y(static_cast<Eigen::Index>(i)) = 1 / pts[i].second;
  }
  const Eigen::VectorXd w = X.colPivHouseholderQr().solve(y);
  if (!(w(0) > 0) || !(w(1) >= 0)) return std::nullopt;
  return std::make_pair(1 / w(0), w(1) / w(0));
}


namespace {

// A document's cross-attention SDPA rows as (seq_q, achieved / bf16 peak x
// sdpa_window_scale), in document order: what the query-count model is fitted on.
std::vector<std::pair<double, double>> cross_attention_points(const json& doc, const hw::Topology& topo, const ModelParams& p) {
  std::vector<std::pair<double, double>> out;
  const auto& peaks = topo.node(topo.gpus().front()).gpu.peak_tflops;
  const auto bf16 = peaks.find("bf16");
  if (bf16 == peaks.end()) return out;
  for (const auto& r : rows(doc, "attention_sdpa"))
    if (r.value("kind", "self") != "self")
      out.emplace_back(r.at("seq_q").get<double>(), r.at("TFLOPs").get<double>() / bf16->second * sdpa_window_scale(r, p));
  return out;
}


void fit_attention(FitContext& ctx) {
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  const hw::Topology& topo = ctx.topo;
  const int gpu0 = ctx.gpu0;
  const BenchDocs& docs = ctx.docs;
  const double sustained_scale = ctx.sustained_scale;
  // Attention (validate/src/testcases/attention.py: PyTorch SDPA) from any document:
  // the median efficiency of the self-attention shapes against the bf16 peak.
  {
    const auto& gpu = topo.node(gpu0).gpu;
    auto it = gpu.peak_tflops.find("bf16");
    std::vector<double> self_eff, cross_eff;
    std::vector<std::pair<double, double>> cross_q;  // (seq_q, efficiency)
    // The share of the slow clock term SDPA takes (attention_slow_share),
    // where >= 4 self-attention rows were timed over a window at different
    // times into the load: the share (0-1, steps of 0.05) whose model
    // slowdowns leave their efficiencies the least spread (rms of the log).
    std::optional<Fit> share_fit;
    if (it != gpu.peak_tflops.end() && p.power.sustained_slow_slowdown > 0) {
      std::vector<json> windowed;  // copies: rows() returns its own
      for (const auto& [name, doc] : docs)
        for (const auto& r : rows(doc, "attention_sdpa"))
          if (r.value("kind", "self") == "self" && r.value("timing", "") == "window") windowed.push_back(r);
      if (windowed.size() >= 4) {
        auto spread = [&](double share) {
          ModelParams q = p;
          q.attention.attention_slow_share = share;
          std::vector<double> v;
          for (const json& r : windowed) v.push_back(std::log(r.at("TFLOPs").get<double>() * sdpa_window_scale(r, q)));
          const double m = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
          double sq = 0;
          for (double x : v) sq += (x - m) * (x - m);
          return 100 * std::sqrt(sq / static_cast<double>(v.size()));
        };
        double best = 1.0, best_rms = spread(1.0);
        const double as_gemm = best_rms;
        for (int i = 0; i < 20; ++i)
          if (const double e = spread(i * 0.05); e < best_rms) best_rms = e, best = i * 0.05;
        p.attention.attention_slow_share = best;
        share_fit = Fit{"attention, slow clock term",
                        "the share of the sustained-load slow term SDPA takes: the one (0-1, steps of 0.05) leaving the self-attention rows timed "
                        "over windows the least spread of efficiency (rms of the log)",
                        {{"attention_slow_share", best}, {"rms_pct_as_gemm", as_gemm}},
                        best_rms,
                        static_cast<int>(windowed.size())};
      }
    }
    for (const auto& [name, doc] : docs) {
      for (const auto& r : rows(doc, "attention_sdpa"))
        if (it != gpu.peak_tflops.end() && r.value("kind", "self") == "self")
          self_eff.push_back(r.at("TFLOPs").get<double>() / it->second * sdpa_window_scale(r, p));
      for (const auto& q : cross_attention_points(doc, topo, p)) cross_q.push_back(q);
    }
    for (const auto& q : cross_q) cross_eff.push_back(q.second);
    if (!self_eff.empty()) {
      p.attention.attention_efficiency = std::min(1.0, median(self_eff) * sustained_scale);
      Fit f{"attention (PyTorch SDPA)",
            "achieved / bf16 peak (SDPA timed back to back), median over the self-attention shapes; efficiency = median x the "
            "sustained-load burst scale (rows timed over a window: x the model's slowdown over it)",
            {{"efficiency", p.attention.attention_efficiency}, {"median", median(self_eff)}, {"min", *std::min_element(self_eff.begin(), self_eff.end())},
             {"max", *std::max_element(self_eff.begin(), self_eff.end())}},
            0, static_cast<int>(self_eff.size())};
      c.fits.push_back(f);
      if (share_fit) c.fits.push_back(*share_fit);
    }
    if (!cross_eff.empty()) {
      p.attention.cross_attention_efficiency = std::min(1.0, median(cross_eff) * sustained_scale);
      Fit f{"cross-attention (PyTorch SDPA)", "the same over the cross-attention shapes (fewer keys than queries)",
            {{"efficiency", p.attention.cross_attention_efficiency}, {"median", median(cross_eff)}, {"min", *std::min_element(cross_eff.begin(), cross_eff.end())},
             {"max", *std::max_element(cross_eff.begin(), cross_eff.end())}},
            0, static_cast<int>(cross_eff.size())};
      // Over the query count: efficiency / (1 + q0 / seq_q), the asymptote
      // scaled to burst like the median.
      if (auto g = fit_cross_attention(cross_q)) {
        p.attention.cross_attention_efficiency = std::min(1.0, g->first * sustained_scale);
        p.attention.cross_attention_q0 = g->second;
        std::vector<double> loo;
        for (size_t i = 0; i < cross_q.size(); ++i)
          if (auto gi = fit_cross_attention(cross_q, i)) loo.push_back(100 * std::abs(cross_q[i].second * (1 + gi->second / cross_q[i].first) / gi->first - 1));
        f.formula = "the same over the cross-attention shapes (fewer keys than queries), over the query count: efficiency / (1 + q0 / seq_q), "
                    "least squares on 1/efficiency; efficiency = the asymptote x the sustained-load burst scale";
        f.values = {{"efficiency", p.attention.cross_attention_efficiency}, {"q0", p.attention.cross_attention_q0}, {"median", median(cross_eff)},
                    {"leave_one_out_median_pct", loo.empty() ? 0.0 : median(loo)},
                    {"leave_one_out_worst_pct", loo.empty() ? 0.0 : *std::max_element(loo.begin(), loo.end())}};
      }
      c.fits.push_back(f);
    }
  }
}

// This document's cross-attention points, for each shape's leave-one-out replay.
struct CrossPoints {
  bool ready = false;
  std::vector<std::pair<double, double>> points;
  std::optional<std::pair<double, double>> all;
  int seen = 0;
};

void replay_row(ReplayContext& ctx, const json& r, Comparison c, std::vector<Comparison>& out) {
  const ModelParams& p = ctx.p;
  const hw::Topology& topo = ctx.topo;
  CrossPoints& cross = ctx.state<CrossPoints>();
  if (!cross.ready) {
    cross.ready = true;
    cross.points = cross_attention_points(ctx.doc, topo, p);
    cross.all = fit_cross_attention(cross.points);
  }
  const auto& cross_points = cross.points;
  const auto& cross_all = cross.all;
  int& cross_seen = cross.seen;
  Op op;
  op.kind = OpKind::Kernel;
  op.stream = 0;
  op.attention = AttentionShape{1, r.at("heads").get<int32_t>(), r.at("seq_q").get<int32_t>(), r.at("seq_kv").get<int32_t>(),
                                r.at("head_dim").get<int32_t>()};
  c.what = fmt::format("{} {}h {}x{}", r.value("kind", "self"), op.attention->heads, op.attention->seq_q, op.attention->seq_kv);
  c.cls = r.value("kind", "self") == "self" ? "attention, self (median self-attention efficiency)"
                                            : "attention, cross (median cross-attention efficiency)";
  c.measured_us = r.at("time_us");
  ModelParams q = p;
  if (r.value("kind", "self") != "self" && p.attention.cross_attention_q0 > 0) {
    // Out of sample: the query-count model fitted without this shape
    // (its asymptote keeps the calibration's burst scale).
    const size_t i = static_cast<size_t>(cross_seen++);
    const auto without = fit_cross_attention(cross_points, i);
    if (cross_all && without) {
      q.attention.cross_attention_efficiency = std::min(1.0, p.attention.cross_attention_efficiency * without->first / cross_all->first);
      q.attention.cross_attention_q0 = without->second;
      c.cls = "attention, cross (query-count model fitted without the shape)";
    }
  }
  c.simulated_us = r.value("timing", "") == "window"
                       ? replay_window(bench_schedule(1), op, r.at("soak_calls").get<int>(), r.at("window_calls").get<int>(), topo, q)
                       : replay_hot(bench_schedule(1), op, topo, q);
  out.push_back(c);
}

const CalibFamily kAttention{"attention", {"attention_sdpa"}, {{440, fit_attention}}, replay_row};
OSIM_CALIB_FAMILY(kAttention);

}  // namespace
}  // namespace osim
