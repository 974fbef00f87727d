// Hand-offs between the copy engines and the SMs: bursts of copies and kernels after one another.
#include "testcases/testcase.cuh"

namespace ovv {
namespace {

struct Handoffs : Testcases {
  using Testcases::Testcases;

  // Pinned copies per gated burst (copy_reps): the one-way and both-ways
  // rows time `reps` copies between two events behind one gate, with reps
  // 20 below 1 MiB, 5 below 64 MiB, 1 above, so a change in the per-copy
  // time at 1 MiB could be the size's or the burst's. Here each size at
  // several reps, per copy, held by the spin kernel (the
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
      if (h2d)
        CUDA_CHECK(cudaMemcpyAsync(d.p, h.p, bytes, cudaMemcpyHostToDevice, s.s));
      else
        CUDA_CHECK(cudaMemcpyAsync(h2.p, d2.p, bytes, cudaMemcpyDeviceToHost, s2.s));
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
                  if (kernel_gate)
                    kg.hold(st);
                  else
                    hg.hold(st);
                  CUDA_CHECK(cudaEventRecord(a.e, st));
                }
                for (int i = 0; i < reps; ++i) copy(k == 0, bytes);
                CUDA_CHECK(cudaEventRecord(k == 0 ? b1.e : b2.e, st));
              }
              if (kernel_gate)
                kg.release();
              else
                hg.release();
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
            add({{"key", "copy_after_idle"},
                 {"gpus", {dev}},
                 {"bytes", bytes},
                 {"reps", reps},
                 {"before", before},
                 {"dir", h2d ? "h2d" : "d2h"},
                 {"time_us", median(t)},
                 {"samples_us", t}});
          }
  }

  // The hand-off against how long the copy waited (handoff_wait): a kernel
  // of `wait_us` on every SM (as `run`'s duration kernels: %globaltimer),
  // then one pinned 256 KiB copy, timed from an event after the kernel to
  // one after the copy; the kernel on the copy's own stream (`same`), or on
  // another with an event the copy stream waits on (`wait`). Everything is
  // issued behind a host-function gate, so the copy is queued before the
  // kernel starts. copy_reps' gate held the copies ~ms and they paid ~6 us;
  // between 20 us kernels (validate/sets/handoff/) the wait through an event cost
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
          add({{"key", "handoff_wait"},
               {"gpus", {dev}},
               {"bytes", bytes},
               {"wait_us", wait_us},
               {"mode", mode},
               {"dir", h2d ? "h2d" : "d2h"},
               {"time_us", median(t)},
               {"samples_us", t}});
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
          if (after == "kernel")
            kg.hold(s.s);
          else
            hg.hold(after == "copy_wait" ? s3.s : s.s);
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
          if (after == "kernel")
            kg.release();
          else
            hg.release();
          CUDA_CHECK(cudaDeviceSynchronize());
          if (it >= opt.warmup) t.push_back(elapsed_us(a, b) / reps);
        }
        add({{"key", "kernel_reps"}, {"gpus", {dev}}, {"bytes", bytes}, {"reps", reps}, {"after", after}, {"time_us", median(t)}, {"samples_us", t}});
      }
  }
};

}  // namespace

OVV_KEYS("copy_reps", "copy_after_idle", "handoff_wait", "kernel_reps");
OVV_BENCH_TESTCASE(kcopy_reps, "copy_reps", [](BenchContext& c) { Handoffs(c).copy_reps(); });
OVV_BENCH_TESTCASE(kcopy_after_idle, "copy_after_idle", [](BenchContext& c) { Handoffs(c).copy_after_idle(); });
OVV_BENCH_TESTCASE(khandoff_wait, "handoff_wait", [](BenchContext& c) { Handoffs(c).handoff_wait(); });
OVV_BENCH_TESTCASE(kkernel_reps, "kernel_reps", [](BenchContext& c) { Handoffs(c).kernel_reps(); });

}  // namespace ovv
