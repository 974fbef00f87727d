// Convolutions: the kernel's time in closed form, the fit from conv rows
// whose answer is known, the replay, the calibration file and the schedule.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "calib/bench_replay.hpp"
#include "calib/calibrate.hpp"
#include "gpu/compute.hpp"
#include "gpu/params_io.hpp"
#include "hw/topology.hpp"
#include "schedule/builder.hpp"
#include "schedule/schedule.hpp"

using namespace osim;

namespace {
const std::string kSrc = OVERLAPSIM_SOURCE_DIR;

// A conv row of conv.py measured on a GPU whose kernels reach `share` of
// the bf16 peak times positions / (positions + half), channels-first rows
// adding their conversions at `layout` x the HBM bandwidth.
nlohmann::json conv_row(int c, int frames, int h, int w, bool fp32, bool channels_last, double share, double half, double layout, double peak,
                        double hbm) {
  const double positions = 1.0 * frames * h * w, in_positions = (frames + 2.0) * h * w;
  const double es = fp32 ? 4 : 2;
  const double flops = 2.0 * positions * c * c * 27 * (fp32 ? 2 : 1);
  double t = flops / (peak * share / (1 + half / positions));
  if (!channels_last) t += 2 * es * (c * in_positions + c * positions) / (hbm * layout);
  return {{"key", "conv"},
          {"gpus", {0}},
          {"op", "conv3d"},
          {"cin", c},
          {"cout", c},
          {"kernel", {3, 3, 3}},
          {"frames", frames},
          {"frames_in", frames + 2},
          {"h", h},
          {"w", w},
          {"dtype", fp32 ? "fp32" : "bf16"},
          {"layout", channels_last ? "ndhwc" : "ncdhw"},
          {"time_us", t * 1e6},
          {"TFLOPs", flops / t * 1e-12 / (fp32 ? 2 : 1)}};
}
}  // namespace

TEST_CASE("a convolution's time: its channels' share of the peak, the small-output term, the layout conversions") {
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  const auto& gpu = topo.node(topo.find("gpu0"));
  const double peak = gpu.gpu.peak_tflops.at("bf16") * 1e12, hbm = gpu.gpu.hbm_bandwidth->bytes_per_s;
  ModelParams p;
  Op op = ops::memory_kernel(0, 1e6, "conv");
  op.flops = 2.0 * 2 * 4000 * 96 * 96 * 27;  // TF32: twice the FLOPs at the bf16 rate
  op.conv = ConvShape{4000, 6000, 96, 96, 27, true};
  // Uncalibrated: FLOPs at flops_efficiency, as before the convolutions had rates.
  CHECK(kernel_time(op, gpu, p).s() == doctest::Approx(std::max(op.flops / (peak * p.gemm.flops_efficiency), 1e6 / (hbm * 0.85))).epsilon(1e-9));
  p.conv.rates = {{64, 0.4, 0.5}, {128, 0.8, 0.7}};
  p.conv.positions_half = 1000;
  p.conv.layout_efficiency = 0.8;
  // 96 channels: halfway in log between 64 and 128: 0.4 + 0.4 * log(1.5) / log(2).
  const double share = 0.4 + 0.4 * std::log(1.5) / std::log(2.0), eff = share / (1 + 1000.0 / 4000);
  const double layout_s = 2.0 * 4 * (96.0 * 6000 + 96.0 * 4000) / (hbm * 0.8);
  CHECK(kernel_time(op, gpu, p).s() == doctest::Approx(op.flops / (peak * eff) + layout_s).epsilon(1e-9));
  op.conv->channels_last = true;  // no conversions
  CHECK(kernel_time(op, gpu, p).s() == doctest::Approx(op.flops / (peak * eff)).epsilon(1e-9));
  op.conv->taps = 1;
  op.conv->channels_last = false;  // a 1x1 convolution is a GEMM on either layout
  CHECK(kernel_time(op, gpu, p).s() == doctest::Approx(op.flops / (peak * eff)).epsilon(1e-9));
  op.efficiency = 0.5;  // a stage's own efficiency wins
  CHECK(kernel_time(op, gpu, p).s() == doctest::Approx(op.flops / (peak * 0.5)).epsilon(1e-9));
}

