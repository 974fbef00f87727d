// GEMMs (params/gemm.hpp): efficiency per measured shape against the GPU's
// bf16 peak (gemm_bf16: burst rates, or back-to-back ones scaled to burst by
// the sustained-load fit), the median for other shapes, and the shape model
// for shapes the table lacks. Replayed left out: each shape by the model
// fitted without it, under load by the sustained-load model. fp8 against
// bf16 (gemm_fp8): the median over shapes of the two dtypes' shares of their
// peaks, both timed by PyTorch back to back in one session.
#include "calib/families/gemm.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <Eigen/Dense>

#include "calib/bench_replay.hpp"
#include "calib/families/steps.hpp"
#include "calib/sustained.hpp"
#include "core/stats.hpp"
#include "schedule/builder.hpp"

namespace osim {

namespace {

// The rms of each value's relative distance from m, in percent (a fit's residual).
double rms_pct_about(const std::vector<double>& values, double m) {
  double sq = 0;
  for (double v : values) sq += std::pow((m - v) / v, 2);
  return 100 * std::sqrt(sq / static_cast<double>(values.size()));
}

using GemmRows = std::vector<const GemmShapeEfficiency*>;

// The least squares behind fit_gemm_model, with or without the power-of-two term.
std::optional<GemmShapeModel> fit_gemm_terms(const GemmRows& rows, bool with_pow2) {
  if (rows.size() < 5) return std::nullopt;
  // Terms: 1, 1/m, 1/n, 1/k, [m a power of two]; a term the table never
  // varies is left out (it would be the constant again).
  const auto pow2 = [](const GemmShapeEfficiency* g) { return GemmShapeModel::power_of_two(g->m) ? 1.0 : 0.0; };
  std::vector<int> terms = {0};
  for (int d = 0; d < (with_pow2 ? 4 : 3); ++d) {
    auto val = [&](const GemmShapeEfficiency* g) { return d == 0 ? g->m : d == 1 ? g->n : d == 2 ? g->k : static_cast<int>(pow2(g)); };
    if (std::any_of(rows.begin(), rows.end(), [&](const auto* g) { return val(g) != val(rows.front()); })) terms.push_back(d + 1);
  }
  for (;;) {
    Eigen::MatrixXd X(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(terms.size()));
    Eigen::VectorXd y(static_cast<Eigen::Index>(rows.size()));
    for (size_t r = 0; r < rows.size(); ++r) {
      const auto* g = rows[r];
      const double inv[5] = {1.0, 1.0 / g->m, 1.0 / g->n, 1.0 / g->k, pow2(g)};
      for (size_t t = 0; t < terms.size(); ++t) X(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(t)) = inv[terms[t]];
      y(static_cast<Eigen::Index>(r)) = 1.0 / g->efficiency;
    }
    const Eigen::VectorXd w = X.colPivHouseholderQr().solve(y);
    if (!(w(0) > 0)) return std::nullopt;
    // Drop the most negative term, then refit.
    size_t worst = 0;
    for (size_t t = 1; t < terms.size(); ++t)
      if (w(static_cast<Eigen::Index>(t)) < 0 && (worst == 0 || w(static_cast<Eigen::Index>(t)) < w(static_cast<Eigen::Index>(worst)))) worst = t;
    if (worst != 0) {
      terms.erase(terms.begin() + static_cast<long>(worst));
      continue;
    }
    GemmShapeModel g;
    g.efficiency = 1.0 / w(0);
    for (size_t t = 1; t < terms.size(); ++t) {
      const double v = w(static_cast<Eigen::Index>(t)) / w(0);
      (terms[t] == 1 ? g.m0 : terms[t] == 2 ? g.n0 : terms[t] == 3 ? g.k0 : g.pow2_m) = v;
    }
    return g;
  }
}

// Root-mean-square relative error of each row predicted by the fit without it.
double gemm_loo_rms(const GemmRows& rows, bool with_pow2) {
  double sq = 0;
  int n = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    GemmRows others = rows;
    others.erase(others.begin() + static_cast<long>(i));
    if (const auto g = fit_gemm_terms(others, with_pow2)) {
      sq += std::pow(rows[i]->efficiency / g->at(rows[i]->m, rows[i]->n, rows[i]->k) - 1, 2);
      ++n;
    }
  }
  return n ? std::sqrt(sq / n) : 0;
}

}  // namespace

