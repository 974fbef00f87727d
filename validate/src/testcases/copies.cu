// Copies: pinned and pageable, one way and both ways, walking a host span, several GPUs at once, peer to peer.
#include "testcases/testcase.cuh"

namespace ovv {
namespace {

struct Copies : Testcases {
  using Testcases::Testcases;

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
          // one-way rows; one copy per sample behind two gates timed a few
          // us of start with each small copy).
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
          add({{"key", "bidir_pinned"},
               {"gpus", {dev}},
               {"bytes", bytes},
               {"reps", reps},
               {"h2d_time_us", median(s_h2d)},
               {"d2h_time_us", median(s_d2h)}});
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
            add({{"key", key},
                 {"gpus", {dev}},
                 {"bytes", bytes},
                 {"host_buffer", rotating ? "rotating" : "same"},
                 {"time_us", us},
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
            CUDA_CHECK(cudaMemcpyAsync(h2d ? d[g]->p : h[g]->p, h2d ? h[g]->p : d[g]->p, bytes, h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost,
                                       s[g]->s));
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

  // Every one of n GPUs copying H2D and D2H at once (two streams each): the
  // host's limit on both directions together, beside its one-way aggregates
  // (multi_h2d_pinned, multi_d2h_pinned). Timed from the gate's release until
  // every GPU's both copies are done; each direction's own end by events.
  void multi_bidir_copies() {
    if (!want("multi_bidir_pinned")) return;
    const size_t bytes = opt.quick ? (256u << 20) : (size_t(1) << 30);
    PerGpuCopies up(ngpus, bytes), down(ngpus, bytes);
    for (int n = 1; n <= ngpus; ++n) {
      progress("multi_bidir_pinned x" + std::to_string(n));
      std::vector<double> samples, h2d_us, d2h_us;
      for (int it = 0; it < opt.warmup + opt.samples; ++it) {
        Gate gate;
        std::vector<std::unique_ptr<Event>> start, end_h2d, end_d2h;
        for (int g = 0; g < n; ++g) {
          CUDA_CHECK(cudaSetDevice(g));
          gate.hold(up.stream[g]->s);
          gate.hold(down.stream[g]->s);
          start.push_back(std::make_unique<Event>(g));
          end_h2d.push_back(std::make_unique<Event>(g));
          end_d2h.push_back(std::make_unique<Event>(g));
          CUDA_CHECK(cudaEventRecord(start.back()->e, up.stream[g]->s));
          CUDA_CHECK(cudaMemcpyAsync(up.dev[g]->p, up.host[g]->p, bytes, cudaMemcpyHostToDevice, up.stream[g]->s));
          CUDA_CHECK(cudaEventRecord(end_h2d.back()->e, up.stream[g]->s));
          CUDA_CHECK(cudaMemcpyAsync(down.host[g]->p, down.dev[g]->p, bytes, cudaMemcpyDeviceToHost, down.stream[g]->s));
          CUDA_CHECK(cudaEventRecord(end_d2h.back()->e, down.stream[g]->s));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));  // let every queue fill
        const auto t0 = Clock::now();
        gate.release();
        for (int g = 0; g < n; ++g) {
          CUDA_CHECK(cudaSetDevice(g));
          CUDA_CHECK(cudaStreamSynchronize(up.stream[g]->s));
          CUDA_CHECK(cudaStreamSynchronize(down.stream[g]->s));
        }
        if (it < opt.warmup) continue;
        samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        double last_h2d = 0, last_d2h = 0;  // the slowest GPU's copy of each direction, from its gate
        for (int g = 0; g < n; ++g) {
          last_h2d = std::max(last_h2d, elapsed_us(*start[g], *end_h2d[g]));
          last_d2h = std::max(last_d2h, elapsed_us(*start[g], *end_d2h[g]));
        }
        h2d_us.push_back(last_h2d);
        d2h_us.push_back(last_d2h);
      }
      const double us = median(samples);
      add({{"key", "multi_bidir_pinned"},
           {"gpus", n},
           {"bytes_per_gpu", bytes},
           {"time_us", us},
           {"h2d_time_us", median(h2d_us)},
           {"d2h_time_us", median(d2h_us)},
           {"aggregate_GBps", 2 * n * bytes / us * 1e-3}});
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

  // Does a copy's rate depend on how much host memory its copies stream
  // through (copy_span)? bidir_pinned (same host buffer every copy): on the
  // H100 H2D kept ~0.92 of its one-way rate both ways at 4-16 MiB and
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
      struct Case {
        const char* dir;
        size_t h2d_span, d2h_span;
      };
      const std::vector<Case> cases = {{"h2d", bytes, 0},      {"h2d", span_max, 0},      {"d2h", 0, bytes},         {"d2h", 0, span_max},
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
};

}  // namespace

OVV_KEYS("h2d_pinned", "d2h_pinned", "h2d_pageable", "d2h_pageable", "bidir_pinned", "h2d_two_streams", "copy_span", "multi_h2d_pinned",
         "multi_d2h_pinned", "multi_bidir_pinned", "multi_h2d_pipelined", "p2p_copy");
OVV_BENCH_TESTCASE(kcopies, "copies", [](BenchContext& c) { Copies(c).copies(); });
OVV_BENCH_TESTCASE(kcopy_span, "copy_span", [](BenchContext& c) { Copies(c).copy_span(); });
OVV_BENCH_TESTCASE(kmulti_gpu_copies, "multi_gpu_copies", [](BenchContext& c) { Copies(c).multi_gpu_copies(); });
OVV_BENCH_TESTCASE(kmulti_bidir_copies, "multi_bidir_copies", [](BenchContext& c) { Copies(c).multi_bidir_copies(); });
OVV_BENCH_TESTCASE(kp2p, "p2p", [](BenchContext& c) { Copies(c).p2p(); });
OVV_BENCH_TESTCASE(kmulti_h2d_pipelined, "multi_h2d_pipelined", [](BenchContext& c) { Copies(c).multi_h2d_pipelined(); });

}  // namespace ovv
