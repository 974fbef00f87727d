// Attention (params/attention.hpp): PyTorch SDPA's efficiency against the
// GPU's bf16 peak (attention_sdpa, from any document: validate/src/testcases/attention.py),
// self-, cross- and causal attention apart, cross-attention over the query count, and
// the share of the sustained-load slow term it takes.
#include "calib/families/attention.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>

#include <fmt/format.h>
#include <Eigen/Dense>

#include "calib/bench_replay.hpp"
#include "calib/families/steps.hpp"
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

namespace families::attention {

// Each point against the saturating fit made without it, in percent: how well
// the form predicts a shape it never saw.
std::vector<double> leave_one_out_pct(const std::vector<std::pair<double, double>>& points) {
  std::vector<double> out;
  for (size_t i = 0; i < points.size(); ++i)
    if (auto g = fit_cross_attention(points, i)) out.push_back(100 * std::abs(points[i].second * (1 + g->second / points[i].first) / g->first - 1));
  return out;
}

double median_or_zero(const std::vector<double>& v) { return v.empty() ? 0.0 : median(v); }
double worst_or_zero(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); }

// The backend an attention_sdpa row timed: "default" where it names none
// (whatever PyTorch picked).
AttnBackend backend_of_row(const json& r) { return attn_backend_of(r.value("backend", "default")).value_or(AttnBackend::Default); }

// The backend PyTorch picks by default, where a document names it (bench
// attention_default); Default where none does.
AttnBackend default_backend_of(const BenchDocs& docs) {
  AttnBackend b = AttnBackend::Default;
  for (const auto& [name, doc] : docs)
    for (const auto& r : rows(doc, "attention_default")) b = attn_backend_of(r.value("backend", "default")).value_or(AttnBackend::Default);
  return b;
}

// Which rows a fit takes: those of one backend, or (with no backend named
// anywhere) every row.
struct RowFilter {
  bool all = true;
  AttnBackend backend = AttnBackend::Default;
  bool operator()(const json& r) const { return all || backend_of_row(r) == backend; }
};

// A document's cross-attention SDPA rows as (seq_q, achieved / bf16 peak x
// sdpa_window_scale), in document order: what the query-count model is fitted on.
std::vector<std::pair<double, double>> cross_attention_points(const json& doc, const hw::Topology& topo, const ModelParams& p,
                                                              const RowFilter& take) {
  std::vector<std::pair<double, double>> out;
  const auto& peaks = topo.node(topo.gpus().front()).gpu.peak_tflops;
  const auto bf16 = peaks.find("bf16");
  if (bf16 == peaks.end()) return out;
  for (const auto& r : rows(doc, "attention_sdpa"))
    if (r.value("kind", "self") == "cross" && take(r))
      out.emplace_back(r.at("seq_q").get<double>(), r.at("TFLOPs").get<double>() / bf16->second * sdpa_window_scale(r, p));
  return out;
}

// The share of the slow clock term SDPA takes (attention_slow_share), where
// >= 4 self-attention rows were timed over a window at different times into
// the load: the share (0-1, steps of 0.05) whose model slowdowns leave their
// efficiencies the least spread (rms of the log).
std::optional<Fit> fit_slow_share(const BenchDocs& docs, ModelParams& p, const RowFilter& take) {
  std::vector<json> windowed;  // copies: rows() returns its own
  for (const auto& [name, doc] : docs)
    for (const auto& r : rows(doc, "attention_sdpa"))
      if (r.value("kind", "self") == "self" && r.value("timing", "") == "window" && take(r)) windowed.push_back(r);
  if (windowed.size() < 4) return std::nullopt;
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
  return Fit{"attention, slow clock term",
             "the share of the sustained-load slow term SDPA takes: the one (0-1, steps of 0.05) leaving the self-attention rows timed "
             "over windows the least spread of efficiency (rms of the log)",
             {{"attention_slow_share", best}, {"rms_pct_as_gemm", as_gemm}},
             best_rms,
             static_cast<int>(windowed.size())};
}

