#include "kernels.hpp"

#include <cuda_bf16.h>

#include "check.hpp"

namespace ovv {

namespace {

__device__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void busy_kernel(int64_t ns) {
  __shared__ uint64_t start;
  if (threadIdx.x == 0) start = global_ns();
  __syncthreads();
  while (static_cast<int64_t>(global_ns() - start) < ns) {
  }
}

__global__ void sleep_kernel(int64_t ns) {
  const uint64_t start = global_ns();
  do {
    __nanosleep(10000);
  } while (static_cast<int64_t>(global_ns() - start) < ns);
}

__global__ void copy_kernel(int4* __restrict__ dst, const int4* __restrict__ src, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

__global__ void fill_kernel(__nv_bfloat16* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint32_t x = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    p[i] = __float2bfloat16(static_cast<float>(x & 0xffff) / 32768.0f - 1.0f);
  }
}

}  // namespace

void launch_sleep(cudaStream_t s, int64_t ns) {
  sleep_kernel<<<1, 1, 0, s>>>(ns);
  CUDA_CHECK(cudaGetLastError());
}

void launch_busy(cudaStream_t s, int blocks, int64_t ns) {
  busy_kernel<<<blocks, 32, 0, s>>>(ns);
  CUDA_CHECK(cudaGetLastError());
}

void launch_hbm_copy(cudaStream_t s, void* dst, const void* src, size_t bytes, int blocks) {
  const size_t n = bytes / 2 / sizeof(int4);
  if (n == 0) return;
  copy_kernel<<<blocks * 4, 512, 0, s>>>(static_cast<int4*>(dst), static_cast<const int4*>(src), n);
  CUDA_CHECK(cudaGetLastError());
}

void launch_fill_bf16(cudaStream_t s, void* p, size_t bytes, uint32_t seed) {
  const size_t n = bytes / 2;
  if (n == 0) return;
  fill_kernel<<<1024, 256, 0, s>>>(static_cast<__nv_bfloat16*>(p), n, seed);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace ovv