std::optional<GemmShapeModel> fit_gemm_model(const std::vector<GemmShapeEfficiency>& shapes, size_t skip) {
  GemmRows rows;
  for (size_t i = 0; i < shapes.size(); ++i)
    if (i != skip && shapes[i].m > 0 && shapes[i].n > 0 && shapes[i].k > 0 && shapes[i].efficiency > 0) rows.push_back(&shapes[i]);
  // The power-of-two term only where it predicts the table's shapes better
  // out of sample (leave-one-out rms): an older, noisier table may not.
  const bool pow2 = gemm_loo_rms(rows, true) < gemm_loo_rms(rows, false);
  return fit_gemm_terms(rows, pow2);
}

namespace families::gemm {

void fit_shapes(FitContext& ctx) {
  const json& d = ctx.def;
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  const hw::Topology& topo = ctx.topo;
  const int gpu0 = ctx.gpu0;
  // GEMM efficiency against the topology's bf16 peak, per shape. Rows with
  // `burst_time_us` give the cool GPU's rate
  // directly; older rows only the back-to-back one, which the sustained-load
  // fit below turns into a burst rate. The median (for other shapes) follows.
  struct GemmRow {
    int m, n, k;
    double eff;
    bool burst;
  };
  std::vector<GemmRow> gemm_rows;
  std::vector<double> steady_over_burst;
  double peak_bf16 = 0;
  {
    const auto& gpu = topo.node(gpu0).gpu;
    auto it = gpu.peak_tflops.find("bf16");
    if (it != gpu.peak_tflops.end()) peak_bf16 = it->second;
    for (const auto& r : rows(d, "gemm_bf16")) {
      if (peak_bf16 <= 0) break;
      const double flops = 2.0 * r.at("m").get<double>() * r.at("n").get<double>() * r.at("k").get<double>();
      if (r.contains("burst_time_us")) {
        const double burst = r.at("burst_time_us").get<double>();
        gemm_rows.push_back({r.at("m").get<int>(), r.at("n").get<int>(), r.at("k").get<int>(), flops / (burst * 1e-6) / (peak_bf16 * 1e12), true});
        steady_over_burst.push_back(r.value("loaded_mean_us", r.at("time_us").get<double>()) / burst);
      } else {
        gemm_rows.push_back({r.at("m").get<int>(), r.at("n").get<int>(), r.at("k").get<int>(), r.at("TFLOPs").get<double>() / peak_bf16, false});
      }
    }
  }
  // The GEMM table is taken back to back for seconds, at full duty: where
  // the sustained-load fit ran, back-to-back rates scale to burst.
  if (const std::optional<double> scale = ctx.consume(FitOutput::sustained_scale))
    for (auto& g : gemm_rows)
      if (!g.burst) g.eff = std::min(1.0, g.eff * *scale);
  if (!gemm_rows.empty()) {
    p.gemm.gemm_shapes.clear();
    std::vector<double> eff;
    int burst = 0;
    for (const auto& g : gemm_rows) {
      p.gemm.gemm_shapes.push_back({g.m, g.n, g.k, g.eff});
      eff.push_back(g.eff);
      burst += g.burst;
    }
    const double m = median(eff);
    p.gemm.gemm_efficiency = m;
    c.fits.push_back({"GEMM bf16",
                      burst == static_cast<int>(eff.size())
                          ? "burst (rested GPU, clock up) achieved / peak per shape (gemm_shapes); the median for other shapes"
                          : "achieved / peak per shape (gemm_shapes; back-to-back rates times 1 + sustained slowdown); the median for other shapes",
                      {{"efficiency", m}, {"min", *std::min_element(eff.begin(), eff.end())}, {"max", *std::max_element(eff.begin(), eff.end())}},
                      rms_pct_about(eff, m),
                      static_cast<int>(eff.size())});
    if (auto g = fit_gemm_model(p.gemm.gemm_shapes)) {
      p.gemm.gemm_model = *g;
      // Leave-one-out: each shape predicted by the model fitted without it.
      std::vector<double> loo, res;
      for (size_t i = 0; i < p.gemm.gemm_shapes.size(); ++i) {
        const auto& sh = p.gemm.gemm_shapes[i];
        res.push_back(sh.efficiency / g->at(sh.m, sh.n, sh.k) - 1);
        if (auto gi = fit_gemm_model(p.gemm.gemm_shapes, i)) loo.push_back(100 * std::abs(sh.efficiency / gi->at(sh.m, sh.n, sh.k) - 1));
      }
      double res_sq = 0;
      for (double r : res) res_sq += r * r;
      c.fits.push_back({"GEMM shape model",
                        "for shapes the table lacks: efficiency / (1 + m0/m + n0/n + k0/k + pow2_m [m a power of two]), least squares on "
                        "1/efficiency over the table",
                        {{"efficiency", g->efficiency},
                         {"m0", g->m0},
                         {"n0", g->n0},
                         {"k0", g->k0},
                         {"pow2_m", g->pow2_m},
                         {"leave_one_out_median_pct", loo.empty() ? 0.0 : median(loo)},
                         {"leave_one_out_worst_pct", loo.empty() ? 0.0 : *std::max_element(loo.begin(), loo.end())}},
                        100 * std::sqrt(res_sq / static_cast<double>(res.size())),
                        static_cast<int>(res.size())});
    }
    if (!steady_over_burst.empty())
      c.fits.push_back({"GEMM table under load",
                        "per shape: time after >= 250 ms back to back (the mean over >= 200 ms where the bench has it) / burst time (a check "
                        "on the sustained-load fit)",
                        {{"median", median(steady_over_burst)},
                         {"min", *std::min_element(steady_over_burst.begin(), steady_over_burst.end())},
                         {"max", *std::max_element(steady_over_burst.begin(), steady_over_burst.end())}},
                        0,
                        static_cast<int>(steady_over_burst.size())});
  }
}

// gemm_fp8's tensorwise rows: per shape, the fp8 GEMM's share of the fp8
// peak over the bf16 GEMM's share of the bf16 peak (the same shape, the same
// clock); their median is the ratio. Rowwise rows run another kernel and are
// replayed, not fitted.
void fit_fp8(FitContext& ctx) {
  const auto& peaks = ctx.topo.node(ctx.gpu0).gpu.peak_tflops;
  const auto bf16 = peaks.find("bf16"), fp8 = peaks.find("fp8");
  if (bf16 == peaks.end() || fp8 == peaks.end()) return;
  std::vector<double> ratios;
  for (const auto& r : rows(ctx.def, "gemm_fp8"))
    if (r.value("scaling", "tensorwise") == "tensorwise")
      ratios.push_back((r.at("TFLOPs").get<double>() / fp8->second) / (r.at("bf16_TFLOPs").get<double>() / bf16->second));
  if (ratios.empty()) return;
  const double m = median(ratios);
  ctx.p.gemm.fp8_efficiency_ratio = m;
  ctx.cal.fits.push_back(
      {"GEMM fp8",
       "per shape (tensorwise scales): fp8 achieved / fp8 peak over bf16 achieved / bf16 peak, both back to back; the median",
       {{"ratio", m}, {"min", *std::min_element(ratios.begin(), ratios.end())}, {"max", *std::max_element(ratios.begin(), ratios.end())}},
       rms_pct_about(ratios, m),
       static_cast<int>(ratios.size())});
}

// A gemm_fp8 row: the fp8 GEMM and the same shape in bf16, each under load
// as the calibration has it (the bf16 table or shape model, times the ratio
// for fp8).
void replay_fp8_row(ReplayContext& ctx, const json& r, Comparison c, std::vector<Comparison>& out) {
  const std::string scaling = r.value("scaling", "tensorwise");
  Op op = ops::gemm(0, r.at("m").get<int32_t>(), r.at("n").get<int32_t>(), r.at("k").get<int32_t>(), DType::FP8);
  c.what = fmt::format("{}x{}x{} {}", op.gemm->m, op.gemm->n, op.gemm->k, scaling);
  c.cls = scaling == "tensorwise" ? "GEMM fp8 under load (the bf16 rate times gemm_fp8_ratio)"
                                  : "GEMM fp8 " + scaling + " under load (tensorwise's ratio)";
  if (scaling != "tensorwise") c.outside = "fp8 GEMMs with " + scaling + " scales (another kernel; the model has the tensorwise rate)";
  c.measured_us = r.at("time_us");
  c.simulated_us = replay_hot(bench_schedule(1), op, ctx.topo, ctx.p);
  out.push_back(c);
  if (scaling != "tensorwise") return;  // one bf16 row per shape
  op.dtype = DType::BF16;
  c.what = fmt::format("{}x{}x{} bf16", op.gemm->m, op.gemm->n, op.gemm->k);
  c.cls = "GEMM bf16 through PyTorch under load (the bench's bf16 table)";
  c.measured_us = r.at("bf16_time_us");
  c.simulated_us = replay_hot(bench_schedule(1), op, ctx.topo, ctx.p);
  out.push_back(c);
}

// The GEMM table's window rows and the full-duty slowdown they give, once
// per document (for the slowdown without each row's own window).
struct Windows {
  bool ready = false;
  std::vector<WindowRow> rows;
  bool theta_from_table = false;
  size_t seen = 0;
};

void replay_row(ReplayContext& ctx, const json& r, Comparison c, std::vector<Comparison>& out) {
  if (c.key == "gemm_fp8") {
    replay_fp8_row(ctx, r, std::move(c), out);
    return;
  }
  const ModelParams& p = ctx.p;
  const hw::Topology& topo = ctx.topo;
  Windows& win = ctx.state<Windows>();
  if (!win.ready) {
    win.ready = true;
    win.rows = gemm_window_rows(ctx.doc);
    const auto theta_all = table_theta(win.rows, p);
    win.theta_from_table = theta_all && std::abs(*theta_all - p.power.sustained_slowdown) < 1e-6;
  }
  const std::vector<WindowRow>& windows = win.rows;
  const bool theta_from_table = win.theta_from_table;
  size_t& window_seen = win.seen;
  Op op;
  op.kind = OpKind::Kernel;
  op.stream = 0;
  op.gemm = GemmShape{r.at("m").get<int32_t>(), r.at("n").get<int32_t>(), r.at("k").get<int32_t>()};
  c.what = fmt::format("{}x{}x{}", op.gemm->m, op.gemm->n, op.gemm->k);
  // The per-shape table reproduces its rates exactly (it is fitted on
  // them). What an unmeasured shape would get: the shape model fitted
  // without this shape (leave-one-out), or the median efficiency without
  // a model.
  ModelParams q = p;
  bool model = false;
  if (p.gemm.gemm_model.efficiency > 0) {
    std::vector<GemmShapeEfficiency> others;
    for (const auto& sh : p.gemm.gemm_shapes)
      if (!(sh.m == op.gemm->m && sh.n == op.gemm->n && sh.k == op.gemm->k)) others.push_back(sh);
    if (auto g = fit_gemm_model(others)) {
      q.gemm.gemm_model = *g;
      model = true;
    }
  }
  q.gemm.gemm_shapes.clear();
  if (r.contains("burst_time_us")) {
    // Two rows, two models apart. Burst (a rested GPU): the shape model
    // alone, left out. Under load (after >= 250 ms of the shape): the
    // sustained-load model, at the shape's own measured burst rate.
    c.cls = model ? "GEMM burst (shape model fitted without the shape)" : "GEMM burst (median efficiency)";
    c.measured_us = r.at("burst_time_us");
    c.simulated_us = replay(bench_schedule(1), {op}, topo, q);
    out.push_back(c);
    c.what += " under load";
    c.cls = "GEMM under load (sustained-load model, the shape's burst rate)";
    if (r.contains("loaded_mean_us")) {
      // The bench's window: its mean after the soak, replayed as run;
      // the full-duty slowdown fitted without this shape's window.
      c.cls = "GEMM under load, 200 ms mean (sustained-load model, the shape's burst rate)";
      c.measured_us = r.at("loaded_mean_us");
      ModelParams w = p;
      if (theta_from_table) {
        if (auto t = table_theta(windows, p, window_seen)) w.power.sustained_slowdown = *t;
        c.cls = "GEMM under load, 200 ms mean (sustained-load model fitted without the shape, its burst rate)";
      }
      ++window_seen;
      // Counts are of the whole op; a chunked shape's rows are per chunk.
      const int chunks = r.value("chunks", 1);
      c.simulated_us =
          replay_window(bench_schedule(1), op, chunks * r.at("soak_calls").get<int>(), chunks * r.at("window_calls").get<int>(), topo, w);
    } else {
      c.measured_us = r.at("time_us");
      c.simulated_us = replay_hot(bench_schedule(1), op, topo, p);
    }
  } else {
    // Older tables: back-to-back rates only (the calibration scaled them to burst).
    c.cls = model ? "GEMM (shape model fitted without the shape)" : "GEMM (median efficiency)";
    c.measured_us = r.at("time_us");
    c.simulated_us = replay_hot(bench_schedule(1), op, topo, q);
  }
  out.push_back(c);
}

}  // namespace families::gemm
}  // namespace osim
