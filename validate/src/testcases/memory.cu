// Memory-bound kernels: back to back, between GEMMs, after what.
#include "testcases/testcase.cuh"

namespace ovv {
namespace {

struct MemoryKernels : Testcases {
  using Testcases::Testcases;

  // What the memory-kernel testcases share: the compute GPU, a copy kernel's
  // source and destination (half of `max_bytes` each) and a 16384x5120x5120
  // GEMM's operands, filled with random values.
  struct MemoryAndGemm {
    static constexpr int m = 16384, n = 5120, k = 5120;
    ComputeGpu gpu;
    DevBuf src, dst, A, B, C;
    explicit MemoryAndGemm(size_t max_bytes)
        : src(gpu.dev, max_bytes / 2),
          dst(gpu.dev, max_bytes / 2),
          A(gpu.dev, size_t(m) * k * 2),
          B(gpu.dev, size_t(k) * n * 2),
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
      add({{"key", "memory_kernel"},
           {"gpus", {dev}},
           {"hbm_bytes", bytes},
           {"time_us", us},
           {"GBps", static_cast<double>(bytes) / us * 1e-3},
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
          if (bf == "kernel")
            op();
          else if (bf == "gemm")
            mg.gemm();
          else if (bf == "busy")
            launch_busy(s.s, mg.gpu.sms, 200000);
          else
            launch_sleep(s.s, 200000);
          CUDA_CHECK(cudaEventRecord(a.e, s.s));
          op();
          CUDA_CHECK(cudaEventRecord(b.e, s.s));
          CUDA_CHECK(cudaStreamSynchronize(s.s));
          if (it >= opt.warmup) t.push_back(elapsed_us(a, b));
        }
        add({{"key", "memory_after"}, {"gpus", {dev}}, {"hbm_bytes", bytes}, {"before", before}, {"time_us", median(t)}, {"samples_us", t}});
      }
  }
};

}  // namespace

OVV_KEYS("memory_kernel", "memory_after");
OVV_BENCH_TESTCASE(kmemory_kernels, "memory_kernels", [](BenchContext& c) { MemoryKernels(c).memory_kernels(); });
OVV_BENCH_TESTCASE(kmemory_after, "memory_after", [](BenchContext& c) { MemoryKernels(c).memory_after(); });

}  // namespace ovv
