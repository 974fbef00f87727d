// Copies beside collectives: an all-to-all, all-gather, reduce-scatter or
// all-reduce on every GPU (NCCL's defaults) beside pinned H2D or D2H copies on
// GPU 0 or on every GPU, each side alone and both together. Run it under
// NCCL_P2P_DISABLE=1 as well (session.sh copy-collective-p2p-off) for the
// host-memory transport.
#include <cmath>

#include "testcases/pair_timing.cuh"

namespace ovv {
namespace {

struct CopyCollective : PairTestcases {
  using PairTestcases::PairTestcases;

  // A copy side is `count` copies of `chunk` bytes back to back per GPU;
  // no chunk is larger than this (the buffers' size).
  static constexpr size_t kMaxChunk = size_t(256) << 20;
  // The collective side's bytes per rank at least: small collectives run
  // several times back to back so the pair spans more than launch gaps.
  static constexpr size_t kMinSpanBytes = size_t(256) << 20;
  static constexpr int kMaxReps = 16;

  void run() {
    if (!want("copy_collective") || ngpus < 2) return;
    const int n = ngpus;
    size_t max_bytes = 0;
    for (const int mib : opt.copy_collective_mib) max_bytes = std::max(max_bytes, size_t(mib) << 20);
    Comms cm(n, 0);  // NCCL's default channels
    std::vector<std::unique_ptr<DevBuf>> send, recv;
    std::vector<std::unique_ptr<Stream>> st;
    std::vector<cudaStream_t> coll_streams;
    for (int r = 0; r < n; ++r) {
      send.push_back(std::make_unique<DevBuf>(r, max_bytes));
      recv.push_back(std::make_unique<DevBuf>(r, max_bytes));
      st.push_back(std::make_unique<Stream>(r));
      coll_streams.push_back(st.back()->s);
    }
    PerGpuCopies buf(n, kMaxChunk);
    // The copy side: `count` copies of `chunk` on GPU 0, or on every GPU.
    auto copy_side = [&](bool h2d, bool every, size_t chunk, int count) {
      std::vector<cudaStream_t> streams;
      for (int g = 0; g < (every ? n : 1); ++g) streams.push_back(buf.stream[static_cast<size_t>(g)]->s);
      return Side{h2d ? "h2d" : "d2h", streams, [&buf, h2d, chunk, count, gpus = static_cast<int>(streams.size())] {
                    for (int g = 0; g < gpus; ++g) {
                      CUDA_CHECK(cudaSetDevice(g));
                      const auto u = static_cast<size_t>(g);
                      for (int k = 0; k < count; ++k)
                        if (h2d)
                          CUDA_CHECK(cudaMemcpyAsync(buf.dev[u]->p, buf.host[u]->p, chunk, cudaMemcpyHostToDevice, buf.stream[u]->s));
                        else
                          CUDA_CHECK(cudaMemcpyAsync(buf.host[u]->p, buf.dev[u]->p, chunk, cudaMemcpyDeviceToHost, buf.stream[u]->s));
                    }
                    CUDA_CHECK(cudaSetDevice(0));
                  }};
    };
    // Each copy side's time alone for one chunk of kMaxChunk: GPU 0's rate,
    // which sizes the copies beside each collective.
    double probe_us[2][2] = {};
    for (const bool h2d : {true, false})
      for (const bool every : {false, true}) {
        const Side probe = copy_side(h2d, every, kMaxChunk, 1);
        warm(probe, n);
        progress(std::string("copy_collective probe ") + probe.name + (every ? " every GPU" : " GPU 0"));
        probe_us[h2d][every] = run_pair(probe, nullptr, n).first;
      }
    for (const Coll c : {Coll::AllToAll, Coll::AllGather, Coll::ReduceScatter, Coll::AllReduce})
      for (const int mib : opt.copy_collective_mib) {
        const size_t bytes = size_t(mib) << 20;
        const int reps = static_cast<int>(std::clamp<size_t>(kMinSpanBytes / bytes, 1, kMaxReps));
        const Side coll{coll_name(c), coll_streams, [&, c, bytes, reps] {
                          for (int i = 0; i < reps; ++i) enqueue(c, cm, send, recv, st, bytes);
                          CUDA_CHECK(cudaSetDevice(0));
                        }};
        warm(coll, n);
        for (const bool h2d : {true, false})
          for (const bool every : {false, true}) {
            // The collective alone right before each pair: a row's times are
            // taken together, not against one measurement minutes before.
            progress(std::string("copy_collective ") + coll.name + " " + std::to_string(mib) + " MiB alone");
            const double coll_alone = run_pair(coll, nullptr, n).first;
            // Copies that take twice the collective's time alone at the copy's
            // own rate: the copy runs through the whole collective, whose
            // slowdown is then the copy's full effect.
            const double want_bytes = 2.0 * coll_alone * static_cast<double>(kMaxChunk) / probe_us[h2d][every];
            const size_t mib_wanted = static_cast<size_t>(std::ceil(want_bytes / (1 << 20)));
            const size_t chunk = std::clamp<size_t>(mib_wanted, 1, kMaxChunk >> 20) << 20;
            const int count = static_cast<int>(std::ceil(want_bytes / static_cast<double>(chunk)));
            const Side cp = copy_side(h2d, every, chunk, std::max(count, 1));
            warm(cp, n);
            progress(std::string("copy_collective ") + coll.name + " " + std::to_string(mib) + " MiB beside " + cp.name +
                     (every ? " on every GPU" : " on GPU 0"));
            const double copy_alone = run_pair(cp, nullptr, n).first;
            const auto [coll_together, copy_together] = run_pair(coll, &cp, n);
            add({{"key", "copy_collective"},
                 {"collective", coll.name},
                 {"bytes", bytes},
                 {"ranks", n},
                 {"reps", reps},
                 {"copy", cp.name},
                 {"every", every},
                 {"copy_bytes", chunk},
                 {"copy_count", std::max(count, 1)},
                 {"collective_alone_us", coll_alone},
                 {"copy_alone_us", copy_alone},
                 {"collective_together_us", coll_together},
                 {"copy_together_us", copy_together},
                 {"collective_slowdown", coll_together / coll_alone},
                 {"copy_slowdown", copy_together / copy_alone}});
          }
      }
  }
};

}  // namespace

OVV_KEYS("copy_collective");
OVV_BENCH_TESTCASE(kcopy_collective, "copy_collective", [](BenchContext& c) { CopyCollective(c).run(); });

}  // namespace ovv
