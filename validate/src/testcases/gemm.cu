// GEMMs: the bf16 table, burst and under load.
#include "testcases/testcase.cuh"

namespace ovv {
namespace {

struct Gemms : Testcases {
  using Testcases::Testcases;

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
      add({{"key", "gemm_bf16"},
           {"gpus", {dev}},
           {"m", sh.m},
           {"n", sh.n},
           {"k", sh.k},
           {"chunks", sh.chunks},
           {"time_us", us / sh.chunks},
           {"TFLOPs", flops / us * 1e-6},
           {"burst_time_us", burst_us / sh.chunks},
           {"burst_TFLOPs", flops / burst_us * 1e-6},
           {"loaded_mean_us", window_us / sh.chunks},
           {"soak_calls", soak_calls},
           {"window_calls", window_calls}});
    }
  }
};

}  // namespace

OVV_KEYS("gemm_bf16");
OVV_BENCH_TESTCASE(kgemms, "gemms", [](BenchContext& c) { Gemms(c).gemms(); });

}  // namespace ovv
