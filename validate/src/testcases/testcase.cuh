// What every bench testcase (testcases/<family>.cu) builds on: RAII buffers,
// streams and events, the gates that hold a stream until everything is
// queued (so launch cost stays out of the timing), medians of samples, the
// NCCL set-up, and the registry the bench runs the testcases from.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <numeric>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <cuda_bf16.h>
#include <nccl.h>
#include <nlohmann/json.hpp>

#include "bench.hpp"
#include "check.hpp"
#include "kernels.hpp"
#include "schedule/bench_keys.hpp"
#include "testcases/order.hpp"

namespace ovv {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------- RAII buffers
struct DevBuf {
  void* p = nullptr;
  int dev = 0;
  DevBuf(int d, size_t bytes) : dev(d) {
    CUDA_CHECK(cudaSetDevice(d));
    CUDA_CHECK(cudaMalloc(&p, bytes));
    CUDA_CHECK(cudaMemset(p, 1, bytes));  // never time on untouched memory
  }
  ~DevBuf() {
    cudaSetDevice(dev);
    cudaFree(p);
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
};
struct PinnedBuf {
  void* p = nullptr;
  explicit PinnedBuf(size_t bytes) {
    CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
    std::memset(p, 1, bytes);
  }
  ~PinnedBuf() { cudaFreeHost(p); }
  PinnedBuf(const PinnedBuf&) = delete;
  PinnedBuf& operator=(const PinnedBuf&) = delete;
};
struct PageableBuf {
  std::vector<char> v;
  explicit PageableBuf(size_t bytes) : v(bytes, 1) {}
  void* p() { return v.data(); }
};
struct Stream {
  cudaStream_t s{};
  int dev = 0;
  explicit Stream(int d, int priority = 0) : dev(d) {
    CUDA_CHECK(cudaSetDevice(d));
    CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, priority));
  }
  ~Stream() {
    cudaSetDevice(dev);
    cudaStreamDestroy(s);
  }
};
// A device buffer, a pinned host buffer and a stream on each of GPUs 0..gpus-1,
// for copies on several GPUs at once.
struct PerGpuCopies {
  std::vector<std::unique_ptr<DevBuf>> dev;
  std::vector<std::unique_ptr<PinnedBuf>> host;
  std::vector<std::unique_ptr<Stream>> stream;
  PerGpuCopies(int gpus, size_t bytes) {
    for (int g = 0; g < gpus; ++g) {
      dev.push_back(std::make_unique<DevBuf>(g, bytes));
      host.push_back(std::make_unique<PinnedBuf>(bytes));
      stream.push_back(std::make_unique<Stream>(g));
    }
  }
};
struct Event {
  cudaEvent_t e{};
  int dev = 0;
  explicit Event(int d) : dev(d) {
    CUDA_CHECK(cudaSetDevice(d));
    CUDA_CHECK(cudaEventCreate(&e));
  }
  ~Event() {
    cudaSetDevice(dev);
    cudaEventDestroy(e);
  }
};

// Microseconds from event a to event b (both recorded and complete).
inline double elapsed_us(const Event& a, const Event& b) {
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, a.e, b.e));
  return ms * 1e3;
}

// One event on each of GPUs 0..n-1 (index = GPU).
inline std::vector<std::unique_ptr<Event>> events_per_gpu(int n) {
  std::vector<std::unique_ptr<Event>> out;
  for (int r = 0; r < n; ++r) out.push_back(std::make_unique<Event>(r));
  return out;
}

// ---------------------------------------------------------------- spin gate
static __global__ void spin_until(volatile int* flag) {
  while (*flag == 0) {
  }
}
static __global__ void empty_kernel() {}
// Random bf16 data for GEMM inputs (kernels.hpp), ready when this returns.
inline void fill_random(void* p, size_t bytes) {
  launch_fill_bf16(nullptr, p, bytes, 0);
  CUDA_CHECK(cudaDeviceSynchronize());
}