// One backend's rates (or, with `take.all`, every row's) from the SDPA rows:
// self-attention's median efficiency against the bf16 peak and
// cross-attention's query-count model, both scaled to burst rates. The
// fits it reports go to `fits`, `label` naming the backend in their titles.
std::optional<AttentionRates> fit_rates(const FitContext& ctx, const ModelParams& p, const RowFilter& take, const std::string& label,
                                        std::optional<Fit> share_fit, std::vector<Fit>& fits) {
  const hw::Topology& topo = ctx.topo;
  const auto& gpu = topo.node(ctx.gpu0).gpu;
  const auto it = gpu.peak_tflops.find("bf16");
  const double sustained_scale = ctx.consume(FitOutput::sustained_scale).value_or(1);
  std::vector<double> self_eff, cross_eff, causal_eff;
  std::vector<std::pair<double, double>> causal_s;  // (seq_q, efficiency) at head_dim 128
  std::vector<std::pair<double, double>> cross_q;   // (seq_q, efficiency)
  for (const auto& [name, doc] : ctx.docs) {
    for (const auto& r : rows(doc, "attention_sdpa")) {
      if (it == gpu.peak_tflops.end() || !take(r)) continue;
      // Causal rows' TFLOPs count the pairs the kernel computes (AttentionShape::pairs).
      const double eff = r.at("TFLOPs").get<double>() / it->second * sdpa_window_scale(r, p);
      if (r.value("kind", "self") == "self") self_eff.push_back(eff);
      if (r.value("kind", "self") == "causal") {
        causal_eff.push_back(eff);
        if (r.at("head_dim").get<int>() == 128) causal_s.emplace_back(r.at("seq_q").get<double>(), eff);
      }
    }
    for (const auto& q : cross_attention_points(doc, topo, p, take)) cross_q.push_back(q);
  }
  for (const auto& q : cross_q) cross_eff.push_back(q.second);
  if (self_eff.empty()) return std::nullopt;
  AttentionRates rates;
  rates.efficiency = std::min(1.0, median(self_eff) * sustained_scale);
  fits.push_back(Fit{"attention (PyTorch SDPA" + label + ")",
                     "achieved / bf16 peak (SDPA timed back to back), median over the self-attention shapes; efficiency = median x the "
                     "sustained-load burst scale (rows timed over a window: x the model's slowdown over it)",
                     {{"efficiency", rates.efficiency},
                      {"median", median(self_eff)},
                      {"min", *std::min_element(self_eff.begin(), self_eff.end())},
                      {"max", *std::max_element(self_eff.begin(), self_eff.end())}},
                     0,
                     static_cast<int>(self_eff.size())});
  if (share_fit) fits.push_back(*share_fit);
  // Over head_dim: each self-attention row at head_dim d != 128 against the
  // row of the same shape at 128: r = its efficiency over that one's, and
  // (d / (d + d0)) / (128 / (128 + d0)) = r gives d0; the median over pairs.
  {
    std::vector<double> d0s;
    for (const auto& [name, doc] : ctx.docs) {
      const std::vector<json> self = rows(doc, "attention_sdpa");
      for (const auto& r : self) {
        if (r.value("kind", "self") != "self" || !take(r) || r.at("head_dim").get<int>() == 128) continue;
        for (const auto& b : self)
          if (b.value("kind", "self") == "self" && take(b) && b.at("head_dim").get<int>() == 128 && b.at("seq_q") == r.at("seq_q") &&
              b.at("seq_kv") == r.at("seq_kv") && backend_of_row(b) == backend_of_row(r) && b.value("timing", "") == r.value("timing", "")) {
            const double ratio = (r.at("TFLOPs").get<double>() * sdpa_window_scale(r, p)) / (b.at("TFLOPs").get<double>() * sdpa_window_scale(b, p));
            const double d = r.at("head_dim").get<double>(), den = 128 * ratio - d;
            if (den != 0) {
              const double d0 = 128 * d * (1 - ratio) / den;
              if (d0 > 0 && d0 < 1e4) d0s.push_back(d0);
            }
            break;
          }
      }
    }
    if (!d0s.empty()) {
      rates.head_dim0 = median(d0s);
      fits.push_back(Fit{"attention over head_dim (PyTorch SDPA" + label + ")",
                         "each self-attention row at head_dim d != 128 against the same shape at 128: efficiency ratio r = (d / (d + d0)) / "
                         "(128 / (128 + d0)), solved for d0; the median over such pairs (the efficiencies above: the median over every shape, "
                         "all but these at 128)",
                         {{"head_dim0", rates.head_dim0}},
                         0,
                         static_cast<int>(d0s.size())});
    }
  }
  if (!causal_eff.empty()) {
    // Over the sequence length where >= 3 lengths at head_dim 128 were timed:
    // efficiency / (1 + s0 / seq_q), as cross-attention over its query count.
    const auto g = fit_cross_attention(causal_s);
    rates.causal_efficiency = std::min(1.0, (g ? g->first : median(causal_eff)) * sustained_scale);
    rates.causal_s0 = g ? g->second : 0;
    const std::vector<double> loo = g ? leave_one_out_pct(causal_s) : std::vector<double>{};
    fits.push_back(Fit{"causal attention (PyTorch SDPA" + label + ")",
                       g ? "the causal shapes (is_causal: each query sees the keys up to its own), on the query-key pairs computed, over the "
                           "sequence: efficiency / (1 + s0 / seq_q), least squares on 1/efficiency over the head_dim 128 rows; efficiency = "
                           "the asymptote x the sustained-load burst scale"
                         : "the same over the causal shapes (is_causal: each query sees the keys up to its own), on the query-key pairs computed",
                       {{"efficiency", rates.causal_efficiency},
                        {"s0", rates.causal_s0},
                        {"median", median(causal_eff)},
                        {"leave_one_out_median_pct", median_or_zero(loo)},
                        {"leave_one_out_worst_pct", worst_or_zero(loo)}},
                       0,
                       static_cast<int>(causal_eff.size())});
  }
  if (!cross_eff.empty()) {
    rates.cross_efficiency = std::min(1.0, median(cross_eff) * sustained_scale);
    Fit f{"cross-attention (PyTorch SDPA" + label + ")",
          "the same over the cross-attention shapes (fewer keys than queries)",
          {{"efficiency", rates.cross_efficiency},
           {"median", median(cross_eff)},
           {"min", *std::min_element(cross_eff.begin(), cross_eff.end())},
           {"max", *std::max_element(cross_eff.begin(), cross_eff.end())}},
          0,
          static_cast<int>(cross_eff.size())};
    // Over the query count: efficiency / (1 + q0 / seq_q), the asymptote
    // scaled to burst like the median.
    if (auto g = fit_cross_attention(cross_q)) {
      rates.cross_efficiency = std::min(1.0, g->first * sustained_scale);
      rates.cross_q0 = g->second;
      const std::vector<double> loo = leave_one_out_pct(cross_q);
      f.formula =
          "the same over the cross-attention shapes (fewer keys than queries), over the query count: efficiency / (1 + q0 / seq_q), "
          "least squares on 1/efficiency; efficiency = the asymptote x the sustained-load burst scale";
      f.values = {{"efficiency", rates.cross_efficiency},
                  {"q0", rates.cross_q0},
                  {"median", median(cross_eff)},
                  {"leave_one_out_median_pct", median_or_zero(loo)},
                  {"leave_one_out_worst_pct", worst_or_zero(loo)}};
    }
    fits.push_back(f);
  }
  return rates;
}

