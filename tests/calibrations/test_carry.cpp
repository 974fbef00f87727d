// A calibration measured on one GPU carried to another through the datasheets
// (calibrations/carry.hpp): closed forms on kernel times, the identity within
// a GPU family.
#include <doctest/doctest.h>

#include <string>

#include "calibrations/carry.hpp"
#include "gpu/executor.hpp"
#include "gpu/params_io.hpp"

using namespace osim;

namespace {
const std::string kSrc = OVERLAPSIM_SOURCE_DIR;
hw::Topology topology(const std::string& name) { return hw::Topology(hw::parse_topology_file(kSrc + "/configs/topologies/" + name + ".yaml")); }
ModelParams calibration(const std::string& machine) { return load_calibration(kSrc + "/configs/calibrations/" + machine + ".yaml"); }
const hw::NodeSpec& gpu0(const hw::Topology& t) { return t.node(t.gpus().front()); }

// A framework kernel of `bytes` HBM bytes, of access `a`, its time in seconds beyond hbm_latency.
double memory_s(Access a, double bytes, const hw::Topology& t, const ModelParams& p) {
  Op op;
  op.kind = OpKind::Kernel;
  op.hbm_bytes = bytes;
  op.access = a;
  return kernel_time(op, gpu0(t), p, {}, true).s() - p.memory.hbm_latency.s();
}
}  // namespace

TEST_CASE("carry: the datasheet figures of a topology's GPU and its host link") {
  const GpuFigures h100 = gpu_figures(topology("dgx-h100")), h200 = gpu_figures(topology("h200x4-nvlink"));
  CHECK(h100.model == "H100-SXM5");
  CHECK(h100.hbm_GBps == doctest::Approx(3350));
  CHECK(h200.hbm_GBps == doctest::Approx(4800));
  CHECK(h100.bf16_tflops == 989);
  CHECK(h200.sms == 132);
  CHECK(h100.pcie == "gen5 x16");
  CHECK(h100.pcie_GBps == doctest::Approx(32.0 * 128 / 130 / 8 * 16));  // 63.0 GB/s, before protocol overhead
  CHECK(gpu_figures(topology("dgx-a100")).pcie == "gen4 x16");
}

TEST_CASE("carry: H100 SXM to H200, a streaming kernel's rate follows the HBM ratio, an SM-held one's stays") {
  const hw::Topology h100 = topology("dgx-h100"), h200 = topology("h200x4-nvlink");
  const ModelParams p = calibration("h100-sxm");
  const CarriedCalibration c = carry_calibration(p, gpu_figures(h100), gpu_figures(h200));
  REQUIRE(c.carried);
  const double bytes = 1e9, hbm_ratio = 4800.0 / 3350.0;
  // A contiguous elementwise kernel: its share of HBM stays, its rate is the HBM ratio.
  CHECK(c.params.memory.framework_hbm_efficiency == p.memory.framework_hbm_efficiency);
  CHECK(memory_s(Access::Elementwise, bytes, h100, p) / memory_s(Access::Elementwise, bytes, h200, c.params) == doctest::Approx(hbm_ratio));
  // A norm below streaming is held by its SMs (equal on both): its time stays, below the H200's streaming bound.
  const double streaming = p.memory.framework_hbm_efficiency, norm = p.memory.framework_norm_efficiency;
  REQUIRE(norm / hbm_ratio < streaming);  // on the H200 still below its streaming rate
  CHECK(memory_s(Access::Norm, bytes, h200, c.params) == doctest::Approx(memory_s(Access::Norm, bytes, h100, p)));
  CHECK(memory_s(Access::Roll, bytes, h200, c.params) == doctest::Approx(memory_s(Access::Roll, bytes, h100, p)));
  CHECK(c.params.memory.framework_norm_efficiency == doctest::Approx(norm / hbm_ratio));
  // Compute-bound kernels: equal peaks, equal times.
  Op gemm;
  gemm.kind = OpKind::Kernel;
  gemm.gemm = GemmShape{75600, 5120, 5120};
  CHECK(kernel_time(gemm, gpu0(h200), c.params).s() == kernel_time(gemm, gpu0(h100), p).s());
  // Equal PCIe links: the copy engines as measured. A GEMM's slowdown beside copies, host figures and times too.
  CHECK(c.params.copies.copy_engine_bandwidth == p.copies.copy_engine_bandwidth);
  CHECK(c.params.interference.gemm_slowdown_per_copy == p.interference.gemm_slowdown_per_copy);
  CHECK(c.params.copies.pageable_bandwidth == p.copies.pageable_bandwidth);
  CHECK(c.params.copies.host_h2d_aggregate == p.copies.host_h2d_aggregate);
  CHECK(c.params.overheads.kernel_launch == p.overheads.kernel_launch);
  CHECK(c.params.memory.hbm_latency == p.memory.hbm_latency);
  // The line says what was carried and by what.
  const std::string note = carry_note(c, gpu_figures(h100), gpu_figures(h200));
  CHECK(note.find("calibration carried from H100-SXM5 to H200") == 0);
  CHECK(note.find("HBM 3.35 -> 4.80 TB/s") != std::string::npos);
  CHECK(note.find("SMs 132 -> 132") != std::string::npos);
  CHECK(note.find("gen5 x16 -> gen5 x16") != std::string::npos);
}

