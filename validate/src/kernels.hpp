// Device kernels `overlapsim-validate run` needs beyond cuBLAS and NCCL,
// behind plain host functions so C++20 code can call them.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace ovv {

/// Occupies `blocks` blocks (one per SM) for `ns` nanoseconds of GPU time (globaltimer).
void launch_busy(cudaStream_t s, int blocks, int64_t ns);
/// One thread sleeping on the GPU: holds a stream for `ns` without drawing power.
void launch_sleep(cudaStream_t s, int64_t ns);
/// A memory-bound kernel: reads `bytes`/2 from src and writes them to dst (16-byte vectors).
void launch_hbm_copy(cudaStream_t s, void* dst, const void* src, size_t bytes, int blocks);
/// Fills a buffer with pseudo-random bf16 values in [-1, 1] (GEMMs on zeros run faster than on real data).
void launch_fill_bf16(cudaStream_t s, void* p, size_t bytes, uint32_t seed);

}  // namespace ovv