// Attention (validate/src/testcases/attention.py: PyTorch SDPA) from any
// document. Where the bench named the backend PyTorch picks by default
// (attention_default), the default's rows give the plain fields and every
// backend's its entry in attention_backends; else every row gives the plain
// fields.
void fit_attention(FitContext& ctx) {
  ModelParams& p = ctx.p;
  const AttnBackend def = default_backend_of(ctx.docs);
  const RowFilter primary{def == AttnBackend::Default, def};
  const bool slow = ctx.topo.node(ctx.gpu0).gpu.peak_tflops.count("bf16") && p.power.sustained_slow_slowdown > 0;
  const std::optional<Fit> share_fit = slow ? fit_slow_share(ctx.docs, p, primary) : std::nullopt;
  const std::string label = def == AttnBackend::Default ? "" : ", " + to_string(def) + ", PyTorch's default";
  std::vector<Fit> fits;
  const std::optional<AttentionRates> default_rates = fit_rates(ctx, p, primary, label, share_fit, fits);
  if (default_rates) {
    p.attention.attention_efficiency = default_rates->efficiency;
    p.attention.attention_head_dim0 = default_rates->head_dim0;
    p.attention.causal_attention_efficiency = default_rates->causal_efficiency;
    p.attention.causal_attention_s0 = default_rates->causal_s0;
    if (default_rates->cross_efficiency > 0) {
      p.attention.cross_attention_efficiency = default_rates->cross_efficiency;
      p.attention.cross_attention_q0 = default_rates->cross_q0;
    }
  }
  if (def != AttnBackend::Default) {
    p.attention.default_backend = def;
    p.attention.backends.clear();
    for (const std::string& name : attn_backend_names()) {
      const AttnBackend b = *attn_backend_of(name);
      if (b == AttnBackend::Default) continue;
      // The default's rates are the ones fitted above, from the same rows.
      const std::optional<AttentionRates> r = b == def ? default_rates : fit_rates(ctx, p, RowFilter{false, b}, ", " + name, std::nullopt, fits);
      if (r) p.attention.backends.push_back({b, *r});
    }
  }
  for (Fit& f : fits) ctx.cal.fits.push_back(std::move(f));
}

