// Sustained load on one GPU: the clock with the duty cycle, beside attention and
// memory-bound kernels, by GEMM shape, and after a gap (power_nccl.cu: the same
// family with NCCL on two GPUs).
#include "attention_cudnn.hpp"
#include "testcases/nccl_support.cuh"

namespace ovv {
namespace {

struct Power : NcclTestcases {
  using NcclTestcases::NcclTestcases;

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
      add({{"key", "gemm_sustained_long"},
           {"gpus", {dev}},
           {"m", m},
           {"n", n},
           {"k", k},
           {"duty", 1.0},
           {"burst_time_us", burst_us},
           {"steady_time_us", median(tail)},
           {"mean_time_us", std::accumulate(tail.begin(), tail.end(), 0.0) / static_cast<double>(tail.size())},
           {"time_us", r.us},
           {"start_ms", r.start_ms}});
    }
    if (!base) return;
    for (double duty : {1.0, 0.75, 0.5, 0.25}) {
      progress("gemm_sustained duty " + std::to_string(duty));
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      const Series r = series(duty, 600e3, nullptr);
      const std::vector<double> tail(r.us.begin() + static_cast<long>(r.us.size() / 2), r.us.end());
      add({{"key", "gemm_sustained"},
           {"gpus", {dev}},
           {"m", m},
           {"n", n},
           {"k", k},
           {"duty", duty},
           {"burst_time_us", burst_us},
           {"steady_time_us", median(tail)},
           {"slowdown", median(tail) / burst_us},
           {"time_us", r.us},
           {"start_ms", r.start_ms}});
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
              for (int i = 0; i < copies; ++i) CUDA_CHECK(cudaMemcpyAsync(cd[g]->p, ch[g]->p, cbytes, cudaMemcpyHostToDevice, cs[g]->s));
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
          add({{"key", "gemm_sustained_copy"},
               {"gpus", {dev}},
               {"m", m},
               {"n", n},
               {"k", k},
               {"duty", duty},
               {"copy", copy},
               {"copy_gpus", copy_gpus},
               {"copy_GBps", copy_GBps},
               {"copy_start_ms", copy_start_ms},
               {"copy_end_ms", copy_end_ms},
               {"burst_time_us", burst_us},
               {"steady_time_us", median(tail)},
               {"slowdown", median(tail) / burst_us},
               {"time_us", r.us},
               {"start_ms", r.start_ms}});
        }
      }
    }
  }

  // Two GEMMs then `other`, in turn on stream `s` for `window_us` after
  // 300 ms idle; first each one's burst time, rested. Per cycle: the GEMMs'
  // mean and `other`, timed by events, and when the cycle started.
  struct Between {
    double gemm_burst_us = 0, other_burst_us = 0;
    std::vector<double> gemm_us, other_us, start_ms;
  };
  Between gemms_between(int dev, cudaStream_t s, double window_us, const std::function<void()>& gemm, const std::function<void()>& other) {
    gemm();
    other();
    CUDA_CHECK(cudaStreamSynchronize(s));
    Between r;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    r.gemm_burst_us = time_stream_us(dev, s, 1, gemm);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    r.other_burst_us = time_stream_us(dev, s, 1, other);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const int cycles = static_cast<int>(window_us / (2 * r.gemm_burst_us + r.other_burst_us));
    std::vector<std::unique_ptr<Event>> a, b, c;
    for (int i = 0; i < cycles; ++i) {
      a.push_back(std::make_unique<Event>(dev));
      b.push_back(std::make_unique<Event>(dev));
      c.push_back(std::make_unique<Event>(dev));
    }
    CUDA_CHECK(cudaSetDevice(dev));
    for (int i = 0; i < cycles; ++i) {
      CUDA_CHECK(cudaEventRecord(a[i]->e, s));
      gemm();
      gemm();
      CUDA_CHECK(cudaEventRecord(b[i]->e, s));
      other();
      CUDA_CHECK(cudaEventRecord(c[i]->e, s));
    }
    CUDA_CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < cycles; ++i) {
      r.gemm_us.push_back(elapsed_us(*a[i], *b[i]) / 2);
      r.other_us.push_back(elapsed_us(*b[i], *c[i]));
      r.start_ms.push_back(elapsed_us(*a[0], *a[i]) * 1e-3);
    }
    return r;
  }
  // `count` calls of `op` back to back on stream `s`, each timed by events.
  static std::vector<double> back_to_back(int dev, cudaStream_t s, int count, const std::function<void()>& op) {
    std::vector<std::unique_ptr<Event>> ev;
    for (int i = 0; i <= count; ++i) ev.push_back(std::make_unique<Event>(dev));
    CUDA_CHECK(cudaSetDevice(dev));
    for (int i = 0; i < count; ++i) {
      CUDA_CHECK(cudaEventRecord(ev[i]->e, s));
      op();
    }
    CUDA_CHECK(cudaEventRecord(ev[count]->e, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    std::vector<double> us(count);
    for (int i = 0; i < count; ++i) us[i] = elapsed_us(*ev[i], *ev[i + 1]);
    return us;
  }

  // GEMMs between cuDNN SDPA kernels, back to back for 1.5 s after 0.3 s
  // idle (a DiT block's compute, as a prefetching run keeps it busy): how
  // far the clock falls when the fused attention, which draws less power
  // than a GEMM, takes most of the time. Each cycle: two GEMMs, one SDPA,
  // each pair and each SDPA timed by its own events.
  void gemm_between_attention() {
    if (!want("gemm_between_attention")) return;
    if (!cudnn_sdpa_built()) {
      progress("gemm_between_attention skipped: built without cudnn-frontend");
      return;
    }
    progress("gemm_between_attention");
    const ComputeGpu gpu;
    const int dev = gpu.dev;
    const Stream& s = gpu.s;
    const int m = 16384, n = 5120, k = 5120;
    const SdpaShape shape{1, 20, 16384, 16384, 128, false};
    DevBuf A(dev, size_t(m) * k * 2), B(dev, size_t(k) * n * 2), C(dev, size_t(m) * n * 2);
    DevBuf Q(dev, shape.q_bytes()), KV(dev, 2 * shape.kv_bytes()), O(dev, shape.q_bytes());
    fill_random(A.p, size_t(m) * k * 2);
    fill_random(B.p, size_t(k) * n * 2);
    fill_random(Q.p, shape.q_bytes());
    fill_random(KV.p, 2 * shape.kv_bytes());
    CudnnSdpa sdpa;
    DevBuf W(dev, static_cast<size_t>(std::max<int64_t>(1, sdpa.prepare(shape))));
    auto gemm = [&] { gpu.blas.gemm(m, n, k, A.p, B.p, C.p); };
    auto attention = [&] { sdpa.run(shape, s.s, Q.p, KV.p, static_cast<char*>(KV.p) + shape.kv_bytes(), O.p, W.p); };
    const Between r = gemms_between(dev, s.s, 1.5e6, gemm, attention);
    const double gemm_steady = tail_median(r.gemm_us), sdpa_steady = tail_median(r.other_us);
    add({{"key", "gemm_between_attention"},
         {"gpus", {dev}},
         {"m", m},
         {"n", n},
         {"k", k},
         {"gemms_per_cycle", 2},
         {"attention",
          {{"batch", shape.batch}, {"heads", shape.heads}, {"seq", shape.seq_q}, {"seq_kv", shape.seq_kv}, {"head_dim", shape.head_dim}}},
         {"burst_time_us", r.gemm_burst_us},
         {"attention_burst_time_us", r.other_burst_us},
         {"steady_time_us", gemm_steady},
         {"attention_steady_time_us", sdpa_steady},
         {"slowdown", gemm_steady / r.gemm_burst_us},
         {"attention_slowdown", sdpa_steady / r.other_burst_us},
         {"time_us", r.gemm_us},
         {"attention_time_us", r.other_us},
         {"start_ms", r.start_ms}});
  }

  // The sustained load by GEMM shape: for each of the workloads' GEMM shapes
  // (DiT projections and FFNs at 4,096 and 16,384 tokens, the bench's, a
  // Llama-3-8B MLP's), the GEMM alone back to back for 1.5 s, then, after 1 s
  // idle, two GEMMs and one cuDNN SDPA kernel in turn for 1.5 s (the
  // gemm_between_attention cycle): does a GEMM's shape set how far the clock
  // falls, for itself and for the SDPA beside it? SDPA alone back to back
  // first, for its own slowdown. Rows as gemm_between_attention's, with the
  // GEMMs alone (alone_*) and SDPA alone (attention_alone_*).
  void gemm_sustained_shapes() {
    if (!want("gemm_sustained_shapes")) return;
    if (!cudnn_sdpa_built()) {
      progress("gemm_sustained_shapes skipped: built without cudnn-frontend");
      return;
    }
    const ComputeGpu gpu;
    const int dev = gpu.dev;
    const Stream& s = gpu.s;
    const SdpaShape shape{1, 20, 16384, 16384, 128, false};
    struct Shape {
      int m, n, k;
    };
    const std::vector<Shape> shapes{{4608, 3072, 3072}, {4608, 8192, 3072}, {16896, 8192, 3072}, {16384, 5120, 5120}, {16384, 14336, 4096}};
    size_t a_bytes = 0, b_bytes = 0, c_bytes = 0;
    for (const Shape& g : shapes) {
      a_bytes = std::max(a_bytes, size_t(g.m) * g.k * 2);
      b_bytes = std::max(b_bytes, size_t(g.k) * g.n * 2);
      c_bytes = std::max(c_bytes, size_t(g.m) * g.n * 2);
    }
    DevBuf A(dev, a_bytes), B(dev, b_bytes), C(dev, c_bytes);
    DevBuf Q(dev, shape.q_bytes()), KV(dev, 2 * shape.kv_bytes()), O(dev, shape.q_bytes());
    fill_random(A.p, a_bytes);
    fill_random(B.p, b_bytes);
    fill_random(Q.p, shape.q_bytes());
    fill_random(KV.p, 2 * shape.kv_bytes());
    CudnnSdpa sdpa;
    DevBuf W(dev, static_cast<size_t>(std::max<int64_t>(1, sdpa.prepare(shape))));
    auto attention = [&] { sdpa.run(shape, s.s, Q.p, KV.p, static_cast<char*>(KV.p) + shape.kv_bytes(), O.p, W.p); };
    const double window_us = opt.quick ? 0.2e6 : 1.5e6;
    // `op` rested (after 1 s idle), then back to back for the window after 1 s idle again.
    struct Alone {
      double burst_us;
      std::vector<double> us;
    };
    auto alone = [&](const std::function<void()>& op) {
      op();
      CUDA_CHECK(cudaStreamSynchronize(s.s));
      std::this_thread::sleep_for(std::chrono::milliseconds(1000));
      Alone a{time_stream_us(dev, s.s, 1, op), {}};
      std::this_thread::sleep_for(std::chrono::milliseconds(1000));
      a.us = back_to_back(dev, s.s, static_cast<int>(window_us / a.burst_us), op);
      return a;
    };
    progress("gemm_sustained_shapes: SDPA alone");
    const Alone sdpa_alone = alone(attention);
    const double sdpa_alone_steady = tail_median(sdpa_alone.us);
    for (const Shape& g : shapes) {
      progress("gemm_sustained_shapes " + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k));
      auto gemm = [&] { gpu.blas.gemm(g.m, g.n, g.k, A.p, B.p, C.p); };
      const Alone gemm_alone = alone(gemm);
      std::this_thread::sleep_for(std::chrono::milliseconds(1000));
      const Between r = gemms_between(dev, s.s, window_us, gemm, attention);
      const double gemm_steady = tail_median(r.gemm_us), attention_steady = tail_median(r.other_us), alone_steady = tail_median(gemm_alone.us);
      add({{"key", "gemm_sustained_shapes"},
           {"gpus", {dev}},
           {"m", g.m},
           {"n", g.n},
           {"k", g.k},
           {"gemms_per_cycle", 2},
           {"attention",
            {{"batch", shape.batch}, {"heads", shape.heads}, {"seq", shape.seq_q}, {"seq_kv", shape.seq_kv}, {"head_dim", shape.head_dim}}},
           {"burst_time_us", r.gemm_burst_us},
           {"attention_burst_time_us", r.other_burst_us},
           {"steady_time_us", gemm_steady},
           {"attention_steady_time_us", attention_steady},
           {"slowdown", gemm_steady / r.gemm_burst_us},
           {"attention_slowdown", attention_steady / r.other_burst_us},
           {"alone_burst_time_us", gemm_alone.burst_us},
           {"alone_steady_time_us", alone_steady},
           {"alone_slowdown", alone_steady / gemm_alone.burst_us},
           {"attention_alone_burst_time_us", sdpa_alone.burst_us},
           {"attention_alone_steady_time_us", sdpa_alone_steady},
           {"attention_alone_slowdown", sdpa_alone_steady / sdpa_alone.burst_us},
           {"time_us", r.gemm_us},
           {"attention_time_us", r.other_us},
           {"start_ms", r.start_ms},
           {"alone_time_us", gemm_alone.us},
           {"attention_alone_time_us", sdpa_alone.us}});
    }
  }

  // GEMMs between memory-bound kernels for ~1.5 s after 300 ms idle: how far
  // the clock falls when HBM-bound kernels (a DiT block's norms, activations
  // and residuals) take a share of the time. Each cycle: two GEMMs, one copy
  // kernel of about a GEMM's time, each timed by events. Then, after 1 s
  // idle, the same GEMMs alone for as long: the same box's full-duty
  // slowdown, which the fit scales by (boxes of a kind throttle apart).
  void gemm_between_memory_bound() {
    if (!want("gemm_between_memory_bound")) return;
    progress("gemm_between_memory_bound");
    const ComputeGpu gpu;
    const int dev = gpu.dev;
    const Stream& s = gpu.s;
    const int m = 16384, n = 5120, k = 5120;
    const size_t hbm_bytes = opt.quick ? size_t(256) << 20 : size_t(4) << 30;  // read and written half each
    DevBuf A(dev, size_t(m) * k * 2), B(dev, size_t(k) * n * 2), C(dev, size_t(m) * n * 2);
    DevBuf src(dev, hbm_bytes / 2), dst(dev, hbm_bytes / 2);
    fill_random(A.p, size_t(m) * k * 2);
    fill_random(B.p, size_t(k) * n * 2);
    fill_random(src.p, hbm_bytes / 2);
    auto gemm = [&] { gpu.blas.gemm(m, n, k, A.p, B.p, C.p); };
    auto memory = [&] { launch_hbm_copy(s.s, dst.p, src.p, hbm_bytes, gpu.sms); };
    const Between r = gemms_between(dev, s.s, opt.quick ? 0.2e6 : 1.5e6, gemm, memory);
    const int cycles = static_cast<int>(r.gemm_us.size());
    // The GEMMs alone, back to back, for the same time.
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    const std::vector<double> alone_us =
        back_to_back(dev, s.s, static_cast<int>(cycles * (2 * r.gemm_burst_us + r.other_burst_us) / r.gemm_burst_us), gemm);
    const double gemm_steady = tail_median(r.gemm_us), memory_steady = tail_median(r.other_us), alone_steady = tail_median(alone_us);
    add({{"key", "gemm_between_memory_bound"},
         {"gpus", {dev}},
         {"m", m},
         {"n", n},
         {"k", k},
         {"gemms_per_cycle", 2},
         {"hbm_bytes", hbm_bytes},
         {"burst_time_us", r.gemm_burst_us},
         {"memory_burst_time_us", r.other_burst_us},
         {"steady_time_us", gemm_steady},
         {"memory_steady_time_us", memory_steady},
         {"slowdown", gemm_steady / r.gemm_burst_us},
         {"memory_slowdown", memory_steady / r.other_burst_us},
         {"alone_steady_time_us", alone_steady},
         {"alone_slowdown", alone_steady / r.gemm_burst_us},
         {"time_us", r.gemm_us},
         {"memory_time_us", r.other_us},
         {"start_ms", r.start_ms},
         {"alone_time_us", alone_us}});
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
          add({{"key", "gemm_after_idle"},
               {"gpus", {dev}},
               {"m", sh.m},
               {"n", sh.n},
               {"k", sh.k},
               {"mode", mode},
               {"gap_ms", gap_ms},
               {"idle_ms", idle.empty() ? 0.0 : median(idle)},
               {"warm_time_us", warm_us},
               {"copy_chunk_us", copy_us},
               {"time_us", times},
               {"extra_us", std::accumulate(times.begin(), times.end(), 0.0) - count * warm_us}});
        }
      }
    }
  }
};

}  // namespace

OVV_KEYS("gemm_sustained", "gemm_sustained_long", "gemm_sustained_copy", "gemm_between_attention", "gemm_between_memory_bound",
         "gemm_sustained_shapes", "gemm_after_idle");
OVV_BENCH_TESTCASE(kgemm_sustained, "gemm_sustained", [](BenchContext& c) { Power(c).gemm_sustained(); });
OVV_BENCH_TESTCASE(kgemm_between_attention, "gemm_between_attention", [](BenchContext& c) { Power(c).gemm_between_attention(); });
OVV_BENCH_TESTCASE(kgemm_sustained_shapes, "gemm_sustained_shapes", [](BenchContext& c) { Power(c).gemm_sustained_shapes(); });
OVV_BENCH_TESTCASE(kgemm_between_memory_bound, "gemm_between_memory_bound", [](BenchContext& c) { Power(c).gemm_between_memory_bound(); });
OVV_BENCH_TESTCASE(kgemm_after_idle, "gemm_after_idle", [](BenchContext& c) { Power(c).gemm_after_idle(); });

}  // namespace ovv
