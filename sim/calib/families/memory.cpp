// Memory-bound kernels (params/memory.hpp): HBM bytes at a share of the GPU's
// HBM bandwidth plus a ramp-up and tail (memory_kernel, sizes past the L2).
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "calib/bench_replay.hpp"
#include "calib/families/steps.hpp"
#include "calib/fit.hpp"
#include "core/interp.hpp"
#include "core/stats.hpp"

namespace osim {
namespace families::memory {

void fit_memory(FitContext& ctx) {
  const json& d = ctx.def;
  ModelParams& p = ctx.p;
  Calibration& c = ctx.cal;
  const hw::Topology& topo = ctx.topo;
  const int gpu0 = ctx.gpu0;
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
        loaded.emplace_back(fmt::format("loaded_over_alone_{}MiB", static_cast<int64_t>(bytes / 1048576)),
                            r.at("loaded_time_us").get<double>() / r.at("time_us").get<double>());
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
}

void replay_row(ReplayContext& ctx, const json& r, Comparison c, std::vector<Comparison>& out) {
  const ModelParams& p = ctx.p;
  const hw::Topology& topo = ctx.topo;
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
}

// A framework's own elementwise and normalisation kernels (framework_elementwise:
// eager PyTorch ops over [tokens, hidden] tensors, validate/src/testcases/eager.py):
// per way of walking memory, the median of their bytes per second over the
// GPU's HBM bandwidth. The ops by access kind: norms (layer_norm, rms_norm),
// a broadcast operand (scale_shift), a strided view (strided_scale), roll;
// the rest contiguous elementwise (residual_add, gelu, silu_mul, cat).
Access access_of(const std::string& op) {
  if (op == "layer_norm" || op == "rms_norm") return Access::Norm;
  if (op == "scale_shift") return Access::Broadcast;
  if (op == "strided_scale") return Access::Strided;
  if (op == "roll") return Access::Roll;
  return Access::Elementwise;
}

// The norms' table by row length (framework_norm_rows): each row length's
// median share per kind, where both kinds were timed. How well the log(row)
// interpolation stands between them: each inner row against the line
// through its neighbours.
// Rows on other views (a split of a fused projection) are reported beside it.
using NormRowShares = std::map<int64_t, std::array<std::vector<double>, 2>>;
void fit_norm_rows(FitContext& ctx, const NormRowShares& by_row, const std::vector<std::pair<std::string, double>>& other_views, int points) {
  auto& table = ctx.p.memory.framework_norm_rows;
  table.clear();
  for (const auto& [row, kinds] : by_row)
    if (!kinds[0].empty() && !kinds[1].empty() && median(kinds[0]) > 0 && median(kinds[1]) > 0)
      table.push_back({static_cast<double>(row), std::min(1.0, std::round(median(kinds[0]) * 1e4) / 1e4),
                       std::min(1.0, std::round(median(kinds[1]) * 1e4) / 1e4)});
  if (table.size() < 2) {
    table.clear();
    return;
  }
  std::vector<double> between;
  for (size_t i = 1; i + 1 < table.size(); ++i) {
    const std::vector<std::array<double, 3>> without{table[i - 1], table[i + 1]};
    for (size_t k = 1; k <= 2; ++k) between.push_back(100 * std::abs(log_interpolate(without, table[i][0], k) / table[i][k] - 1));
  }
  Fit f{"framework norms by row length",
        "layer and RMS norms over the same elements in rows of 64 to 10,240 (per-head q/k norms: rows of head_dim): bytes per second over the "
        "HBM bandwidth, the median per row length and kind, interpolated in log(row)",
        {},
        0,
        points};
  for (const auto& e : table) {
    f.values.emplace_back(fmt::format("layer_{:.0f}", e[0]), e[1]);
    f.values.emplace_back(fmt::format("rms_{:.0f}", e[0]), e[2]);
  }
  if (!between.empty()) {
    f.values.emplace_back("between_rows_median_pct", median(between));
    f.values.emplace_back("between_rows_worst_pct", *std::max_element(between.begin(), between.end()));
  }
  for (const auto& v : other_views) f.values.push_back(v);
  ctx.cal.fits.push_back(f);
}

// Each access kind's median share over the [tokens, hidden] shapes.
void fit_access_medians(FitContext& ctx, const std::vector<double> (&share)[kAccessKinds], int points) {
  MemoryParams& m = ctx.p.memory;
  auto fit = [&](Access a, double& field) {
    const auto& v = share[static_cast<size_t>(a)];
    if (!v.empty()) field = std::min(1.0, std::round(median(v) * 1e4) / 1e4);
  };
  fit(Access::Elementwise, m.framework_hbm_efficiency);
  fit(Access::Norm, m.framework_norm_efficiency);
  fit(Access::Broadcast, m.framework_broadcast_efficiency);
  fit(Access::Strided, m.framework_strided_efficiency);
  fit(Access::Roll, m.framework_roll_efficiency);
  ctx.cal.fits.push_back({"framework elementwise kernels",
                          "bytes read and written per second over the HBM bandwidth, median over the shapes, per access kind",
                          {{"framework_hbm_efficiency", m.framework_hbm_efficiency},
                           {"norm", m.framework_norm_efficiency},
                           {"broadcast", m.framework_broadcast_efficiency},
                           {"strided", m.framework_strided_efficiency},
                           {"roll", m.framework_roll_efficiency}},
                          0,
                          points});
}

void fit_framework_elementwise(FitContext& ctx) {
  std::vector<double> share[kAccessKinds];
  const auto& gpu = ctx.topo.node(ctx.gpu0).gpu;
  if (!gpu.hbm_bandwidth) return;
  int points = 0;
  // Norms by row length (rows with `row`: the same elements in rows of that
  // many, contiguous): [layer norm shares, RMS norm shares] per row.
  NormRowShares by_row;
  std::vector<std::pair<std::string, double>> other_views;
  int row_points = 0;
  for (const auto& [name, doc] : ctx.docs)
    for (const auto& r : rows(doc, "framework_elementwise")) {
      const std::string op = r.at("op").get<std::string>();
      const double sh = r.at("GBps").get<double>() * 1e9 / gpu.hbm_bandwidth->bytes_per_s;
      if (r.contains("row")) {
        const int64_t row = r.at("row").get<int64_t>();
        const std::string view = r.value("view", "contiguous");
        if (op != "layer_norm" && op != "rms_norm") continue;
        if (view == "contiguous") {
          by_row[row][op == "layer_norm" ? 0 : 1].push_back(sh);
          ++row_points;
        } else {
          other_views.emplace_back(fmt::format("{}_{}_{}", op == "layer_norm" ? "layer" : "rms", row, view), sh);
        }
        continue;
      }
      share[static_cast<size_t>(access_of(op))].push_back(sh);
      ++points;
    }
  if (points > 0) fit_access_medians(ctx, share, points);
  fit_norm_rows(ctx, by_row, other_views, row_points);
}

// Video VAEs' kernels on 5-D channels-first tensors (framework_channels_first:
// validate/src/testcases/channels_first.py), over the rows that move more
// than the L2 cache holds (>= 48 MiB: the 50 MB of an H100's or H200's;
// smaller rows time PyTorch's dispatch, not the kernel): per way of walking
// memory, time = hbm_latency + fixed + bytes / (share x HBM bandwidth), the
// fixed time shared by both element widths and a share per width, fitted in
// relative error (the fixed time on a 0.1 us grid, the shares in closed form
// for each). A median share alone came out 15-35 % long on the decoders'
// 300-600 MB tensors. The contiguous elementwise rows are reported beside
// framework_hbm_efficiency, which they check; the rearranges measured as
// views (no kernel) are left out.
void fit_framework_channels_first(FitContext& ctx) {
  const auto& gpu = ctx.topo.node(ctx.gpu0).gpu;
  if (!gpu.hbm_bandwidth) return;
  const std::map<std::string, Access> kinds = {{"normalize", Access::ChannelNorm},
                                               {"cat_frames", Access::Indexed},
                                               {"stack_frames", Access::Indexed},
                                               {"channel_scale", Access::Indexed},
                                               {"pad", Access::Pad},
                                               {"upsample", Access::Upsample}};
  const std::set<std::string> contiguous = {"scale", "add_scalar", "silu", "add", "pad_none", "clone_last"};
  struct Point {
    double bytes, time_s;
    bool wide;
  };
  std::map<Access, std::vector<Point>> by_kind;
  std::vector<double> elementwise;
  const double bw = gpu.hbm_bandwidth->bytes_per_s, latency = ctx.p.memory.hbm_latency.s();
  int points = 0;
  for (const auto& [name, doc] : ctx.docs)
    for (const auto& r : rows(doc, "framework_channels_first")) {
      const double bytes = r.at("bytes").get<double>();
      if (bytes < 48.0 * 1048576) continue;
      const std::string op = r.at("op").get<std::string>();
      const bool wide = r.at("dtype").get<std::string>() == "fp32";
      if (const auto it = kinds.find(op); it != kinds.end()) {
        by_kind[it->second].push_back({bytes, r.at("time_us").get<double>() * 1e-6, wide});
        ++points;
      } else if (contiguous.count(op)) {
        elementwise.push_back(r.at("GBps").get<double>() * 1e9 / bw);
      }
    }
  if (points == 0) return;
  MemoryParams& m = ctx.p.memory;
  const std::vector<std::tuple<Access, std::string, double*, double*, Time*>> fields = {
      {Access::ChannelNorm, "channel_norm", &m.framework_channel_norm_efficiency, &m.framework_channel_norm_efficiency_16,
       &m.framework_channel_norm_fixed},
      {Access::Indexed, "indexed", &m.framework_indexed_efficiency, &m.framework_indexed_efficiency_16, &m.framework_indexed_fixed},
      {Access::Pad, "pad", &m.framework_pad_efficiency, &m.framework_pad_efficiency_16, &m.framework_pad_fixed},
      {Access::Upsample, "upsample", &m.framework_upsample_efficiency, &m.framework_upsample_efficiency_16, &m.framework_upsample_fixed}};
  Fit f{"framework kernels on channels-first 5-D tensors",
        "time = hbm_latency + fixed + bytes read and written / (share x HBM bandwidth) over the shapes moving >= 48 MiB, per access kind: "
        "the fixed time shared by fp32 and bf16, a share per width (_16: bf16), in relative error; contiguous: the elementwise rows' median "
        "share, against framework_hbm_efficiency",
        {},
        0,
        points};
  double sum_sq = 0, worst = 0;
  for (const auto& [a, label, wide, narrow, fixed] : fields) {
    const auto it = by_kind.find(a);
    if (it == by_kind.end()) continue;
    const std::vector<Point>& pts = it->second;
    // For a fixed time: each width's seconds a byte, least squares in relative error.
    auto per_byte = [&](double fx, bool w) {
      double num = 0, den = 0;
      for (const Point& p : pts)
        if (p.wide == w) {
          const double wt = 1 / (p.time_s * p.time_s);
          num += wt * p.bytes * (p.time_s - latency - fx);
          den += wt * p.bytes * p.bytes;
        }
      return den > 0 ? std::max(num / den, 1 / bw) : 0.0;
    };
    auto residual = [&](double fx) {
      const double aw = per_byte(fx, true), an = per_byte(fx, false);
      double sq = 0;
      for (const Point& p : pts) {
        const double d = (latency + fx + (p.wide ? aw : an) * p.bytes) / p.time_s - 1;
        sq += d * d;
      }
      return sq;
    };
    double best = 0, best_sq = INFINITY;
    for (int i = 0; i <= 1000; ++i) {  // 0 to 100 us
      const double fx = i * 1e-7, sq = residual(fx);
      if (sq < best_sq - 1e-15) best_sq = sq, best = fx;
    }
    *fixed = Time::from_s(best);
    f.values.emplace_back(label + "_fixed_us", std::round(best * 1e7) / 10);
    for (const bool w : {true, false}) {
      const double per = per_byte(best, w);
      if (per <= 0) continue;
      const double v = std::min(1.0, std::round(1 / (per * bw) * 1e4) / 1e4);
      *(w ? wide : narrow) = v;
      f.values.emplace_back(label + (w ? "" : "_16"), v);
    }
    for (const Point& p : pts) {
      const double share = p.wide ? *wide : *narrow;
      const double d = 100 * ((latency + best + p.bytes / (share * bw)) / p.time_s - 1);
      sum_sq += d * d;
      worst = std::max(worst, std::abs(d));
    }
  }
  if (!elementwise.empty()) f.values.emplace_back("contiguous", median(elementwise));
  f.values.emplace_back("worst_row_pct", worst);
  f.rms_residual_pct = std::sqrt(sum_sq / points);
  ctx.cal.fits.push_back(f);
}

}  // namespace families::memory
}  // namespace osim
