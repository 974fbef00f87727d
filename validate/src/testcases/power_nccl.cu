// Sustained load with NCCL on two GPUs: the all-to-all with the clock down,
// GEMMs between all-to-alls, and the ranks apart at a barrier (power.cu:
// the same family on one GPU).
#include "testcases/nccl_support.cuh"

namespace ovv {
namespace {

struct PowerNccl : NcclTestcases {
  using NcclTestcases::NcclTestcases;

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
          if (awake)
            (load ? awake_loaded : awake_rested).push_back(worst);
          else
            (load ? loaded : mode == 1 ? warm : mode == 0 ? rested : idle[static_cast<size_t>(mode - 3)]).push_back(worst);
          if (load) (awake ? awake_gemm_ratio : gemm_ratio).push_back(gemm_worst / gemm_rested_us);
        }
      add({{"key", "nccl_all_to_all_loaded"},
           {"ranks", n},
           {"channels", 0},
           {"bytes", bytes},
           {"iters", iters},
           {"time_us", median(loaded)},
           {"rested_time_us", median(rested)},
           {"ratio", median(loaded) / median(rested)},
           {"gemm", {m, nn, k}},
           {"gemm_rested_us", gemm_rested_us},
           {"load_ms", load_gemms * gemm_rested_us * 1e-3},
           {"gemm_ratio", median(gemm_ratio)},
           {"samples_us", loaded},
           {"rested_samples_us", rested},
           {"warm_time_us", median(warm)},
           {"warm_samples_us", warm},
           {"awake_rested_time_us", median(awake_rested)},
           {"awake_time_us", median(awake_loaded)},
           {"awake_ratio", median(awake_loaded) / median(awake_rested)},
           {"awake_gemm_ratio", median(awake_gemm_ratio)},
           {"awake_samples_us", awake_loaded},
           {"awake_rested_samples_us", awake_rested},
           {"idle_sweep", [&] {
              json sweep = json::array();
              for (size_t i = 0; i < idle.size(); ++i)
                sweep.push_back({{"idle_ms", idles_ms[i]}, {"time_us", median(idle[i])}, {"samples_us", idle[i]}});
              return sweep;
            }()}});
    }
  }

  // GEMMs between all-to-alls on both GPUs for ~1.5 s after 300 ms idle: the
  // load NCCL's kernels (SM code moving bytes over NVLink, or spinning for
  // the peer) put on the clock, which decides whether a Ulysses layer's
  // all-to-all lets the GPU cool as an idle gap would. Each cycle on every
  // rank: two GEMMs, then one all-to-all, each timed by events on every
  // rank (the slower rank's times). Then, after 1 s idle, the GEMMs alone
  // for as long: the box's own full-duty slowdown, which the fit scales by.
  void gemm_between_all_to_all() {
    if (ngpus < 2 || !want("gemm_between_all_to_all")) return;
    progress("gemm_between_all_to_all");
    const size_t bytes = opt.quick ? (size_t(16) << 20) : (size_t(128) << 20);
    A2aRig rig(*this, bytes);
    const int n = A2aRig::n;
    auto slowest = [&](const std::vector<std::unique_ptr<Event>>& a, const std::vector<std::unique_ptr<Event>>& b) {
      double t = 0;
      for (int r = 0; r < n; ++r) t = std::max(t, elapsed_us(*a[r], *b[r]));
      return t;
    };
    auto record = [&](std::vector<std::unique_ptr<Event>>& ev) {
      for (int r = 0; r < n; ++r) {
        CUDA_CHECK(cudaSetDevice(r));
        CUDA_CHECK(cudaEventRecord(ev[r]->e, rig.st[r]->s));
      }
    };
    // Burst times after 300 ms idle: one GEMM on every rank, then (lined up) one all-to-all.
    auto a = events_per_gpu(n), b = events_per_gpu(n);
    rig.sync();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    record(a);
    for (int r = 0; r < n; ++r) rig.gemm(r);
    record(b);
    rig.sync();
    const double gemm_burst_us = slowest(a, b);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    rig.line_up();
    record(a);
    rig.a2a(bytes);
    record(b);
    rig.sync();
    const double comm_burst_us = slowest(a, b);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const double window_us = opt.quick ? 0.2e6 : 1.5e6;
    const int cycles = std::max(2, static_cast<int>(window_us / (2 * gemm_burst_us + comm_burst_us)));
    std::vector<std::vector<std::unique_ptr<Event>>> ea, eb, ec;
    for (int i = 0; i < cycles; ++i) {
      ea.push_back(events_per_gpu(n));
      eb.push_back(events_per_gpu(n));
      ec.push_back(events_per_gpu(n));
    }
    for (int i = 0; i < cycles; ++i) {
      record(ea[i]);
      for (int r = 0; r < n; ++r) rig.gemm(r);
      for (int r = 0; r < n; ++r) rig.gemm(r);
      record(eb[i]);
      rig.a2a(bytes);
      record(ec[i]);
    }
    rig.sync();
    std::vector<double> gemm_us, comm_us, start_ms;
    for (int i = 0; i < cycles; ++i) {
      gemm_us.push_back(slowest(ea[i], eb[i]) / 2);
      comm_us.push_back(slowest(eb[i], ec[i]));
      start_ms.push_back(elapsed_us(*ea[0][0], *ea[i][0]) * 1e-3);
    }
    // The GEMMs alone on every rank, back to back for the same time.
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    const int alone = static_cast<int>(cycles * (2 * gemm_burst_us + comm_burst_us) / gemm_burst_us);
    std::vector<std::vector<std::unique_ptr<Event>>> ev;
    for (int i = 0; i <= alone; ++i) ev.push_back(events_per_gpu(n));
    for (int i = 0; i < alone; ++i) {
      record(ev[i]);
      for (int r = 0; r < n; ++r) rig.gemm(r);
    }
    record(ev[alone]);
    rig.sync();
    std::vector<double> alone_us;
    for (int i = 0; i < alone; ++i) alone_us.push_back(slowest(ev[i], ev[i + 1]));
    const double gemm_steady = tail_median(gemm_us), comm_steady = tail_median(comm_us), alone_steady = tail_median(alone_us);
    add({{"key", "gemm_between_all_to_all"},
         {"ranks", n},
         {"bytes", bytes},
         {"m", A2aRig::m},
         {"n", A2aRig::nn},
         {"k", A2aRig::k},
         {"gemms_per_cycle", 2},
         {"burst_time_us", gemm_burst_us},
         {"comm_burst_time_us", comm_burst_us},
         {"steady_time_us", gemm_steady},
         {"comm_steady_time_us", comm_steady},
         {"slowdown", gemm_steady / gemm_burst_us},
         {"comm_slowdown", comm_steady / comm_burst_us},
         {"alone_steady_time_us", alone_steady},
         {"alone_slowdown", alone_steady / gemm_burst_us},
         {"time_us", gemm_us},
         {"comm_time_us", comm_us},
         {"start_ms", start_ms},
         {"alone_time_us", alone_us}});
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
        add({{"key", "nccl_barrier_skew"},
             {"ranks", n},
             {"mode", loaded ? "loaded" : "rested"},
             {"segment_ms", segment_ms},
             {"gemms", gemms},
             {"gemm_us", gemm_us},
             {"mean_skew_us", mean},
             {"median_skew_us", median(skew)},
             {"samples_us", skew}});
      }
  }
};

}  // namespace

OVV_KEYS("gemm_between_all_to_all", "nccl_all_to_all_loaded", "nccl_barrier_skew");
OVV_BENCH_TESTCASE(kgemm_between_all_to_all, "gemm_between_all_to_all", [](BenchContext& c) { PowerNccl(c).gemm_between_all_to_all(); });
OVV_BENCH_TESTCASE(kcollectives_loaded, "collectives_loaded", [](BenchContext& c) { PowerNccl(c).collectives_loaded(); });
OVV_BENCH_TESTCASE(kbarrier_skew, "barrier_skew", [](BenchContext& c) { PowerNccl(c).barrier_skew(); });

}  // namespace ovv