// A cuBLAS handle on one stream, for bf16 GEMMs with fp32 accumulation on
// row-major matrices: C[m,n] = A[m,k] B[k,n] (column-major C^T = B^T A^T).
struct Blas {
  cublasHandle_t handle = nullptr;
  explicit Blas(cudaStream_t s) {
    CUBLAS_CHECK(cublasCreate(&handle));
    CUBLAS_CHECK(cublasSetStream(handle, s));
  }
  ~Blas() { cublasDestroy(handle); }
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;
  // accumulate: C += A B (beta = 1), as the k-chunks of a realised attention kernel after the first.
  void gemm(int m, int n, int k, const void* A, const void* B, void* C, bool accumulate = false) const {
    const float alpha = 1, beta = accumulate ? 1.0f : 0.0f;
    CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, B, CUDA_R_16BF, n, A, CUDA_R_16BF, k, &beta, C, CUDA_R_16BF, n,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
};
// What the single-GPU compute testcases start from: GPU 0 current, a stream
// on it, a cuBLAS handle on that stream, and the GPU's SM count.
struct ComputeGpu {
  const int dev = 0;
  Stream s{0};
  const Blas blas{s.s};
  int sms = 0;
  ComputeGpu() {
    CUDA_CHECK(cudaSetDevice(dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  }
};

struct Gate {
  int* host = nullptr;
  int* dev = nullptr;
  Gate() {
    CUDA_CHECK(cudaHostAlloc(&host, sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
    *host = 0;
    CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), host, 0));
  }
  ~Gate() { cudaFreeHost(host); }
  void hold(cudaStream_t s) {
    *reinterpret_cast<volatile int*>(host) = 0;
    spin_until<<<1, 1, 0, s>>>(dev);
    CUDA_CHECK(cudaGetLastError());
  }
  void release() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    *reinterpret_cast<volatile int*>(host) = 1;
  }
};

// Holds a stream with no kernel resident (the spin gate's kernel keeps the
// GPU busy): a host function that returns once released.
struct HostGate {
  std::atomic<int> open{0};
  static void CUDART_CB wait(void* self) {
    auto* g = static_cast<HostGate*>(self);
    while (g->open.load(std::memory_order_acquire) == 0) std::this_thread::yield();
  }
  void hold(cudaStream_t s) {
    open.store(0, std::memory_order_release);
    CUDA_CHECK(cudaLaunchHostFunc(s, &HostGate::wait, this));
  }
  void release() { open.store(1, std::memory_order_release); }
};

// Launches every kernel this binary uses once on the current device and
// waits: loads them while nothing is gated (see Runner::run).
inline void prime_kernels(int dev) {
  Gate gate;
  gate.release();
  spin_until<<<1, 1>>>(gate.dev);
  CUDA_CHECK(cudaGetLastError());
  empty_kernel<<<1, 1>>>();
  CUDA_CHECK(cudaGetLastError());
  DevBuf tmp(dev, 64);
  launch_sleep(nullptr, 0);
  launch_busy(nullptr, 1, 0);
  launch_fill_bf16(nullptr, tmp.p, 32, 1);
  launch_hbm_copy(nullptr, tmp.p, static_cast<char*>(tmp.p) + 32, 32, 1);
  CUDA_CHECK(cudaDeviceSynchronize());
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The median of a series' second half (its steady state).
inline double tail_median(const std::vector<double>& v) { return median(std::vector<double>(v.begin() + static_cast<long>(v.size() / 2), v.end())); }

inline std::vector<size_t> sizes(size_t lo, size_t hi, int per_decade_of_4 = 1) {
  std::vector<size_t> out;
  for (size_t s = lo; s <= hi; s *= 4)
    for (int k = 0; k < per_decade_of_4; ++k) out.push_back(s);
  return out;
}

// What the testcases share while the bench runs: the options, the results,
// and the progress the watchdog reads.
struct BenchContext {
  Options opt;
  json results = json::array();
  std::atomic<int64_t> last_progress{0};
  std::string current;
  std::mutex mu;
  int ngpus = 0;
  void progress(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu);
    current = what;
    last_progress = std::chrono::duration_cast<std::chrono::seconds>(Clock::now().time_since_epoch()).count();
    if (opt.verbose) std::cerr << "bench: " << what << std::endl;
  }
};

// A testcase family's base: the context's options, and the timing helpers.
class Testcases {
 public:
  explicit Testcases(BenchContext& c) : ctx_(c), opt(c.opt), ngpus(c.ngpus) {}