TEST_CASE("carry: back from H200 to H100 SXM is the inverse") {
  const GpuFigures h100 = gpu_figures(topology("dgx-h100")), h200 = gpu_figures(topology("h200x4-nvlink"));
  const ModelParams p = calibration("h100-sxm");
  const ModelParams there = carry_calibration(p, h100, h200).params;
  const ModelParams back = carry_calibration(there, h200, h100).params;
  CHECK(back.memory.framework_norm_efficiency == doctest::Approx(p.memory.framework_norm_efficiency).epsilon(1e-12));
  CHECK(back.memory.framework_roll_efficiency == doctest::Approx(p.memory.framework_roll_efficiency).epsilon(1e-12));
}

TEST_CASE("carry: a share's closed form") {
  CHECK(carried_share(0.2, 0.8, 2.0, 1.0) == doctest::Approx(0.1));  // twice the HBM, the same SMs: half the share
  CHECK(carried_share(0.2, 0.8, 1.0, 1.0) == doctest::Approx(0.2));  // equal GPUs: as it was
  CHECK(carried_share(0.2, 0.8, 2.0, 2.0) == doctest::Approx(0.2));  // the SMs keep pace with the HBM
  CHECK(carried_share(0.5, 0.8, 0.5, 1.0) == doctest::Approx(0.8));  // half the HBM: up to streaming, no further
  CHECK(carried_share(0.9, 0.8, 2.0, 1.0) == 0.9);                   // at or above streaming: a share of HBM as it is
  CHECK(carried_share(0, 0.8, 2.0, 1.0) == 0);                       // not set
}

TEST_CASE("carry: another PCIe generation scales the copy engines by the link's nominal rate") {
  const GpuFigures h100 = gpu_figures(topology("dgx-h100")), a100 = gpu_figures(topology("dgx-a100"));
  const ModelParams p = calibration("h100-sxm");
  const CarriedCalibration c = carry_calibration(p, h100, a100);
  REQUIRE(c.carried);
  CHECK(c.params.copies.copy_engine_bandwidth.h2d.GBps() == doctest::Approx(p.copies.copy_engine_bandwidth.h2d.GBps() / 2));
  CHECK(c.params.copies.copy_engine_bandwidth.d2h.GBps() == doctest::Approx(p.copies.copy_engine_bandwidth.d2h.GBps() / 2));
}

TEST_CASE("carry: within one GPU family nothing changes") {
  const GpuFigures h200 = gpu_figures(topology("h200x4-nvlink"));
  for (const char* machine : {"h200", "h200x2-nvlink", "h200x4-nvlink"}) {
    const ModelParams p = calibration(machine);
    const CarriedCalibration c = carry_calibration(p, h200, h200);
    CHECK_FALSE(c.carried);
    CHECK(model_yaml(c.params) == model_yaml(p));
    CHECK(carry_note(c, h200, h200).empty());
  }
  const ModelParams p = calibration("h100-sxm");
  const CarriedCalibration c = carry_calibration(p, gpu_figures(topology("dgx-h100")), gpu_figures(topology("h100-2node-ib")));
  CHECK_FALSE(c.carried);
  CHECK(model_yaml(c.params) == model_yaml(p));
}
