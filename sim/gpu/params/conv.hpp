// Convolutions (the VAE decoders'): cuDNN's implicit-GEMM kernels at a share
// of the tensor-core peak by output channels, a small-output term, and the
// layout conversions around them for channels-first tensors
// (docs/execution-model.md "Convolutions"; bench conv).
#pragma once

#include <array>
#include <vector>

namespace osim {

struct ConvParams {
  // [output channels, share of the peak with fp32 data (TF32), with 16-bit
  // data] by channels, interpolated in log(channels): cuDNN picks its tiles
  // by the channel count, so widths that fill them (128, 256, 512) run near
  // the GEMM rate and others (96, 192, 384) well below. Empty: convolutions
  // run as kernels of FLOPs at the GEMM model's flops_efficiency.
  std::vector<std::array<double, 3>> rates;
  // share / (1 + positions_half / positions): a small output leaves SMs idle.
  double positions_half = 0;
  // The conversions of input and output to channels-last and back, each
  // read and written: their share of the HBM bandwidth, 4-byte and 2-byte elements.
  double layout_efficiency = 0.8, layout_efficiency_16 = 0.55;
  [[nodiscard]] bool fitted() const { return !rates.empty(); }
  /// The kernel's share of the peak for `cout` channels and `positions` outputs.
  [[nodiscard]] double efficiency(double cout, double positions, bool tf32) const;
};

}  // namespace osim
