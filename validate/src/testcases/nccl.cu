// NCCL collectives by ranks, channels and size, timed gated (nccl-tests' algbw and busbw).
#include "testcases/nccl_support.cuh"

namespace ovv {
namespace {

struct Collectives : NcclTestcases {
  using NcclTestcases::NcclTestcases;

  void collectives() {
    if (ngpus < 2) return;
    const size_t max_bytes = opt.quick ? (64u << 20) : (size_t(1) << 30);
    std::vector<int> rank_counts;
    for (int n : opt.ranks)
      if (n >= 2 && n <= ngpus) rank_counts.push_back(n);
    if (opt.ranks.empty()) {
      rank_counts.push_back(2);
      if (ngpus > 2) rank_counts.push_back(ngpus);
    }
    std::vector<int> channel_counts = opt.quick ? std::vector<int>{0} : opt.channels;
    for (int n : rank_counts)
      for (int ch : channel_counts) {
        Comms cm(n, ch);
        std::vector<std::unique_ptr<DevBuf>> send, recv;
        std::vector<std::unique_ptr<Stream>> st;
        for (int r = 0; r < n; ++r) {
          send.push_back(std::make_unique<DevBuf>(r, max_bytes));
          recv.push_back(std::make_unique<DevBuf>(r, max_bytes));
          st.push_back(std::make_unique<Stream>(r));
        }
        for (Coll c : {Coll::AllToAll, Coll::AllGather, Coll::ReduceScatter, Coll::AllReduce, Coll::Pairwise}) {
          const std::string key = std::string("nccl_") + coll_name(c);
          if (!want(key)) continue;
          if (ch != 0 && c != Coll::AllToAll && c != Coll::AllReduce && !opt.all_collectives_at_all_channels) continue;
          const size_t step = opt.size_step != 4 ? static_cast<size_t>(opt.size_step) : (ch == 0 ? 4 : 16);
          for (size_t bytes = 1024; bytes <= max_bytes; bytes *= step) {
            if (bytes % (2 * n * n)) continue;
            const int iters = bytes < (1u << 20) ? 20 : bytes < (64u << 20) ? 5 : 2;
            // Small sizes are cheap and launch-latency noisy: three times the samples.
            const int nsamples = bytes < (4u << 20) ? 3 * opt.samples : opt.samples;
            const CollTiming timing = time_coll(c, cm, send, recv, st, bytes, iters, nsamples);
            const std::vector<double>& samples = timing.samples;
            const double us = median(samples);
            const double algbw = bytes / us * 1e-3;
            add({{"key", key},
                 {"ranks", n},
                 {"channels", ch},
                 {"bytes", bytes},
                 {"time_us", us},
                 {"algbw_GBps", algbw},
                 {"busbw_GBps", algbw * busbw_factor(c, n)},
                 {"iters", iters},
                 {"gated", timing.gated},
                 {"samples_us", samples}});
          }
        }
        // The all-to-all per gated burst (nccl_reps): the table above times
        // 20 back-to-back collectives per sample below 1 MiB, 5 below 64 MiB,
        // 2 above, where a workload runs one between kernels; a single one
        // timed alike in situ took ~5 us over the table at 4 MiB. Each size
        // at 1, 2, 5 and 20 per burst: a one-off cost per burst, and how much
        // of it the table's rows carry.
        if (ch == 0 && want("nccl_reps"))
          for (const size_t bytes : {size_t{256} << 10, size_t{1} << 20, size_t{4} << 20, size_t{16} << 20})
            for (const int iters : {1, 2, 5, 20}) {
              if (bytes % (2 * n * n) || bytes > max_bytes) continue;
              const CollTiming timing = time_coll(Coll::AllToAll, cm, send, recv, st, bytes, iters, 3 * opt.samples);
              add({{"key", "nccl_reps"},
                   {"ranks", n},
                   {"channels", ch},
                   {"bytes", bytes},
                   {"iters", iters},
                   {"time_us", median(timing.samples)},
                   {"gated", timing.gated},
                   {"samples_us", timing.samples}});
            }
      }
  }
};

}  // namespace

OVV_KEYS("nccl_all_to_all", "nccl_all_to_all_pairwise", "nccl_all_gather", "nccl_reduce_scatter", "nccl_all_reduce", "nccl_reps");
OVV_BENCH_TESTCASE(kcollectives, "collectives", [](BenchContext& c) { Collectives(c).collectives(); });

}  // namespace ovv