 protected:
  BenchContext& ctx_;
  const Options& opt;
  const int ngpus;

  void progress(const std::string& what) { ctx_.progress(what); }
  bool want(const std::string& key) const { return opt.filter.empty() || std::regex_search(key, std::regex(opt.filter)); }
  void add(json r) {
    std::lock_guard<std::mutex> lock(ctx_.mu);
    ctx_.results.push_back(std::move(r));
  }
  // Time `op` on one stream with events, gated; `reps` ops per sample.
  double time_stream_us(int dev, cudaStream_t s, int reps, const std::function<void()>& op) {
    // One ungated call first: libraries initialise lazily (cuBLAS allocates
    // its workspace), and an allocation synchronises the device, which would
    // wait forever on the spin kernel that waits on us.
    CUDA_CHECK(cudaSetDevice(dev));
    op();
    CUDA_CHECK(cudaStreamSynchronize(s));
    Gate gate;
    Event a(dev), b(dev);
    std::vector<double> samples;
    for (int it = 0; it < opt.warmup + opt.samples; ++it) {
      gate.hold(s);
      CUDA_CHECK(cudaEventRecord(a.e, s));
      for (int k = 0; k < reps; ++k) op();
      CUDA_CHECK(cudaEventRecord(b.e, s));
      gate.release();
      CUDA_CHECK(cudaStreamSynchronize(s));
      if (it >= opt.warmup) samples.push_back(elapsed_us(a, b) / reps);
    }
    return median(samples);
  }

  // The mean time of `calls` ops enqueued back to back on a busy stream,
  // from one event before the first to one after the last.
  double window_mean_us(int dev, cudaStream_t s, int calls, const std::function<void()>& op) {
    CUDA_CHECK(cudaSetDevice(dev));
    Event a(dev), b(dev);
    CUDA_CHECK(cudaEventRecord(a.e, s));
    for (int i = 0; i < calls; ++i) op();
    CUDA_CHECK(cudaEventRecord(b.e, s));
    CUDA_CHECK(cudaEventSynchronize(b.e));
    return elapsed_us(a, b) / calls;
  }

  int reps_for(size_t bytes) const { return bytes < (1u << 20) ? 20 : bytes < (64u << 20) ? 5 : 1; }
};

// The bench's testcases; each emits rows of `keys` (every one a key of
// schedule/bench_keys.hpp). `order`: its place in kBenchOrder (order.hpp).
struct BenchTestcase {
  int order;
  const char* name;
  void (*run)(BenchContext& ctx);
};
std::vector<BenchTestcase>& bench_testcases();
struct BenchTestcaseRegistration {
  explicit BenchTestcaseRegistration(BenchTestcase t) { bench_testcases().push_back(t); }
};
#define OVV_BENCH_TESTCASE(var, name, fn)                                                     \
  static_assert(::ovv::bench_position(name) >= 0, "add the testcase to testcases/order.hpp"); \
  static const ::ovv::BenchTestcaseRegistration var {                                         \
    { ::ovv::bench_position(name), name, fn }                                                 \
  }
// The keys a testcase file writes, checked against the table when it compiles.
#define OVV_KEYS(...)                                      \
  static_assert(                                           \
      [] {                                                 \
        constexpr std::string_view keys[] = {__VA_ARGS__}; \
        for (const std::string_view k : keys)              \
          if (!::osim::bench::known(k)) return false;      \
        return true;                                       \
      }(),                                                 \
      "a key this file writes is not in schedule/bench_keys.hpp")

}  // namespace ovv