// This document's cross-attention points per backend, for each shape's
// leave-one-out replay.
struct CrossPoints {
  std::vector<std::pair<double, double>> points;
  std::optional<std::pair<double, double>> all;
  int seen = 0;
};
using CrossPointsByBackend = std::map<AttnBackend, CrossPoints>;

void replay_row(ReplayContext& ctx, const json& r, Comparison c, std::vector<Comparison>& out) {
  if (r.at("key") == "attention_default") return;  // names the default backend; nothing timed
  const ModelParams& p = ctx.p;
  const hw::Topology& topo = ctx.topo;
  // A row of a backend the calibration holds replays at that backend's
  // rates; older rows (and those of the default) at the plain fields.
  const AttnBackend row_backend = backend_of_row(r);
  const bool tabled = std::any_of(p.attention.backends.begin(), p.attention.backends.end(), [&](const auto& e) { return e.backend == row_backend; });
  const AttnBackend backend = tabled ? row_backend : AttnBackend::Default;
  auto& by_backend = ctx.state<CrossPointsByBackend>();
  if (!by_backend.count(backend)) {
    CrossPoints& cp = by_backend[backend];
    cp.points = cross_attention_points(ctx.doc, topo, p, RowFilter{!tabled, row_backend});
    cp.all = fit_cross_attention(cp.points);
  }
  CrossPoints& cross = by_backend[backend];
  const std::string kind = r.value("kind", "self");
  const Op op = bench_attention(AttentionShape{1, r.at("heads").get<int32_t>(), r.at("seq_q").get<int32_t>(), r.at("seq_kv").get<int32_t>(),
                                               r.at("head_dim").get<int32_t>(), backend, kind == "causal"});
  const std::string suffix = tabled ? ", " + to_string(row_backend) : "";
  c.what = fmt::format("{} {}h {}x{}{}", kind, op.attention->heads, op.attention->seq_q, op.attention->seq_kv, suffix);
  c.cls = kind == "self"     ? "attention, self (median self-attention efficiency)"
          : kind == "causal" ? "attention, causal (efficiency over the sequence)"
                             : "attention, cross (median cross-attention efficiency)";
  c.measured_us = r.at("time_us");
  ModelParams q = p;
  const AttentionRates rates = p.attention.rates_for(backend);
  if (kind == "cross" && rates.cross_q0 > 0) {
    // Out of sample: the query-count model fitted without this shape
    // (its asymptote keeps the calibration's burst scale).
    const size_t i = static_cast<size_t>(cross.seen++);
    const auto without = fit_cross_attention(cross.points, i);
    if (cross.all && without) {
      const double eff = std::min(1.0, rates.cross_efficiency * without->first / cross.all->first);
      if (tabled) {
        for (auto& e : q.attention.backends)
          if (e.backend == row_backend) e.rates.cross_efficiency = eff, e.rates.cross_q0 = without->second;
      } else {
        q.attention.cross_attention_efficiency = eff;
        q.attention.cross_attention_q0 = without->second;
      }
      c.cls = "attention, cross (query-count model fitted without the shape)";
    }
  }
  c.simulated_us = r.value("timing", "") == "window"
                       ? replay_window(bench_schedule(1), op, r.at("soak_calls").get<int>(), r.at("window_calls").get<int>(), topo, q)
                       : replay_hot(bench_schedule(1), op, topo, q);
  out.push_back(c);
}

}  // namespace families::attention
}  // namespace osim
