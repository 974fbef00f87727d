// GEMMs and other compute-bound kernels: efficiency against the GPU's peak
// per measured shape, a shape model for the others
// (docs/execution-model.md "Compute"; bench gemm_bf16), and fp8's against
// bf16's (gemm_fp8).
#pragma once

#include <cstdint>
#include <vector>

namespace osim {

struct GemmShapeEfficiency {
  int m, n, k;
  double efficiency;
};

// efficiency / (1 + m0/m + n0/n + k0/k + pow2_m [m a power of two]): what a
// small dimension costs (edge tiles, pipeline fill along k), and what cuBLAS
// loses when m is a power of two. efficiency 0 = no model.
struct GemmShapeModel {
  double efficiency = 0;
  double m0 = 0, n0 = 0, k0 = 0, pow2_m = 0;
  [[nodiscard]] static bool power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }
  [[nodiscard]] double at(int64_t m, int64_t n, int64_t k) const {
    return efficiency /
           (1 + m0 / static_cast<double>(m) + n0 / static_cast<double>(n) + k0 / static_cast<double>(k) + (power_of_two(m) ? pow2_m : 0.0));
  }
};

struct GemmParams {
  double gemm_efficiency = 0.75;                 // shapes neither table nor model covers
  std::vector<GemmShapeEfficiency> gemm_shapes;  // measured shapes (the last entry of a shape wins)
  GemmShapeModel gemm_model;
  double flops_efficiency = 0.60;  // kernels given as FLOPs
  // An fp8 GEMM's efficiency against the fp8 peak, as a share of a bf16
  // GEMM's against the bf16 peak at the same shape (bench gemm_fp8).
  double fp8_efficiency_ratio = 1.0;
  /// The measured efficiency of this shape, else the shape model's, else gemm_efficiency.
  [[nodiscard]] double gemm_efficiency_for(int64_t m, int64_t n, int64_t k) const {
    double eff = gemm_model.efficiency > 0 && m > 0 && n > 0 && k > 0 ? gemm_model.at(m, n, k) : gemm_efficiency;
    for (const auto& sh : gemm_shapes)
      if (sh.m == m && sh.n == n && sh.k == k) eff = sh.efficiency;
    return eff;
  }
};

}  // namespace osim
