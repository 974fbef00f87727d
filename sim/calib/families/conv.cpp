// Convolutions (params/conv.hpp): cuDNN's implicit-GEMM kernels by output
// channels, and the layout conversions around a channels-first one (bench
// conv: validate/src/testcases/conv.py).
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "calib/bench_replay.hpp"
#include "calib/families/steps.hpp"
#include "calib/fit.hpp"
#include "core/stats.hpp"
#include "schedule/builder.hpp"

namespace osim {
namespace families::conv {

namespace {

// A conv row as the model sees it: the op a VAE stage emits for it (fp32
// data: twice the FLOPs at the bf16 rate), and its shape.
struct Row {
  Op op;
  double time_us = 0;
  std::string what;
  // The shape without its layout: a channels-first row's channels-last twin has the same.
  std::tuple<std::string, int, int, std::vector<int>, int, int, int, bool> shape;
};

Row row_of(const json& r) {
  const auto kernel = r.at("kernel").get<std::vector<int>>();
  const int taps = kernel.at(0) * kernel.at(1) * kernel.at(2);
  const bool tf32 = r.at("dtype").get<std::string>() == "fp32";
  const double positions = r.at("frames").get<double>() * r.at("h").get<double>() * r.at("w").get<double>();
  // The decoder's rows convolve F.pad's output unpadded: their input's own height and width.
  const double in_positions = r.at("frames_in").get<double>() * r.value("h_in", r.at("h").get<double>()) * r.value("w_in", r.at("w").get<double>());
  const int cin = r.at("cin").get<int>(), cout = r.at("cout").get<int>();
  const double es = tf32 ? 4.0 : 2.0;  // fp32 data or bf16
  const double flops = 2.0 * positions * cout * cin * taps;
  Row row;
  row.op = ops::memory_kernel(0, es * (cin * in_positions + cout * positions + static_cast<double>(cout) * cin * taps));
  row.op.flops = tf32 ? 2 * flops : flops;
  row.op.dtype = DType::BF16;
  const bool channels_last = r.at("layout").get<std::string>() == "ndhwc";
  row.op.conv = ConvShape{static_cast<int32_t>(positions), static_cast<int32_t>(in_positions), cin, cout, taps, tf32, channels_last};
  row.time_us = r.at("time_us").get<double>();
  const int frames = r.at("frames").get<int>(), h = r.at("h").get<int>(), w = r.at("w").get<int>();
  row.shape = {r.at("op").get<std::string>(), cin, cout, kernel, frames, h, w, tf32};
  row.what = fmt::format("{} {}->{} k{}x{}x{} {}x{}x{} {} {}", std::get<0>(row.shape), cin, cout, kernel[0], kernel[1], kernel[2], frames, h, w,
                         tf32 ? "fp32" : "bf16", channels_last ? "channels-last" : "channels-first");
  return row;
}

}  // namespace

// The kernel's share of the peak, channels-last rows of more than one tap
// (1x1 convolutions are memory-bound): per output channel count and data
// width, the median of flops / (time x peak) x (1 + positions_half /
// positions), with positions_half the value (on a 250-position grid) that
// brings the rows closest in log(time). The conversions: per element width,
// the median over channels-first rows of the bytes they read and write
// (input and output, each twice) over the time they add to the channels-last
// row of the same shape, as a share of the HBM bandwidth.
void fit_conv(FitContext& ctx) {
  const auto all = rows(ctx.def, "conv");
  if (all.empty()) return;
  const auto& gpu = ctx.topo.node(ctx.gpu0).gpu;
  const auto bf16 = gpu.peak_tflops.find("bf16");
  if (bf16 == gpu.peak_tflops.end() || !gpu.hbm_bandwidth) return;
  const double peak = bf16->second * 1e12;
  std::vector<Row> last;
  std::map<decltype(Row::shape), const Row*> by_shape;
  std::vector<Row> parsed;
  parsed.reserve(all.size());
  for (const auto& r : all) parsed.push_back(row_of(r));
  for (const Row& r : parsed)
    if (r.op.conv->channels_last && r.op.conv->taps > 1) last.push_back(r);
  if (last.empty()) return;
  auto share_of = [&](const Row& r, double half) { return r.op.flops / (r.time_us * 1e-6 * peak) * (1 + half / r.op.conv->positions); };
  using Key = std::pair<int, bool>;  // (cout, tf32)
  auto shares_at = [&](double half) {
    std::map<Key, std::vector<double>> v;
    for (const Row& r : last) v[{r.op.conv->cout, r.op.conv->tf32}].push_back(share_of(r, half));
    std::map<Key, double> out;
    for (auto& [k, s] : v) out[k] = std::min(1.0, median(s));
    return out;
  };
  double best_half = 0, best_rms = INFINITY;
  for (double half = 0; half <= 16000; half += 250) {
    const auto sh = shares_at(half);
    double sum = 0;
    for (const Row& r : last) {
      const double d = std::log(share_of(r, half) / sh.at({r.op.conv->cout, r.op.conv->tf32}));
      sum += d * d;
    }
    const double rms = std::sqrt(sum / static_cast<double>(last.size()));
    if (rms < best_rms - 1e-12) best_rms = rms, best_half = half;
  }
  const auto shares = shares_at(best_half);
  std::map<int, std::array<double, 2>> table;  // cout -> {tf32, 16-bit}
  for (const auto& [k, s] : shares) {
    auto& e = table.try_emplace(k.first, std::array<double, 2>{0, 0}).first->second;
    e[k.second ? 0 : 1] = std::round(s * 1e4) / 1e4;
  }
  ConvParams& c = ctx.p.conv;
  c.rates.clear();
  for (auto& [cout, s] : table) c.rates.push_back({static_cast<double>(cout), s[0] > 0 ? s[0] : s[1], s[1] > 0 ? s[1] : s[0]});
  c.positions_half = best_half;

  // The conversions, against the channels-last row of the same shape.
  for (const Row& r : parsed)
    if (r.op.conv->channels_last) by_shape[r.shape] = &r;
  std::vector<double> wide, narrow;
  for (const Row& r : parsed) {
    if (r.op.conv->channels_last || r.op.conv->taps == 1) continue;
    const auto it = by_shape.find(r.shape);
    if (it == by_shape.end()) continue;
    const double added_s = (r.time_us - it->second->time_us) * 1e-6;
    if (added_s <= 0) continue;
    const ConvShape& s = *r.op.conv;
    (s.tf32 ? wide : narrow).push_back(s.conversion_bytes(s.element_bytes(2.0)) / added_s / gpu.hbm_bandwidth->bytes_per_s);
  }
  if (!wide.empty()) c.layout_efficiency = std::clamp(std::round(median(wide) * 1e4) / 1e4, 1e-3, 1.0);
  if (!narrow.empty()) c.layout_efficiency_16 = std::clamp(std::round(median(narrow) * 1e4) / 1e4, 1e-3, 1.0);
  ctx.cal.fits.push_back({"convolutions",
                          "channels-last, more than one tap: share of the bf16 peak (TF32: twice the FLOPs) by output channels = median of "
                          "flops / (time x peak) x (1 + positions_half / positions); channels-first: + input and output read and written "
                          "twice at layout_efficiency x HBM bandwidth (median over shapes); the rates hold under sustained load (the "
                          "decoder calls back to back within 0.5 % of their burst_us)",
                          {{"positions_half", best_half},
                           {"layout_efficiency", c.layout_efficiency},
                           {"layout_efficiency_16", c.layout_efficiency_16},
                           {"channel_counts", static_cast<double>(c.rates.size())}},
                          100 * best_rms,
                          static_cast<int>(last.size() + wide.size() + narrow.size())});
}

void replay_row(ReplayContext& ctx, const json& r, Comparison c, std::vector<Comparison>& out) {
  const Row row = row_of(r);
  const ConvShape& s = *row.op.conv;
  c.cls = s.taps == 1 ? "convolution 1x1x1 (memory-bound)"
                      : fmt::format("convolution {} {}", s.tf32 ? "fp32 (TF32)" : "bf16", s.channels_last ? "channels-last" : "channels-first");
  c.what = row.what;
  c.measured_us = row.time_us;
  c.simulated_us = replay(bench_schedule(1), {row.op}, ctx.topo, ctx.p);
  out.push_back(c);
}

}  // namespace families::conv
}  // namespace osim
