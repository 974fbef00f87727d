// overlapsim-validate bench: microbenchmarks in the manner of nvbandwidth and
// nccl-tests (STYLE.md). One testcase per stable key; medians of several
// samples after warm-ups; a spin kernel holds a stream until everything is
// queued, so host launch cost stays out of single-GPU timings; JSON output
// with the environment. README "validate".
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
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
#include <nlohmann/json.hpp>

#include "bench.hpp"
#include "check.hpp"
#include "kernels.hpp"

namespace ovv {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

namespace {

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
double elapsed_us(const Event& a, const Event& b) {
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, a.e, b.e));
  return ms * 1e3;
}

// One event on each of GPUs 0..n-1 (index = GPU).
std::vector<std::unique_ptr<Event>> events_per_gpu(int n) {
  std::vector<std::unique_ptr<Event>> out;
  for (int r = 0; r < n; ++r) out.push_back(std::make_unique<Event>(r));
  return out;
}

// ---------------------------------------------------------------- spin gate
__global__ void spin_until(volatile int* flag) {
  while (*flag == 0) {
  }
}
__global__ void empty_kernel() {}
// Random bf16 data for GEMM inputs (kernels.hpp), ready when this returns.
void fill_random(void* p, size_t bytes) {
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
void prime_kernels(int dev) {
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<size_t> sizes(size_t lo, size_t hi, int per_decade_of_4 = 1) {
  std::vector<size_t> out;
  for (size_t s = lo; s <= hi; s *= 4)
    for (int k = 0; k < per_decade_of_4; ++k) out.push_back(s);
  return out;
}

}  // namespace

// ---------------------------------------------------------------- Runner
struct Runner::Impl {
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
  bool want(const std::string& key) const { return opt.filter.empty() || std::regex_search(key, std::regex(opt.filter)); }
  void add(json r) {
    std::lock_guard<std::mutex> lock(mu);
    results.push_back(std::move(r));
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

  // ------------------------------------------------------------ host <-> device
  void copies() {
    const size_t max_bytes = opt.quick ? (64u << 20) : (size_t(1) << 30);
    // The pageable rows' rotating host buffer, filled once for every GPU, and
    // where its next slice starts: on from row to row, so that a row does not
    // reuse the slices the row before it touched (until 2 GiB wrap around,
    // far past the CPU's caches).
    const size_t rot_bytes = opt.quick ? (size_t(256) << 20) : (size_t(2) << 30);
    std::unique_ptr<PageableBuf> rot;
    size_t off = 0;
    for (int dev = 0; dev < ngpus; ++dev) {
      DevBuf d(dev, max_bytes), d2(dev, max_bytes);
      PinnedBuf h(max_bytes), h2(max_bytes);
      Stream s(dev), s2(dev);
      for (size_t bytes : sizes(4096, max_bytes)) {
        for (const char* dir : {"h2d", "d2h"}) {
          const std::string key = std::string(dir) + "_pinned";
          if (!want(key)) continue;
          progress(key + " " + std::to_string(bytes));
          const bool h2d = dir[0] == 'h';
          const double us = time_stream_us(dev, s.s, reps_for(bytes), [&] {
            CUDA_CHECK(cudaMemcpyAsync(h2d ? d.p : h.p, h2d ? h.p : d.p, bytes, h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s.s));
          });
          add({{"key", key}, {"gpus", {dev}}, {"bytes", bytes}, {"reps", reps_for(bytes)}, {"time_us", us}, {"GBps", bytes / us * 1e-3}});
        }
        if (want("bidir_pinned")) {
          // H2D on one stream while D2H runs on another: both streams held
          // by one gate, `reps` copies each between their events (as the
          // one-way rows; before 2026-11-23 one copy per sample behind two
          // gates, which timed a few us of start with each small copy).
          progress("bidir " + std::to_string(bytes));
          const int reps = reps_for(bytes);
          Gate g;
          Event a1(dev), b1(dev), a2(dev), b2(dev);
          std::vector<double> s_h2d, s_d2h;
          for (int it = 0; it < opt.warmup + opt.samples; ++it) {
            g.hold(s.s);
            g.hold(s2.s);
            CUDA_CHECK(cudaEventRecord(a1.e, s.s));
            for (int k = 0; k < reps; ++k) CUDA_CHECK(cudaMemcpyAsync(d.p, h.p, bytes, cudaMemcpyHostToDevice, s.s));
            CUDA_CHECK(cudaEventRecord(b1.e, s.s));
            CUDA_CHECK(cudaEventRecord(a2.e, s2.s));
            for (int k = 0; k < reps; ++k) CUDA_CHECK(cudaMemcpyAsync(h2.p, d2.p, bytes, cudaMemcpyDeviceToHost, s2.s));
            CUDA_CHECK(cudaEventRecord(b2.e, s2.s));
            g.release();
            CUDA_CHECK(cudaDeviceSynchronize());
            float m1 = 0, m2 = 0;
            CUDA_CHECK(cudaEventElapsedTime(&m1, a1.e, b1.e));
            CUDA_CHECK(cudaEventElapsedTime(&m2, a2.e, b2.e));
            if (it >= opt.warmup) {
              s_h2d.push_back(m1 * 1e3 / reps);
              s_d2h.push_back(m2 * 1e3 / reps);
            }
          }
          add({{"key", "bidir_pinned"}, {"gpus", {dev}}, {"bytes", bytes}, {"reps", reps}, {"h2d_time_us", median(s_h2d)}, {"d2h_time_us", median(s_d2h)}});
        }
      }
      // Two H2D copies on different streams: do they share one engine?
      if (want("h2d_two_streams")) {
        const size_t bytes = opt.quick ? (64u << 20) : (256u << 20);
        progress("h2d_two_streams");
        Gate g1;
        Event a(dev), b(dev);
        std::vector<double> samples;
        for (int it = 0; it < opt.warmup + opt.samples; ++it) {
          g1.hold(s.s);
          CUDA_CHECK(cudaEventRecord(a.e, s.s));
          CUDA_CHECK(cudaStreamWaitEvent(s2.s, a.e));
          CUDA_CHECK(cudaMemcpyAsync(d.p, h.p, bytes, cudaMemcpyHostToDevice, s.s));
          CUDA_CHECK(cudaMemcpyAsync(d2.p, h2.p, bytes, cudaMemcpyHostToDevice, s2.s));
          CUDA_CHECK(cudaEventRecord(b.e, s2.s));
          CUDA_CHECK(cudaStreamWaitEvent(s.s, b.e));
          CUDA_CHECK(cudaEventRecord(b.e, s.s));
          g1.release();
          CUDA_CHECK(cudaDeviceSynchronize());
          if (it >= opt.warmup) samples.push_back(elapsed_us(a, b));
        }
        add({{"key", "h2d_two_streams"}, {"gpus", {dev}}, {"bytes", bytes}, {"time_us", median(samples)}});
      }
      // Pageable copies: the call returns only when done; host-timed. Each
      // size twice: from (to) the same host buffer every time, and from
      // (to) successive slices of a 2 GiB one, so that the host side is
      // not held in the CPU's caches between samples (`host_buffer`).
      for (size_t bytes : sizes(1u << 20, opt.quick ? (64u << 20) : (256u << 20))) {
        for (const char* dir : {"h2d", "d2h"}) {
          const std::string key = std::string(dir) + "_pageable";
          if (!want(key)) continue;
          if (!rot) rot = std::make_unique<PageableBuf>(rot_bytes);
          const bool h2d = dir[0] == 'h';
          PageableBuf pg(bytes);
          for (const bool rotating : {false, true}) {
            progress(key + " " + std::to_string(bytes) + (rotating ? " rotating" : ""));
            std::vector<double> samples;
            for (int it = 0; it < opt.warmup + opt.samples; ++it) {
              if (rotating && off + bytes > rot_bytes) off = 0;
              void* host = rotating ? static_cast<char*>(rot->p()) + off : pg.p();
              if (rotating) off += bytes;
              const auto t0 = Clock::now();
              CUDA_CHECK(cudaMemcpyAsync(h2d ? d.p : host, h2d ? host : d.p, bytes, h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s.s));
              CUDA_CHECK(cudaStreamSynchronize(s.s));
              const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
              if (it >= opt.warmup) samples.push_back(us);
            }
            const double us = median(samples);
            add({{"key", key}, {"gpus", {dev}}, {"bytes", bytes}, {"host_buffer", rotating ? "rotating" : "same"}, {"time_us", us},
                 {"GBps", bytes / us * 1e-3}});
          }
        }
      }
      if (opt.quick) break;  // one GPU is enough for a quick run
    }
  }

  // Several GPUs copying H2D (or D2H) at once: the aggregate, for every subset size.
  void multi_gpu_copies() {
    const size_t bytes = opt.quick ? (256u << 20) : (size_t(1) << 30);
    for (const char* dir : {"h2d", "d2h"}) {
      const std::string key = std::string("multi_") + dir + "_pinned";
      if (!want(key)) continue;
      PerGpuCopies bufs(ngpus, bytes);
      auto& d = bufs.dev;
      auto& h = bufs.host;
      auto& s = bufs.stream;
      const bool h2d = dir[0] == 'h';
      for (int n = 1; n <= ngpus; ++n) {
        progress(key + " x" + std::to_string(n));
        std::vector<double> samples;
        for (int it = 0; it < opt.warmup + opt.samples; ++it) {
          Gate gate;
          for (int g = 0; g < n; ++g) {
            CUDA_CHECK(cudaSetDevice(g));
            gate.hold(s[g]->s);
            CUDA_CHECK(cudaMemcpyAsync(h2d ? d[g]->p : h[g]->p, h2d ? h[g]->p : d[g]->p, bytes, h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s[g]->s));
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(2));  // let every queue fill
          const auto t0 = Clock::now();
          gate.release();
          for (int g = 0; g < n; ++g) {
            CUDA_CHECK(cudaSetDevice(g));
            CUDA_CHECK(cudaStreamSynchronize(s[g]->s));
          }
          if (it >= opt.warmup) samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        }
        const double us = median(samples);
        add({{"key", key}, {"gpus", n}, {"bytes_per_gpu", bytes}, {"time_us", us}, {"aggregate_GBps", n * bytes / us * 1e-3}});
      }
    }
  }

  void p2p() {
    if (!want("p2p_copy") || ngpus < 2) return;
    const size_t bytes = opt.quick ? (64u << 20) : (512u << 20);
    for (int a = 0; a < ngpus; ++a)
      for (int b = 0; b < ngpus; ++b) {
        if (a == b) continue;
        int can = 0;
        CUDA_CHECK(cudaDeviceCanAccessPeer(&can, a, b));
        if (can) {
          CUDA_CHECK(cudaSetDevice(a));
          const cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
          if (e != cudaErrorPeerAccessAlreadyEnabled) CUDA_CHECK(e);
        }
        progress("p2p " + std::to_string(a) + "->" + std::to_string(b));
        DevBuf src(a, bytes), dst(b, bytes);
        Stream s(a);
        const double us = time_stream_us(a, s.s, 1, [&] { CUDA_CHECK(cudaMemcpyPeerAsync(dst.p, b, src.p, a, bytes, s.s)); });
        add({{"key", "p2p_copy"}, {"gpus", {a, b}}, {"peer_access", can != 0}, {"bytes", bytes}, {"time_us", us}, {"GBps", bytes / us * 1e-3}});
      }
  }

  // ------------------------------------------------------------ overheads
  void overheads() {
    if (!want("overhead")) return;
    const int dev = 0;
    Stream s(dev);
    DevBuf d(dev, 1 << 20);
    PinnedBuf h(1 << 20);
    Event e(dev);
    auto host_us = [&](const std::function<void()>& f, int n) {
      std::vector<double> samples;
      for (int it = 0; it < opt.warmup + opt.samples; ++it) {
        CUDA_CHECK(cudaStreamSynchronize(s.s));
        const auto t0 = Clock::now();
        for (int k = 0; k < n; ++k) f();
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / n;
        CUDA_CHECK(cudaStreamSynchronize(s.s));
        if (it >= opt.warmup) samples.push_back(us);
      }
      return median(samples);
    };
    progress("overheads");
    add({{"key", "overhead_kernel_launch"}, {"time_us", host_us([&] { empty_kernel<<<1, 1, 0, s.s>>>(); }, 100)}});
    CUDA_CHECK(cudaGetLastError());
    add({{"key", "overhead_event_record"}, {"time_us", host_us([&] { CUDA_CHECK(cudaEventRecord(e.e, s.s)); }, 100)}});
    add({{"key", "overhead_stream_wait_event"}, {"time_us", host_us([&] { CUDA_CHECK(cudaStreamWaitEvent(s.s, e.e)); }, 100)}});
    add({{"key", "overhead_stream_sync_idle"}, {"time_us", host_us([&] { CUDA_CHECK(cudaStreamSynchronize(s.s)); }, 100)}});
    add({{"key", "overhead_memcpy_async_pinned_return"},
         {"time_us", host_us([&] { CUDA_CHECK(cudaMemcpyAsync(d.p, h.p, 1 << 20, cudaMemcpyHostToDevice, s.s)); }, 20)}});
  }

  // Pinned copies per gated burst (copy_reps): the one-way and both-ways
  // rows time `reps` copies between two events behind one gate, with reps
  // 20 below 1 MiB, 5 below 64 MiB, 1 above, and every box measured a step
  // of ~1 us in the per-copy latency from 1 MiB on, and both ways at once a
  // share of ~0.7 below 1 MiB against ~0.92 from it: the size or the reps?
  // Here each size at several reps, per copy, held by the spin kernel (the
  // other rows' gate: the first copy follows a kernel) or by a host function
  // (no kernel before it); one way and both ways at once on two streams.
  void copy_reps() {
    if (!want("copy_reps")) return;
    const int dev = 0;
    CUDA_CHECK(cudaSetDevice(dev));
    const size_t max_bytes = 4u << 20;
    DevBuf d(dev, max_bytes), d2(dev, max_bytes);
    PinnedBuf h(max_bytes), h2(max_bytes);
    Stream s(dev), s2(dev), s3(dev);
    Event a1(dev), b1(dev), a2(dev), b2(dev);
    auto copy = [&](bool h2d, size_t bytes) {
      if (h2d) CUDA_CHECK(cudaMemcpyAsync(d.p, h.p, bytes, cudaMemcpyHostToDevice, s.s));
      else CUDA_CHECK(cudaMemcpyAsync(h2.p, d2.p, bytes, cudaMemcpyDeviceToHost, s2.s));
    };
    copy(true, max_bytes);
    copy(false, max_bytes);
    CUDA_CHECK(cudaDeviceSynchronize());
    Gate kg;
    HostGate hg;
    for (const size_t bytes : {size_t{256} << 10, size_t{1} << 20, size_t{4} << 20})
      for (const int reps : {1, 2, 5, 20, 50})
        for (const std::string gate : {"kernel", "host", "kernel_wait"})
          for (const char* dir : {"h2d", "d2h", "both"}) {
            progress("copy_reps " + std::to_string(bytes) + " x" + std::to_string(reps) + " " + gate + " " + dir);
            // kernel_wait: the spin kernel on another stream, the copy
            // stream waiting on an event recorded after it (a prefetch
            // stream waiting for compute); timed from that event.
            const bool kernel_gate = gate[0] == 'k', wait = gate == "kernel_wait", both = dir[0] == 'b';
            const bool run_h2d = both || dir[0] == 'h', run_d2h = both || dir[0] == 'd';
            std::vector<double> t_h2d, t_d2h;
            for (int it = 0; it < opt.warmup + opt.samples; ++it) {
              if (wait) kg.hold(s3.s);
              for (int k = 0; k < 2; ++k) {
                if (!(k == 0 ? run_h2d : run_d2h)) continue;
                cudaStream_t st = k == 0 ? s.s : s2.s;
                Event& a = k == 0 ? a1 : a2;
                if (wait) {
                  CUDA_CHECK(cudaEventRecord(a.e, s3.s));
                  CUDA_CHECK(cudaStreamWaitEvent(st, a.e, 0));
                } else {
                  if (kernel_gate) kg.hold(st);
                  else hg.hold(st);
                  CUDA_CHECK(cudaEventRecord(a.e, st));
                }
                for (int i = 0; i < reps; ++i) copy(k == 0, bytes);
                CUDA_CHECK(cudaEventRecord(k == 0 ? b1.e : b2.e, st));
              }
              if (kernel_gate) kg.release();
              else hg.release();
              CUDA_CHECK(cudaDeviceSynchronize());
              if (it < opt.warmup) continue;
              float ms = 0;
              if (run_h2d) {
                CUDA_CHECK(cudaEventElapsedTime(&ms, a1.e, b1.e));
                t_h2d.push_back(ms * 1e3 / reps);
              }
              if (run_d2h) {
                CUDA_CHECK(cudaEventElapsedTime(&ms, a2.e, b2.e));
                t_d2h.push_back(ms * 1e3 / reps);
              }
            }
            json row = {{"key", "copy_reps"}, {"gpus", {dev}}, {"bytes", bytes}, {"reps", reps}, {"gate", gate}, {"dir", dir}};
            if (run_h2d) row["h2d_time_us"] = median(t_h2d), row["h2d_samples_us"] = t_h2d;
            if (run_d2h) row["d2h_time_us"] = median(t_d2h), row["d2h_samples_us"] = t_d2h;
            add(row);
          }
  }

  // Copies after a kernel that ended long before (copy_after_idle): is the
  // hand-off from a kernel (copy_reps: ~6 us per burst after a spin kernel,
  // on the stream or waited on) paid by a copy the host issues once the
  // kernel is done? Bursts of pinned copies held by a host function, with
  // before them: nothing (`host`, the control); a spin kernel on the
  // stream, released and synchronised first (`kernel_done`); a spin kernel
  // on another stream with an event after it, released and synchronised,
  // the copy stream waiting on that event (`kernel_wait_done`). One way,
  // 256 KiB and 1 MiB, 1-20 per burst.
  void copy_after_idle() {
    if (!want("copy_after_idle")) return;
    const int dev = 0;
    CUDA_CHECK(cudaSetDevice(dev));
    const size_t max_bytes = 1u << 20;
    DevBuf d(dev, max_bytes);
    PinnedBuf h(max_bytes);
    Stream s(dev), s3(dev);
    Event a(dev), b(dev), e(dev);
    auto copy = [&](bool h2d, size_t bytes) {
      CUDA_CHECK(cudaMemcpyAsync(h2d ? d.p : h.p, h2d ? h.p : d.p, bytes, h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s.s));
    };
    copy(true, max_bytes);
    copy(false, max_bytes);
    CUDA_CHECK(cudaDeviceSynchronize());
    Gate kg;
    HostGate hg;
    for (const size_t bytes : {size_t{256} << 10, size_t{1} << 20})
      for (const int reps : {1, 2, 5, 20})
        for (const std::string before : {"host", "kernel_done", "kernel_wait_done"})
          for (const bool h2d : {true, false}) {
            progress("copy_after_idle " + std::to_string(bytes) + " x" + std::to_string(reps) + " " + before);
            std::vector<double> t;
            for (int it = 0; it < opt.warmup + opt.samples; ++it) {
              if (before != "host") {
                const bool wait = before == "kernel_wait_done";
                kg.hold(wait ? s3.s : s.s);
                if (wait) CUDA_CHECK(cudaEventRecord(e.e, s3.s));
                kg.release();
                CUDA_CHECK(cudaDeviceSynchronize());
                hg.hold(s.s);
                if (wait) CUDA_CHECK(cudaStreamWaitEvent(s.s, e.e, 0));
              } else {
                hg.hold(s.s);
              }
              CUDA_CHECK(cudaEventRecord(a.e, s.s));
              for (int i = 0; i < reps; ++i) copy(h2d, bytes);
              CUDA_CHECK(cudaEventRecord(b.e, s.s));
              hg.release();
              CUDA_CHECK(cudaDeviceSynchronize());
              if (it >= opt.warmup) t.push_back(elapsed_us(a, b) / reps);
            }
            add({{"key", "copy_after_idle"}, {"gpus", {dev}}, {"bytes", bytes}, {"reps", reps}, {"before", before}, {"dir", h2d ? "h2d" : "d2h"},
                 {"time_us", median(t)}, {"samples_us", t}});
          }
  }

  // Does a copy's rate depend on how much host memory its copies stream
  // through (copy_span)? bidir_pinned (same host buffer every copy): on the
  // H100 leases H2D kept ~0.92 of its one-way rate both ways at 4-16 MiB and
  // ~0.79 at 256 MiB-1 GiB. Pinned copies of `bytes` whose host side walks
  // through `span` bytes (each copy the next slice; span = bytes: one buffer
  // again and again, as bidir_pinned), one way, or both ways at once with
  // each direction's span set apart (which direction's footprint matters:
  // the reads' or the writes'). Timed as bidir_pinned: reps copies per
  // stream between events, behind one gate.
  void copy_span() {
    if (!want("copy_span")) return;
    const int dev = 0;
    CUDA_CHECK(cudaSetDevice(dev));
    const size_t span_max = opt.quick ? (size_t(64) << 20) : (size_t(1) << 30);
    DevBuf d(dev, size_t(64) << 20), d2(dev, size_t(64) << 20);
    PinnedBuf h(span_max), h2(span_max);
    Stream s(dev), s2(dev);
    Gate g;
    Event a1(dev), b1(dev), a2(dev), b2(dev);
    for (const size_t bytes : {size_t(1) << 20, size_t(4) << 20, size_t(16) << 20, size_t(64) << 20}) {
      if (bytes >= span_max) continue;
      const int reps = reps_for(bytes);
      // Each direction's next slice; on from sample to sample, so a large span
      // is walked once over before any slice comes back.
      size_t off_h2d = 0, off_d2h = 0;
      auto h2d = [&](size_t span) {
        CUDA_CHECK(cudaMemcpyAsync(d.p, static_cast<char*>(h.p) + off_h2d, bytes, cudaMemcpyHostToDevice, s.s));
        off_h2d = (off_h2d + bytes) % span;
      };
      auto d2h = [&](size_t span) {
        CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(h2.p) + off_d2h, d2.p, bytes, cudaMemcpyDeviceToHost, s2.s));
        off_d2h = (off_d2h + bytes) % span;
      };
      struct Case { const char* dir; size_t h2d_span, d2h_span; };
      const std::vector<Case> cases = {{"h2d", bytes, 0}, {"h2d", span_max, 0}, {"d2h", 0, bytes}, {"d2h", 0, span_max},
                                       {"both", bytes, bytes}, {"both", span_max, bytes}, {"both", bytes, span_max}, {"both", span_max, span_max}};
      // At 4 MiB, both ways: the spans between (where does the share turn?).
      std::vector<Case> all = cases;
      if (bytes == (size_t(4) << 20))
        for (size_t span = size_t(16) << 20; span < span_max; span *= 2) all.push_back({"both", span, span});
      for (const Case& c : all) {
        const std::string dir = c.dir;
        progress("copy_span " + dir + " " + std::to_string(bytes) + " " + std::to_string(c.h2d_span) + "/" + std::to_string(c.d2h_span));
        off_h2d = off_d2h = 0;
        std::vector<double> t_h2d, t_d2h;
        for (int it = 0; it < opt.warmup + opt.samples; ++it) {
          if (dir != "d2h") g.hold(s.s);
          if (dir != "h2d") g.hold(s2.s);
          if (dir != "d2h") {
            CUDA_CHECK(cudaEventRecord(a1.e, s.s));
            for (int k = 0; k < reps; ++k) h2d(c.h2d_span);
            CUDA_CHECK(cudaEventRecord(b1.e, s.s));
          }
          if (dir != "h2d") {
            CUDA_CHECK(cudaEventRecord(a2.e, s2.s));
            for (int k = 0; k < reps; ++k) d2h(c.d2h_span);
            CUDA_CHECK(cudaEventRecord(b2.e, s2.s));
          }
          g.release();
          CUDA_CHECK(cudaDeviceSynchronize());
          if (it < opt.warmup) continue;
          if (dir != "d2h") t_h2d.push_back(elapsed_us(a1, b1) / reps);
          if (dir != "h2d") t_d2h.push_back(elapsed_us(a2, b2) / reps);
        }
        json row = {{"key", "copy_span"}, {"gpus", {dev}}, {"dir", dir}, {"bytes", bytes}, {"reps", reps}};
        if (dir != "d2h") row["h2d_span_bytes"] = c.h2d_span, row["h2d_time_us"] = median(t_h2d);
        if (dir != "h2d") row["d2h_span_bytes"] = c.d2h_span, row["d2h_time_us"] = median(t_d2h);
        add(row);
      }
    }
  }

  // The hand-off against how long the copy waited (handoff_wait): a kernel
  // of `wait_us` on every SM (as `run`'s duration kernels: %globaltimer),
  // then one pinned 256 KiB copy, timed from an event after the kernel to
  // one after the copy; the kernel on the copy's own stream (`same`), or on
  // another with an event the copy stream waits on (`wait`). Everything is
  // issued behind a host-function gate, so the copy is queued before the
  // kernel starts. copy_reps' gate held the copies ~ms and they paid ~6 us;
  // between 20 us kernels (validate/handoff/) the wait through an event cost
  // ~1 us beyond the events.
  void handoff_wait() {
    if (!want("handoff_wait")) return;
    const ComputeGpu gpu;
    const int dev = gpu.dev;
    const size_t bytes = 256u << 10;
    DevBuf d(dev, bytes);
    PinnedBuf h(bytes);
    Stream s(dev), s3(dev);
    Event a(dev), b(dev);
    HostGate hg;
    CUDA_CHECK(cudaMemcpyAsync(d.p, h.p, bytes, cudaMemcpyHostToDevice, s.s));
    launch_busy(s3.s, gpu.sms, 1000);
    CUDA_CHECK(cudaDeviceSynchronize());
    for (const int wait_us : {5, 10, 20, 50, 100, 300, 1000, 3000})
      for (const char* mode : {"same", "wait"})
        for (const bool h2d : {true, false}) {
          progress(std::string("handoff_wait ") + mode + " " + std::to_string(wait_us));
          const bool same = mode[0] == 's';
          cudaStream_t ks = same ? s.s : s3.s;
          std::vector<double> t;
          for (int it = 0; it < opt.warmup + opt.samples; ++it) {
            hg.hold(ks);
            launch_busy(ks, gpu.sms, int64_t{wait_us} * 1000);
            CUDA_CHECK(cudaEventRecord(a.e, ks));
            if (!same) CUDA_CHECK(cudaStreamWaitEvent(s.s, a.e, 0));
            CUDA_CHECK(cudaMemcpyAsync(h2d ? d.p : h.p, h2d ? h.p : d.p, bytes, h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s.s));
            CUDA_CHECK(cudaEventRecord(b.e, s.s));
            hg.release();
            CUDA_CHECK(cudaDeviceSynchronize());
            if (it >= opt.warmup) t.push_back(elapsed_us(a, b));
          }
          add({{"key", "handoff_wait"}, {"gpus", {dev}}, {"bytes", bytes}, {"wait_us", wait_us}, {"mode", mode}, {"dir", h2d ? "h2d" : "d2h"},
               {"time_us", median(t)}, {"samples_us", t}});
        }
  }

  // Kernels per gated burst after what (kernel_reps): the hand-off the other
  // way. 1 MiB memory kernels, 1, 2, 5 and 20 per burst, timed from an event
  // recorded after the op before them: a host function (`host`), the spin
  // kernel (`kernel`), a 4 KiB H2D copy on the same stream (`copy`), or that
  // copy on another stream the kernels' stream waits on (`copy_wait`: compute
  // waiting for a prefetch).
  void kernel_reps() {
    if (!want("kernel_reps")) return;
    const int dev = 0;
    const ComputeGpu gpu;
    const Stream& s = gpu.s;
    Stream s3(dev);
    const size_t bytes = 1u << 20;
    DevBuf src(dev, bytes), dst(dev, bytes), d(dev, 4096);
    PinnedBuf h(4096);
    Event a(dev), b(dev);
    Gate kg;
    HostGate hg;
    launch_hbm_copy(s.s, dst.p, src.p, bytes, gpu.sms);
    CUDA_CHECK(cudaMemcpyAsync(d.p, h.p, 4096, cudaMemcpyHostToDevice, s3.s));
    CUDA_CHECK(cudaDeviceSynchronize());
    for (const std::string after : {"host", "kernel", "copy", "copy_wait"})
      for (const int reps : {1, 2, 5, 20}) {
        progress("kernel_reps " + after + " x" + std::to_string(reps));
        std::vector<double> t;
        for (int it = 0; it < opt.warmup + opt.samples; ++it) {
          if (after == "kernel") kg.hold(s.s);
          else hg.hold(after == "copy_wait" ? s3.s : s.s);
          if (after == "copy") CUDA_CHECK(cudaMemcpyAsync(d.p, h.p, 4096, cudaMemcpyHostToDevice, s.s));
          if (after == "copy_wait") {
            CUDA_CHECK(cudaMemcpyAsync(d.p, h.p, 4096, cudaMemcpyHostToDevice, s3.s));
            CUDA_CHECK(cudaEventRecord(a.e, s3.s));
            CUDA_CHECK(cudaStreamWaitEvent(s.s, a.e, 0));
          } else {
            CUDA_CHECK(cudaEventRecord(a.e, s.s));
          }
          for (int i = 0; i < reps; ++i) launch_hbm_copy(s.s, dst.p, src.p, bytes, gpu.sms);
          CUDA_CHECK(cudaEventRecord(b.e, s.s));
          if (after == "kernel") kg.release();
          else hg.release();
          CUDA_CHECK(cudaDeviceSynchronize());
          if (it >= opt.warmup) t.push_back(elapsed_us(a, b) / reps);
        }
        add({{"key", "kernel_reps"}, {"gpus", {dev}}, {"bytes", bytes}, {"reps", reps}, {"after", after}, {"time_us", median(t)}, {"samples_us", t}});
      }
  }

  // What an event recorded between two ops of a stream costs the GPU:
  // `n` ops back to back, gated, against the same with an event recorded
  // after each (as a bench timing each op does); per op, the median over
  // samples. Ops: a 1 MiB memory kernel, a 1 MiB pinned H2D copy.
  void gpu_event_gap() {
    if (!want("overhead_gpu_event_gap")) return;
    const int dev = 0, n = 50;
    const ComputeGpu gpu;
    const Stream& s = gpu.s;
    const size_t bytes = 1u << 20;
    DevBuf src(dev, bytes), dst(dev, bytes);
    PinnedBuf h(bytes);
    std::vector<std::unique_ptr<Event>> ev;
    for (int i = 0; i < n; ++i) ev.push_back(std::make_unique<Event>(dev));
    Event a(dev), b(dev);
    for (const char* what : {"memory_kernel", "h2d"}) {
      const bool kernel = what[0] == 'm';
      auto op = [&] {
        if (kernel) launch_hbm_copy(s.s, dst.p, src.p, bytes, gpu.sms);
        else CUDA_CHECK(cudaMemcpyAsync(dst.p, h.p, bytes, cudaMemcpyHostToDevice, s.s));
      };
      op();
      CUDA_CHECK(cudaStreamSynchronize(s.s));
      json row = {{"key", "overhead_gpu_event_gap"}, {"op", what}, {"bytes", bytes}, {"ops", n}};
      for (const bool fenced : {false, true}) {
        progress(std::string("gpu event gap ") + what + (fenced ? " fenced" : ""));
        Gate gate;
        std::vector<double> samples;
        for (int it = 0; it < opt.warmup + opt.samples; ++it) {
          gate.hold(s.s);
          CUDA_CHECK(cudaEventRecord(a.e, s.s));
          for (int i = 0; i < n; ++i) {
            op();
            if (fenced) CUDA_CHECK(cudaEventRecord(ev[static_cast<size_t>(i)]->e, s.s));
          }
          CUDA_CHECK(cudaEventRecord(b.e, s.s));
          gate.release();
          CUDA_CHECK(cudaStreamSynchronize(s.s));
          if (it >= opt.warmup) samples.push_back(elapsed_us(a, b) / n);
        }
        row[fenced ? "fenced_us" : "plain_us"] = median(samples);
      }
      row["gap_us"] = row["fenced_us"].get<double>() - row["plain_us"].get<double>();
      add(row);
    }
    // The memory kernels again with H2D copies in flight beside them (not
    // gated, started before each sample, 512 MiB: ~10 ms, the timed window
    // well under 1 ms): `beside: h2d` one on a second stream of the same
    // GPU, `h2d_all` one on every GPU (host memory near its limit). The
    // validation runs, which record an event before and after every op,
    // measured ~3 us between two kernels of a stream, ~7 us while the GPU's
    // own prefetch ran, ~10 us while four GPUs prefetched. `plain` tells
    // whether kernels launched back to back slow too, `fenced` what the events
    // cost then. `covered` of `timed` samples: those whose window ended before
    // GPU 0's copy did.
    const size_t big = size_t{512} << 20;
    for (const char* beside : {"h2d", "h2d_all"}) {
      const bool all = beside[3] == '_';
      if (all && ngpus < 2) continue;
      const int nb = all ? ngpus : 1;
      PerGpuCopies cp(nb, big);
      Event copy_end(dev);
      auto copies = [&] {
        for (int g = 0; g < nb; ++g) {
          CUDA_CHECK(cudaSetDevice(g));
          CUDA_CHECK(cudaMemcpyAsync(cp.dev[static_cast<size_t>(g)]->p, cp.host[static_cast<size_t>(g)]->p, big, cudaMemcpyHostToDevice,
                                     cp.stream[static_cast<size_t>(g)]->s));
        }
        CUDA_CHECK(cudaSetDevice(dev));
        CUDA_CHECK(cudaEventRecord(copy_end.e, cp.stream[0]->s));
      };
      auto drain = [&] {
        for (int g = 0; g < nb; ++g) CUDA_CHECK(cudaStreamSynchronize(cp.stream[static_cast<size_t>(g)]->s));
      };
      json row = {{"key", "overhead_gpu_event_gap"}, {"op", "memory_kernel"}, {"bytes", bytes}, {"ops", n}, {"beside", beside}, {"copy_bytes", big}, {"gpus", nb}};
      int covered = 0, timed = 0;
      for (const bool fenced : {false, true}) {
        progress(std::string("gpu event gap beside ") + beside + (fenced ? " fenced" : ""));
        Gate gate;
        std::vector<double> samples;
        for (int it = 0; it < opt.warmup + opt.samples; ++it) {
          copies();
          gate.hold(s.s);
          CUDA_CHECK(cudaEventRecord(a.e, s.s));
          for (int i = 0; i < n; ++i) {
            launch_hbm_copy(s.s, dst.p, src.p, bytes, gpu.sms);
            if (fenced) CUDA_CHECK(cudaEventRecord(ev[static_cast<size_t>(i)]->e, s.s));
          }
          CUDA_CHECK(cudaEventRecord(b.e, s.s));
          gate.release();
          CUDA_CHECK(cudaStreamSynchronize(s.s));
          drain();
          float ms = 0, after = 0;
          CUDA_CHECK(cudaEventElapsedTime(&ms, a.e, b.e));
          CUDA_CHECK(cudaEventElapsedTime(&after, b.e, copy_end.e));
          if (it >= opt.warmup) {
            samples.push_back(ms * 1e3 / n);
            ++timed;
            if (after > 0) ++covered;
          }
        }
        row[fenced ? "fenced_us" : "plain_us"] = median(samples);
      }
      row["gap_us"] = row["fenced_us"].get<double>() - row["plain_us"].get<double>();
      row["covered"] = covered;
      row["timed"] = timed;
      add(row);
    }
  }

  // ------------------------------------------------------------ GEMM
  // The GEMM table: the Wan DiT shapes, plus every GEMM `overlapsim-validate
  // run` realises for the schedules given with --gemm-shapes-from (attention
  // as chunked GEMMs: osim::realised_gemm). Each shape twice, because the
  // clock depends on the load: `burst_time_us` is the op on a rested GPU with
  // its clock up (median of 3 or more; what a blocking pipeline's kernels
  // see), `time_us`
  // after >= 250 ms of the same op back to back (the sustained state). Chunked
  // shapes time the whole op (all chunks, accumulating) and report per chunk.
  void gemms() {
    if (!want("gemm_bf16")) return;
    const ComputeGpu gpu;
    const int dev = gpu.dev, sms = gpu.sms;
    const Stream& s = gpu.s;
    const Blas& blas = gpu.blas;
    std::vector<osim::RealisedGemm> shapes;
    // Wan 14B DiT GEMMs at S/U tokens for 720p (75,600), 480p (32,760) and
    // 16,384 tokens (the validation set) over U in {1, 2, 4, 8}.
    for (int tokens : {75600, 32760, 16384})
      for (int u : {1, 2, 4, 8}) {
        if (opt.quick && u != 4) continue;
        const int m = tokens / u;
        for (auto nk : {std::pair{15360, 5120}, {5120, 5120}, {13824, 5120}, {5120, 13824}}) shapes.push_back({m, nk.first, nk.second, 1});
      }
    if (opt.quick) shapes.resize(std::min<size_t>(shapes.size(), 4));
    for (const auto& g : opt.gemm_shapes)
      if (std::find(shapes.begin(), shapes.end(), g) == shapes.end()) shapes.push_back(g);
    size_t max_a = 0, max_b = 0, max_c = 0;
    for (const auto& sh : shapes) {
      max_a = std::max(max_a, size_t(sh.m) * sh.k);
      max_b = std::max(max_b, size_t(sh.k) * sh.n);
      max_c = std::max(max_c, size_t(sh.m) * sh.n);
    }
    DevBuf A(dev, max_a * 2), B(dev, max_b * 2), C(dev, max_c * 2);
    // Random data: GEMMs on constant bytes draw less power and run faster than on real weights.
    fill_random(A.p, max_a * 2);
    fill_random(B.p, max_b * 2);
    for (const auto& sh : shapes) {
      progress("gemm " + std::to_string(sh.m) + "x" + std::to_string(sh.n) + "x" + std::to_string(sh.k) +
               (sh.chunks > 1 ? " x" + std::to_string(sh.chunks) + " chunks" : ""));
      const int m = static_cast<int>(sh.m), n = static_cast<int>(sh.n), k = static_cast<int>(sh.k);
      auto op = [&] {
        for (int c = 0; c < sh.chunks; ++c) blas.gemm(m, n, k, A.p, B.p, C.p, c > 0);
      };
      op();  // cuBLAS picks and loads its kernel before anything is timed
      CUDA_CHECK(cudaStreamSynchronize(s.s));
      // Burst: after 150 ms idle (the sustained-load state decays), 2 ms of a
      // spinning kernel on every SM wakes the clock from idle (a pipeline's
      // kernels find it up; a short GEMM straight after idle ran up to 2x
      // slow), then the op, timed alone: 3 ops in a row if it is short.
      std::vector<double> burst;
      const double est_us = [&] {
        Event a(dev), b(dev);
        CUDA_CHECK(cudaEventRecord(a.e, s.s));
        op();
        CUDA_CHECK(cudaEventRecord(b.e, s.s));
        CUDA_CHECK(cudaEventSynchronize(b.e));
        return elapsed_us(a, b);
      }();
      const int timed = est_us < 4000 ? 3 : 1;
      std::vector<std::unique_ptr<Event>> ev;
      for (int i = 0; i <= timed; ++i) ev.push_back(std::make_unique<Event>(dev));
      for (int rep = 0; rep < 3; ++rep) {
        std::this_thread::sleep_for(std::chrono::milliseconds(150));
        launch_busy(s.s, sms, 2'000'000);
        CUDA_CHECK(cudaEventRecord(ev[0]->e, s.s));
        for (int i = 0; i < timed; ++i) {
          op();
          CUDA_CHECK(cudaEventRecord(ev[i + 1]->e, s.s));
        }
        CUDA_CHECK(cudaEventSynchronize(ev[timed]->e));
        for (int i = 0; i < timed; ++i) {
          float ms = 0;
          CUDA_CHECK(cudaEventElapsedTime(&ms, ev[i]->e, ev[i + 1]->e));
          burst.push_back(ms * 1e3);
        }
      }
      const double burst_us = median(burst);
      const int load = std::max(1, static_cast<int>(std::ceil(250e3 / burst_us)));
      for (int i = 0; i < load; ++i) op();
      const double us = time_stream_us(dev, s.s, 3, op);
      // Then the mean over a >= 200 ms window of the op back to back (no
      // gate: the GPU runs them slower than we queue them): under the power
      // cap the clock dithers (the H100's between 1.4 and 2 GHz), so a few
      // ops time one instant of it; the window's mean is the rate a long
      // pipeline sees. `soak_calls` ops ran before it (load, then the gated
      // samples), so a replay can put the window where the bench did.
      const int soak_calls = load + 1 + 3 * (opt.warmup + opt.samples);
      const int window_calls = std::max(3, static_cast<int>(std::ceil(200e3 / burst_us)));
      const double window_us = window_mean_us(dev, s.s, window_calls, op);
      const double flops = sh.flops();
      add({{"key", "gemm_bf16"}, {"gpus", {dev}}, {"m", sh.m}, {"n", sh.n}, {"k", sh.k}, {"chunks", sh.chunks}, {"time_us", us / sh.chunks},
           {"TFLOPs", flops / us * 1e-6}, {"burst_time_us", burst_us / sh.chunks}, {"burst_TFLOPs", flops / burst_us * 1e-6},
           {"loaded_mean_us", window_us / sh.chunks}, {"soak_calls", soak_calls}, {"window_calls", window_calls}});
    }
  }

  // What the memory-kernel testcases share: the compute GPU, a copy kernel's
  // source and destination (half of `max_bytes` each) and a 16384x5120x5120
  // GEMM's operands, filled with random values.
  struct MemoryAndGemm {
    static constexpr int m = 16384, n = 5120, k = 5120;
    ComputeGpu gpu;
    DevBuf src, dst, A, B, C;
    explicit MemoryAndGemm(size_t max_bytes)
        : src(gpu.dev, max_bytes / 2), dst(gpu.dev, max_bytes / 2), A(gpu.dev, size_t(m) * k * 2), B(gpu.dev, size_t(k) * n * 2),
          C(gpu.dev, size_t(m) * n * 2) {
      fill_random(src.p, max_bytes / 2);
      fill_random(A.p, size_t(m) * k * 2);
      fill_random(B.p, size_t(k) * n * 2);
    }
    void copy(size_t hbm_bytes) const { launch_hbm_copy(gpu.s.s, dst.p, src.p, hbm_bytes, gpu.sms); }
    void gemm() const { gpu.blas.gemm(m, n, k, A.p, B.p, C.p); }
  };

  // The memory-bound kernel `overlapsim-validate run` realises (a copy kernel
  // reading and writing half of `hbm_bytes` each) at several sizes: back to
  // back on a warm GPU, and between GEMMs under sustained load (a DiT layer's
  // norms and activations between its GEMMs), each timed by its own events.
  void memory_kernels() {
    if (!want("memory_kernel")) return;
    const size_t max_bytes = opt.quick ? size_t(64) << 20 : size_t(1) << 30;
    const MemoryAndGemm mg(max_bytes);
    const int dev = mg.gpu.dev;
    const Stream& s = mg.gpu.s;
    for (size_t bytes = size_t(1) << 20; bytes <= max_bytes; bytes *= 4) {
      progress("memory_kernel " + std::to_string(bytes));
      auto op = [&] { mg.copy(bytes); };
      const double us = time_stream_us(dev, s.s, reps_for(bytes), op);
      // Under load: GEMM, memory kernel, GEMM, ... for >= 600 ms; the
      // memory kernels of the second half.
      const int pairs = 600;
      std::vector<std::unique_ptr<Event>> a, b;
      for (int i = 0; i < pairs; ++i) {
        a.push_back(std::make_unique<Event>(dev));
        b.push_back(std::make_unique<Event>(dev));
      }
      for (int i = 0; i < pairs; ++i) {
        mg.gemm();
        CUDA_CHECK(cudaEventRecord(a[i]->e, s.s));
        op();
        CUDA_CHECK(cudaEventRecord(b[i]->e, s.s));
      }
      CUDA_CHECK(cudaStreamSynchronize(s.s));
      std::vector<double> loaded;
      for (int i = pairs / 2; i < pairs; ++i) {
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, a[i]->e, b[i]->e));
        loaded.push_back(ms * 1e3);
      }
      add({{"key", "memory_kernel"}, {"gpus", {dev}}, {"hbm_bytes", bytes}, {"time_us", us}, {"GBps", static_cast<double>(bytes) / us * 1e-3},
           {"loaded_time_us", median(loaded)}});
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  // One memory-bound kernel after what (memory_after): between GEMMs a
  // >= 64 MiB kernel ran up to 15 % faster on the H100s than back to back
  // (memory_kernel): does a memory kernel pay what the one before it left
  // in the L2 (its last writes)? One kernel of `hbm_bytes`, timed from an
  // event after the op before it: the same kernel on the same buffers
  // (`kernel`), a GEMM (`gemm`), every SM spinning 200 us (`busy`, no
  // memory traffic), one thread sleeping 200 us (`sleep`); the op before
  // follows a memory kernel, so what it may drain is the same. Every sample kept.
  void memory_after() {
    if (!want("memory_after")) return;
    const size_t max_bytes = opt.quick ? size_t(64) << 20 : size_t(1) << 30;
    const MemoryAndGemm mg(max_bytes);
    const int dev = mg.gpu.dev;
    const Stream& s = mg.gpu.s;
    Event a(dev), b(dev);
    for (size_t bytes = size_t(64) << 20; bytes <= max_bytes; bytes *= 4)
      for (const char* before : {"kernel", "gemm", "busy", "sleep"}) {
        progress(std::string("memory_after ") + std::to_string(bytes) + " " + before);
        auto op = [&] { mg.copy(bytes); };
        const std::string bf = before;
        std::vector<double> t;
        for (int it = 0; it < opt.warmup + opt.samples; ++it) {
          op();
          if (bf == "kernel") op();
          else if (bf == "gemm") mg.gemm();
          else if (bf == "busy") launch_busy(s.s, mg.gpu.sms, 200000);
          else launch_sleep(s.s, 200000);
          CUDA_CHECK(cudaEventRecord(a.e, s.s));
          op();
          CUDA_CHECK(cudaEventRecord(b.e, s.s));
          CUDA_CHECK(cudaStreamSynchronize(s.s));
          if (it >= opt.warmup) t.push_back(elapsed_us(a, b));
        }
        add({{"key", "memory_after"}, {"gpus", {dev}}, {"hbm_bytes", bytes}, {"before", before}, {"time_us", median(t)}, {"samples_us", t}});
      }
  }

  // GEMMs back to back at a duty cycle (the rest of the time a one-thread
  // sleep kernel holds the stream), for ~0.6 s after 0.3 s idle: the GPU's
  // clock falls under sustained load (power), which burst timings miss.
  // Reports each GEMM's time in order, so the time constant can be fitted.
  void gemm_sustained() {
    const bool base = want("gemm_sustained"), long_run = want("gemm_sustained_long");
    if (!base && !long_run) return;
    const ComputeGpu gpu;
    const int dev = gpu.dev;
    const Stream& s = gpu.s;
    const Blas& blas = gpu.blas;
    const int m = 16384, n = 5120, k = 5120;
    DevBuf A(dev, size_t(m) * k * 2), B(dev, size_t(k) * n * 2), C(dev, size_t(m) * n * 2);
    fill_random(A.p, size_t(m) * k * 2);
    fill_random(B.p, size_t(k) * n * 2);
    auto gemm = [&] { blas.gemm(m, n, k, A.p, B.p, C.p); };
    gemm();
    CUDA_CHECK(cudaStreamSynchronize(s.s));
    // Burst time of one GEMM (cool GPU: rested first, as the GEMM table
    // before it ends under load; calibrate uses ratios, so this only keeps
    // `slowdown` readable).
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const double burst_us = time_stream_us(dev, s.s, 1, gemm);
    // GEMMs at `duty` for about `window_us`, each timed by its own events;
    // `beside` (if any) enqueues other work first. `first` is the first
    // GEMM's start event, to time that work against.
    struct Series {
      std::vector<double> us, start_ms;
      std::unique_ptr<Event> first;
    };
    auto series = [&](double duty, double window_us, const std::function<void()>& beside) {
      const int64_t gap_ns = static_cast<int64_t>(burst_us * 1e3 * (1 - duty) / duty);
      const int count = static_cast<int>(window_us / (burst_us / duty));
      std::vector<std::unique_ptr<Event>> a, b;
      for (int i = 0; i < count; ++i) {
        a.push_back(std::make_unique<Event>(dev));
        b.push_back(std::make_unique<Event>(dev));
      }
      if (beside) beside();
      CUDA_CHECK(cudaSetDevice(dev));
      // No spin gate: thousands of queued launches would fill the launch
      // queue behind it and block this thread forever. The GPU runs GEMMs
      // far slower than we queue them, so the stream never drains early.
      for (int i = 0; i < count; ++i) {
        CUDA_CHECK(cudaEventRecord(a[i]->e, s.s));
        gemm();
        CUDA_CHECK(cudaEventRecord(b[i]->e, s.s));
        if (gap_ns > 0) launch_sleep(s.s, gap_ns);
      }
      CUDA_CHECK(cudaStreamSynchronize(s.s));
      Series out{std::vector<double>(count), std::vector<double>(count), nullptr};
      for (int i = 0; i < count; ++i) {
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, a[i]->e, b[i]->e));
        out.us[i] = ms * 1e3;
        CUDA_CHECK(cudaEventElapsedTime(&ms, a[0]->e, a[i]->e));
        out.start_ms[i] = ms;
      }
      out.first = std::move(a[0]);
      return out;
    };
    // Six seconds at full duty: does the clock settle, or drop further (the
    // deeper dip ~0.8 s into every 1.2 s series below), and does that recur?
    if (long_run) {
      progress("gemm_sustained_long");
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      const Series r = series(1.0, 6e6, nullptr);
      const std::vector<double> tail(r.us.begin() + static_cast<long>(r.us.size() / 6), r.us.end());
      add({{"key", "gemm_sustained_long"}, {"gpus", {dev}}, {"m", m}, {"n", n}, {"k", k}, {"duty", 1.0}, {"burst_time_us", burst_us},
           {"steady_time_us", median(tail)}, {"mean_time_us", std::accumulate(tail.begin(), tail.end(), 0.0) / static_cast<double>(tail.size())},
           {"time_us", r.us}, {"start_ms", r.start_ms}});
    }
    if (!base) return;
    for (double duty : {1.0, 0.75, 0.5, 0.25}) {
      progress("gemm_sustained duty " + std::to_string(duty));
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      const Series r = series(duty, 600e3, nullptr);
      const std::vector<double> tail(r.us.begin() + static_cast<long>(r.us.size() / 2), r.us.end());
      add({{"key", "gemm_sustained"}, {"gpus", {dev}}, {"m", m}, {"n", n}, {"k", k}, {"duty", duty}, {"burst_time_us", burst_us},
           {"steady_time_us", median(tail)}, {"slowdown", median(tail) / burst_us}, {"time_us", r.us}, {"start_ms", r.start_ms}});
    }
    // The same GEMM under sustained load with H2D copies running beside it
    // the whole time (a prefetch pipeline's state): do copies add to the
    // load that lowers the clock? 1.2 s per duty, copies of 256 MiB back to
    // back on a second stream, on this GPU only ("h2d") and on every GPU
    // ("h2d_all", the host side busier, this GPU's copy rate lower).
    {
      const size_t cbytes = size_t(256) << 20;
      PerGpuCopies bufs(ngpus, cbytes);
      auto& cd = bufs.dev;
      auto& ch = bufs.host;
      auto& cs = bufs.stream;
      CUDA_CHECK(cudaSetDevice(dev));
      for (const std::string copy : {"none", "h2d", "h2d_all"}) {
        if (copy == "h2d_all" && ngpus < 2) continue;
        for (double duty : {1.0, 0.5}) {
          progress("gemm_sustained " + copy + " duty " + std::to_string(duty));
          std::this_thread::sleep_for(std::chrono::milliseconds(500));
          const double window_us = 1.2e6;
          const int copies = copy == "none" ? 0 : static_cast<int>(window_us * 1e-6 * 60e9 / static_cast<double>(cbytes)) + 2;
          const int copy_gpus = copy == "h2d_all" ? ngpus : copy == "h2d" ? 1 : 0;
          Event c0(dev), c1(dev);
          const Series r = series(duty, window_us, [&] {
            CUDA_CHECK(cudaEventRecord(c0.e, cs[dev]->s));
            for (int g = 0; g < copy_gpus; ++g) {
              CUDA_CHECK(cudaSetDevice(g));
              for (int i = 0; i < copies; ++i)
                CUDA_CHECK(cudaMemcpyAsync(cd[g]->p, ch[g]->p, cbytes, cudaMemcpyHostToDevice, cs[g]->s));
            }
            CUDA_CHECK(cudaSetDevice(dev));
            CUDA_CHECK(cudaEventRecord(c1.e, cs[dev]->s));
          });
          for (int g = 0; g < copy_gpus; ++g) CUDA_CHECK(cudaStreamSynchronize(cs[g]->s));
          CUDA_CHECK(cudaSetDevice(dev));
          // The copies' window relative to the first GEMM (they should cover it).
          float copy_start_ms = 0, copy_end_ms = 0;
          CUDA_CHECK(cudaEventElapsedTime(&copy_start_ms, r.first->e, c0.e));
          CUDA_CHECK(cudaEventElapsedTime(&copy_end_ms, r.first->e, c1.e));
          const double copy_GBps = copies > 0 ? static_cast<double>(cbytes) * copies / ((copy_end_ms - copy_start_ms) * 1e-3) / 1e9 : 0.0;
          const std::vector<double> tail(r.us.begin() + static_cast<long>(r.us.size() / 2), r.us.end());
          add({{"key", "gemm_sustained_copy"}, {"gpus", {dev}}, {"m", m}, {"n", n}, {"k", k}, {"duty", duty}, {"copy", copy},
               {"copy_gpus", copy_gpus}, {"copy_GBps", copy_GBps}, {"copy_start_ms", copy_start_ms}, {"copy_end_ms", copy_end_ms},
               {"burst_time_us", burst_us}, {"steady_time_us", median(tail)}, {"slowdown", median(tail) / burst_us}, {"time_us", r.us},
               {"start_ms", r.start_ms}});
        }
      }
    }
  }

  // The GPU's return from idle. After a gap with nothing on the GPU (the
  // host asleep: "idle"), with only H2D copies running (the compute stream
  // waiting for them, as a layer waits for its weights: "copies"), or with a
  // one-thread sleep kernel holding the stream ("sleep_kernel"), `count`
  // GEMMs back to back, each timed by its own events. The work is queued
  // behind a host-function gate, which holds the stream with no kernel
  // resident (the spin gate's kernel would keep the GPU busy), so host launch
  // cost stays out of the first GEMM. Per position, the median over the
  // samples; `idle_ms`: the GPU's measured time between the previous
  // sample's last GEMM and this one's first (the median).
  void gemm_after_idle() {
    if (!want("gemm_after_idle")) return;
    const ComputeGpu gpu;
    const int dev = gpu.dev;
    const Stream& s = gpu.s;
    const Blas& blas = gpu.blas;
    Stream cs(dev);
    const int count = 12;
    const size_t copy_chunk = size_t(64) << 20;
    DevBuf cd(dev, copy_chunk);
    PinnedBuf ch(copy_chunk);
    const std::vector<double> gaps = opt.quick ? std::vector<double>{1, 30} : std::vector<double>{0.1, 0.3, 1, 3, 10, 30, 100, 300};
    struct Shape {
      int m, n, k;
    };
    for (const Shape sh : {Shape{8192, 5120, 5120}, Shape{2048, 5120, 5120}}) {
      DevBuf A(dev, size_t(sh.m) * sh.k * 2), B(dev, size_t(sh.k) * sh.n * 2), C(dev, size_t(sh.m) * sh.n * 2);
      fill_random(A.p, size_t(sh.m) * sh.k * 2);
      fill_random(B.p, size_t(sh.k) * sh.n * 2);
      auto gemm = [&] { blas.gemm(sh.m, sh.n, sh.k, A.p, B.p, C.p); };
      const double warm_us = time_stream_us(dev, s.s, 5, gemm);
      // Copy rate for sizing the copies' gap: one 64 MiB copy, timed.
      const double copy_us = time_stream_us(dev, cs.s, 1, [&] { CUDA_CHECK(cudaMemcpyAsync(cd.p, ch.p, copy_chunk, cudaMemcpyHostToDevice, cs.s)); });
      for (const std::string mode : {"idle", "copies", "sleep_kernel"}) {
        for (const double gap_ms : gaps) {
          progress("gemm_after_idle " + mode + " " + std::to_string(gap_ms));
          std::vector<std::vector<double>> per(count);
          std::vector<double> idle;
          std::unique_ptr<Event> prev_end;
          for (int it = 0; it < opt.warmup + opt.samples; ++it) {
            std::vector<std::unique_ptr<Event>> a, b;
            for (int i = 0; i < count; ++i) {
              a.push_back(std::make_unique<Event>(dev));
              b.push_back(std::make_unique<Event>(dev));
            }
            CUDA_CHECK(cudaSetDevice(dev));
            CUDA_CHECK(cudaDeviceSynchronize());
            HostGate gate;
            if (mode == "idle") std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(gap_ms * 1e3)));
            gate.hold(s.s);
            if (mode == "copies") {
              // As many bytes as the measured rate moves in the gap, in chunks.
              size_t left = static_cast<size_t>(gap_ms * 1e3 / copy_us * static_cast<double>(copy_chunk));
              left = std::max<size_t>(left, 1 << 20);
              Event done(dev);
              while (left > 0) {
                const size_t n = std::min(left, copy_chunk);
                CUDA_CHECK(cudaMemcpyAsync(cd.p, ch.p, n, cudaMemcpyHostToDevice, cs.s));
                left -= n;
              }
              CUDA_CHECK(cudaEventRecord(done.e, cs.s));
              CUDA_CHECK(cudaStreamWaitEvent(s.s, done.e));
            } else if (mode == "sleep_kernel") {
              launch_sleep(s.s, static_cast<int64_t>(gap_ms * 1e6));
            }
            for (int i = 0; i < count; ++i) {
              CUDA_CHECK(cudaEventRecord(a[i]->e, s.s));
              gemm();
              CUDA_CHECK(cudaEventRecord(b[i]->e, s.s));
            }
            gate.release();
            CUDA_CHECK(cudaDeviceSynchronize());
            if (it >= opt.warmup) {
              for (int i = 0; i < count; ++i) {
                float ms = 0;
                CUDA_CHECK(cudaEventElapsedTime(&ms, a[i]->e, b[i]->e));
                per[i].push_back(ms * 1e3);
              }
              if (prev_end) {
                float ms = 0;
                CUDA_CHECK(cudaEventElapsedTime(&ms, prev_end->e, a[0]->e));
                idle.push_back(ms);
              }
            }
            prev_end = std::move(b[count - 1]);
          }
          std::vector<double> times;
          for (auto& v : per) times.push_back(median(v));
          add({{"key", "gemm_after_idle"}, {"gpus", {dev}}, {"m", sh.m}, {"n", sh.n}, {"k", sh.k}, {"mode", mode}, {"gap_ms", gap_ms},
               {"idle_ms", idle.empty() ? 0.0 : median(idle)}, {"warm_time_us", warm_us}, {"copy_chunk_us", copy_us}, {"time_us", times},
               {"extra_us", std::accumulate(times.begin(), times.end(), 0.0) - count * warm_us}});
        }
      }
    }
  }

  // Every GPU copying H2D back to back (staggered, as a prefetch pipeline
  // runs), each copy timed: the steady per-GPU and aggregate rates.
  void multi_h2d_pipelined() {
    if (!want("multi_h2d_pipelined") || ngpus < 2) return;
    const size_t bytes = opt.quick ? (128u << 20) : (size_t(700) << 20);
    const int count = opt.quick ? 6 : 16;
    for (int n = 2; n <= ngpus; ++n) {
      progress("multi_h2d_pipelined x" + std::to_string(n));
      PerGpuCopies bufs(n, bytes);
      auto& d = bufs.dev;
      auto& h = bufs.host;
      auto& st = bufs.stream;
      std::vector<std::vector<std::unique_ptr<Event>>> ev(n);
      for (int g = 0; g < n; ++g)
        for (int i = 0; i <= count; ++i) ev[g].push_back(std::make_unique<Event>(g));
      Gate gate;
      for (int g = 0; g < n; ++g) {
        CUDA_CHECK(cudaSetDevice(g));
        gate.hold(st[g]->s);
        // Stagger: GPU g starts g/n of a copy later (a short busy kernel).
        launch_sleep(st[g]->s, static_cast<int64_t>(g * (bytes / 45e9) * 1e9 / n));
        for (int i = 0; i < count; ++i) {
          CUDA_CHECK(cudaEventRecord(ev[g][i]->e, st[g]->s));
          CUDA_CHECK(cudaMemcpyAsync(d[g]->p, h[g]->p, bytes, cudaMemcpyHostToDevice, st[g]->s));
        }
        CUDA_CHECK(cudaEventRecord(ev[g][count]->e, st[g]->s));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      gate.release();
      std::vector<double> per_gpu;
      for (int g = 0; g < n; ++g) {
        CUDA_CHECK(cudaSetDevice(g));
        CUDA_CHECK(cudaStreamSynchronize(st[g]->s));
        std::vector<double> t;
        for (int i = 2; i + 2 < count; ++i) {  // the middle: every GPU copying
          float ms = 0;
          CUDA_CHECK(cudaEventElapsedTime(&ms, ev[g][i]->e, ev[g][i + 1]->e));
          t.push_back(ms * 1e3);
        }
        per_gpu.push_back(bytes / median(t) * 1e-3);
      }
      double agg = 0;
      for (double x : per_gpu) agg += x;
      add({{"key", "multi_h2d_pipelined"}, {"gpus", n}, {"bytes_per_copy", bytes}, {"per_gpu_GBps", per_gpu}, {"aggregate_GBps", agg}});
    }
  }

  // ------------------------------------------------------------ NCCL
  struct Comms {
    std::vector<ncclComm_t> comms;
    int n = 0;
    Comms(int ranks, int channels) : comms(ranks), n(ranks) {
      ncclUniqueId id;
      NCCL_CHECK(ncclGetUniqueId(&id));
      ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
      if (channels > 0) cfg.minCTAs = cfg.maxCTAs = channels;
      NCCL_CHECK(ncclGroupStart());
      for (int r = 0; r < ranks; ++r) {
        CUDA_CHECK(cudaSetDevice(r));
        NCCL_CHECK(ncclCommInitRankConfig(&comms[r], ranks, id, r, &cfg));
      }
      NCCL_CHECK(ncclGroupEnd());
    }
    ~Comms() {
      for (auto c : comms) ncclCommDestroy(c);
    }
  };

  enum class Coll { AllToAll, AllGather, ReduceScatter, AllReduce, Pairwise };
  static const char* coll_name(Coll c) {
    switch (c) {
      case Coll::AllToAll: return "all_to_all";
      case Coll::AllGather: return "all_gather";
      case Coll::ReduceScatter: return "reduce_scatter";
      case Coll::AllReduce: return "all_reduce";
      case Coll::Pairwise: return "all_to_all_pairwise";
    }
    return "?";
  }
  // nccl-tests' busbw factors.
  static double busbw_factor(Coll c, int n) {
    switch (c) {
      case Coll::AllReduce: return 2.0 * (n - 1) / n;
      default: return double(n - 1) / n;
    }
  }

  // Enqueue one collective of `bytes` (nccl-tests size) on every rank.
  void enqueue(Coll c, Comms& cm, std::vector<std::unique_ptr<DevBuf>>& send, std::vector<std::unique_ptr<DevBuf>>& recv,
               std::vector<std::unique_ptr<Stream>>& st, size_t bytes) {
    const int n = cm.n;
    const size_t elems = bytes / 2;  // bf16
    if (c == Coll::Pairwise) {
      // Round-robin: U-1 rounds, one partner per round (circle method), each round its own group.
      const int m = n % 2 ? n + 1 : n;
      std::vector<int> teams(m);
      for (int i = 0; i < m; ++i) teams[i] = i;
      for (int round = 0; round < m - 1; ++round) {
        NCCL_CHECK(ncclGroupStart());
        for (int i = 0; i < m / 2; ++i) {
          const int a = teams[i], b = teams[m - 1 - i];
          if (a >= n || b >= n) continue;
          const size_t chunk = bytes / n;
          char* sa = static_cast<char*>(send[a]->p);
          char* sb = static_cast<char*>(send[b]->p);
          char* ra = static_cast<char*>(recv[a]->p);
          char* rb = static_cast<char*>(recv[b]->p);
          NCCL_CHECK(ncclSend(sa + b * chunk, chunk, ncclChar, b, cm.comms[a], st[a]->s));
          NCCL_CHECK(ncclRecv(ra + b * chunk, chunk, ncclChar, b, cm.comms[a], st[a]->s));
          NCCL_CHECK(ncclSend(sb + a * chunk, chunk, ncclChar, a, cm.comms[b], st[b]->s));
          NCCL_CHECK(ncclRecv(rb + a * chunk, chunk, ncclChar, a, cm.comms[b], st[b]->s));
        }
        NCCL_CHECK(ncclGroupEnd());
        std::rotate(teams.begin() + 1, teams.end() - 1, teams.end());
      }
      return;
    }
    NCCL_CHECK(ncclGroupStart());
    for (int r = 0; r < n; ++r) {
      void* sp = send[r]->p;
      void* rp = recv[r]->p;
      switch (c) {
        case Coll::AllToAll: NCCL_CHECK(ncclAlltoAll(sp, rp, elems / n, ncclBfloat16, cm.comms[r], st[r]->s)); break;
        case Coll::AllGather: NCCL_CHECK(ncclAllGather(sp, rp, elems / n, ncclBfloat16, cm.comms[r], st[r]->s)); break;
        case Coll::ReduceScatter: NCCL_CHECK(ncclReduceScatter(sp, rp, elems / n, ncclBfloat16, ncclSum, cm.comms[r], st[r]->s)); break;
        case Coll::AllReduce: NCCL_CHECK(ncclAllReduce(sp, rp, elems, ncclBfloat16, ncclSum, cm.comms[r], st[r]->s)); break;
        default: break;
      }
    }
    NCCL_CHECK(ncclGroupEnd());
  }

  // Time `iters` back-to-back collectives; the slowest rank's events. Every
  // rank's stream is held by one gate while the host enqueues all `iters`
  // (one thread launching for every rank is slower than the GPUs at small
  // sizes, and its first group launch lands late): the events time what the
  // GPUs do once every rank's work is queued, which is what the simulator's
  // table stands for (its host calls are modelled apart).
  // NCCL may wait for the GPU inside a call (first use of a connection, a full
  // work queue): one ungated call first, and a helper thread that releases the
  // gate if the host has not finished enqueueing within a second. A sample
  // released that way is dropped and the rest of the row runs ungated.
  struct CollTiming {
    std::vector<double> samples;
    bool gated = true;
  };
  CollTiming time_coll(Coll c, Comms& cm, std::vector<std::unique_ptr<DevBuf>>& send,
                       std::vector<std::unique_ptr<DevBuf>>& recv, std::vector<std::unique_ptr<Stream>>& st,
                       size_t bytes, int iters, int samples_wanted) {
    const int n = cm.n;
    auto a = events_per_gpu(n), b = events_per_gpu(n);
    enqueue(c, cm, send, recv, st, bytes);
    for (int r = 0; r < n; ++r) {
      CUDA_CHECK(cudaSetDevice(r));
      CUDA_CHECK(cudaStreamSynchronize(st[r]->s));
    }
    CollTiming out;
    Gate gate;
    for (int it = 0; it < opt.warmup + samples_wanted; ++it) {
      const bool gated = out.gated;
      for (int r = 0; r < n; ++r) {
        CUDA_CHECK(cudaSetDevice(r));
        if (gated) gate.hold(st[r]->s);
        CUDA_CHECK(cudaEventRecord(a[r]->e, st[r]->s));
      }
      std::atomic<bool> queued{false};
      bool released_late = false;
      std::thread releaser;
      if (gated)
        releaser = std::thread([&] {
          const auto t0 = Clock::now();
          while (!queued.load()) {
            if (Clock::now() - t0 > std::chrono::seconds(1)) {
              released_late = true;
              break;
            }
            std::this_thread::sleep_for(std::chrono::microseconds(20));
          }
          gate.release();
        });
      for (int k = 0; k < iters; ++k) enqueue(c, cm, send, recv, st, bytes);
      for (int r = 0; r < n; ++r) {
        CUDA_CHECK(cudaSetDevice(r));
        CUDA_CHECK(cudaEventRecord(b[r]->e, st[r]->s));
      }
      queued = true;
      if (releaser.joinable()) releaser.join();
      double worst = 0;
      for (int r = 0; r < n; ++r) {
        CUDA_CHECK(cudaSetDevice(r));
        CUDA_CHECK(cudaStreamSynchronize(st[r]->s));
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, a[r]->e, b[r]->e));
        worst = std::max(worst, ms * 1e3 / iters);
      }
      progress(std::string(coll_name(c)) + " " + std::to_string(bytes));
      if (released_late) {  // this sample waited for the host: drop it, go on ungated
        out.gated = false;
        --it;
        continue;
      }
      if (it >= opt.warmup) out.samples.push_back(worst);
    }
    return out;
  }

  void collectives() {
    if (ngpus < 2) return;
    const size_t max_bytes = opt.quick ? (64u << 20) : (size_t(1) << 30);
    std::vector<int> rank_counts;
    for (int n : opt.ranks)
      if (n >= 2 && n <= ngpus) rank_counts.push_back(n);
    if (opt.ranks.empty()) {
      rank_counts.push_back(2);
      if (ngpus > 2) rank_counts.push_back(ngpus);
    }
    std::vector<int> channel_counts = opt.quick ? std::vector<int>{0} : opt.channels;
    for (int n : rank_counts)
      for (int ch : channel_counts) {
        Comms cm(n, ch);
        std::vector<std::unique_ptr<DevBuf>> send, recv;
        std::vector<std::unique_ptr<Stream>> st;
        for (int r = 0; r < n; ++r) {
          send.push_back(std::make_unique<DevBuf>(r, max_bytes));
          recv.push_back(std::make_unique<DevBuf>(r, max_bytes));
          st.push_back(std::make_unique<Stream>(r));
        }
        for (Coll c : {Coll::AllToAll, Coll::AllGather, Coll::ReduceScatter, Coll::AllReduce, Coll::Pairwise}) {
          const std::string key = std::string("nccl_") + coll_name(c);
          if (!want(key)) continue;
          if (ch != 0 && c != Coll::AllToAll && c != Coll::AllReduce && !opt.all_collectives_at_all_channels) continue;
          const size_t step = opt.size_step != 4 ? static_cast<size_t>(opt.size_step) : (ch == 0 ? 4 : 16);
          for (size_t bytes = 1024; bytes <= max_bytes; bytes *= step) {
            if (bytes % (2 * n * n)) continue;
            const int iters = bytes < (1u << 20) ? 20 : bytes < (64u << 20) ? 5 : 2;
            // Small sizes are cheap and launch-latency noisy: three times the samples.
            const int nsamples = bytes < (4u << 20) ? 3 * opt.samples : opt.samples;
            const CollTiming timing = time_coll(c, cm, send, recv, st, bytes, iters, nsamples);
            const std::vector<double>& samples = timing.samples;
            const double us = median(samples);
            const double algbw = bytes / us * 1e-3;
            add({{"key", key}, {"ranks", n}, {"channels", ch}, {"bytes", bytes}, {"time_us", us}, {"algbw_GBps", algbw},
                 {"busbw_GBps", algbw * busbw_factor(c, n)}, {"iters", iters}, {"gated", timing.gated},
                 {"samples_us", samples}});
          }
        }
        // The all-to-all per gated burst (nccl_reps): the table above times
        // 20 back-to-back collectives per sample below 1 MiB, 5 below 64 MiB,
        // 2 above, where a workload runs one between kernels; a single one
        // timed alike in situ took ~5 us over the table at 4 MiB. Each size
        // at 1, 2, 5 and 20 per burst: a one-off cost per burst, and how much
        // of it the table's rows carry.
        if (ch == 0 && want("nccl_reps"))
          for (const size_t bytes : {size_t{256} << 10, size_t{1} << 20, size_t{4} << 20, size_t{16} << 20})
            for (const int iters : {1, 2, 5, 20}) {
              if (bytes % (2 * n * n) || bytes > max_bytes) continue;
              const CollTiming timing = time_coll(Coll::AllToAll, cm, send, recv, st, bytes, iters, 3 * opt.samples);
              add({{"key", "nccl_reps"}, {"ranks", n}, {"channels", ch}, {"bytes", bytes}, {"iters", iters}, {"time_us", median(timing.samples)},
                   {"gated", timing.gated}, {"samples_us", timing.samples}});
            }
      }
  }

  // ------------------------------------------------------------ collectives under load
  // Two ranks set up for an all-to-all beside GEMMs (the loaded and in-situ
  // testcases): communicators, send/receive buffers of `max_bytes`, one
  // 8192x5120x5120 GEMM's random operands, a stream and cuBLAS per rank;
  // every kernel and connection loaded once (lazy loading would wait behind
  // a running GEMM loop).
  struct A2aRig {
    static constexpr int n = 2, m = 8192, nn = 5120, k = 5120;
    Impl& b;
    Comms cm;
    std::vector<std::unique_ptr<DevBuf>> send, recv, ga, gb, gc, one;
    std::vector<std::unique_ptr<Stream>> st;
    std::vector<std::unique_ptr<Blas>> blas;
    std::vector<int> sms = std::vector<int>(n);
    A2aRig(Impl& bench, size_t max_bytes) : b(bench), cm(n, 0) {
      for (int r = 0; r < n; ++r) {
        CUDA_CHECK(cudaSetDevice(r));
        CUDA_CHECK(cudaDeviceGetAttribute(&sms[r], cudaDevAttrMultiProcessorCount, r));
        send.push_back(std::make_unique<DevBuf>(r, max_bytes));
        recv.push_back(std::make_unique<DevBuf>(r, max_bytes));
        ga.push_back(std::make_unique<DevBuf>(r, size_t(m) * k * 2));
        gb.push_back(std::make_unique<DevBuf>(r, size_t(k) * nn * 2));
        gc.push_back(std::make_unique<DevBuf>(r, size_t(m) * nn * 2));
        one.push_back(std::make_unique<DevBuf>(r, 256));
        fill_random(ga.back()->p, size_t(m) * k * 2);
        fill_random(gb.back()->p, size_t(k) * nn * 2);
        st.push_back(std::make_unique<Stream>(r));
        blas.push_back(std::make_unique<Blas>(st.back()->s));
      }
      for (int r = 0; r < n; ++r) gemm(r);
      line_up();
      a2a(max_bytes);
      sync();
    }
    void gemm(int r) {
      CUDA_CHECK(cudaSetDevice(r));
      blas[r]->gemm(m, nn, k, ga[r]->p, gb[r]->p, gc[r]->p);
    }
    // A 1-element all-reduce: lines the ranks up.
    void line_up() {
      NCCL_CHECK(ncclGroupStart());
      for (int r = 0; r < n; ++r) NCCL_CHECK(ncclAllReduce(one[r]->p, one[r]->p, 1, ncclFloat, ncclSum, cm.comms[r], st[r]->s));
      NCCL_CHECK(ncclGroupEnd());
    }
    void a2a(size_t bytes) { b.enqueue(Coll::AllToAll, cm, send, recv, st, bytes); }
    void sync() {
      for (int r = 0; r < n; ++r) {
        CUDA_CHECK(cudaSetDevice(r));
        CUDA_CHECK(cudaStreamSynchronize(st[r]->s));
      }
    }
  };

  // The 2-rank all-to-all (NCCL's channels) with the GPUs' clock down against
  // the same with it up. NCCL moves NVLink traffic with SM code: does it slow
  // with the power-capped clock, as a GEMM does? Each sample: either >= 300 ms
  // of one GEMM back to back on both GPUs ("loaded"), or 150 ms idle then 2 ms
  // of a spinning kernel on every SM ("rested", the clock woken); then a
  // 1-element all-reduce lines the ranks up, then `iters` all-to-alls, timed
  // on each rank from after the all-reduce (the slowest rank's time per
  // all-to-all). The queued GEMMs or the spin keep the GPUs ahead of the
  // host, so no gate is needed. The last GEMM of each loaded sample is timed
  // too (`gemm_ratio`: its time over the same GEMM after the rested wake-up):
  // the clock state the all-to-alls start in.
  void collectives_loaded() {
    if (ngpus < 2 || !want("nccl_all_to_all_loaded")) return;
    const size_t max_bytes = opt.quick ? (16u << 20) : (64u << 20);
    A2aRig rig(*this, max_bytes);
    const int n = A2aRig::n, m = A2aRig::m, nn = A2aRig::nn, k = A2aRig::k;
    auto& st = rig.st;
    auto& sms = rig.sms;
    auto a = events_per_gpu(n), b = events_per_gpu(n), ga_ev = events_per_gpu(n), gb_ev = events_per_gpu(n);
    // The GEMM's time after the rested wake-up, and how many make >= 300 ms.
    double gemm_rested_us = 0;
    {
      std::vector<double> t;
      for (int it = 0; it < 3; ++it) {
        std::this_thread::sleep_for(std::chrono::milliseconds(150));
        CUDA_CHECK(cudaSetDevice(0));
        launch_busy(st[0]->s, sms[0], 2'000'000);
        CUDA_CHECK(cudaEventRecord(ga_ev[0]->e, st[0]->s));
        rig.gemm(0);
        CUDA_CHECK(cudaEventRecord(gb_ev[0]->e, st[0]->s));
        CUDA_CHECK(cudaEventSynchronize(gb_ev[0]->e));
        t.push_back(elapsed_us(*ga_ev[0], *gb_ev[0]));
      }
      gemm_rested_us = median(t);
    }
    const int load_gemms = std::max(1, static_cast<int>(std::ceil(300e3 / gemm_rested_us)));
    for (size_t bytes = 1u << 20; bytes <= max_bytes; bytes *= 4) {
      const int iters = bytes < (16u << 20) ? 10 : bytes < (64u << 20) ? 5 : 2;
      std::vector<double> rested, warm, loaded, gemm_ratio, awake_rested, awake_loaded, awake_gemm_ratio;
      // Modes: 0 rested (150 ms idle, then the 2 ms wake-up), 1 warm (the
      // same without the idle: samples back to back, as the gated tables
      // run), 2 loaded, 3-6 the rested sample after shorter idles (how long
      // an idle NVLink takes to fall asleep: between 20 and 50 ms), then 7
      // and 8 rested and loaded with the links kept awake (a 1-element
      // all-reduce every 10 ms of the idle, every 16 GEMMs of the load): the
      // clock's own effect, no link wake-up in either.
      const int idles_ms[] = {5, 10, 20, 50};
      const int modes = 3 + static_cast<int>(std::size(idles_ms)) + 2;
      std::vector<std::vector<double>> idle(std::size(idles_ms));
      for (int mode = 0; mode < modes; ++mode)
        for (int it = 0; it < opt.warmup + opt.samples; ++it) {
          const bool awake = mode >= modes - 2;
          const bool load = mode == 2 || mode == modes - 1;
          progress("all_to_all " + std::string(load ? "loaded " : mode == 1 ? "warm " : "rested ") + (awake ? "awake " : "") + std::to_string(bytes));
          if (mode == 0) std::this_thread::sleep_for(std::chrono::milliseconds(150));
          if (mode >= 3 && !awake) std::this_thread::sleep_for(std::chrono::milliseconds(idles_ms[mode - 3]));
          if (awake && !load)
            for (int i = 0; i < 15; ++i) {
              std::this_thread::sleep_for(std::chrono::milliseconds(10));
              rig.line_up();
            }
          if (load) {
            for (int g = 0; g + 1 < load_gemms; ++g) {
              for (int r = 0; r < n; ++r) rig.gemm(r);
              if (awake && g % 16 == 15) rig.line_up();
            }
            for (int r = 0; r < n; ++r) {
              CUDA_CHECK(cudaSetDevice(r));
              CUDA_CHECK(cudaEventRecord(ga_ev[r]->e, st[r]->s));
              rig.gemm(r);
              CUDA_CHECK(cudaEventRecord(gb_ev[r]->e, st[r]->s));
            }
          } else {
            for (int r = 0; r < n; ++r) {
              CUDA_CHECK(cudaSetDevice(r));
              launch_busy(st[r]->s, sms[r], 2'000'000);
            }
          }
          rig.line_up();
          for (int r = 0; r < n; ++r) {
            CUDA_CHECK(cudaSetDevice(r));
            CUDA_CHECK(cudaEventRecord(a[r]->e, st[r]->s));
          }
          for (int i = 0; i < iters; ++i) rig.a2a(bytes);
          for (int r = 0; r < n; ++r) {
            CUDA_CHECK(cudaSetDevice(r));
            CUDA_CHECK(cudaEventRecord(b[r]->e, st[r]->s));
          }
          rig.sync();
          double worst = 0, gemm_worst = 0;
          for (int r = 0; r < n; ++r) {
            worst = std::max(worst, elapsed_us(*a[r], *b[r]) / iters);
            if (load) gemm_worst = std::max(gemm_worst, elapsed_us(*ga_ev[r], *gb_ev[r]));
          }
          if (it < opt.warmup) continue;
          if (awake) (load ? awake_loaded : awake_rested).push_back(worst);
          else (load ? loaded : mode == 1 ? warm : mode == 0 ? rested : idle[static_cast<size_t>(mode - 3)]).push_back(worst);
          if (load) (awake ? awake_gemm_ratio : gemm_ratio).push_back(gemm_worst / gemm_rested_us);
        }
      add({{"key", "nccl_all_to_all_loaded"}, {"ranks", n}, {"channels", 0}, {"bytes", bytes}, {"iters", iters},
           {"time_us", median(loaded)}, {"rested_time_us", median(rested)}, {"ratio", median(loaded) / median(rested)},
           {"gemm", {m, nn, k}}, {"gemm_rested_us", gemm_rested_us}, {"load_ms", load_gemms * gemm_rested_us * 1e-3},
           {"gemm_ratio", median(gemm_ratio)}, {"samples_us", loaded}, {"rested_samples_us", rested}, {"warm_time_us", median(warm)},
           {"warm_samples_us", warm}, {"awake_rested_time_us", median(awake_rested)}, {"awake_time_us", median(awake_loaded)},
           {"awake_ratio", median(awake_loaded) / median(awake_rested)}, {"awake_gemm_ratio", median(awake_gemm_ratio)},
           {"awake_samples_us", awake_loaded}, {"awake_rested_samples_us", awake_rested}, {"idle_sweep", [&] {
              json sweep = json::array();
              for (size_t i = 0; i < idle.size(); ++i) sweep.push_back({{"idle_ms", idles_ms[i]}, {"time_us", median(idle[i])}, {"samples_us", idle[i]}});
              return sweep;
            }()}});
    }
  }

  // The 2-rank all-to-all as a Ulysses layer meets it (the SP 2 validation
  // runs measured theirs 1.29x slower with prefetching than without): after
  // `gemm_ms` of one GEMM back to back on both GPUs (2, 8, 30, 100 ms), one
  // all-to-all, timed on each rank from after a 1-element all-reduce that
  // lines the ranks up (the slowest rank's); with no copies, or with 64 MiB
  // H2D copies back to back on a second stream of every GPU for the whole
  // sample (a prefetch: `ncopies`, enough for the GEMMs at up to 1.25x their
  // warm time + 5 ms), at 4, 16, 40 MiB and the SP 2 runs' 80 MiB.
  // `warm_time_us`: the same all-to-all right after another (the gated
  // tables' state). Per case also the GEMMs' span (`gemm_span_us`: first
  // GEMM's start to last's end, the slowest rank's; beside copies or not),
  // the copies' span and by how much they outlasted the all-to-all's start
  // (`copy_margin_us`, the least over ranks: > 0, they ran beside it).
  void collectives_insitu() {
    if (ngpus < 2 || !want("nccl_all_to_all_insitu")) return;
    const size_t max_bytes = size_t(80) << 20, cbytes = size_t(64) << 20;
    A2aRig rig(*this, max_bytes);
    const int n = A2aRig::n, m = A2aRig::m, nn = A2aRig::nn, k = A2aRig::k;
    auto& st = rig.st;
    PerGpuCopies cp(n, cbytes);
    auto sync_all = [&] {
      rig.sync();
      for (int r = 0; r < n; ++r) {
        CUDA_CHECK(cudaSetDevice(r));
        CUDA_CHECK(cudaStreamSynchronize(cp.stream[r]->s));
      }
    };
    auto a = events_per_gpu(n), b = events_per_gpu(n), c0 = events_per_gpu(n), c1 = events_per_gpu(n), g0 = events_per_gpu(n),
         g1 = events_per_gpu(n);
    // One GEMM's time, warm (for the GEMM count of each duration).
    double gemm_us = 0;
    {
      Event x(0), y(0);
      CUDA_CHECK(cudaSetDevice(0));
      for (int i = 0; i < 3; ++i) rig.gemm(0);
      CUDA_CHECK(cudaEventRecord(x.e, st[0]->s));
      for (int i = 0; i < 10; ++i) rig.gemm(0);
      CUDA_CHECK(cudaEventRecord(y.e, st[0]->s));
      CUDA_CHECK(cudaEventSynchronize(y.e));
      gemm_us = elapsed_us(x, y) / 10;
    }
    // The all-to-all on each rank from after the line-up: the slowest rank's.
    auto timed_a2a = [&](size_t bytes) {
      rig.line_up();
      for (int r = 0; r < n; ++r) {
        CUDA_CHECK(cudaSetDevice(r));
        CUDA_CHECK(cudaEventRecord(a[r]->e, st[r]->s));
      }
      rig.a2a(bytes);
      for (int r = 0; r < n; ++r) {
        CUDA_CHECK(cudaSetDevice(r));
        CUDA_CHECK(cudaEventRecord(b[r]->e, st[r]->s));
      }
    };
    for (size_t bytes : {size_t(4) << 20, size_t(16) << 20, size_t(40) << 20, max_bytes}) {
      // Warm: an all-to-all right after another.
      std::vector<double> warm;
      for (int it = 0; it < opt.warmup + opt.samples; ++it) {
        progress("all_to_all in situ warm " + std::to_string(bytes));
        rig.a2a(bytes);
        timed_a2a(bytes);
        sync_all();
        double worst = 0;
        for (int r = 0; r < n; ++r) worst = std::max(worst, elapsed_us(*a[r], *b[r]));
        if (it >= opt.warmup) warm.push_back(worst);
      }
      json cases = json::array();
      for (const int gemm_ms : {2, 8, 30, 100})
        for (const bool copies : {false, true}) {
          const int gemms = std::max(1, static_cast<int>(std::lround(gemm_ms * 1e3 / gemm_us)));
          // Copies covering the GEMMs (at up to 1.25x their warm time: the
          // clock falls under load) and the all-to-all, at ~55 GB/s.
          const int ncopies = copies ? static_cast<int>(std::ceil((gemm_ms * 1.25 + 5) * 1e-3 * 55e9 / static_cast<double>(cbytes))) + 1 : 0;
          std::vector<double> t, copy_gbps, span, copy_span, margin;
          for (int it = 0; it < opt.warmup + opt.samples; ++it) {
            progress("all_to_all in situ " + std::to_string(bytes) + " after " + std::to_string(gemm_ms) + " ms" + (copies ? " with copies" : ""));
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            for (int r = 0; r < n && copies; ++r) {
              CUDA_CHECK(cudaSetDevice(r));
              CUDA_CHECK(cudaEventRecord(c0[r]->e, cp.stream[r]->s));
              for (int i = 0; i < ncopies; ++i)
                CUDA_CHECK(cudaMemcpyAsync(cp.dev[r]->p, cp.host[r]->p, cbytes, cudaMemcpyHostToDevice, cp.stream[r]->s));
              CUDA_CHECK(cudaEventRecord(c1[r]->e, cp.stream[r]->s));
            }
            for (int r = 0; r < n; ++r) {
              CUDA_CHECK(cudaSetDevice(r));
              CUDA_CHECK(cudaEventRecord(g0[r]->e, st[r]->s));
            }
            for (int g = 0; g < gemms; ++g)
              for (int r = 0; r < n; ++r) rig.gemm(r);
            for (int r = 0; r < n; ++r) {
              CUDA_CHECK(cudaSetDevice(r));
              CUDA_CHECK(cudaEventRecord(g1[r]->e, st[r]->s));
            }
            timed_a2a(bytes);
            sync_all();
            double worst = 0, worst_span = 0, worst_copy = 0, least_margin = 1e30;
            for (int r = 0; r < n; ++r) {
              worst = std::max(worst, elapsed_us(*a[r], *b[r]));
              worst_span = std::max(worst_span, elapsed_us(*g0[r], *g1[r]));
              if (copies) {
                const double cs = elapsed_us(*c0[r], *c1[r]);
                worst_copy = std::max(worst_copy, cs);
                least_margin = std::min(least_margin, cs - elapsed_us(*c0[r], *a[r]));
              }
            }
            if (it < opt.warmup) continue;
            t.push_back(worst);
            span.push_back(worst_span);
            if (copies) {
              for (int r = 0; r < n; ++r)
                copy_gbps.push_back(static_cast<double>(cbytes) * ncopies / (elapsed_us(*c0[r], *c1[r]) * 1e-6) / 1e9);
              copy_span.push_back(worst_copy);
              margin.push_back(least_margin);
            }
          }
          json row = {{"gemm_ms", gemm_ms},
                    {"gemms", gemms},
                    {"copies", copies},
                    {"time_us", median(t)},
                    {"samples_us", t},
                    {"ratio_to_warm", median(t) / median(warm)},
                    {"copy_GBps", copy_gbps.empty() ? 0.0 : median(copy_gbps)},
                    {"gemm_span_us", median(span)},
                    {"gemm_span_samples_us", span}};
          if (copies) {
            row["ncopies"] = ncopies;
            row["copy_span_us"] = median(copy_span);
            row["copy_margin_us"] = median(margin);
            row["copy_margin_samples_us"] = margin;
          }
          cases.push_back(row);
        }
      add({{"key", "nccl_all_to_all_insitu"}, {"ranks", n}, {"channels", 0}, {"bytes", bytes}, {"gemm", {m, nn, k}}, {"gemm_us", gemm_us},
           {"warm_time_us", median(warm)}, {"warm_samples_us", warm}, {"cases", cases}});
    }
  }

  // How far two GPUs drift apart over a stretch of compute (the wait a
  // collective after it adds): `segment_ms` of GEMMs on both GPUs, then a
  // 1-element all-reduce, timed on each rank by events around it; the rank
  // that arrived first waits in it, so |time on rank 0 - time on rank 1| is
  // the arrival skew. 20 segments back to back after >= 300 ms of GEMMs
  // ("loaded": the clock under the power cap) or each after 150 ms idle and
  // the 2 ms wake-up ("rested"), at 2, 8 and 30 ms.
  void barrier_skew() {
    if (ngpus < 2 || !want("nccl_barrier_skew")) return;
    A2aRig rig(*this, size_t(1) << 20);
    const int n = A2aRig::n;
    auto a = events_per_gpu(n), b = events_per_gpu(n);
    double gemm_us = 0;
    {
      Event x(0), y(0);
      for (int i = 0; i < 3; ++i) rig.gemm(0);
      CUDA_CHECK(cudaEventRecord(x.e, rig.st[0]->s));
      for (int i = 0; i < 10; ++i) rig.gemm(0);
      CUDA_CHECK(cudaEventRecord(y.e, rig.st[0]->s));
      CUDA_CHECK(cudaEventSynchronize(y.e));
      gemm_us = elapsed_us(x, y) / 10;
    }
    const int segments = 20;
    for (const bool loaded : {false, true})
      for (const int segment_ms : {2, 8, 30}) {
        progress(std::string("barrier skew ") + (loaded ? "loaded " : "rested ") + std::to_string(segment_ms) + " ms");
        const int gemms = std::max(1, static_cast<int>(std::lround(segment_ms * 1e3 / gemm_us)));
        if (loaded) {
          const int load = static_cast<int>(std::ceil(300e3 / gemm_us));
          for (int g = 0; g < load; ++g)
            for (int r = 0; r < n; ++r) rig.gemm(r);
          rig.line_up();
        }
        std::vector<double> skew, seg;
        for (int i = 0; i < segments; ++i) {
          if (!loaded) {
            rig.sync();
            std::this_thread::sleep_for(std::chrono::milliseconds(150));
            for (int r = 0; r < n; ++r) {
              CUDA_CHECK(cudaSetDevice(r));
              launch_busy(rig.st[r]->s, rig.sms[r], 2'000'000);
            }
            rig.line_up();
          }
          for (int g = 0; g < gemms; ++g)
            for (int r = 0; r < n; ++r) rig.gemm(r);
          for (int r = 0; r < n; ++r) {
            CUDA_CHECK(cudaSetDevice(r));
            CUDA_CHECK(cudaEventRecord(a[r]->e, rig.st[r]->s));
          }
          rig.line_up();
          for (int r = 0; r < n; ++r) {
            CUDA_CHECK(cudaSetDevice(r));
            CUDA_CHECK(cudaEventRecord(b[r]->e, rig.st[r]->s));
          }
          // Loaded segments run on while the host reads the events of the
          // last one: keep at most one segment queued ahead.
          for (int r = 0; r < n; ++r) CUDA_CHECK(cudaEventSynchronize(b[r]->e));
          skew.push_back(std::abs(elapsed_us(*a[0], *b[0]) - elapsed_us(*a[1], *b[1])));
          seg.push_back(gemms * gemm_us);
        }
        double mean = 0;
        for (double v : skew) mean += v / static_cast<double>(skew.size());
        add({{"key", "nccl_barrier_skew"}, {"ranks", n}, {"mode", loaded ? "loaded" : "rested"}, {"segment_ms", segment_ms}, {"gemms", gemms},
             {"gemm_us", gemm_us}, {"mean_skew_us", mean}, {"median_skew_us", median(skew)}, {"samples_us", skew}});
      }
  }

  // ------------------------------------------------------------ interference
  // Runs A alone, B alone, then both at once (released by one gate); reports
  // each one's time in each case.
  void interference() {
    if (!want("interference")) return;
    const int dev = 0;
    const int n = std::min(ngpus, 4);
    CUDA_CHECK(cudaSetDevice(dev));
    const int m = 18900, nn = 5120, k = 5120;  // a Wan QKV/out-sized GEMM at 720p / U=4
    DevBuf A(dev, size_t(m) * k * 2), B(dev, size_t(k) * nn * 2), C(dev, size_t(m) * nn * 2);
    fill_random(A.p, size_t(m) * k * 2);
    fill_random(B.p, size_t(k) * nn * 2);
    const size_t h2d_bytes = size_t(1) << 30;
    DevBuf d(dev, h2d_bytes);
    PinnedBuf h(h2d_bytes);
    const size_t a2a_bytes = 256u << 20;
    Stream gemm_s(dev), copy_s(dev);
    const Blas blas(gemm_s.s);
    const int gemm_reps = 20;
    auto gemm = [&] {
      for (int i = 0; i < gemm_reps; ++i)
        blas.gemm(m, nn, k, A.p, B.p, C.p);
    };
    auto h2d = [&] { CUDA_CHECK(cudaMemcpyAsync(d.p, h.p, h2d_bytes, cudaMemcpyHostToDevice, copy_s.s)); };
    auto d2h = [&] { CUDA_CHECK(cudaMemcpyAsync(h.p, d.p, h2d_bytes, cudaMemcpyDeviceToHost, copy_s.s)); };

    // A pair run: each side enqueued on its stream(s) behind a gate; per-side
    // time from the gate's release (event on dev 0) to its own end event.
    struct Side {
      std::string name;
      std::vector<cudaStream_t> streams;  // stream per device used (index = device)
      std::function<void()> enqueue;
    };
    auto run_pair = [&](const Side& x, const Side* y) {
      std::vector<double> tx, ty;
      for (int it = 0; it < opt.warmup + opt.samples; ++it) {
        Gate gate;
        std::vector<cudaEvent_t> starts, ex, ey;
        auto hold_all = [&](const Side& s, std::vector<cudaEvent_t>& ends) {
          for (size_t dv = 0; dv < s.streams.size(); ++dv) {
            CUDA_CHECK(cudaSetDevice(static_cast<int>(dv)));
            gate.hold(s.streams[dv]);
            cudaEvent_t st, en;
            CUDA_CHECK(cudaEventCreate(&st));
            CUDA_CHECK(cudaEventCreate(&en));
            CUDA_CHECK(cudaEventRecord(st, s.streams[dv]));
            starts.push_back(st);
            ends.push_back(en);
          }
        };
        hold_all(x, ex);
        if (y) hold_all(*y, ey);
        CUDA_CHECK(cudaSetDevice(0));
        x.enqueue();
        if (y) y->enqueue();
        for (size_t dv = 0; dv < x.streams.size(); ++dv) {
          CUDA_CHECK(cudaSetDevice(static_cast<int>(dv)));
          CUDA_CHECK(cudaEventRecord(ex[dv], x.streams[dv]));
        }
        if (y)
          for (size_t dv = 0; dv < y->streams.size(); ++dv) {
            CUDA_CHECK(cudaSetDevice(static_cast<int>(dv)));
            CUDA_CHECK(cudaEventRecord(ey[dv], y->streams[dv]));
          }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        gate.release();
        for (int dv = 0; dv < n; ++dv) {
          CUDA_CHECK(cudaSetDevice(dv));
          CUDA_CHECK(cudaDeviceSynchronize());
        }
        // Device-0 times: start event of x's device-0 stream to each side's device-0 end.
        float mx = 0, my = 0;
        CUDA_CHECK(cudaSetDevice(0));
        CUDA_CHECK(cudaEventElapsedTime(&mx, starts[0], ex[0]));
        if (y) CUDA_CHECK(cudaEventElapsedTime(&my, starts[0], ey[0]));
        if (it >= opt.warmup) {
          tx.push_back(mx * 1e3);
          if (y) ty.push_back(my * 1e3);
        }
        for (auto e : starts) cudaEventDestroy(e);
        for (auto e : ex) cudaEventDestroy(e);
        for (auto e : ey) cudaEventDestroy(e);
      }
      return std::pair{median(tx), y ? median(ty) : 0.0};
    };

    std::unique_ptr<Comms> cm;
    std::vector<std::unique_ptr<DevBuf>> send, recv;
    std::vector<std::unique_ptr<Stream>> st;
    const Side g{"gemm", {gemm_s.s}, gemm};
    const Side c_h2d{"h2d", {copy_s.s}, h2d};
    const Side c_d2h{"d2h", {copy_s.s}, d2h};
    // Warm up ungated (see time_stream_us).
    gemm();
    h2d();
    CUDA_CHECK(cudaDeviceSynchronize());
    progress("interference gemm/h2d");
    auto report = [&](const std::string& a, const std::string& b, int ch, std::pair<double, double> alone_ab, std::pair<double, double> both) {
      add({{"key", "interference"}, {"a", a}, {"b", b}, {"channels", ch}, {"a_alone_us", alone_ab.first}, {"b_alone_us", alone_ab.second},
           {"a_together_us", both.first}, {"b_together_us", both.second}, {"a_slowdown", both.first / alone_ab.first},
           {"b_slowdown", both.second / alone_ab.second}});
    };
    {
      const double ga = run_pair(g, nullptr).first, ha = run_pair(c_h2d, nullptr).first;
      report("gemm", "h2d", 0, {ga, ha}, run_pair(g, &c_h2d));
    }
    if (n >= 2) {
      for (int ch : opt.interference_channels) {
        cm = std::make_unique<Comms>(n, ch);
        send.clear();
        recv.clear();
        st.clear();
        std::vector<cudaStream_t> streams;
        for (int r = 0; r < n; ++r) {
          send.push_back(std::make_unique<DevBuf>(r, a2a_bytes));
          recv.push_back(std::make_unique<DevBuf>(r, a2a_bytes));
          st.push_back(std::make_unique<Stream>(r));
          streams.push_back(st.back()->s);
        }
        const Side a2a{"a2a", streams, [&] {
                         for (int i = 0; i < 4; ++i) enqueue(Coll::AllToAll, *cm, send, recv, st, a2a_bytes);
                       }};
        a2a.enqueue();
        for (int r = 0; r < n; ++r) {
          CUDA_CHECK(cudaSetDevice(r));
          CUDA_CHECK(cudaDeviceSynchronize());
        }
        progress("interference gemm/a2a ch=" + std::to_string(ch));
        const double ga = run_pair(g, nullptr).first, aa = run_pair(a2a, nullptr).first;
        report("gemm", "all_to_all", ch, {ga, aa}, run_pair(g, &a2a));
        if (ch == opt.interference_channels.front()) {
          progress("interference a2a/h2d");
          const double ha = run_pair(c_h2d, nullptr).first, da = run_pair(c_d2h, nullptr).first;
          report("all_to_all", "h2d", ch, {aa, ha}, run_pair(a2a, &c_h2d));
          report("all_to_all", "d2h", ch, {aa, da}, run_pair(a2a, &c_d2h));
          // Every rank's GPU copying 1 GiB at once beside the all-to-all (a
          // prefetching SP group): with NCCL_P2P_DISABLE=1 both move through
          // the host side together. Times are GPU 0's.
          PerGpuCopies all(n, h2d_bytes);
          std::vector<cudaStream_t> cs;
          for (int g = 0; g < n; ++g) cs.push_back(all.stream[g]->s);
          for (const bool up : {false, true}) {
            const Side c_all{up ? "d2h_all" : "h2d_all", cs, [&, up] {
                               for (int g = 0; g < n; ++g) {
                                 CUDA_CHECK(cudaSetDevice(g));
                                 if (up) CUDA_CHECK(cudaMemcpyAsync(all.host[g]->p, all.dev[g]->p, h2d_bytes, cudaMemcpyDeviceToHost, all.stream[g]->s));
                                 else CUDA_CHECK(cudaMemcpyAsync(all.dev[g]->p, all.host[g]->p, h2d_bytes, cudaMemcpyHostToDevice, all.stream[g]->s));
                               }
                               CUDA_CHECK(cudaSetDevice(0));
                             }};
            progress(std::string("interference a2a/") + c_all.name);
            c_all.enqueue();
            for (int g = 0; g < n; ++g) {
              CUDA_CHECK(cudaSetDevice(g));
              CUDA_CHECK(cudaDeviceSynchronize());
            }
            const double alone = run_pair(c_all, nullptr).first;
            report("all_to_all", c_all.name, ch, {aa, alone}, run_pair(a2a, &c_all));
          }
        }
        send.clear();
        recv.clear();
        st.clear();
        cm.reset();
      }
    }
  }
};

