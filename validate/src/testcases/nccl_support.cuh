// The NCCL testcases' base: communicators, the collectives as nccl-tests
// size them, gated timing, and the two-rank all-to-all rig the in-situ,
// loaded and skew testcases share.
#pragma once

#include "testcases/testcase.cuh"

namespace ovv {

class NcclTestcases : public Testcases {
 public:
  using Testcases::Testcases;

 protected:
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
  CollTiming time_coll(Coll c, Comms& cm, std::vector<std::unique_ptr<DevBuf>>& send, std::vector<std::unique_ptr<DevBuf>>& recv,
                       std::vector<std::unique_ptr<Stream>>& st, size_t bytes, int iters, int samples_wanted) {
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

  // ------------------------------------------------------------ collectives under load
  // Two ranks set up for an all-to-all beside GEMMs (the loaded and in-situ
  // testcases): communicators, send/receive buffers of `max_bytes`, one
  // 8192x5120x5120 GEMM's random operands, a stream and cuBLAS per rank;
  // every kernel and connection loaded once (lazy loading would wait behind
  // a running GEMM loop).
  struct A2aRig {
    static constexpr int n = 2, m = 8192, nn = 5120, k = 5120;
    NcclTestcases& b;
    Comms cm;
    std::vector<std::unique_ptr<DevBuf>> send, recv, ga, gb, gc, one;
    std::vector<std::unique_ptr<Stream>> st;
    std::vector<std::unique_ptr<Blas>> blas;
    std::vector<int> sms = std::vector<int>(n);
    A2aRig(NcclTestcases& bench, size_t max_bytes) : b(bench), cm(n, 0) {
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
};

}  // namespace ovv
