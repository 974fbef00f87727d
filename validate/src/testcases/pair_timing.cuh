// Pair timing, shared by the interference testcases (interference.cu,
// copy_collective.cu): two sides (work on GPU 0, or on every GPU), each held
// by one gate until both are queued, timed alone or together from GPU 0's
// events, medians of the bench's samples.
#pragma once

#include "testcases/nccl_support.cuh"

namespace ovv {

class PairTestcases : public NcclTestcases {
 public:
  using NcclTestcases::NcclTestcases;

 protected:
  // A pair run: each side enqueued on its stream(s) behind a gate; per-side
  // time from the gate's release (event on dev 0) to its own end event.
  struct Side {
    std::string name;
    std::vector<cudaStream_t> streams;  // stream per device used (index = device)
    std::function<void()> enqueue;
  };
  // The medians of x's and y's times (y's 0 without y), on `n` GPUs.
  std::pair<double, double> run_pair(const Side& x, const Side* y, int n) {
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
  }

  // One ungated run of `s`, every GPU waited for: libraries and NCCL
  // connections set themselves up lazily, and a set-up that synchronises
  // would wait forever behind a gate.
  void warm(const Side& s, int n) {
    s.enqueue();
    for (int g = 0; g < n; ++g) {
      CUDA_CHECK(cudaSetDevice(g));
      CUDA_CHECK(cudaDeviceSynchronize());
    }
    CUDA_CHECK(cudaSetDevice(0));
  }
};

}  // namespace ovv
