// Host overheads: what API calls cost the host, and the GPU time of an event record.
#include "testcases/testcase.cuh"

namespace ovv {
namespace {

struct Overheads : Testcases {
  using Testcases::Testcases;

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
        if (kernel)
          launch_hbm_copy(s.s, dst.p, src.p, bytes, gpu.sms);
        else
          CUDA_CHECK(cudaMemcpyAsync(dst.p, h.p, bytes, cudaMemcpyHostToDevice, s.s));
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
      json row = {{"key", "overhead_gpu_event_gap"},
                  {"op", "memory_kernel"},
                  {"bytes", bytes},
                  {"ops", n},
                  {"beside", beside},
                  {"copy_bytes", big},
                  {"gpus", nb}};
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
};

}  // namespace

OVV_KEYS("overhead_kernel_launch", "overhead_event_record", "overhead_stream_sync_idle", "overhead_memcpy_async_pinned_return",
         "overhead_stream_wait_event", "overhead_gpu_event_gap");
OVV_BENCH_TESTCASE(koverheads, "overheads", [](BenchContext& c) { Overheads(c).overheads(); });
OVV_BENCH_TESTCASE(kgpu_event_gap, "gpu_event_gap", [](BenchContext& c) { Overheads(c).gpu_event_gap(); });

}  // namespace ovv
