#include "calibrate.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <Eigen/Dense>
#include <fmt/format.h>

#include "core/stats.hpp"
#include "gpu/params_io.hpp"
#include "gpu/executor.hpp"

namespace osim {

namespace {

using json = nlohmann::json;

std::vector<json> rows(const json& doc, const std::string& key) {
  std::vector<json> out;
  for (const auto& r : doc.at("results"))
    if (r.at("key") == key) out.push_back(r);
  return out;
}

// GEMM table rows with a window mean (bench since 2026-11-23): the mean's
// ratio to the burst time, and when the window ran (ms after the shape's
// load began: the soak's ops at the window's rate, near enough).
struct WindowRow {
  double ratio, start_ms, end_ms;
};

std::vector<WindowRow> gemm_window_rows(const json& doc) {
  std::vector<WindowRow> out;
  for (const auto& r : rows(doc, "gemm_bf16")) {
    if (!r.contains("loaded_mean_us") || !r.contains("burst_time_us")) continue;
    const double mean_us = r.at("loaded_mean_us").get<double>();
    const double op_ms = mean_us * r.value("chunks", 1) * 1e-3;
    const double t0 = r.at("soak_calls").get<double>() * op_ms;
    out.push_back({mean_us / r.at("burst_time_us").get<double>(), t0, t0 + r.at("window_calls").get<double>() * op_ms});
  }
  return out;
}

// The sustained-load model's activation after t_ms at full duty from rest
// (ModelParams: the duty average over `tau_ms` past the threshold u0).
double activation(double t_ms, double tau_ms, double u0) { return std::clamp((1 - std::exp(-t_ms / tau_ms) - u0) / (1 - u0), 0.0, 1.0); }

// The sustained-load model's fast and slow activations averaged over a
// window row's time.
std::pair<double, double> window_activations(const WindowRow& w, const ModelParams& p) {
  double fast = 0, slow = 0;
  const int n = 64;
  for (int i = 0; i < n; ++i) {
    const double t = w.start_ms + (w.end_ms - w.start_ms) * (i + 0.5) / n;
    fast += activation(t, p.power.sustained_time_constant.ms(), p.power.sustained_duty) / n;
    slow += activation(t, p.power.sustained_slow_time_constant.ms(), p.power.sustained_duty) / n;
  }
  return {fast, slow};
}

// One window row's estimate of the fast term's full-duty slowdown, given the
// rest of the model: (ratio - 1 - slow term) / fast activation, each averaged
// over the window; nullopt where the fast term is not yet active there.
std::optional<double> window_theta(const WindowRow& w, const ModelParams& p) {
  const auto [fast, slow] = window_activations(w, p);
  if (fast < 0.5) return std::nullopt;
  return (w.ratio - 1 - p.power.sustained_slow_slowdown * slow) / fast;
}

// The fast term's slowdown from the window rows (all but `skip`): the median
// of their estimates; nullopt with fewer than 5.
std::optional<double> table_theta(const std::vector<WindowRow>& rows, const ModelParams& p, size_t skip = SIZE_MAX) {
  std::vector<double> est;
  for (size_t i = 0; i < rows.size(); ++i)
    if (i != skip)
      if (auto t = window_theta(rows[i], p)) est.push_back(*t);
  if (est.size() < 5) return std::nullopt;
  return std::max(0.0, median(est));
}

// An SDPA row's efficiency factor against the others': 1, except for rows
// timed over a window (`timing: window`, attention_bench since 2026-11-23),
// which the sustained-load model slowed by its activations over that window
// where the others take the full-duty burst scale (1 + sustained_slowdown).
double sdpa_window_scale(const json& r, const ModelParams& p) {
  if (r.value("timing", "") != "window") return 1.0;
  const double op_ms = r.at("time_us").get<double>() * 1e-3;
  const double t0 = r.at("soak_calls").get<double>() * op_ms;
  const auto [fast, slow] = window_activations({0, t0, t0 + r.at("window_calls").get<double>() * op_ms}, p);
  return (1 + p.power.sustained_slowdown * fast + p.attention.attention_slow_share * p.power.sustained_slow_slowdown * slow) / (1 + p.power.sustained_slowdown);
}

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

}  // namespace

namespace {

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

namespace {

// time per op = latency + bytes / bandwidth + burst / reps: copies timed
// `reps` per gated burst (pinned copies; a burst pays the hand-off from its
// gate and its closing event once). `burst`: held at that; else fitted where
// the rows hold two reps values or more (none, or a negative one: 0).
// Relative least squares, each row weighted by 1 / time, so large and small
// sizes count alike. `ok`: a positive bandwidth.
struct CopyPoint {
  double bytes, reps, time;
};
struct CopyLine {
  double latency_us = 0, burst_us = 0, inv_beta = 0;  // us, us, us per byte
  double sq = 0;                                       // summed squared relative residuals
  int n = 0;
  bool ok = false;
};
CopyLine fit_copy_burst_line(const std::vector<CopyPoint>& pts, std::optional<double> burst) {
  CopyLine c;
  std::set<double> reps;
  for (const auto& pt : pts) reps.insert(pt.reps);
  const bool free_burst = !burst && reps.size() >= 2;
  const Eigen::Index cols = free_burst ? 3 : 2;
  if (static_cast<Eigen::Index>(pts.size()) < cols) return c;
  Eigen::MatrixXd A(static_cast<Eigen::Index>(pts.size()), cols);
  Eigen::VectorXd b(static_cast<Eigen::Index>(pts.size()));
  const double held = burst.value_or(0);
  for (size_t i = 0; i < pts.size(); ++i) {
    const auto row = static_cast<Eigen::Index>(i);
    const double w = 1.0 / pts[i].time;
    A(row, 0) = w;
    A(row, 1) = pts[i].bytes * w;
    if (free_burst) A(row, 2) = w / pts[i].reps;
    b(row) = (pts[i].time - (free_burst ? 0.0 : held / pts[i].reps)) * w;
  }
  const Eigen::VectorXd x = A.colPivHouseholderQr().solve(b);
  if (free_burst && x(2) < 0) return fit_copy_burst_line(pts, 0.0);
  c.latency_us = std::max(0.0, x(0));
  c.inv_beta = x(1);
  c.burst_us = free_burst ? x(2) : held;
  for (const auto& pt : pts) {
    const double pred = c.latency_us + pt.bytes * c.inv_beta + c.burst_us / pt.reps;
    c.sq += std::pow((pred - pt.time) / pt.time, 2);
  }
  c.n = static_cast<int>(pts.size());
  c.ok = c.inv_beta > 0;
  return c;
}

// Ops timed per gated burst (copy_reps, nccl_reps, kernel_reps): time per op
// - known = steady(group) + burst / reps (+ step where `step`, with_step),
// relative least squares (each row weighted by 1 / time). Nothing where the
// rows hold fewer than two burst sizes, or with_step and the step column is
// all one value.
struct BurstPoint {
  double group, reps, time;
  double known = 0;  // part of the time known already (a copy's bytes / rate)
  bool step = false;
};
struct BurstFit {
  std::map<double, double> steady;  // per group
  double burst = 0, step = 0, rms_pct = 0;
};
std::optional<BurstFit> fit_burst(const std::vector<BurstPoint>& pts, bool with_step) {
  std::map<double, Eigen::Index> col;
  std::set<double> reps;
  int stepped = 0;
  for (const auto& pt : pts) col.emplace(pt.group, 0), reps.insert(pt.reps), stepped += pt.step;
  if (reps.size() < 2 || (with_step && (stepped == 0 || stepped == static_cast<int>(pts.size())))) return std::nullopt;
  Eigen::Index k = 0;
  for (auto& [group, i] : col) i = k++;
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(pts.size()), k + (with_step ? 2 : 1));
  Eigen::VectorXd y(static_cast<Eigen::Index>(pts.size()));
  for (size_t i = 0; i < pts.size(); ++i) {
    const auto row = static_cast<Eigen::Index>(i);
    const double w = 1.0 / pts[i].time;
    A(row, col.at(pts[i].group)) = w;
    A(row, k) = w / pts[i].reps;
    if (with_step) A(row, k + 1) = (pts[i].step ? 1.0 : 0.0) * w;
    y(row) = (pts[i].time - pts[i].known) * w;
  }
  const Eigen::VectorXd x = A.colPivHouseholderQr().solve(y);
  BurstFit f;
  for (const auto& [group, i] : col) f.steady[group] = x(i);
  f.burst = x(k);
  f.step = with_step ? x(k + 1) : 0;
  double sq = 0;
  for (const auto& pt : pts) sq += std::pow((f.steady.at(pt.group) + f.burst / pt.reps + (pt.step ? f.step : 0) + pt.known) / pt.time - 1, 2);
  f.rms_pct = 100 * std::sqrt(sq / static_cast<double>(pts.size()));
  return f;
}

// A bench row's text field that must be one of `allowed`: anything else is
// a malformed row (std::invalid_argument; `overlapsim calibrate` names the
// file), not a case to read as another.
std::string one_of(const json& r, const char* key, std::initializer_list<std::string_view> allowed) {
  const std::string v = r.at(key).get<std::string>();
  std::string list;
  for (const std::string_view a : allowed) {
    if (v == a) return v;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  throw std::invalid_argument(fmt::format("{} row with {} '{}': expected one of {}", r.at("key").get<std::string>(), key, v, list));
}

// How many copies per burst the bench timed a one-way or both-ways pinned
// row at: the row's `reps`, or the bench's rule (20 below 1 MiB, 5 below 64
// MiB, 1 above; bidir_pinned rows without it ran one copy per burst).
int bench_copy_reps(const json& r) {
  if (r.contains("reps")) return r.at("reps").get<int>();
  if (r.at("key") == "bidir_pinned") return 1;
  const double bytes = r.at("bytes").get<double>();
  return bytes < 1048576 ? 20 : bytes < 64.0 * 1048576 ? 5 : 1;
}

Fit fit_alpha_beta(const std::string& name, const std::vector<std::pair<double, double>>& pts) {
  Fit f;
  f.name = name;
  f.formula = "time = latency + bytes / bandwidth";
  f.points = static_cast<int>(pts.size());
  if (pts.size() < 2) return f;
  std::vector<CopyPoint> cp;
  for (const auto& [bytes, t] : pts) cp.push_back({bytes, 1, t});
  const CopyLine line = fit_copy_burst_line(cp, 0.0);
  f.values = {{"latency_us", line.latency_us}, {"bandwidth_GBps", 1e-3 / line.inv_beta}};
  f.rms_residual_pct = 100 * std::sqrt(line.sq / line.n);
  return f;
}

bool has_key(const json& doc, const std::string& key) {
  for (const auto& r : doc.at("results"))
    if (r.at("key") == key) return true;
  return false;
}

// Whether a bench run was taken with NCCL_P2P_DISABLE=1.
bool p2p_disabled_run(const json& doc) {
  const auto& env = doc.at("environment").value("env", json::object());
  return env.contains("NCCL_P2P_DISABLE") && env.at("NCCL_P2P_DISABLE") == "1";
}

// A machine run (copies or collectives), not e.g. an attention-only one.
bool machine_run(const json& doc) { return has_key(doc, "nccl_all_to_all") || has_key(doc, "h2d_pinned"); }

// The bench's interference all-to-alls run on min(GPUs, 4) ranks (4 where
// the document does not say).
int interference_ranks(const json& doc) {
  if (doc.contains("environment") && doc.at("environment").contains("gpus"))
    return std::clamp(static_cast<int>(doc.at("environment").at("gpus").size()), 2, 4);
  return 4;
}

const json* find_doc(const std::vector<std::pair<std::string, json>>& docs, bool p2p_disabled) {
  for (const auto& [name, d] : docs)
    if (machine_run(d) && p2p_disabled_run(d) == p2p_disabled) return &d;
  return nullptr;
}

// Several runs of one kind (NCCL defaults, or NCCL_P2P_DISABLE=1) merge into
// one: a later run's testcases replace an earlier run's testcases of the same
// key (e.g. a re-measured GEMM table), other keys are kept; interference rows
// are replaced pair by pair (same a, b and channel count).
std::vector<std::pair<std::string, json>> merge_runs(const std::vector<std::pair<std::string, json>>& docs) {
  std::vector<std::pair<std::string, json>> out;
  for (const auto& [name, d] : docs) {
    const bool off = p2p_disabled_run(d);
    bool attention_only = true;
    for (const auto& r : d.at("results")) attention_only = attention_only && r.at("key") == "attention_sdpa";
    auto same = std::find_if(out.begin(), out.end(), [&](const auto& o) { return p2p_disabled_run(o.second) == off && machine_run(o.second); });
    if (attention_only || same == out.end()) {
      out.emplace_back(name, d);
      continue;
    }
    // Interference rows are one testcase per pair: a later row replaces the
    // earlier one of the same pair and channel count, other pairs stay.
    auto identity = [](const json& r) {
      std::string id = r.at("key").get<std::string>();
      if (id == "interference") id += "/" + r.at("a").get<std::string>() + "/" + r.at("b").get<std::string>() + "/" + std::to_string(r.at("channels").get<int>());
      return id;
    };
    std::set<std::string> keys;
    for (const auto& r : d.at("results")) keys.insert(identity(r));
    json merged = json::array();
    for (const auto& r : same->second.at("results"))
      if (!keys.count(identity(r))) merged.push_back(r);
    for (const auto& r : d.at("results")) merged.push_back(r);
    same->second["results"] = std::move(merged);
    same->first += " + " + name;
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::string, json>> merge_bench_runs(const std::vector<std::pair<std::string, json>>& docs) { return merge_runs(docs); }

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
// What held a copy_reps burst, as the reports name it.
std::string copy_reps_gate(const std::string& gate) {
  return gate == "kernel" ? "spin kernel" : gate == "host" ? "host function" : gate == "kernel_wait" ? "kernel on another stream, waited on" : gate;
}

Calibration fit_all(const std::vector<std::pair<std::string, json>>& docs, const hw::Topology& topo, const ModelParams& base);
struct InterferenceTimes {
  double a2a_us = 0, copy_us = 0;
};
InterferenceTimes replay_interference(bool h2d, bool every, int ranks, bool p2p_off, const hw::Topology& topo, const ModelParams& p);
struct InsituTimes {
  double a2a_us, gemm_span_us;
};
std::vector<std::vector<InsituTimes>> replay_insitu_doc(const json& doc, bool p2p_off, const hw::Topology& topo, const ModelParams& p);
// The in-situ cases compare_bench scores (rows with ranks within the
// topology), in order, each with its times replayed as run (host overheads
// left out, the ranks lined up as the bench does).
struct InsituCase {
  double bytes;
  int gemm_ms;
  bool copies;
  const json* measured;
  InsituTimes sim;
};
std::vector<InsituCase> insitu_cases(const json& doc, bool p2p_off, const hw::Topology& topo, ModelParams p) {
  p.overheads.memcpy_call = p.overheads.kernel_launch = p.overheads.collective_call = Time::zero();
  p.power.straggler_share = 0;
  const auto sim = replay_insitu_doc(doc, p2p_off, topo, p);
  std::vector<InsituCase> out;
  size_t row = 0;
  for (const auto& r : doc.at("results")) {
    if (r.at("key") != "nccl_all_to_all_insitu" || r.at("ranks").get<size_t>() > topo.gpus().size()) continue;
    size_t k = 0;
    for (const auto& cs : r.at("cases"))
      out.push_back({r.at("bytes").get<double>(), cs.at("gemm_ms").get<int>(), cs.at("copies").get<bool>(), &cs, sim.at(row).at(k++)});
    ++row;
  }
  return out;
}

// The bench's all-to-all ∥ copy pair: 1 GiB on GPU 0 beside 4 all-to-alls of
// 256 MiB per rank, a rank's flow to each peer carrying 256 MiB / ranks of
// each. Each of a rank's ranks - 1 flows weighs 1/sqrt(ranks - 1) (see the
// executor): the copy weight is the copy's rate over a flow's, times that.
double copy_weight_from_rates(double a2a_us, double copy_us, int ranks) {
  const double copy_rate = 1073741824.0 / copy_us, flow_rate = 4.0 * 268435456.0 / ranks / a2a_us;
  return copy_rate / flow_rate / std::sqrt(static_cast<double>(ranks - 1));
}
}  // namespace

Calibration calibrate(const std::vector<std::pair<std::string, json>>& docs, const hw::Topology& topo, const ModelParams& base) {
  try {
    return fit_all(docs, topo, base);
  } catch (const json::exception& e) {  // a testcase row without a field the fit reads, or of the wrong type
    // The fits read merged runs, so the row may be in any of the files.
    std::string names;
    for (const auto& [name, d] : docs) names += (names.empty() ? "" : ", ") + name;
    throw InputError(SourceLocation{docs.size() == 1 ? docs.front().first : names, 0, 0},
                     fmt::format("a bench testcase is malformed ({}): re-run overlapsim-validate bench, or fix that row", e.what()));
  }
}

namespace {
// Bench replays (defined with compare_bench below), for fits that refine by simulation.
Op bench_copy(CopyKind kind, Bytes bytes, int stream = 0);
std::vector<double> replay_gated(const std::vector<Op>& lanes, int reps, const std::string& gate, int dev, const hw::Topology& topo,
                                 const ModelParams& params, std::optional<Time> busy = std::nullopt);

Calibration fit_all(const std::vector<std::pair<std::string, json>>& docs, const hw::Topology& topo, const ModelParams& base) {
  for (const auto& [name, d] : docs)
    if (!d.is_object() || d.value("schema", "") != "overlapsim.bench/v1" || !d.contains("results"))
      throw InputError(SourceLocation{name, 0, 0}, "not an overlapsim-validate bench result (schema overlapsim.bench/v1)");
  Calibration c;
  c.params = base;
  for (const auto& [name, d] : docs) c.sources.push_back(name);
  const auto runs = merge_runs(docs);
  const json* def = find_doc(runs, false);
  if (!def) {
    bool machine = false;
    for (const auto& [name, d] : docs) machine = machine || machine_run(d);
    throw InputError(SourceLocation{docs.front().first, 0, 0},
                     machine ? "calibration needs a run with NCCL defaults (no NCCL_P2P_DISABLE=1): add the bench run made without it"
                             : "calibration needs a machine run (a bench with pinned copies or NCCL collectives, e.g. the full `overlapsim-validate "
                               "bench`); these files hold neither (a --filter run or SDPA timings only can only be added to one)");
  }
  const json& d = *def;
  ModelParams& p = c.params;

  // API overheads: medians measured directly.
  auto overhead = [&](const char* key, Time& field) {
    for (const auto& r : rows(d, key)) field = Time::from_us(r.at("time_us").get<double>());
  };
  overhead("overhead_kernel_launch", p.overheads.kernel_launch);
  overhead("overhead_event_record", p.overheads.event_call);
  overhead("overhead_stream_sync_idle", p.overheads.sync_call);
  overhead("overhead_memcpy_async_pinned_return", p.overheads.memcpy_call);
  c.fits.push_back({"API overheads", "host time per call, median", {{"kernel_launch_us", p.overheads.kernel_launch.us()}, {"event_us", p.overheads.event_call.us()},
                    {"sync_us", p.overheads.sync_call.us()}, {"memcpy_async_us", p.overheads.memcpy_call.us()}}, 0, 4});

  // GPU time of an event record: 1 MiB memory kernels back to back with and
  // without an event after each (overhead_gpu_event_gap), the difference per
  // op; with an H2D copy in flight beside (`beside: h2d`), what it adds.
  {
    Fit f{"GPU time of an event record", "per op: kernels with an event after each - the same without (overhead_gpu_event_gap)", {}, 0, 0};
    std::optional<double> alone, beside_h2d, after_copy;
    for (const auto& r : rows(d, "overhead_gpu_event_gap")) {
      const std::string beside = r.value("beside", std::string("none"));
      if (r.at("op") == "h2d" && beside == "none") after_copy = r.at("gap_us").get<double>();
      if (r.at("op") != "memory_kernel") continue;
      if (beside == "none") alone = r.at("gap_us").get<double>();
      else if (beside == "h2d") beside_h2d = r.at("gap_us").get<double>();
    }
    if (alone) {
      p.overheads.event_gpu_time = Time::from_us(std::max(0.0, *alone));
      f.values.emplace_back("event_gpu_time_us", p.overheads.event_gpu_time.us());
      ++f.points;
      if (beside_h2d) {
        p.overheads.event_gpu_time_h2d = Time::from_us(std::max(0.0, *beside_h2d - *alone));
        f.values.emplace_back("event_gpu_time_h2d_us", p.overheads.event_gpu_time_h2d.us());
        ++f.points;
      }
    }
    // After a copy: H2D copies with and without an event after each.
    if (after_copy) {
      p.overheads.event_gpu_time_copy = Time::from_us(std::max(0.0, *after_copy));
      f.values.emplace_back("event_gpu_time_copy_us", p.overheads.event_gpu_time_copy.us());
      ++f.points;
    }
    if (f.points > 0) c.fits.push_back(f);
  }

  // Pinned copies on GPU 0, as the bench timed them: `reps` copies per
  // burst (the row's, or the bench's rule: 20 below 1 MiB, 5 below 64 MiB, 1
  // above) behind a spin kernel, between two events. Per copy: latency +
  // bytes / bandwidth + burst / reps, relative least squares over every size
  // (each row counts alike); the burst is what the bursts pay once: the
  // hand-off from the gate's kernel (copy_after_kernel_latency) and the
  // closing event after a copy (event_gpu_time_copy). Where the bench ran
  // copy_reps (copies per burst at 1-50 reps after a spin kernel or waiting
  // on one), the burst is fitted there (time per copy = steady(size) + burst
  // / reps) and held here; else here, from how the rows' reps change with
  // the size (before 2026-11-24 a step in the latency from 1 MiB stood in
  // for it: +1.1-1.5 us, the burst's 1/5 - 1/20).
  const int gpu0 = topo.gpus().front();
  const double route_latency_us = topo.route(topo.nearest_cpu(gpu0), gpu0).latency.us();
  // The GPU time of the event closing a burst of copies, as the model has it.
  const double close_us = (p.overheads.event_gpu_time_copy >= Time::zero() ? p.overheads.event_gpu_time_copy : p.overheads.event_gpu_time).us();
  std::optional<double> reps_burst[2];  // from copy_reps, per direction
  for (const bool d2h : {false, true}) {
    std::vector<BurstPoint> pts;
    for (const auto& r : rows(d, "copy_reps"))
      if ((r.at("gate") == "kernel" || r.at("gate") == "kernel_wait") && r.at("dir") == (d2h ? "d2h" : "h2d") && r.at("gpus")[0] == 0)
        pts.push_back({r.at("bytes").get<double>(), r.at("reps").get<double>(), r.at(d2h ? "d2h_time_us" : "h2d_time_us").get<double>()});
    const auto b = fit_burst(pts, false);
    if (!b) continue;
    reps_burst[d2h] = std::max(0.0, b->burst);
    c.fits.push_back({fmt::format("burst of copies after a kernel (copy_reps), {}", d2h ? "D2H" : "H2D"),
                      "time per copy = steady(size) + burst / reps over the rows after a spin kernel on the stream or waited on; "
                      "copy_after_kernel_latency = burst - the closing event's GPU time",
                      {{"burst_us", b->burst}, {"copy_after_kernel_latency_us", std::max(0.0, b->burst - close_us)}},
                      b->rms_pct,
                      static_cast<int>(pts.size())});
  }
  std::vector<CopyPoint> pts_dir[2];  // H2D, D2H
  for (int dir = 0; dir < 2; ++dir)
    for (const auto& r : rows(d, dir ? "d2h_pinned" : "h2d_pinned"))
      if (r.at("gpus")[0] == 0 && r.at("bytes").get<double>() > 0)
        pts_dir[dir].push_back({r.at("bytes").get<double>(), static_cast<double>(bench_copy_reps(r)), r.at("time_us").get<double>()});
  CopyLine line[2] = {fit_copy_burst_line(pts_dir[0], reps_burst[0]), fit_copy_burst_line(pts_dir[1], reps_burst[1])};
  for (int dir = 0; dir < 2; ++dir) {
    Fit f;
    f.name = std::string(dir ? "d2h_pinned" : "h2d_pinned") + " (GPU 0)";
    f.formula = reps_burst[dir] ? "time per copy = latency + bytes / bandwidth + burst / reps, the burst from copy_reps"
                                : "time per copy = latency + bytes / bandwidth + burst / reps";
    f.points = static_cast<int>(pts_dir[dir].size());
    const CopyLine& cl = line[dir];
    if (cl.ok) {
      f.values = {{"latency_us", cl.latency_us}, {"bandwidth_GBps", 1e-3 / cl.inv_beta}, {"burst_us", cl.burst_us}};
      f.rms_residual_pct = 100 * std::sqrt(cl.sq / cl.n);
    }
    c.fits.push_back(f);
  }
  if (line[0].ok) {
    p.copies.copy_engine_bandwidth = Bandwidth::from_GBps(1e-3 / line[0].inv_beta);
    p.copies.copy_latency = Time::from_us(std::max(0.0, line[0].latency_us - route_latency_us));
    p.handoff.copy_after_kernel_latency = Time::from_us(std::max(0.0, line[0].burst_us - close_us));
    // D2H's own set-up (posted writes: no completion to wait for) and rate
    // (most boxes within 0.5 % of H2D's; a 2xH200 box 4 % faster).
    if (line[1].ok) {
      p.copies.copy_latency_d2h = Time::from_us(std::max(0.0, line[1].latency_us - route_latency_us));
      p.copies.copy_engine_bandwidth_d2h = Bandwidth::from_GBps(1e-3 / line[1].inv_beta);
      p.handoff.copy_after_kernel_latency_d2h = Time::from_us(std::max(0.0, line[1].burst_us - close_us));
    }
  }
  // The burst each direction's gated copies pay, as the model has it (the
  // bidir fits below take it off the rows).
  const auto burst_us = [&](bool d2h) { return p.handoff.copy_after_kernel_latency_for(d2h).us() + (p.copies.copy_engine_bandwidth.is_unlimited() ? 0.0 : close_us); };

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
      if (r.value("host_buffer", "same") == "rotating") cold.emplace_back(r.at("bytes").get<double>(), r.at("time_us").get<double>());
      else if (r.at("bytes").get<double>() > best_bytes) {
        best_bytes = r.at("bytes").get<double>();
        gbps = r.at("GBps").get<double>();
      }
    }
    Bandwidth rate;
    if (Fit f = fit_alpha_beta(std::string(key) + ", host buffer not in the CPU's caches", cold); f.values.size() == 2 && f.values[0].second >= 0) {
      rate = Bandwidth::from_GBps(f.values[1].second);
      (d2h ? p.copies.pageable_latency_d2h : p.copies.pageable_latency) = Time::from_us(f.values[0].second);
      c.fits.push_back(f);
    } else if (gbps > 0) {
      rate = Bandwidth::from_GBps(gbps);
      c.fits.push_back({std::string(key), "bytes / time at the largest size", {{"bandwidth_GBps", gbps}}, 0, 1});
    } else {
      continue;
    }
    (d2h ? p.copies.pageable_bandwidth_d2h : p.copies.pageable_bandwidth) = rate;
  }

  // Both directions at once on one GPU (bench bidir_pinned, copies >= 64 MiB
  // on every GPU measured): per direction the median share of its engine's
  // rate a copy keeps (copy_bidir_factor, copy_bidir_factor_d2h).
  if (const auto bd = rows(d, "bidir_pinned"); !bd.empty() && !p.copies.copy_engine_bandwidth.is_unlimited()) {
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
        const double setup = p.copies.host_copy_setup(d2h, false).s() + burst_us(d2h) * 1e-6 / bench_copy_reps(r);
        share.push_back(bytes / (r.at(d2h ? "d2h_time_us" : "h2d_time_us").get<double>() * 1e-6 - setup) /
                        p.copies.copy_engine_bandwidth_for(d2h).bytes_per_s);
      }
      if (share.empty()) continue;
      const double k = std::min(1.0, median(share));
      (d2h ? p.copies.copy_bidir_factor_d2h : p.copies.copy_bidir_factor) = k;
      f.values.emplace_back(d2h ? "d2h_share" : "h2d_share", k);
      f.points += static_cast<int>(share.size());
    }
    if (!f.values.empty()) c.fits.push_back(f);
  }