Runner::Runner(Options o) : impl_(std::make_unique<Impl>()) { impl_->opt = std::move(o); }
Runner::~Runner() = default;

int Runner::gpu_count() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return -1;
  return n;
}

nlohmann::ordered_json Runner::run() {
  Impl& I = *impl_;
  I.ngpus = gpu_count();
  if (I.ngpus <= 0) throw GpuError("no CUDA GPU found: run overlapsim-validate bench on a machine with NVIDIA GPUs");
  if (I.opt.max_gpus > 0) I.ngpus = std::min(I.ngpus, I.opt.max_gpus);
  // Watchdog: a hung collective ends with a message, not a hang.
  std::atomic<bool> done{false};
  I.progress("start");
  std::thread dog([&] {
    while (!done) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(Clock::now().time_since_epoch()).count();
      if (now - I.last_progress > I.opt.watchdog_s) {
        std::lock_guard<std::mutex> lock(I.mu);
        std::cerr << "overlapsim-validate: watchdog: '" << I.current << "' made no progress for " << I.opt.watchdog_s
                  << " s; aborting (raise --watchdog if this machine is slow)" << std::endl;
        if (!I.opt.partial_out.empty()) {
          std::ofstream f(I.opt.partial_out);
          f << json{{"schema", "overlapsim.bench/v1"}, {"partial", true}, {"aborted_at", I.current}, {"results", I.results}}.dump(1) << "\n";
        }
        std::_Exit(4);
      }
    }
  });
  struct Join {
    std::atomic<bool>& d;
    std::thread& t;
    ~Join() {
      d = true;
      t.join();
    }
  } join{done, dog};
  // Load every helper kernel on every GPU before anything is gated: with
  // CUDA's lazy module loading, a kernel's first launch loads it, which waits
  // for the device — forever, behind a gate's spin kernel (this hung
  // multi_h2d_pipelined, whose sleep kernel first ran on GPU 1 behind a gate).
  for (int g = 0; g < I.ngpus; ++g) {
    CUDA_CHECK(cudaSetDevice(g));
    prime_kernels(g);
  }
  CUDA_CHECK(cudaSetDevice(0));
  I.overheads();
  I.gpu_event_gap();
  I.copies();
  I.copy_reps();
  I.copy_after_idle();
  I.copy_span();
  I.handoff_wait();
  I.kernel_reps();
  I.multi_gpu_copies();
  I.p2p();
  I.gemms();
  I.gemm_sustained();
  I.gemm_after_idle();
  I.memory_kernels();
  I.memory_after();
  I.multi_h2d_pipelined();
  I.collectives();
  I.collectives_loaded();
  I.collectives_insitu();
  I.barrier_skew();
  I.interference();
  return I.results;
}

}  // namespace ovv
