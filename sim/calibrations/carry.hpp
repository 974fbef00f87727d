// A calibration measured on one GPU carried to another through the two GPUs'
// datasheet figures (the topologies' GPU nodes and host links).
//
// Most of a calibration is already a fraction of the topology's peaks: GEMM,
// attention and convolution shares of the tensor-core peak, memory kernels'
// shares of the HBM bandwidth. Those stay, and their rates follow the target's
// peaks. What is carried:
// - memory kernels that run below the streaming share (norms, broadcasts,
//   strided ops, roll, the channels-first kinds, layout conversions): held by
//   their SMs, not by the HBM (a roofline: the slower of the streaming rate
//   and the SMs' own), so their rate follows the SM count, up to the
//   target's streaming rate (the clocks are not in the topology: taken equal);
// - the copy engines' rate over PCIe: the host link's nominal rate.
// Host figures (pageable staging, the host bridges' limits), times and
// memory sizes stay; so do NCCL's rates (no datasheet link figure in both),
// and a GEMM's slowdown beside copies (scaled as a copy's share of the HBM,
// it made every H100 <-> H200 prediction worse: docs/accuracy.md).
// GPUs of one family are the identity: nothing is touched.
#pragma once

#include <string>
#include <vector>

#include "gpu/params.hpp"
#include "hw/fabric.hpp"

namespace osim {

/// The datasheet figures of a topology's GPU that a carry reads.
struct GpuFigures {
  std::string model;       // the topology's GPU model, e.g. "H100-SXM5"
  double hbm_GBps = 0;     // HBM bandwidth (0: not given)
  double bf16_tflops = 0;  // dense tensor-core peak (0: not given)
  int sms = 0;             // 0: not given
  std::string pcie;        // its host link's label ("gen5 x16"; empty: not PCIe)
  double pcie_GBps = 0;    // that link's nominal rate per direction (0: not PCIe)
};
/// The figures of the topology's first GPU and of its PCIe link toward the host.
GpuFigures gpu_figures(const hw::Topology& topo);

/// One quantity carried: what, the figures it follows, and its factor.
struct CarryStep {
  std::string what;     // "memory kernels held by their SMs", ...
  std::string follows;  // "HBM 3.35 -> 4.80 TB/s", ...
  double ratio = 1;     // the target's figure over the source's
  std::string change;   // what became of the fields ("shares as they are", "shares x0.698", ...)
};

struct CarriedCalibration {
  ModelParams params;
  bool carried = false;  // false: the same GPU family, params as given
  std::vector<CarryStep> steps;
};

/// `p`, fitted on a topology whose GPU is `from`, for a topology whose GPU is `to`.
CarriedCalibration carry_calibration(const ModelParams& p, const GpuFigures& from, const GpuFigures& to);

/// The run's line on it ("" where nothing was carried).
std::string carry_note(const CarriedCalibration& c, const GpuFigures& from, const GpuFigures& to);

/// A memory kernel's share of the HBM bandwidth on another GPU: below
/// `streaming` (the contiguous kernels' share) its SMs hold its rate, which
/// follows the SM count up to the target's streaming rate; hbm_ratio and
/// sm_ratio are the target's over the source's. A share at or above
/// streaming (or 0: not set) stays.
double carried_share(double share, double streaming, double hbm_ratio, double sm_ratio);

}  // namespace osim