  // Both ways at once per size (bench bidir_pinned with reps, copy_span,
  // copy_reps both ways behind the spin kernel with more than 5 per burst):
  // per measured size and direction, time = the longer direction's set-up +
  // bytes / (share x the engine's one-way rate) + burst / reps, the share by
  // relative least squares on 1 / share over the size's rows (every span and
  // burst size pooled), for the sizes whose bytes take 1 us or more at the
  // engine's rate; bidir_pinned's older rows of >= 16 MiB without reps
  // join a size where the bench has rows with reps. The table takes the
  // place of the tiers it grew from (2026-11-23/24: below 1 MiB ~0.7, 4-16
  // MiB ~0.94, >= 64 MiB the large share, with 1 MiB between them and 5-9 %
  // fast): over the 13 single-GPU leases' second runs, replayed with the
  // first run's calibration, the held rows over 5 % went from 313 to 235.
  // Benches without rows with reps (the 2x and 4xH200 boxes) keep the large
  // share alone (copy_bidir_table).
  if (!p.copies.copy_engine_bandwidth.is_unlimited()) {
    std::map<double, std::vector<std::pair<double, std::array<double, 2>>>> by_size;  // bytes -> (reps, times)
    bool with_reps = false;
    for (const char* key : {"bidir_pinned", "copy_span"})
      for (const auto& r : rows(d, key)) {
        if (r.at("gpus")[0] != 0 || r.value("dir", "both") != "both") continue;
        const double b = r.at("bytes").get<double>();
        if (b <= 0 || (!r.contains("reps") && b < 16.0 * 1048576)) continue;
        with_reps = with_reps || r.contains("reps");
        by_size[b].push_back({static_cast<double>(bench_copy_reps(r)), {r.at("h2d_time_us").get<double>(), r.at("d2h_time_us").get<double>()}});
      }
    // copy_reps both ways behind the spin kernel (the burst fitted above), more than 5 per burst.
    for (const auto& r : rows(d, "copy_reps"))
      if (r.at("gpus")[0] == 0 && r.value("dir", "") == "both" && r.value("gate", "") == "kernel" && r.at("reps").get<int>() > 5)
        by_size[r.at("bytes").get<double>()].push_back({r.at("reps").get<double>(), {r.at("h2d_time_us").get<double>(), r.at("d2h_time_us").get<double>()}});
    const auto own_us = [&](bool d2h, double bytes) { return route_latency_us + p.copies.host_copy_setup(d2h, false).us(); };
    const auto longer_us = [&](double bytes) { return std::max(own_us(false, bytes), own_us(true, bytes)); };
    std::vector<std::array<double, 3>> table;
    for (const auto& [b, rs] : by_size) {
      // A share means something where the bytes take a while: from 1 us at
      // the engine's rate (64 KiB up); below, the smallest fitted size's holds.
      if (b / p.copies.copy_engine_bandwidth.bytes_per_s < 1e-6) continue;
      std::array<double, 3> e{b, 1, 1};
      bool ok = true;
      for (const bool d2h : {false, true}) {
        const double a = b / p.copies.copy_engine_bandwidth_for(d2h).bytes_per_s * 1e6;
        double num = 0, den = 0;
        for (const auto& [reps, t] : rs) {
          num += a * (t[d2h] - longer_us(b) - burst_us(d2h) / reps) / (t[d2h] * t[d2h]);
          den += a * a / (t[d2h] * t[d2h]);
        }
        if (num > 0) e[d2h ? 2 : 1] = std::clamp(den / num, 0.05, 1.0);
        else ok = false;
      }
      if (ok) table.push_back(e);
    }
    if (with_reps && !table.empty()) {
      // The closed form above takes each direction's share over its whole
      // copy; the model gives it only while the other direction copies (the
      // faster one's end leaves the slower alone at its full rate: h100x1-i's
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
      c.fits.push_back({"both directions at once per size (bidir_pinned, copy_span, copy_reps)",
                        "per measured size and direction, time = the longer set-up + bytes / (share x the engine's one-way rate) + burst / reps, "
                        "relative least squares on 1 / share over the size's rows, then refined by replaying them (the share holds while the other "
                        "direction copies): eight rounds of share x the geometric mean of simulated / measured; rms over the replayed rows (copy_bidir_table)",
                        {{"sizes", static_cast<double>(table.size())}, {"rms_pct", n ? 100 * std::sqrt(sq / n) : 0.0}},
                        0,
                        n});
    }
  }

