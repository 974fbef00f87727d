// A GEMM shape as the bench's table times it and `run` realises it (plain
// C++17: shared by the CUDA sources and run.cpp).
#pragma once

#include <cstdint>

namespace ovv {

/// A GEMM the table times: `chunks` k-chunks accumulating into one output
/// (attention as `overlapsim-validate run` realises it), else 1.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  int chunks = 1;
  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * chunks; }
  bool operator==(const GemmShape& o) const { return m == o.m && n == o.n && k == o.k && chunks == o.chunks; }
};

}  // namespace ovv
