// Memory-bound kernels: the fit that recovers hbm_latency and hbm_efficiency
// from bench memory_kernel rows; the channels-first kernels' shares.
#include <doctest/doctest.h>

#include <map>

#include "calib/calibrate.hpp"
#include "gpu/compute.hpp"
#include "schedule/builder.hpp"

using namespace osim;

TEST_CASE("calibrate recovers hbm_latency and hbm_efficiency from memory_kernel rows past the L2, and replays them") {
  // Synthetic rows on an H200 (4.8 TB/s): 3 us + bytes / (0.8 x 4.8 TB/s) from
  // 64 MiB up; the smaller ones (in the L2) twice as fast, which the fit leaves
  // out. Calibration needs a machine run: pinned copies beside them.
  const hw::Topology topo(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/h200x4-nvlink.yaml"));
  nlohmann::json doc = {
      {"schema", "overlapsim.bench/v1"}, {"environment", {{"env", nlohmann::json::object()}}}, {"results", nlohmann::json::array()}};
  for (double b = 1048576; b <= 1073741824.0; b *= 4) {
    const double t = 3 + b / (0.8 * 4.8e6);
    doc["results"].push_back({{"key", "memory_kernel"}, {"hbm_bytes", b}, {"time_us", b < 64.0 * 1048576 ? t / 2 : t}});
    doc["results"].push_back({{"key", "h2d_pinned"}, {"gpus", {0}}, {"bytes", b}, {"reps", 1}, {"time_us", 3 + b / 55e3}});
  }
  const Calibration c = calibrate({{"memory.json", doc}}, topo);
  CHECK(c.params.memory.hbm_latency.us() == doctest::Approx(3).epsilon(1e-6));
  CHECK(c.params.memory.hbm_efficiency == doctest::Approx(0.8).epsilon(1e-6));
  int held = 0, in_l2 = 0;
  for (const auto& cmp : compare_bench(doc, topo, c.params)) {
    if (cmp.key != "memory_kernel") continue;
    if (!cmp.outside.empty()) {
      ++in_l2;
      CHECK(cmp.outside == "the GPU's L2 cache holds the buffers");
      continue;
    }
    ++held;
    CHECK(cmp.simulated_us == doctest::Approx(cmp.measured_us).epsilon(1e-4));
  }
  CHECK(held == 3);   // 64 MiB, 256 MiB, 1 GiB
  CHECK(in_l2 == 3);  // 1, 4, 16 MiB
}

TEST_CASE("calibrate fits the channels-first kernels' fixed times and shares per access kind and element width, past the L2 only") {
  // Synthetic rows on an H200 (4.8 TB/s): each op at its kind's fixed time
  // and share, fp32 and bf16; a shape under 48 MiB at twice the share (in
  // the L2, or PyTorch's dispatch), left out.
  const hw::Topology topo(hw::parse_topology_file(std::string(OVERLAPSIM_SOURCE_DIR) + "/configs/topologies/h200x4-nvlink.yaml"));
  nlohmann::json doc = {
      {"schema", "overlapsim.bench/v1"}, {"environment", {{"env", nlohmann::json::object()}}}, {"results", nlohmann::json::array()}};
  struct Kind {
    double fp32, bf16, fixed_us;
  };
  const std::map<std::string, Kind> kinds = {{"normalize", {0.6, 0.4, 20}},      {"cat_frames", {0.66, 0.44, 6}}, {"stack_frames", {0.66, 0.44, 6}},
                                             {"channel_scale", {0.66, 0.44, 6}}, {"pad", {0.44, 0.33, 7.5}},      {"upsample", {0.37, 0.23, 1}},
                                             {"silu", {0.8, 0.8, 0}}};
  for (const auto& [op, k] : kinds)
    for (const bool fp32 : {true, false})
      for (const double bytes : {32.0 * 1048576, 128.0 * 1048576, 512.0 * 1048576}) {
        const double share = (fp32 ? k.fp32 : k.bf16) * (bytes < 48.0 * 1048576 ? 2 : 1);
        const double time_us = k.fixed_us + bytes / (share * 4.8e3) * 1e-3;
        doc["results"].push_back({{"key", "framework_channels_first"},
                                  {"gpus", {0}},
                                  {"op", op},
                                  {"dtype", fp32 ? "fp32" : "bf16"},
                                  {"bytes", bytes},
                                  {"GBps", bytes / time_us * 1e-3},
                                  {"time_us", time_us}});
      }
  for (double b = 1048576; b <= 1073741824.0; b *= 4)  // a machine run: pinned copies
    doc["results"].push_back({{"key", "h2d_pinned"}, {"gpus", {0}}, {"bytes", b}, {"reps", 1}, {"time_us", 3 + b / 55e3}});
  const Calibration c = calibrate({{"channels-first.json", doc}}, topo);
  const MemoryParams& m = c.params.memory;
  CHECK(m.framework_channel_norm_efficiency == doctest::Approx(0.6).epsilon(2e-4));
  CHECK(m.framework_channel_norm_efficiency_16 == doctest::Approx(0.4).epsilon(2e-4));
  CHECK(m.framework_channel_norm_fixed.us() == doctest::Approx(20).epsilon(0.01));
  CHECK(m.framework_indexed_efficiency == doctest::Approx(0.66).epsilon(2e-4));
  CHECK(m.framework_indexed_efficiency_16 == doctest::Approx(0.44).epsilon(2e-4));
  CHECK(m.framework_indexed_fixed.us() == doctest::Approx(6).epsilon(0.01));
  CHECK(m.framework_pad_efficiency == doctest::Approx(0.44).epsilon(2e-4));
  CHECK(m.framework_pad_efficiency_16 == doctest::Approx(0.33).epsilon(2e-4));
  CHECK(m.framework_pad_fixed.us() == doctest::Approx(7.5).epsilon(0.01));
  CHECK(m.framework_upsample_efficiency == doctest::Approx(0.37).epsilon(2e-4));
  CHECK(m.framework_upsample_efficiency_16 == doctest::Approx(0.23).epsilon(2e-4));
  CHECK(m.framework_upsample_fixed.us() == doctest::Approx(1).epsilon(0.01));
  CHECK(m.framework_fixed(Access::Pad).us() == doctest::Approx(7.5).epsilon(0.01));
  CHECK(m.framework_fixed(Access::Elementwise) == Time::zero());
  CHECK(m.framework_hbm_efficiency == 0);  // the contiguous rows check it, they do not set it
  // The model: the share by the op's element width; unfitted kinds fall back to the contiguous share.
  CHECK(m.framework_efficiency(Access::Pad, 0, 4) == doctest::Approx(0.44));
  CHECK(m.framework_efficiency(Access::Pad, 0, 2) == doctest::Approx(0.33));
  CHECK(m.framework_efficiency(Access::Upsample, 0, 1) == doctest::Approx(0.23));
  // A framework program's pad of 256 MiB in fp32: latency, its fixed time, its bytes at its share.
  const auto& gpu = topo.node(topo.find("gpu0"));
  Op pad = ops::memory_kernel(0, 256.0 * 1048576, "pad", Access::Pad);
  pad.dtype = DType::FP32;
  ModelParams p = c.params;
  p.power = PowerParams{};
  CHECK(kernel_time(pad, gpu, p, {}, true).s() ==
        doctest::Approx(m.hbm_latency.s() + m.framework_pad_fixed.s() + 256.0 * 1048576 / (gpu.gpu.hbm_bandwidth->bytes_per_s * m.framework_pad_efficiency))
            .epsilon(1e-9));
  // Outside a framework program (a hand-written schedule's kernel of bytes): no fixed time, hbm_efficiency.
  CHECK(kernel_time(pad, gpu, p, {}, false).s() ==
        doctest::Approx(m.hbm_latency.s() + 256.0 * 1048576 / (gpu.gpu.hbm_bandwidth->bytes_per_s * m.hbm_efficiency)).epsilon(1e-9));
  MemoryParams bare;
  bare.framework_hbm_efficiency = 0.8;
  CHECK(bare.framework_efficiency(Access::Indexed, 0, 4) == doctest::Approx(0.8));
}