  // Copies per gated burst (copy_reps): was the ~1 us step in the per-copy
  // latency from 1 MiB (copy_step_latency, before 2026-11-24) the size's, or
  // the bench's, whose one-way rows time 20 copies per sample below 1 MiB
  // and 5 from it? Per gate and direction, time - bytes / the engine's rate
  // = latency + burst / reps + step [from 1 MiB]: `burst_us` a burst's
  // one-off cost, `step_us` the step at equal reps (0.1-0.4 us: the model
  // has none). Reported only.
  for (const char* gate : {"kernel", "host", "kernel_wait"})
    for (const bool d2h : {false, true}) {
      if (p.copies.copy_engine_bandwidth.is_unlimited()) break;
      std::vector<BurstPoint> pts;
      for (const auto& r : rows(d, "copy_reps"))
        if (r.at("gate") == gate && r.at("dir") == (d2h ? "d2h" : "h2d") && r.at("gpus")[0] == 0) {
          const double bytes = r.at("bytes").get<double>();
          pts.push_back({0, r.at("reps").get<double>(), r.at(d2h ? "d2h_time_us" : "h2d_time_us").get<double>(),
                         bytes / p.copies.copy_engine_bandwidth_for(d2h).bytes_per_s * 1e6, bytes >= 1048576});
        }
      const auto b = fit_burst(pts, true);
      if (!b) continue;
      c.fits.push_back({fmt::format("copies per gated burst (copy_reps), {}, after a {}", d2h ? "D2H" : "H2D", copy_reps_gate(gate)),
                        "time per copy - bytes / the engine's rate = latency + burst / reps + step [bytes >= 1 MiB], relative least squares (reported only)",
                        {{"latency_us", b->steady.at(0)}, {"burst_us", b->burst}, {"step_us", b->step}},
                        b->rms_pct,
                        static_cast<int>(pts.size())});
    }