TEST_CASE("conv rows: shares by channels, the small-output term and the conversions fitted back, replayed, written") {
  const hw::Topology topo(hw::parse_topology_file(kSrc + "/configs/topologies/h200x4-nvlink.yaml"));
  const auto& gpu = topo.node(topo.find("gpu0"));
  const double peak = gpu.gpu.peak_tflops.at("bf16") * 1e12, hbm = gpu.gpu.hbm_bandwidth->bytes_per_s;
  nlohmann::json doc = {
      {"schema", "overlapsim.bench/v1"}, {"environment", {{"env", nlohmann::json::object()}}}, {"results", nlohmann::json::array()}};
  doc["results"].push_back({{"key", "h2d_pinned"}, {"gpus", {0}}, {"bytes", 1048576.0}, {"reps", 5}, {"time_us", 3 + 1048576.0 / 55e3}});
  const std::map<int, std::pair<double, double>> shares = {{96, {0.25, 0.27}}, {128, {0.7, 0.6}}, {384, {0.4, 0.6}}};
  for (const auto& [c, s] : shares)
    for (const auto& [h, w] : {std::pair{60, 104}, {120, 208}, {240, 416}})
      for (const int frames : {1, 4})
        for (const bool fp32 : {true, false})
          for (const bool last : {true, false})
            doc["results"].push_back(conv_row(c, frames, h, w, fp32, last, fp32 ? s.first : s.second, 3000, fp32 ? 0.8 : 0.55, peak, hbm));
  // A decoder's row: F.pad's output convolved unpadded, its conversions over
  // the padded input (h_in, w_in); no channels-last twin, so not a fit input.
  nlohmann::json unpadded = conv_row(128, 2, 120, 208, true, false, 0.7, 3000, 0.8, peak, hbm);
  const double extra_in = 128.0 * 4 * (122.0 * 210 - 120.0 * 208), es = 4;
  unpadded["op"] = "decoder conv3d";
  unpadded["h_in"] = 122;
  unpadded["w_in"] = 210;
  unpadded["time_us"] = unpadded["time_us"].get<double>() + 2 * es * extra_in / (hbm * 0.8) * 1e6;
  doc["results"].push_back(unpadded);
  const Calibration cal = calibrate({{"conv.json", doc}}, topo);
  const ConvParams& c = cal.params.conv;
  REQUIRE(c.rates.size() == 3);
  CHECK(c.positions_half == 3000);
  for (size_t i = 0; i < 3; ++i) {
    const auto& s = shares.at(static_cast<int>(c.rates[i][0]));
    CHECK(c.rates[i][1] == doctest::Approx(s.first).epsilon(1e-3));
    CHECK(c.rates[i][2] == doctest::Approx(s.second).epsilon(1e-3));
  }
  CHECK(c.layout_efficiency == doctest::Approx(0.8).epsilon(1e-3));
  CHECK(c.layout_efficiency_16 == doctest::Approx(0.55).epsilon(1e-3));
  // Replayed alone, every row comes back (the shares are rounded to 4 digits).
  ModelParams p = cal.params;
  p.power = PowerParams{};
  int replayed = 0;
  for (const Comparison& cmp : compare_bench(doc, topo, p))
    if (cmp.key == "conv") {
      ++replayed;
      CHECK(std::abs(cmp.error_pct()) < 0.1);
    }
  CHECK(replayed == 73);
  // The file holds them, and reads them back.
  const std::string yaml = calibration_yaml(cal);
  CHECK(yaml.find("conv_positions_half: 3000") != std::string::npos);
  CHECK(yaml.find("    - [96, 0.2500, 0.2700]") != std::string::npos);
  const ModelParams back = parse_calibration_string(yaml, "cal.yaml");
  CHECK(back.conv.rates == c.rates);
  CHECK(back.conv.layout_efficiency == c.layout_efficiency);
}

TEST_CASE("a schedule's convolution: written and read back, and refused without its FLOPs") {
  Schedule s = parse_schedule_string(R"(name: c
ranks: 1
streams: [a]
programs:
  - rank: 0
    ops:
      - {op: kernel, name: k, stream: a, flops: 1e12, bytes: 1000, conv: {positions: 4000, in_positions: 6000, cin: 96, cout: 48, taps: 27, tf32: true}}
)",
                                     "s.yaml");
  const Op& op = (*s.programs[0].ops)[0];
  REQUIRE(op.conv);
  CHECK(*op.conv == ConvShape{4000, 6000, 96, 48, 27, true, false});
  const Schedule back = parse_schedule_string(to_yaml(s), "back.yaml");
  CHECK(*(*back.programs[0].ops)[0].conv == *op.conv);
  CHECK_THROWS_WITH_AS(parse_schedule_string(R"(name: c
ranks: 1
streams: [a]
programs:
  - rank: 0
    ops:
      - {op: kernel, name: k, stream: a, bytes: 1000, conv: {positions: 4000, in_positions: 6000, cin: 96, cout: 48}}
)",
                                             "s.yaml"),
                       doctest::Contains("s.yaml:7"), InputError);
}
