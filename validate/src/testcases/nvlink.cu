// The all-to-all as a Ulysses layer meets it: after GEMMs, with copies beside (NVLink's power states).
#include "testcases/nccl_support.cuh"

namespace ovv {
namespace {

struct Insitu : NcclTestcases {
  using NcclTestcases::NcclTestcases;

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
    auto a = events_per_gpu(n), b = events_per_gpu(n), c0 = events_per_gpu(n), c1 = events_per_gpu(n), g0 = events_per_gpu(n), g1 = events_per_gpu(n);
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
              for (int r = 0; r < n; ++r) copy_gbps.push_back(static_cast<double>(cbytes) * ncopies / (elapsed_us(*c0[r], *c1[r]) * 1e-6) / 1e9);
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
      add({{"key", "nccl_all_to_all_insitu"},
           {"ranks", n},
           {"channels", 0},
           {"bytes", bytes},
           {"gemm", {m, nn, k}},
           {"gemm_us", gemm_us},
           {"warm_time_us", median(warm)},
           {"warm_samples_us", warm},
           {"cases", cases}});
    }
  }
};

}  // namespace

OVV_KEYS("nccl_all_to_all_insitu");
OVV_BENCH_TESTCASE(kcollectives_insitu, "collectives_insitu", [](BenchContext& c) { Insitu(c).collectives_insitu(); });

}  // namespace ovv