  // One copy after a kernel of 5 us-3 ms (handoff_wait): per direction and
  // mode the mean over the rows of the time less the copy's set-up, its
  // bytes at the engine's rate and the closing event: the hand-off as a
  // workload's kernels meet it, against copy_reps' gate. Reported only.
  if (!p.copies.copy_engine_bandwidth.is_unlimited())
    for (const char* mode : {"same", "wait"})
      for (const bool d2h : {false, true}) {
        double sum = 0;
        int n = 0;
        for (const auto& r : rows(d, "handoff_wait"))
          if (r.at("mode") == mode && r.at("dir") == (d2h ? "d2h" : "h2d") && r.at("gpus")[0] == 0) {
            const double bytes = r.at("bytes").get<double>();
            sum += r.at("time_us").get<double>() - p.copies.host_copy_setup(d2h, false).us() - route_latency_us -
                   bytes / p.copies.copy_engine_bandwidth_for(d2h).bytes_per_s * 1e6 - close_us;
            ++n;
          }
        if (n == 0) continue;
        c.fits.push_back({fmt::format("one copy after a kernel of 5 us-3 ms (handoff_wait), {}, {}", d2h ? "D2H" : "H2D",
                                      mode[0] == 's' ? "on its stream" : "waited on"),
                          "the mean over the rows of time - set-up - bytes / the engine's rate - the closing event (reported only)",
                          {{"handoff_us", sum / n}, {"copy_after_kernel_latency_us", p.handoff.copy_after_kernel_latency_for(d2h).us()}},
                          0,
                          n});
      }

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
      for (const auto& [bytes, steady] : b->steady) {
        std::string name = format_bytes(bytes);
        std::erase(name, ' ');
        f.values.emplace_back(fmt::format("steady_{}_us", name), steady);
      }
      c.fits.push_back(f);
    }
  }

  // Kernels per gated burst after what (kernel_reps): per `after` (a host
  // function, a kernel, a copy on the stream, a copy waited on), time per
  // kernel = steady + burst / reps (reported), and from them the hand-off
  // from a copy to the compute engine against a burst's closing event.
  {
    std::map<std::string, std::vector<BurstPoint>> by_after;
    std::vector<BurstPoint> after_copy_pts;  // after a copy, on the stream or waited on
    for (const auto& r : rows(d, "kernel_reps")) {
      const BurstPoint pt{0, r.at("reps").get<double>(), r.at("time_us").get<double>()};
      by_after[r.at("after").get<std::string>()].push_back(pt);
      if (r.at("after") == "copy" || r.at("after") == "copy_wait") after_copy_pts.push_back(pt);
    }
    // The hand-off from a copy to the compute engine
    // (kernel_after_copy_latency): the burst after a copy, on the stream or
    // waited on (one fit over both), less the burst after a host function
    // (its closing event).
    if (!after_copy_pts.empty() && by_after.contains("host")) {
      const auto after_copy = fit_burst(after_copy_pts, false), after_host = fit_burst(by_after.at("host"), false);
      if (after_copy && after_host) {
        p.handoff.kernel_after_copy_latency = Time::from_us(std::max(0.0, after_copy->burst - after_host->burst));
        c.fits.push_back({"kernel after a copy (kernel_reps)",
                          "burst of kernels after a copy (on the stream or waited on) - burst after a host function (steady + burst / reps each)",
                          {{"kernel_after_copy_latency_us", p.handoff.kernel_after_copy_latency.us()}},
                          after_copy->rms_pct,
                          static_cast<int>(after_copy_pts.size() + by_after.at("host").size())});
      }
    }
    for (const auto& [after, pts] : by_after) {
      const auto b = fit_burst(pts, false);
      if (!b) continue;
      const std::string what = after == "host"     ? "host function"
                               : after == "kernel"   ? "spin kernel"
                               : after == "copy"     ? "4 KiB H2D copy on its stream"
                               : after == "copy_wait" ? "4 KiB H2D copy on another stream, waited on"
                                                      : after;
      c.fits.push_back({fmt::format("kernels per gated burst (kernel_reps), after a {}", what),
                        "time per 1 MiB memory kernel = steady + burst / reps, relative least squares (reported only)",
                        {{"steady_us", b->steady.at(0)}, {"burst_us", b->burst}},
                        b->rms_pct,
                        static_cast<int>(pts.size())});
    }
  }

  // The hand-off's phase (handoff_phase_min / _max), where the bench kept
  // every sample (samples_us): what each burst of up to 5 kernels paid for
  // its hand-off after a copy, on the stream or waited on (kernel_reps),
  // (the sample - the median of the same reps after a host function) x reps;
  // the 2nd and 98th percentiles. The kernels' own time holds to ~0.1 us;
  // copies' (copy_after_idle) wander on some leases by more than the phase
  // (h100x1-n: bursts 30 us slow), and where they hold they give the same
  // phase (0.2-7.4 us against 0.1-7.9 from the kernels, four leases).
  {
    std::vector<double> paid;
    const std::vector<json> kernels = rows(d, "kernel_reps");
    for (const auto& r : kernels) {
      if ((r.at("after") != "copy" && r.at("after") != "copy_wait") || r.at("reps").get<int>() > 5 || !r.contains("samples_us")) continue;
      const auto host = std::find_if(kernels.begin(), kernels.end(), [&](const json& h) {
        return h.at("after") == "host" && h.at("reps") == r.at("reps") && h.at("gpus") == r.at("gpus") && h.contains("samples_us");
      });
      if (host == kernels.end()) continue;
      const double reps = r.at("reps").get<double>();
      const double host_us = median(host->at("samples_us").get<std::vector<double>>());
      for (const double t : r.at("samples_us").get<std::vector<double>>()) paid.push_back((t - host_us) * reps);
    }
    if (paid.size() >= 50) {
      std::sort(paid.begin(), paid.end());
      const auto pct = [&](double q) {  // linear between the nearest ranks
        const double x = q * static_cast<double>(paid.size() - 1);
        const size_t i = static_cast<size_t>(x);
        return i + 1 < paid.size() ? paid[i] + (x - static_cast<double>(i)) * (paid[i + 1] - paid[i]) : paid[i];
      };
      const double lo = std::max(0.0, pct(0.02)), hi = std::max(lo, pct(0.98));
      p.handoff.handoff_phase_min = Time::from_us(lo);
      p.handoff.handoff_phase_max = Time::from_us(hi);
      double mean = 0;
      for (const double x : paid) mean += x / static_cast<double>(paid.size());
      c.fits.push_back({"the hand-off's phase (kernel_reps after a copy, on the stream or waited on; every sample)",
                        "per burst of up to 5: (sample - the median after a host function at the same reps) x reps; min, max = the 2nd, 98th percentiles",
                        {{"handoff_phase_min_us", lo}, {"handoff_phase_max_us", hi}, {"median_us", pct(0.5)}, {"mean_us", mean},
                         {"copy_after_kernel_latency_us", p.handoff.copy_after_kernel_latency.us()}},
                        0,
                        static_cast<int>(paid.size())});
    }
  }

  // Host-side aggregate at each count of GPUs copying at once: the host
  // bridge's limit while that many H2D (D2H) copies run (host_h2d_aggregate,
  // host_d2h_aggregate; the topology's throughput_from_host / _to_host stays
  // the ceiling). Counts 1..n, each once.
  for (const bool h2d : {true, false}) {
    const std::string key = h2d ? "multi_h2d_pinned" : "multi_d2h_pinned";
    const std::string field = h2d ? "host_h2d_aggregate" : "host_d2h_aggregate";
    Fit f{h2d ? "host aggregate" : "host aggregate, D2H",
          fmt::format("multi-GPU pinned {}, aggregate at each GPU count ({})", h2d ? "H2D" : "D2H", field), {}, 0, 0};
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

  // GEMM efficiency against the topology's bf16 peak, per shape. Rows with
  // `burst_time_us` (bench since 2026-11-22) give the cool GPU's rate
  // directly; older rows only the back-to-back one, which the sustained-load
  // fit below turns into a burst rate. The median (for other shapes) follows.
  struct GemmRow {
    int m, n, k;
    double eff;
    bool burst;
  };
  std::vector<GemmRow> gemm_rows;
  std::vector<double> steady_over_burst;
  const std::vector<WindowRow> window_rows = gemm_window_rows(d);
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

  double sustained_scale = 1;
  // Sustained load (bench gemm_sustained): steady GEMM time at duty cycles
  // 1, 0.75, 0.5, 0.25 against the burst time; the time constant from the
  // 100 % run's GEMM-by-GEMM times (the GPU starts cool).
  if (const auto sus = rows(d, "gemm_sustained"); !sus.empty()) {
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
    if (full && slow.count(1.0)) {
      const double theta = std::max(0.0, slow[1.0] / base_sd - 1);
      double u0 = 0.75;
      if (slow.count(0.75) && theta > 0) {
        const double r = std::clamp((slow[0.75] / base_sd - 1) / theta, 0.0, 0.99);
        u0 = r > 0 ? (0.75 - r) / (1 - r) : 0.75;
      }
      // Time constant: least squares over a grid, the GEMMs' start times as given.
      const auto& t_us = full->at("time_us");
      const auto& start = full->at("start_ms");
      const double burst = full->at("burst_time_us").get<double>() * base_sd;
      double best_tau = 50, best_err = 1e300;
      for (double tau = 2; tau <= 400; tau *= 1.05) {
        double err = 0;
        for (size_t i = 1; i < t_us.size(); ++i) {
          const double u = 1 - std::exp(-start[i].get<double>() / tau);
          const double pred = burst * (1 + theta * std::clamp((u - u0) / (1 - u0), 0.0, 1.0));
          err += std::pow(pred - t_us[i].get<double>(), 2);
        }
        if (err < best_err) {
          best_err = err;
          best_tau = tau;
        }
      }
      p.power.sustained_slowdown = theta;
      p.power.sustained_duty = u0;
      p.power.sustained_time_constant = Time::from_ms(best_tau);
      Fit fast{"sustained load (power)", "steady/burst GEMM time vs duty cycle; time constant by least squares",
               {{"slowdown_at_full_duty", theta}, {"duty_threshold", u0}, {"time_constant_ms", best_tau}},
               100 * std::sqrt(best_err / static_cast<double>(t_us.size())) / burst, static_cast<int>(t_us.size())};
      // The slow term (bench gemm_sustained_long: seconds at full duty, where
      // the clock dips again about every second): with the fast term fixed,
      // the slow slowdown by least squares for each time constant on a grid.
      const auto lr = rows(d, "gemm_sustained_long");
      // For the slow term's time constant tau2: its slowdown by least squares
      // with the fast term fixed, and the rms residual (% of burst).
      auto slow_at = [&](double tau2) -> std::pair<double, double> {
        const json& L = lr.front();
        const auto& lt = L.at("time_us");
        const auto& ls = L.at("start_ms");
        // Its own rested burst time (it may come from another GPU of the kind).
        const double lb = L.at("burst_time_us").get<double>();
        const double th = p.power.sustained_slowdown;
        double num = 0, den = 0;
        for (size_t i = 1; i < lt.size(); ++i) {
          const double ti = ls[i].get<double>(), a = lb * (1 + th * activation(ti, best_tau, u0)), bb = lb * activation(ti, tau2, u0);
          num += bb * (lt[i].get<double>() - a);
          den += bb * bb;
        }
        const double th2 = den > 0 ? std::max(0.0, num / den) : 0.0;
        double err = 0;
        for (size_t i = 1; i < lt.size(); ++i) {
          const double ti = ls[i].get<double>();
          err += std::pow(lb * (1 + th * activation(ti, best_tau, u0) + th2 * activation(ti, tau2, u0)) - lt[i].get<double>(), 2);
        }
        return {th2, 100 * std::sqrt(err / static_cast<double>(lt.size())) / lb};
      };
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
        return Fit{"sustained load, slow term", "seconds at full duty (gemm_sustained_long): extra slowdown and its time constant, least squares",
                   {{"slow_slowdown", p.power.sustained_slow_slowdown},
                    {"slow_time_constant_ms", p.power.sustained_slow_time_constant.ms()},
                    {"mean_after_1s_over_burst", L.at("mean_time_us").get<double>() / L.at("burst_time_us").get<double>()}},
                   slow_rms, static_cast<int>(L.at("time_us").size())};
      };
      if (!lr.empty()) {
        double best_t2 = 1000, best_e2 = 1e300;
        for (double tau2 : tau2_grid)
          if (const double e = slow_at(tau2).second; e < best_e2) best_e2 = e, best_t2 = tau2;
        set_slow(best_t2);
        slow_fit = slow_fit_of();
      }
      // Where the GEMM table has window means (>= 200 ms of each shape after
      // >= 250 ms of it; bench since 2026-11-23), the full-duty slowdown is
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
        fast.formula = "full-duty slowdown: the GEMM table's window means (median over shapes of (mean / burst - 1 - the slow term) / the "
                       "fast term's activation); threshold and time constant from the steady/burst GEMM time vs duty cycle";
        fast.values.front().second = p.power.sustained_slowdown;
        fast.values.emplace_back("series_slowdown_at_full_duty", theta);
        fast.values.emplace_back("table_windows", static_cast<double>(window_rows.size()));
        if (slow_fit)
          slow_fit->formula = "seconds at full duty (gemm_sustained_long): extra slowdown by least squares; its time constant the one "
                              "leaving the least rms over the long series and the GEMM table's windows together";
      }
      // The GEMM table (and SDPA's timings) are taken back to back for
      // seconds, i.e. at full duty: the model's efficiencies are the burst
      // ones, which the sustained-load model then slows down again.
      for (auto& g : gemm_rows)
        if (!g.burst) g.eff = std::min(1.0, g.eff * (1 + p.power.sustained_slowdown));
      sustained_scale = 1 + p.power.sustained_slowdown;
      c.fits.push_back(fast);
      if (slow_fit) c.fits.push_back(*slow_fit);
    }
  }

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
    double sq = 0;
    for (double e : eff) sq += std::pow((m - e) / e, 2);
    p.gemm.gemm_efficiency = m;
    c.fits.push_back({"GEMM bf16", burst == static_cast<int>(eff.size())
                                       ? "burst (rested GPU, clock up) achieved / peak per shape (gemm_shapes); the median for other shapes"
                                       : "achieved / peak per shape (gemm_shapes; back-to-back rates times 1 + sustained slowdown); the median for other shapes",
                      {{"efficiency", m}, {"min", *std::min_element(eff.begin(), eff.end())}, {"max", *std::max_element(eff.begin(), eff.end())}},
                      100 * std::sqrt(sq / static_cast<double>(eff.size())), static_cast<int>(eff.size())});
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
                        "for shapes the table lacks: efficiency / (1 + m0/m + n0/n + k0/k + pow2_m [m a power of two]), least squares on 1/efficiency over the table",
                        {{"efficiency", g->efficiency}, {"m0", g->m0}, {"n0", g->n0}, {"k0", g->k0}, {"pow2_m", g->pow2_m},
                         {"leave_one_out_median_pct", loo.empty() ? 0.0 : median(loo)},
                         {"leave_one_out_worst_pct", loo.empty() ? 0.0 : *std::max_element(loo.begin(), loo.end())}},
                        100 * std::sqrt(res_sq / static_cast<double>(res.size())), static_cast<int>(res.size())});
    }
    if (!steady_over_burst.empty())
      c.fits.push_back({"GEMM table under load",
                        "per shape: time after >= 250 ms back to back (the mean over >= 200 ms where the bench has it) / burst time (a check "
                        "on the sustained-load fit)",
                        {{"median", median(steady_over_burst)},
                         {"min", *std::min_element(steady_over_burst.begin(), steady_over_burst.end())},
                         {"max", *std::max_element(steady_over_burst.begin(), steady_over_burst.end())}},
                        0, static_cast<int>(steady_over_burst.size())});
  }

  // The same GEMM under sustained load with H2D copies beside it (bench
  // gemm_sustained_copy): a check that copies do not add to the load that
  // lowers the clock (the model has no such term). Reported, not fitted.
  if (const auto cp = rows(d, "gemm_sustained_copy"); !cp.empty()) {
    std::map<std::pair<std::string, double>, double> steady;  // (copy, duty) -> steady time
    for (const auto& r : cp) steady[{r.at("copy").get<std::string>(), r.at("duty").get<double>()}] = r.at("steady_time_us").get<double>();
    Fit f{"sustained load with copies", "steady GEMM time with H2D copies running / without, per duty cycle (not a model term)", {}, 0,
          static_cast<int>(cp.size())};
    for (const auto& [key, t] : steady) {
      if (key.first == "none") continue;
      auto alone = steady.find({"none", key.second});
      if (alone == steady.end() || alone->second <= 0) continue;
      f.values.emplace_back(fmt::format("{}_duty_{:.2f}", key.first, key.second), t / alone->second);
    }
    if (!f.values.empty()) c.fits.push_back(f);
  }

  // Memory-bound kernels (bench memory_kernel: the copy kernel `run`
  // realises), sizes past the L2 cache (>= 64 MiB): time = latency + bytes /
  // (efficiency x the topology's HBM bandwidth).
  if (const auto mk = rows(d, "memory_kernel"); !mk.empty()) {
    const auto& hbm = topo.node(gpu0).gpu.hbm_bandwidth;
    std::vector<std::pair<double, double>> pts;
    std::vector<std::pair<std::string, double>> loaded;
    for (const auto& r : mk) {
      const double bytes = r.at("hbm_bytes").get<double>();
      if (bytes >= 64.0 * 1048576) pts.emplace_back(bytes, r.at("time_us").get<double>());
      if (r.contains("loaded_time_us"))
        loaded.emplace_back(fmt::format("loaded_over_alone_{}MiB", static_cast<int64_t>(bytes / 1048576)), r.at("loaded_time_us").get<double>() / r.at("time_us").get<double>());
    }
    Fit f = fit_alpha_beta("memory-bound kernels", pts);
    if (hbm && f.values.size() == 2) {
      p.memory.hbm_latency = Time::from_us(f.values[0].second);
      p.memory.hbm_efficiency = std::clamp(f.values[1].second * 1e9 / hbm->bytes_per_s, 1e-3, 1.0);
      f.formula = "time = latency + HBM bytes / (efficiency x HBM bandwidth), >= 64 MiB; loaded = between GEMMs under sustained load";
      f.values.emplace_back("efficiency", p.memory.hbm_efficiency);
      for (const auto& kv : loaded) f.values.push_back(kv);
      c.fits.push_back(f);
    }
  }

  // Attention (validate/attention_bench.py: PyTorch SDPA) from any document:
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

  // NCCL all-to-all. Where the channels bind (4-16 channels, >= 4 MiB, the
  // largest rank count): time = latency + outgoing bytes / (channels x
  // per-channel bandwidth), fitted jointly. With NCCL's default channels the
  // rank's whole traffic binds: its ceiling is the busbw at the largest size.
  {
    int ranks = 0;
    for (const auto& r : rows(d, "nccl_all_to_all")) ranks = std::max(ranks, r.at("ranks").get<int>());
    std::vector<std::pair<double, double>> pts;  // (outgoing bytes per channel, time)
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

  // The NVLink wake-up (bench nccl_all_to_all_insitu, NCCL defaults): the
  // all-to-all after >= 30 ms of GEMMs less the same after <= 8 ms, no
  // copies beside; the median over sizes. Where the rows hold no such pair
  // it stays off.
  if (const json* doc = find_doc(runs, false)) {
    // Beside copies: the same case with copies less without, after <= 8 ms
    // (no wake-up in either).
    std::vector<double> steps, beside;
    for (const auto& r : rows(*doc, "nccl_all_to_all_insitu")) {
      std::vector<double> fast, slow;
      std::map<int, std::pair<double, double>> short_by_ms;  // gemm_ms <= 8 -> (without, with)
      for (const auto& k : r.at("cases")) {
        const bool copies = k.at("copies").get<bool>(), short_compute = k.at("gemm_ms").get<double>() <= 8;
        const double t = k.at("time_us").get<double>();
        if (!copies) (short_compute ? fast : slow).push_back(t);
        if (short_compute) (copies ? short_by_ms[k.at("gemm_ms").get<int>()].second : short_by_ms[k.at("gemm_ms").get<int>()].first) = t;
      }
      if (!fast.empty() && !slow.empty()) steps.push_back(median(slow) - median(fast));
      for (const auto& [ms, t] : short_by_ms)
        if (t.first > 0 && t.second > 0) beside.push_back(t.second - t.first);
    }
    if (!beside.empty()) {
      p.nvlink.nvlink_copy_latency = Time::from_us(std::max(0.0, median(beside)));
      c.fits.push_back({"NVLink beside copies", "all-to-all with H2D copies beside - without, after <= 8 ms of GEMMs, median over sizes and cases",
                        {{"copy_latency_us", p.nvlink.nvlink_copy_latency.us()}, {"min_us", *std::min_element(beside.begin(), beside.end())},
                         {"max_us", *std::max_element(beside.begin(), beside.end())}},
                        0, static_cast<int>(beside.size())});
    }
    if (!steps.empty()) {
      p.nvlink.nvlink_wake_latency = Time::from_us(std::max(0.0, median(steps)));
      c.fits.push_back({"NVLink wake-up", "all-to-all after >= 30 ms of GEMMs - after <= 8 ms (no copies beside), median over sizes; after "
                        "nvlink_wake_after without NVLink collective traffic",
                        {{"wake_latency_us", p.nvlink.nvlink_wake_latency.us()}, {"min_us", *std::min_element(steps.begin(), steps.end())},
                         {"max_us", *std::max_element(steps.begin(), steps.end())}},
                        0, static_cast<int>(steps.size())});
    }
  }

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
      c.fits.push_back({"ranks apart under the power cap", "mean arrival skew / 2 / the segment's compute time (bench nccl_barrier_skew, loaded), median over rows and runs",
                        {{"straggler_share", p.power.straggler_share}, {"min", *std::min_element(shares.begin(), shares.end())},
                         {"max", *std::max_element(shares.begin(), shares.end())}, {"rested_median", rested.empty() ? 0.0 : median(rested)}},
                        0, static_cast<int>(shares.size())});
    }
  }

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
                      {{"clock_share", median(shares)}, {"min", *std::min_element(shares.begin(), shares.end())},
                       {"max", *std::max_element(shares.begin(), shares.end())}},
                      0, static_cast<int>(shares.size())});
  }

  // The NVLink wake-up again, by simulation: the measured step (after >=
  // 30 ms of GEMMs less after <= 8 ms) also holds the clock's effect on the
  // all-to-all, which the model gives by itself (comm_clock_share, the
  // sustained-load state the samples leave): the latency is the median over
  // sizes of the measured step less the step the replay as run gives
  // without a wake-up. The raw step counted the clock twice: 16 MiB rows
  // (base ~50 us, step 97) replayed 8-11 % slow after 30-100 ms, 80 MiB
  // (base ~165 us, step 118-123) within 5 %.
  if (const json* doc = find_doc(runs, false); doc && p.nvlink.nvlink_wake_latency > Time::zero()) {
    ModelParams q = p;
    q.nvlink.nvlink_wake_latency = Time::zero();
    struct Step {
      std::vector<double> fast, slow, sim_fast, sim_slow;
    };
    std::map<double, Step> by_size;
    for (const InsituCase& k : insitu_cases(*doc, false, topo, q))
      if (!k.copies) {
        Step& st = by_size[k.bytes];
        (k.gemm_ms <= 8 ? st.fast : st.slow).push_back(k.measured->at("time_us").get<double>());
        (k.gemm_ms <= 8 ? st.sim_fast : st.sim_slow).push_back(k.sim.a2a_us);
      }
    std::vector<double> steps;
    for (const auto& [bytes, st] : by_size)
      if (!st.fast.empty() && !st.slow.empty())
        steps.push_back((median(st.slow) - median(st.fast)) - (median(st.sim_slow) - median(st.sim_fast)));
    if (!steps.empty()) {
      const double raw = p.nvlink.nvlink_wake_latency.us();
      p.nvlink.nvlink_wake_latency = Time::from_us(std::max(0.0, median(steps)));
      for (auto& f : c.fits)
        if (f.name == "NVLink wake-up") {
          f.formula = "(all-to-all after >= 30 ms of GEMMs - after <= 8 ms, no copies beside) - the same step replayed as run without a "
                      "wake-up (the clock's share), median over sizes; after nvlink_wake_after without NVLink collective traffic";
          f.values = {{"wake_latency_us", p.nvlink.nvlink_wake_latency.us()},
                      {"min_us", *std::min_element(steps.begin(), steps.end())},
                      {"max_us", *std::max_element(steps.begin(), steps.end())},
                      {"raw_step_us", raw}};
        }
    }
  }

  // Compute beside an awake NVLink (ModelParams::nvlink_awake_slowdown):
  // where both transports' in-situ runs hold the GEMMs' span, the cases
  // after <= 8 ms of GEMMs without copies (the link awake throughout over
  // NVLink: its last all-to-all 28-35 ms before), per size and case the
  // measured span over NVLink / through host memory, over the same ratio
  // replayed as run without the term; the median less one.
  {
    const json* nv = find_doc(runs, false);
    const json* off = find_doc(runs, true);
    // (bytes, gemm_ms) -> (measured span, replayed span) of the cases used.
    auto spans = [&](const json& doc, bool p2p_off) {
      std::map<std::pair<double, int>, std::pair<double, double>> out;
      bool any = false;
      for (const auto& r : rows(doc, "nccl_all_to_all_insitu"))
        for (const auto& k : r.at("cases")) any = any || k.contains("gemm_span_us");
      if (!any) return out;
      ModelParams q = p;
      q.nvlink.nvlink_awake_slowdown = 0;
      for (const InsituCase& k : insitu_cases(doc, p2p_off, topo, q))
        if (!k.copies && k.gemm_ms <= 8 && k.measured->contains("gemm_span_us"))
          out[{k.bytes, k.gemm_ms}] = {k.measured->at("gemm_span_us").get<double>(), k.sim.gemm_span_us};
      return out;
    };
    if (nv && off) {
      const auto sn = spans(*nv, false), so = spans(*off, true);
      std::vector<double> ratios;
      for (const auto& [key, t] : sn)
        if (const auto o = so.find(key); o != so.end() && o->second.second > 0)
          ratios.push_back((t.first / o->second.first) / (t.second / o->second.second));
      if (!ratios.empty()) {
        p.nvlink.nvlink_awake_slowdown = std::max(0.0, median(ratios) - 1);
        c.fits.push_back({"compute beside an awake NVLink",
                          "GEMMs' span after <= 8 ms over NVLink / through host memory (bench nccl_all_to_all_insitu, no copies), over the "
                          "same ratio replayed without the term; the median less one",
                          {{"nvlink_awake_slowdown", p.nvlink.nvlink_awake_slowdown},
                           {"min", *std::min_element(ratios.begin(), ratios.end()) - 1},
                           {"max", *std::max_element(ratios.begin(), ratios.end()) - 1}},
                          0, static_cast<int>(ratios.size())});
      }
    }
  }

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
      c.fits.push_back({"interference", "all-to-all slowdown = base + per_channel x channels; GEMM slowdown = mean",
                        {{"comm_base", p.interference.comm_slowdown_base}, {"comm_per_channel", p.interference.comm_slowdown_per_channel}, {"gemm_slowdown", p.interference.gemm_slowdown_base}},
                        0, static_cast<int>(comm.size())});
    }
    if (copies) p.interference.gemm_slowdown_per_copy = copy_slow / copies;
  }

  // The host-memory transport (a run with NCCL_P2P_DISABLE=1): a rank's
  // ceiling, and how copy-engine DMA shares a PCIe link with it.
  if (const json* off = find_doc(runs, true)) {
    int ranks = 0;
    for (const auto& r : rows(*off, "nccl_all_to_all")) ranks = std::max(ranks, r.at("ranks").get<int>());
    double bytes = 0, busbw = 0;
    for (const auto& r : rows(*off, "nccl_all_to_all"))
      if (r.at("ranks").get<int>() == ranks && r.at("channels").get<int>() == 0 && r.at("bytes").get<double>() >= bytes) {
        bytes = r.at("bytes").get<double>();
        busbw = r.at("busbw_GBps").get<double>();
      }
    Fit f{"NCCL through host memory", "rank ceiling = busbw at the largest size; copy weight from the rates = H2D rate / an all-to-all flow's rate when together / sqrt(peers) (where the fit by simulation below runs, its start)", {}, 0, 0};
    if (busbw > 0) {
      p.nccl.nccl_host_rank_bandwidth = Bandwidth::from_GBps(busbw);
      f.values.emplace_back("rank_ceiling_GBps", busbw);
      ++f.points;
    }
    const int a2a_ranks = interference_ranks(*off);
    for (const auto& r : rows(*off, "interference"))
      if (r.at("a") == "all_to_all" && r.at("b") == "h2d") {
        p.interference.copy_weight = copy_weight_from_rates(r.at("a_together_us").get<double>(), r.at("b_together_us").get<double>(), a2a_ranks);
        f.values.emplace_back("copy_weight_from_rates", p.interference.copy_weight);
        ++f.points;
      }
    if (f.points) c.fits.push_back(f);
  }

  // Measured collective tables: time against bytes per rank, per collective,
  // rank count, transport and channel count (0: NCCL's choice) (the median where a
  // size was measured more than once; made non-decreasing by pooling, so that no size
  // looks faster than a smaller one).
  {
    Fit f{"NCCL collective tables", "time at each measured size and channel count (used inside one host, nearest rank count); 1 GiB at NCCL's default channels", {}, 0, 0};
    p.nccl.nccl_tables.clear();
    for (const bool off : {false, true}) {
      const json* doc = find_doc(runs, off);
      if (!doc) continue;
      for (const auto coll : kTableColls) {
        const std::string key = std::string("nccl_") + table_coll_name(coll);
        std::map<std::pair<int, int>, std::map<double, std::vector<double>>> by_ranks;  // (channels, ranks)
        for (const auto& r : rows(*doc, key))
          by_ranks[{r.at("channels").get<int>(), r.at("ranks").get<int>()}][r.at("bytes").get<double>()].push_back(r.at("time_us").get<double>() * 1e-6);
        for (const auto& [chn, sizes] : by_ranks) {
          const auto [ch, n] = chn;
          NcclTable t{coll, n, off, {}, ch};
          // Non-decreasing by pooling adjacent violators: where a larger size
          // measured faster than a smaller one (launch-latency noise), both
          // take their mean instead of the later one being raised.
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
          auto sz = sizes.begin();
          for (const auto& [mean, count] : blocks)
            for (int i = 0; i < count; ++i, ++sz) t.points.emplace_back(sz->first, mean);
          if (ch == 0) f.values.emplace_back(fmt::format("{}{}_{}r_1GiB_us", table_coll_name(coll), off ? "_host" : "", n), t.time_at(1073741824.0) * 1e6);
          f.points += static_cast<int>(t.points.size());
          p.nccl.nccl_tables.push_back(std::move(t));
        }
      }
    }
    if (f.points) c.fits.push_back(f);
  }

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
          "per direction: copy weight and the all-to-all's link cost per byte, least squares over both measured times of each pair (one GPU copying, every GPU; every GPU alone where the host side does not bind it)",
          {}, 0, 0};
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
      if (pairs.size() == 2 && agg.size() >= static_cast<size_t>(ranks) &&
          agg[static_cast<size_t>(ranks) - 1].GBps() >= 0.98 * ranks * agg[0].GBps())
        pairs.erase(pairs.begin());
      double& w = h2d ? p.interference.copy_weight : p.interference.copy_weight_d2h;
      double& cost = h2d ? p.interference.host_transport_cost_h2d : p.interference.host_transport_cost_d2h;
      auto residual = [&](const Eigen::Vector2d& x) {
        w = std::exp(x(0));
        cost = std::exp(x(1));
        Eigen::VectorXd r(2 * pairs.size());
        for (size_t i = 0; i < pairs.size(); ++i) {
          const InterferenceTimes t = replay_interference(h2d, pairs[i].every, ranks, true, topo, p);
          r(2 * i) = std::log(t.a2a_us / pairs[i].a2a_us);
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
  return c;
}
}  // namespace

