// A GEMM as `overlapsim-validate run` realises a kernel and its bench times
// it: `chunks` k-chunks accumulating into one output (attention as
// realised), else 1. Plain C++17: the CUDA sources include it.
#pragma once

#include <cstdint>
#include <tuple>

namespace osim {

struct RealisedGemm {
  int64_t m = 0, n = 0, k = 0;  // one chunk's shape
  int chunks = 1;
  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * chunks; }
  bool operator==(const RealisedGemm& o) const { return m == o.m && n == o.n && k == o.k && chunks == o.chunks; }
  bool operator<(const RealisedGemm& o) const { return std::tie(m, n, k, chunks) < std::tie(o.m, o.n, o.k, o.chunks); }
};

}  // namespace osim