std::string calibration_yaml(const Calibration& c) {
  const ModelParams& p = c.params;
  std::string out = "# overlapsim calibration, written by `overlapsim calibrate` from:\n";
  for (const auto& s : c.sources) out += "#   " + s + "\n";
  out += "# Fits (informational; `model:` is what runs load):\n";
  for (const auto& f : c.fits) {
    out += fmt::format("#   {}: {} ({} points", f.name, f.formula, f.points);
    if (f.rms_residual_pct > 0) out += fmt::format(", rms residual {:.2f} %", f.rms_residual_pct);
    out += ")\n#     ";
    for (const auto& [k, v] : f.values) out += fmt::format("{} = {:.4g}  ", k, v);
    out += "\n";
  }
  return out + model_yaml(c.params);
}

// ---------------------------------------------------------------- replay

namespace {

Schedule bench_schedule(int ranks, bool p2p_disabled = false) {
  Schedule s;
  s.name = "bench";
  s.runtime.nccl_p2p_disable = p2p_disabled;
  s.streams = {{"s", 0}, {"copy", 0}};
  s.programs.resize(ranks);
  for (int r = 0; r < ranks; ++r) s.programs[r].rank = r;
  if (ranks >= 2) {
    Group w{"world", {}};
    for (int r = 0; r < ranks; ++r) w.ranks.push_back(r);
    s.groups.push_back(w);
  }
  return s;
}

// Runs one program per rank; returns each rank's records.
ExecResult replay_programs(Schedule s, const std::vector<std::vector<Op>>& programs, const hw::Topology& topo, const ModelParams& p) {
  for (size_t r = 0; r < s.programs.size(); ++r) s.programs[r].ops = std::make_shared<const std::vector<Op>>(programs[r]);
  return execute(s, topo, p);
}

double replay(Schedule s, const std::vector<Op>& per_rank, const hw::Topology& topo, const ModelParams& p) {
  for (size_t r = 0; r < s.programs.size(); ++r) s.programs[r].ops = std::make_shared<const std::vector<Op>>(std::vector<Op>{per_rank[r]});
  const ExecResult res = execute(s, topo, p);
  double worst = 0;
  for (const auto& rank : res.ops) worst = std::max(worst, (rank[0].end - rank[0].start).us());
  return worst;
}

// The bench's GEMM of shape [m, n, k] (a row's "gemm") on stream 0.
Op bench_gemm(const json& shape) {
  Op g;
  g.kind = OpKind::Kernel;
  g.stream = 0;
  g.gemm = GemmShape{shape.at(0).get<int32_t>(), shape.at(1).get<int32_t>(), shape.at(2).get<int32_t>()};
  return g;
}

// The bench's memory-bound kernel (`launch_hbm_copy`) moving `hbm_bytes` on stream 0.
Op bench_memory_kernel(double hbm_bytes) {
  Op k;
  k.kind = OpKind::Kernel;
  k.stream = 0;
  k.hbm_bytes = hbm_bytes;
  return k;
}

// Stream 0 busy for `t` with no work (an idle gap or a start offset as the bench had).
Op bench_idle(Time t) {
  Op k;
  k.kind = OpKind::Kernel;
  k.stream = 0;
  k.duration = t;
  return k;
}

// A copy of `bytes` on `stream` (pinned, for H2D / D2H).
Op bench_copy(CopyKind kind, Bytes bytes, int stream) {
  Op cp;
  cp.kind = OpKind::Memcpy;
  cp.copy = kind;
  cp.stream = stream;
  cp.bytes = bytes;
  return cp;
}

// Ops timed per gated burst as the bench ran them (time_stream_us: the
// one-way pinned copies; bidir_pinned; copy_reps): per lane (one op, run
// `reps` times on stream `lane index` of rank `dev`) the gate holding it, an
// event, the ops, an event; per lane the time per op from the first event
// to the last. Gates: "kernel" (a spin kernel on the lane's stream, or the
// `busy` one),
// "kernel_wait" (one spin kernel on a third stream, where each lane records
// its first event and waits on it), "host" (a host function: nothing on the
// GPU before the first event); "kernel_done" / "kernel_wait_done" (one
// lane: a spin kernel on its stream / on the third stream with an event
// after it, done 50 us before the host issues the rest behind a host
// function, the lane waiting on that event: copy_after_idle). Host calls
// take no time: the bench issues everything before it opens the gate.
std::vector<double> replay_gated(const std::vector<Op>& lanes, int reps, const std::string& gate, int dev, const hw::Topology& topo,
                                 const ModelParams& params, std::optional<Time> busy) {
  assert(reps >= 1 && lanes.size() <= 2);
  ModelParams p = params;
  p.overheads.kernel_launch = p.overheads.memcpy_call = p.overheads.event_call = p.overheads.collective_call = Time::zero();
  Schedule s = bench_schedule(dev + 1);
  s.streams.push_back({"gate", 0});
  // The gate's kernel: the bench's one-thread spin, or (`busy`, handoff_wait)
  // a kernel of that long on every SM.
  Op spin = bench_idle(busy.value_or(Time::from_us(50)));
  spin.sm_limit = busy ? 0 : 1;
  std::vector<std::vector<Op>> progs(static_cast<size_t>(dev) + 1);
  auto& prog = progs[static_cast<size_t>(dev)];
  const bool wait = gate == "kernel_wait";
  if (wait) {
    spin.stream = 2;
    prog.push_back(spin);
  }
  const bool done = gate == "kernel_done" || gate == "kernel_wait_done";
  int done_event = -1;
  if (done) {
    assert(lanes.size() == 1);
    spin.stream = gate == "kernel_done" ? 0 : 2;
    prog.push_back(spin);
    if (gate == "kernel_wait_done") {
      Op ev;
      ev.kind = OpKind::EventRecord;
      ev.stream = 2;
      ev.event = done_event = static_cast<int>(s.events.size());
      s.events.push_back("done");
      prog.push_back(ev);
    }
    Op host;
    host.kind = OpKind::HostWork;
    host.duration = Time::from_us(100);
    prog.push_back(host);
  }
  std::vector<std::pair<size_t, size_t>> timed;  // per lane: its two events' places
  for (size_t i = 0; i < lanes.size(); ++i) {
    const int st = static_cast<int>(i);
    Op ev;
    ev.kind = OpKind::EventRecord;
    ev.stream = wait ? 2 : st;
    ev.event = static_cast<int>(s.events.size());
    s.events.push_back(fmt::format("a{}", i));
    if (gate == "kernel") {
      spin.stream = st;
      prog.push_back(spin);
    }
    if (done_event >= 0) {
      Op w;
      w.kind = OpKind::StreamWaitEvent;
      w.stream = st;
      w.event = done_event;
      prog.push_back(w);
    }
    prog.push_back(ev);
    const size_t first = prog.size() - 1;
    if (wait) {
      Op w;
      w.kind = OpKind::StreamWaitEvent;
      w.stream = st;
      w.event = ev.event;
      prog.push_back(w);
    }
    Op op = lanes[i];
    op.stream = st;
    prog.insert(prog.end(), static_cast<size_t>(reps), op);
    ev.stream = st;
    ev.event = static_cast<int>(s.events.size());
    s.events.push_back(fmt::format("b{}", i));
    prog.push_back(ev);
    timed.emplace_back(first, prog.size() - 1);
  }
  const ExecResult res = replay_programs(std::move(s), progs, topo, p);
  std::vector<double> out;
  for (const auto& [a, b] : timed)
    out.push_back((res.ops[static_cast<size_t>(dev)][b].end - res.ops[static_cast<size_t>(dev)][a].end).us() / reps);
  return out;
}

// overhead_gpu_event_gap as the bench ran it: `ops` ops back to back on
// stream 0 of GPU 0 (1 MiB memory kernels or pinned H2D copies; `fenced`: an
// event recorded after each), gated (host calls left out); `beside: h2d`
// (h2d_all): a copy of copy_bytes in flight on GPU 0's copy stream (each of
// the row's `gpus` GPUs') from the start. Per op, from the first op's start to the last one's
// end (with its event), in us.
double replay_event_gap(const json& r, bool fenced, const hw::Topology& topo, const ModelParams& params) {
  ModelParams p = params;
  p.overheads.kernel_launch = p.overheads.memcpy_call = p.overheads.event_call = Time::zero();
  const std::string beside = r.value("beside", std::string("none"));
  const int n = r.at("ops"), ranks = beside == "h2d_all" ? r.at("gpus").get<int>() : 1;
  Schedule s = bench_schedule(ranks);
  std::vector<std::vector<Op>> progs(static_cast<size_t>(ranks));
  if (beside != "none")
    for (auto& prog : progs) prog.push_back(bench_copy(CopyKind::H2D, r.at("copy_bytes").get<Bytes>(), 1));
  const size_t first = progs[0].size();
  const Op op = r.at("op") == "h2d" ? bench_copy(CopyKind::H2D, r.at("bytes").get<Bytes>()) : bench_memory_kernel(r.at("bytes").get<double>());
  for (int i = 0; i < n; ++i) {
    progs[0].push_back(op);
    if (!fenced) continue;
    Op ev;
    ev.kind = OpKind::EventRecord;
    ev.stream = 0;
    ev.event = static_cast<int32_t>(s.events.size());
    s.events.push_back(fmt::format("e{}", i));
    progs[0].push_back(ev);
  }
  const ExecResult res = replay_programs(std::move(s), progs, topo, p);
  return (res.ops[0].back().end - res.ops[0][first].start).us() / n;
}

// One rank's NCCL all-to-all of `bytes` on stream 0 of the bench schedule's group.
Op bench_a2a(Bytes bytes) {
  Op a2a;
  a2a.kind = OpKind::Collective;
  a2a.coll = CollKind::AllToAll;
  a2a.stream = 0;
  a2a.group = 0;
  a2a.bytes = bytes;
  return a2a;
}

// The bench's all-to-all beside a copy as it ran them: the 1 GiB copy on GPU
// 0 (on every rank's GPU with `every`: h2d_all / d2h_all), four 256 MiB
// all-to-alls per rank on `ranks` ranks; host overheads left out.
InterferenceTimes replay_interference(bool h2d, bool every, int ranks, bool p2p_off, const hw::Topology& topo, const ModelParams& params) {
  ModelParams p = params;
  p.overheads.memcpy_call = p.overheads.kernel_launch = p.overheads.collective_call = Time::zero();
  std::vector<std::vector<Op>> progs(static_cast<size_t>(ranks), std::vector<Op>(4, bench_a2a(268435456)));
  const Op cp = bench_copy(h2d ? CopyKind::H2D : CopyKind::D2H, 1073741824, 1);
  for (size_t pr = 0; pr < (every ? progs.size() : 1); ++pr) progs[pr].insert(progs[pr].begin(), cp);
  const ExecResult res = replay_programs(bench_schedule(ranks, p2p_off), progs, topo, p);
  const auto& r0 = res.ops[0];
  return {(r0[4].end - r0[1].start).us(), (r0[0].end - r0[0].start).us()};
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

// The bench's all-to-all in situ (nccl_all_to_all_insitu), replayed as the
// bench ran the testcase: per size (the document's rows in order), its warm
// all-to-alls, then each case `warmup + samples` times: the host's 20 ms
// sleep, 64 MiB H2D copies back to back on a second stream (case `copies`:
// `ncopies` where the row has it, else as many as the bench then queued),
// each rank's GEMM `gemms` times, the 1-element all-reduce that lines the
// ranks up, the all-to-all, a device sync. The GPUs' clock state and the
// NVLink's quiet time carry from one sample to the next as they did on the
// GPUs (after 100 ms of GEMMs the next sample starts with the clock still
// part way down: replayed from rest its GEMMs ran ~2 % fast, the copies
// outlasting them where on the GPUs they had ended). Per row, per case: the
// median over the samples of the slowest rank's all-to-all, and of the
// slowest rank's GEMM span (its first GEMM's start to its last's end).
std::vector<std::vector<InsituTimes>> replay_insitu_doc(const json& doc, bool p2p_off, const hw::Topology& topo, const ModelParams& p) {
  const int warmup = doc.at("options").value("warmup", 2), samples = doc.at("options").value("samples", 5);
  std::vector<const json*> rs;
  int n = 0;
  for (const auto& r : doc.at("results"))
    if (r.at("key") == "nccl_all_to_all_insitu" && r.at("ranks").get<size_t>() <= topo.gpus().size()) {  // the rows compare_bench scores
      rs.push_back(&r);
      n = std::max(n, r.at("ranks").get<int>());
    }
  std::vector<Op> prog;
  // (row, case) -> the timed all-to-all's op index, per sample.
  std::vector<std::vector<std::vector<size_t>>> timed(rs.size());
  Op sync;
  sync.kind = OpKind::DeviceSync;
  Op sleep;
  sleep.kind = OpKind::HostWork;
  sleep.duration = Time::from_ms(20);
  Op line_up = bench_a2a(4);
  line_up.coll = CollKind::AllReduce;
  line_up.dtype = DType::FP32;
  const Op cp = bench_copy(CopyKind::H2D, Bytes(64) << 20, 1);
  for (size_t i = 0; i < rs.size(); ++i) {
    const json& r = *rs[i];
    const Op a2a = bench_a2a(r.at("bytes").get<Bytes>()), g = bench_gemm(r.at("gemm"));
    for (int it = 0; it < warmup + samples; ++it) prog.insert(prog.end(), {a2a, line_up, a2a, sync});
    for (const auto& k : r.at("cases")) {
      auto& t = timed[i].emplace_back();
      const int copies = !k.at("copies").get<bool>() ? 0
                         : k.contains("ncopies")
                             ? k.at("ncopies").get<int>()
                             : static_cast<int>(std::ceil((k.at("gemm_ms").get<double>() + 5) * 1e-3 * 55e9 / static_cast<double>(cp.bytes))) + 1;
      for (int it = 0; it < warmup + samples; ++it) {
        prog.push_back(sleep);
        prog.insert(prog.end(), static_cast<size_t>(copies), cp);
        prog.insert(prog.end(), static_cast<size_t>(k.at("gemms").get<int>()), g);
        prog.push_back(line_up);
        if (it >= warmup) t.push_back(prog.size());  // the GEMMs: [at - 1 - gemms, at - 1)
        prog.push_back(a2a);
        prog.push_back(sync);
      }
    }
  }
  const ExecResult res = replay_programs(bench_schedule(n, p2p_off), std::vector<std::vector<Op>>(static_cast<size_t>(n), prog), topo, p);
  std::vector<std::vector<InsituTimes>> out(rs.size());
  for (size_t i = 0; i < rs.size(); ++i)
    for (size_t c = 0; c < timed[i].size(); ++c) {
      const size_t gemms = rs[i]->at("cases")[c].at("gemms").get<size_t>();
      std::vector<double> per_sample, spans;
      for (const size_t at : timed[i][c]) {
        double worst = 0, span = 0;
        for (const auto& ops : res.ops) {
          worst = std::max(worst, (ops[at].end - ops[at].start).us());
          span = std::max(span, (ops[at - 2].end - ops[at - 1 - gemms].start).us());
        }
        per_sample.push_back(worst);
        spans.push_back(span);
      }
      out[i].push_back({median(per_sample), median(spans)});
    }
  return out;
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
  std::vector<size_t> warm_at;                     // per row: its shape's first timed warm GEMM
  std::vector<std::vector<size_t>> first_gemm;     // per row, per timed sample: its first GEMM
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

// The same for a kernel timed under load (the GEMM table after >= 250 ms of
// it back to back, SDPA): a compute kernel of ~0.25 s first brings the
// sustained-load model's fast term to full duty, as the bench's earlier
// samples did the GPU (the slow term, ~1 s in, is not reached there either).
double replay_hot(const Schedule& s, const Op& op, const hw::Topology& topo, const ModelParams& p) {
  if (p.power.sustained_slowdown <= 0) return replay(s, {op}, topo, p);
  Schedule t = s;
  Op warm;
  warm.kind = OpKind::Kernel;
  warm.stream = 0;
  warm.flops = 2e14;  // ~0.25 s on an H200
  t.programs[0].ops = std::make_shared<const std::vector<Op>>(std::vector<Op>{warm, op});
  const ExecResult res = execute(t, topo, p);
  return (res.ops[0][1].end - res.ops[0][1].start).us();
}

// A bench row timed over a window (`loaded_mean_us` of the GEMM table,
// `timing: window` SDPA rows): `soak` calls of the op back to back, then
// `window` more; the window's mean per call, as the bench timed it.
double replay_window(const Schedule& s, const Op& op, int soak, int window, const hw::Topology& topo, const ModelParams& p) {
  assert(soak >= 0 && window >= 1);
  Schedule t = s;
  t.programs[0].ops = std::make_shared<const std::vector<Op>>(static_cast<size_t>(soak + window), op);
  const ExecResult res = execute(t, topo, p);
  const auto& ops = res.ops[0];
  return (ops.back().end - ops[static_cast<size_t>(soak)].start).us() / window;
}

}  // namespace

namespace {
std::vector<Comparison> compare_bench_once(const json& doc, const hw::Topology& topo, const ModelParams& params) {
  // Replays take the op alone: no host overheads in the way.
  ModelParams p = params;
  p.overheads.memcpy_call = p.overheads.kernel_launch = p.overheads.collective_call = Time::zero();
  std::vector<Comparison> out;
  const int ngpu = static_cast<int>(topo.gpus().size());
  const bool p2p_off = p2p_disabled_run(doc);
  const int bench_ranks = interference_ranks(doc);
  // Cross-attention points of this document, in order, for leave-one-out replays.
  const std::vector<std::pair<double, double>> cross_points = cross_attention_points(doc, topo, p);
  const auto cross_all = fit_cross_attention(cross_points);
  int cross_seen = 0;
  // The GEMM table's window rows, for the full-duty slowdown without each
  // (where the calibration took it from this table).
  const std::vector<WindowRow> windows = gemm_window_rows(doc);
  const auto theta_all = table_theta(windows, p);
  const bool theta_from_table = theta_all && std::abs(*theta_all - p.power.sustained_slowdown) < 1e-6;
  size_t window_seen = 0;
  // Benches that line the ranks up before their all-to-alls (loaded; in
  // situ as insitu_cases does) replay without the straggler wait.
  ModelParams lined_up = p;
  lined_up.power.straggler_share = 0;
  // The in-situ testcase replayed whole (once per document), case by case.
  std::optional<std::vector<InsituCase>> insitu;
  size_t insitu_seen = 0;
  // The gemm_after_idle testcase replayed whole (once per document), per row.
  std::optional<std::vector<AfterIdleTimes>> after_idle;
  size_t after_idle_seen = 0;
  for (const auto& r : doc.at("results")) {
    const std::string key = r.at("key");
    Comparison c;
    c.key = key;
    if (key == "interference" && r.at("a") == "all_to_all" && (r.at("b") == "h2d" || r.at("b") == "d2h" || r.at("b") == "h2d_all" || r.at("b") == "d2h_all") &&
        ngpu >= bench_ranks) {
      const std::string b = r.at("b");
      const bool every = b.size() > 3;  // h2d_all / d2h_all: every rank's GPU copies
      const InterferenceTimes sim = replay_interference(b.rfind("h2d", 0) == 0, every, bench_ranks, p2p_off, topo, p);
      const std::string pair = std::string("all-to-all + ") + b + (p2p_off ? ", P2P off" : "");
      c.cls = every ? "interference, every GPU copying" : "interference pairs";
      c.what = pair + ": the all-to-all";
      c.measured_us = r.at("a_together_us");
      c.simulated_us = sim.a2a_us;
      out.push_back(c);
      c.what = pair + ": the copy";
      c.measured_us = r.at("b_together_us");
      c.simulated_us = sim.copy_us;
      out.push_back(c);
      continue;
    }
    if (key == "nccl_all_to_all_loaded" && r.at("ranks").get<int>() <= ngpu) {
      // Scored on the slowdown: the simulated loaded / rested ratio at the
      // row's own rested time. The rested time itself is the NCCL tables'
      // business: after its 150 ms idle the NVLink all-to-all runs 10-47 us
      // longer than the gated tables (which its "warm" mode, without the
      // idle, matches): the GPU's state, which the loaded mode's GEMMs do not
      // leave either.
      c.cls = p2p_off ? "NCCL all-to-all with the clock down (slowdown), through host memory" : "NCCL all-to-all with the clock down (slowdown)";
      c.what = fmt::format("{} ranks, {} after the GEMMs", r.at("ranks").get<int>(), format_bytes(r.at("bytes").get<double>()));
      c.measured_us = r.at("time_us");
      c.simulated_us =
          r.at("rested_time_us").get<double>() * replay_a2a_loaded(r, true, p2p_off, topo, lined_up) / replay_a2a_loaded(r, false, p2p_off, topo, lined_up);
      out.push_back(c);
      continue;
    }
    if (key == "nccl_all_to_all_insitu" && r.at("ranks").get<int>() <= ngpu) {
      if (!insitu) insitu = insitu_cases(doc, p2p_off, topo, p);
      for (const auto& k : r.at("cases")) {
        const InsituTimes& sim = (*insitu)[insitu_seen++].sim;
        const bool copies = k.at("copies").get<bool>();
        // The first bench queued copies for the GEMMs' time at burst + 5 ms
        // (rows without `ncopies`); after 100 ms of GEMMs under load they end
        // about when the all-to-all starts (P2P off: the all-to-all measured
        // as without them).
        const bool race = copies && k.at("gemm_ms").get<int>() >= 100 && !k.contains("ncopies");
        c.cls = fmt::format("NCCL all-to-all after GEMMs{}{}", race ? ", copies ending about its start" : copies ? ", copies beside" : "",
                            p2p_off ? ", through host memory" : "");
        c.what = fmt::format("{} ranks, {} after {} ms{}", r.at("ranks").get<int>(), format_bytes(r.at("bytes").get<double>()),
                             k.at("gemm_ms").get<int>(), copies ? " + copies" : "");
        c.measured_us = k.at("time_us");
        c.simulated_us = sim.a2a_us;
        out.push_back(c);
        if (k.contains("gemm_span_us")) {
          // The GEMMs before it (the sustained-load model in situ, from the
          // clock state the samples before left; beside copies or not).
          c.cls = copies ? "GEMMs in situ (their span), H2D copies beside" : "GEMMs in situ (their span)";
          c.what = fmt::format("{} GEMMs ({} ms at warm) before a {} all-to-all{}{}", k.at("gemms").get<int>(), k.at("gemm_ms").get<int>(),
                               format_bytes(r.at("bytes").get<double>()), copies ? " + copies" : "", p2p_off ? ", P2P off" : "");
          c.key = "nccl_all_to_all_insitu gemm span";
          c.measured_us = k.at("gemm_span_us");
          c.simulated_us = sim.gemm_span_us;
          out.push_back(c);
          c.key = key;
        }
      }
      continue;
    }
    if (key == "gemm_after_idle") {
      // The sustained-load model at the duty cycles the gaps leave, scored
      // on the slowdown: the simulated mean / warm ratio at the row's own
      // warm time (the GEMM rate itself is the GEMM table's business).
      if (!after_idle) after_idle = replay_after_idle_doc(doc, topo, p);
      const AfterIdleTimes& sim = (*after_idle)[after_idle_seen++];
      const auto& t = r.at("time_us");
      double mean = 0;
      for (const auto& x : t) mean += x.get<double>() / static_cast<double>(t.size());
      c.cls = "GEMMs after a gap (sustained-load clock)";
      c.what = fmt::format("{}x{}x{} after {} ms, {}", r.at("m").get<int>(), r.at("n").get<int>(), r.at("k").get<int>(),
                           r.at("gap_ms").get<double>(), r.at("mode").get<std::string>());
      c.measured_us = mean;
      c.simulated_us = r.at("warm_time_us").get<double>() * sim.mean_us / sim.warm_us;
      out.push_back(c);
      continue;
    }
    if (key == "bidir_pinned") {
      // Both directions at once on two streams of one GPU (ranks below it
      // idle), both behind spin kernels, `reps` copies each (one before
      // 2026-11-23) between their own events.
      const int dev = r.at("gpus")[0].get<int>();
      if (dev >= ngpu) continue;
      const Bytes bytes = r.at("bytes").get<Bytes>();
      c.cls = bytes >= (16 << 20)  ? "both directions at once >= 16 MiB"
              : !r.contains("reps") ? "both directions at once < 16 MiB, one copy per sample behind two gates (the bench before 2026-11-23)"
              : bytes < (1 << 20)   ? "both directions at once < 1 MiB"
                                    : "both directions at once 1-16 MiB";
      // One copy per direction behind two gates (the bench before
      // 2026-11-23): as copy_reps both ways with 1-5 copies per burst, how
      // the two lined up decided (4 KiB-1 MiB: H2D up to 40 % fast, D2H
      // up to 80 % slow, on one row the other way round).
      if (bytes < (16 << 20) && !r.contains("reps")) c.outside = "how the two directions' first copies line up behind the gate";
      const std::vector<double> per_copy =
          replay_gated({bench_copy(CopyKind::H2D, bytes), bench_copy(CopyKind::D2H, bytes)}, bench_copy_reps(r), "kernel", dev, topo, p);
      for (const bool d2h : {false, true}) {
        c.what = fmt::format("GPU {}, {}, {}", dev, format_bytes(static_cast<double>(bytes)), d2h ? "D2H" : "H2D");
        c.measured_us = r.at(d2h ? "d2h_time_us" : "h2d_time_us");
        c.simulated_us = per_copy[d2h ? 1 : 0];
        out.push_back(c);
      }
      continue;
    }
    if (key == "h2d_two_streams" || key == "h2d_pageable" || key == "d2h_pageable") {
      // One GPU's copies as the bench ran them, on that GPU (ranks below it
      // idle), ungated: two H2D copies on two streams, timed together; a
      // pageable copy, timed by the host from the call to the sync's return.
      const int dev = r.at("gpus")[0].get<int>();
      if (dev >= ngpu) continue;
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
      continue;
    }
    if (key == "copy_reps") {
      // A burst of `reps` pinned copies per direction as the bench ran it
      // (one way on one stream, or H2D and D2H on two streams at once)
      // behind its gate, per copy from the first event to the last.
      const int dev = r.at("gpus")[0].get<int>();
      if (dev >= ngpu) continue;
      const Bytes bytes = r.at("bytes").get<Bytes>();
      const int reps = r.at("reps").get<int>();
      const std::string dir = one_of(r, "dir", {"h2d", "d2h", "both"}), gate = one_of(r, "gate", {"kernel", "host", "kernel_wait"});
      const bool run_h2d = dir != "d2h", run_d2h = dir != "h2d";
      std::vector<Op> lanes;
      if (run_h2d) lanes.push_back(bench_copy(CopyKind::H2D, bytes));
      if (run_d2h) lanes.push_back(bench_copy(CopyKind::D2H, bytes));
      const std::vector<double> per_copy = replay_gated(lanes, reps, gate, dev, topo, p);
      c.cls = dir != "both" ? "copies per gated burst, one way (copy_reps)"
              : reps > 5    ? "copies per gated burst, both ways at once (copy_reps)"
                            : "copies per gated burst, both ways at once, 1-5 per burst (copy_reps)";
      // Both ways, a few copies per burst: how the two directions' first
      // copies line up behind the gate decides (the host functions run one
      // after the other, the kernel_wait events one after the other on one
      // stream; after a host function a burst's first H2D copy ran at the
      // one-way time, 7.4 against 9.3 us at 256 KiB). The model starts both
      // directions at once, at the shared rate from the first copy.
      if (dir == "both" && reps <= 5) c.outside = "how the two directions' first copies line up behind the gate";
      for (const bool d2h : {false, true}) {
        if (!(d2h ? run_d2h : run_h2d)) continue;
        c.what = fmt::format("GPU {}, {} x {} after a {}, {}", dev, format_bytes(static_cast<double>(bytes)), reps,
                             gate == "kernel" ? std::string("kernel") : copy_reps_gate(gate),
                             dir == "both" ? (d2h ? "D2H beside H2D" : "H2D beside D2H") : (d2h ? "D2H" : "H2D"));
        c.measured_us = r.at(d2h ? "d2h_time_us" : "h2d_time_us").get<double>();
        c.simulated_us = per_copy[d2h && run_h2d ? 1 : 0];
        out.push_back(c);
      }
      continue;
    }
    if (key == "copy_span") {
      // Pinned copies walking a host span (each the next slice), one way or
      // both ways at once on two streams, `reps` per stream behind one spin
      // gate, per copy between each stream's events (as bidir_pinned).
      const int dev = r.at("gpus")[0].get<int>();
      if (dev >= ngpu) continue;
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
        const std::string spans = dir == "both" ? fmt::format(" beside {}, spans {} / {}", d2h ? "H2D" : "D2H", format_bytes(static_cast<double>(lanes[0].host_span)),
                                                              format_bytes(static_cast<double>(lanes[1].host_span)))
                                                : fmt::format(", span {}", format_bytes(static_cast<double>(lanes[i].host_span)));
        c.what = fmt::format("GPU {}, {} {}{}", dev, format_bytes(static_cast<double>(bytes)), d2h ? "D2H" : "H2D", spans);
        c.measured_us = r.at(d2h ? "d2h_time_us" : "h2d_time_us").get<double>();
        c.simulated_us = per_copy[i];
        out.push_back(c);
      }
      continue;
    }
    if (key == "handoff_wait") {
      // One copy queued behind a kernel of `wait_us` on every SM, on its
      // stream or waited on through an event: from the event after the
      // kernel to the one after the copy.
      const int dev = r.at("gpus")[0].get<int>();
      if (dev >= ngpu) continue;
      const bool d2h = one_of(r, "dir", {"h2d", "d2h"}) == "d2h", same = one_of(r, "mode", {"same", "wait"}) == "same";
      const double wait_us = r.at("wait_us").get<double>();
      c.cls = "one copy after a kernel of 5 us-3 ms (handoff_wait)";
      c.what = fmt::format("GPU {}, {} after {} us {}, {}", dev, format_bytes(r.at("bytes").get<double>()), wait_us,
                           same ? "on the stream" : "waited on", d2h ? "D2H" : "H2D");
      // The rows' medians (five samples each) move by up to 7 us from row
      // to row with no trend over the wait, where the model has one
      // latency (their mean is reported beside the fitted one).
      // With the phase calibrated (handoff_phase_min / _max) they are held,
      // against the times it allows.
      if (!params.handoff.has_handoff_phase()) c.outside = "the hand-off's phase (0.7-7.5 us from row to row)";
      c.measured_us = r.at("time_us").get<double>();
      c.simulated_us = replay_gated({bench_copy(d2h ? CopyKind::D2H : CopyKind::H2D, r.at("bytes").get<Bytes>())}, 1,
                                    same ? "kernel" : "kernel_wait", dev, topo, p, Time::from_us(wait_us))[0];
      out.push_back(c);
      continue;
    }
    if (key == "copy_after_idle") {
      // A burst behind a host function, with a kernel done long before on
      // the stream or waited on, or nothing (the control): as the bench ran it.
      const int dev = r.at("gpus")[0].get<int>();
      if (dev >= ngpu) continue;
      const Bytes bytes = r.at("bytes").get<Bytes>();
      const int reps = r.at("reps").get<int>();
      const std::string before = one_of(r, "before", {"host", "kernel_done", "kernel_wait_done"});
      const bool d2h = one_of(r, "dir", {"h2d", "d2h"}) == "d2h";
      c.cls = "copies per burst after a kernel done long before (copy_after_idle)";
      c.what = fmt::format("GPU {}, {} x {} after {}, {}", dev, format_bytes(static_cast<double>(bytes)), reps,
                           before == "host"          ? "a host function alone"
                           : before == "kernel_done" ? "a kernel done before, on the stream"
                                                     : "a kernel done before, waited on",
                           d2h ? "D2H" : "H2D");
      c.measured_us = r.at("time_us").get<double>();
      c.simulated_us = replay_gated({bench_copy(d2h ? CopyKind::D2H : CopyKind::H2D, bytes)}, reps, before, dev, topo, p)[0];
      out.push_back(c);
      continue;
    }
    if (key == "p2p_copy") {
      const int a = r.at("gpus")[0].get<int>(), b = r.at("gpus")[1].get<int>();
      if (std::max(a, b) >= ngpu) continue;
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
      continue;
    }
    if (key == "overhead_gpu_event_gap") {
      const std::string beside = r.value("beside", std::string("none"));
      if (beside == "h2d_all" && r.at("gpus").get<int>() > ngpu) continue;
      const bool kernel = r.at("op") == "memory_kernel";
      for (const bool fenced : {false, true}) {
        c.cls = "GPU time of an event record";
        c.what = fmt::format("{} {}{}{}", format_bytes(r.at("bytes").get<double>()), kernel ? "memory kernels" : "H2D copies",
                             fenced ? ", an event after each" : "", beside == "none" ? "" : beside == "h2d" ? ", an H2D copy beside" : ", every GPU copying H2D");
        // 1 MiB kernels' buffers stay in the L2 from one kernel to the next
        // (as memory_kernel's under 64 MiB); the event's time is the same.
        if (kernel) c.outside = "the GPU's L2 cache holds the buffers";
        c.measured_us = r.at(fenced ? "fenced_us" : "plain_us");
        c.simulated_us = replay_event_gap(r, fenced, topo, p);
        out.push_back(c);
      }
      continue;
    }
    if (key == "memory_kernel") {
      // Back to back (the fit takes >= 64 MiB: smaller ones stay in the L2
      // cache from one kernel to the next, which the model, HBM only, does
      // not hold), and between GEMMs under load, each timed by an event
      // before and after it (the GEMM evicts the L2; an event between two
      // ops costs the GPU ~2 us: overhead_gpu_event_gap).
      const Op op = bench_memory_kernel(r.at("hbm_bytes").get<double>());
      const bool in_l2 = op.hbm_bytes < 64.0 * 1048576;
      c.cls = in_l2 ? "memory-bound kernel < 64 MiB, back to back (in the L2 cache)" : "memory-bound kernel >= 64 MiB";
      if (in_l2) c.outside = "the GPU's L2 cache holds the buffers";
      c.what = format_bytes(op.hbm_bytes);
      c.measured_us = r.at("time_us");
      c.simulated_us = replay(bench_schedule(1), {op}, topo, p);
      out.push_back(c);
      if (r.contains("loaded_time_us")) {
        // 600 (GEMM, kernel) pairs; the kernels of the second half (median).
        std::vector<Op> prog;
        const Op g = bench_gemm(json::array({16384, 5120, 5120}));
        for (int i = 0; i < 600; ++i) prog.insert(prog.end(), {g, op});
        const ExecResult res = replay_programs(bench_schedule(1), {prog}, topo, p);
        std::vector<double> t;
        for (size_t i = 300; i < 600; ++i) t.push_back((res.ops[0][2 * i + 1].end - res.ops[0][2 * i + 1].start).us());
        c.cls = in_l2 ? "memory-bound kernel < 64 MiB between GEMMs, timed by events" : "memory-bound kernel >= 64 MiB between GEMMs under load";
        if (in_l2) c.outside = "the GPU time of the events timing it (overhead_gpu_event_gap)";
        c.what += " between GEMMs";
        c.measured_us = r.at("loaded_time_us");
        c.simulated_us = median(t);
        out.push_back(c);
      }
      continue;
    }
    if (key == "multi_h2d_pipelined" && r.at("gpus").get<int>() <= ngpu) {
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
      continue;
    }
    if ((key == "h2d_pinned" || key == "d2h_pinned") && r.at("gpus")[0] == 0) {
      const Op op = bench_copy(key[0] == 'h' ? CopyKind::H2D : CopyKind::D2H, r.at("bytes").get<Bytes>());
      c.what = format_bytes(static_cast<double>(op.bytes));
      c.cls = op.bytes >= (16 << 20) ? "pinned copy >= 16 MiB" : "pinned copy < 16 MiB";
      c.measured_us = r.at("time_us");
      c.simulated_us = replay_gated({op}, bench_copy_reps(r), "kernel", 0, topo, p)[0];
    } else if ((key == "multi_h2d_pinned" || key == "multi_d2h_pinned") && r.at("gpus").get<int>() <= ngpu) {
      const int n = r.at("gpus");
      const bool h2d = key == "multi_h2d_pinned";
      const Op op = bench_copy(h2d ? CopyKind::H2D : CopyKind::D2H, r.at("bytes_per_gpu").get<Bytes>());
      c.what = fmt::format("{} GPUs x {}", n, format_bytes(static_cast<double>(op.bytes)));
      c.cls = h2d ? "multi-GPU H2D" : "multi-GPU D2H";
      c.measured_us = r.at("time_us");
      c.simulated_us = replay(bench_schedule(n), std::vector<Op>(n, op), topo, p);
    } else if (key == "attention_sdpa") {
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
    } else if (key == "gemm_bf16") {
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
          c.simulated_us = replay_window(bench_schedule(1), op, chunks * r.at("soak_calls").get<int>(), chunks * r.at("window_calls").get<int>(),
                                         topo, w);
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
    } else if (key == "nccl_barrier_skew") {
      continue;  // fitted (straggler_share); the simulator's ranks never drift apart to replay it
    } else if (key.rfind("nccl_", 0) == 0 && r.at("ranks").get<int>() <= ngpu) {
      const int n = r.at("ranks"), ch = r.at("channels");
      Op op;
      op.kind = OpKind::Collective;
      op.stream = 0;
      op.group = 0;
      op.channels = ch;
      op.bytes = r.at("bytes").get<Bytes>();
      std::string name;
      if (key == "nccl_all_to_all" || key == "nccl_reps") op.coll = CollKind::AllToAll, name = "all-to-all";
      else if (key == "nccl_all_to_all_pairwise") op.coll = CollKind::AllToAll, op.algo = CollAlgo::Pairwise, name = "pairwise all-to-all";
      else if (key == "nccl_all_gather") op.coll = CollKind::AllGather, op.algo = CollAlgo::Ring, name = "all-gather";
      else if (key == "nccl_reduce_scatter") op.coll = CollKind::ReduceScatter, op.algo = CollAlgo::Ring, name = "reduce-scatter";
      else if (key == "nccl_all_reduce") op.coll = CollKind::AllReduce, op.algo = CollAlgo::Ring, name = "all-reduce";
      else continue;
      c.what = fmt::format("{} ranks, {} channels, {}", n, ch == 0 ? std::string("default") : std::to_string(ch), format_bytes(static_cast<double>(op.bytes)));
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
      // Benches before 2026-11-23 launched every rank's collective from one
      // host thread with the clock running: below a few MiB those rows time
      // the host's launches as much as NCCL (README, gated collective timing).
      if (op.bytes < (64 << 20) && !r.value("gated", false)) c.cls += ", timed ungated";
      c.measured_us = r.at("time_us");
      c.simulated_us = replay(bench_schedule(n, p2p_off), std::vector<Op>(n, op), topo, p);
    } else {
      continue;
    }
    out.push_back(c);
  }
  return out;
}
}  // namespace

std::vector<Comparison> compare_bench(const json& doc, const hw::Topology& topo, const ModelParams& params) {
  std::vector<Comparison> rows = compare_bench_once(doc, topo, params);
  if (!params.handoff.has_handoff_phase()) return rows;
  // The hand-off's phase: every row replayed again with each hand-off the
  // model has (a latency above zero) at either end; a row whose time moves
  // has one.
  const auto at = [&](Time t) {
    ModelParams q = params;
    for (Time* l : {&q.handoff.copy_after_kernel_latency, &q.handoff.copy_after_kernel_latency_d2h, &q.handoff.kernel_after_copy_latency})
      if (*l > Time::zero()) *l = t;
    return compare_bench_once(doc, topo, q);
  };
  const std::vector<Comparison> lo = at(params.handoff.handoff_phase_min), hi = at(params.handoff.handoff_phase_max);
  assert(lo.size() == rows.size() && hi.size() == rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    assert(lo[i].what == rows[i].what && hi[i].what == rows[i].what);
    if (std::abs(hi[i].simulated_us - lo[i].simulated_us) < 1e-6) continue;
    rows[i].simulated_lo_us = std::min(lo[i].simulated_us, hi[i].simulated_us);
    rows[i].simulated_hi_us = std::max(lo[i].simulated_us, hi[i].simulated_us);
  }
  return rows;
}

std::vector<ClassSummary> summarise(const std::vector<Comparison>& rows) {
  std::vector<ClassSummary> out;
  std::map<std::string, std::vector<double>> by;
  std::vector<std::string> order;
  for (const auto& c : rows) {
    if (!by.count(c.cls)) order.push_back(c.cls);
    by[c.cls].push_back(std::abs(c.error_pct()));
  }
  for (const auto& cls : order) {
    const auto& v = by[cls];
    out.push_back({cls, static_cast<int>(v.size()), median(v), *std::max_element(v.begin(), v.end())});
  }
  return out;
}

std::string format_comparison(const std::vector<Comparison>& rows) {
  std::string out = fmt::format("{:<18} {:<36} {:>12} {:>12} {:>8}\n", "benchmark", "case", "measured", "simulated", "error");
  for (const auto& c : rows)
    out += fmt::format("{:<18} {:<36} {:>9.1f} us {:>9.1f} us {:>+7.1f}%\n", c.key, c.what, c.measured_us, c.simulated_us, c.error_pct());
  out += fmt::format("\n{:<48} {:>6} {:>14} {:>12}\n", "class", "cases", "median |err|", "worst |err|");
  for (const auto& s : summarise(rows))
    out += fmt::format("{:<48} {:>6} {:>13.1f}% {:>11.1f}%\n", s.cls, s.cases, s.median_abs_pct, s.worst_abs_pct);
  return out;
}

}  // namespace osim
