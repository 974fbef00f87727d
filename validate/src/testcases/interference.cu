// Interference: a GEMM (on GPU 0, or on every GPU) beside an all-to-all or a copy, an all-to-all beside copies.
#include "testcases/pair_timing.cuh"

namespace ovv {
namespace {

struct Interference : PairTestcases {
  using PairTestcases::PairTestcases;

  // Runs A alone, B alone, then both at once (released by one gate); reports
  // each one's time in each case.
  void interference() {
    if (!want("interference")) return;
    const int dev = 0;
    const int n = std::min(ngpus, 4);
    CUDA_CHECK(cudaSetDevice(dev));
    const int m = 18900, nn = 5120, k = 5120;  // a Wan QKV/out-sized GEMM at 720p / U=4
    DevBuf A(dev, size_t(m) * k * 2), B(dev, size_t(k) * nn * 2), C(dev, size_t(m) * nn * 2);
    fill_random(A.p, size_t(m) * k * 2);
    fill_random(B.p, size_t(k) * nn * 2);
    const size_t h2d_bytes = size_t(1) << 30;
    DevBuf d(dev, h2d_bytes);
    PinnedBuf h(h2d_bytes);
    const size_t a2a_bytes = 256u << 20;
    Stream gemm_s(dev), copy_s(dev);
    const Blas blas(gemm_s.s);
    const int gemm_reps = 20;
    auto gemm = [&] {
      for (int i = 0; i < gemm_reps; ++i) blas.gemm(m, nn, k, A.p, B.p, C.p);
    };
    auto h2d = [&] { CUDA_CHECK(cudaMemcpyAsync(d.p, h.p, h2d_bytes, cudaMemcpyHostToDevice, copy_s.s)); };
    auto d2h = [&] { CUDA_CHECK(cudaMemcpyAsync(h.p, d.p, h2d_bytes, cudaMemcpyDeviceToHost, copy_s.s)); };

    auto run_pair = [&](const Side& x, const Side* y) { return PairTestcases::run_pair(x, y, n); };

    std::unique_ptr<Comms> cm;
    std::vector<std::unique_ptr<DevBuf>> send, recv;
    std::vector<std::unique_ptr<Stream>> st;
    const Side g{"gemm", {gemm_s.s}, gemm};
    const Side c_h2d{"h2d", {copy_s.s}, h2d};
    const Side c_d2h{"d2h", {copy_s.s}, d2h};
    // Warm up ungated (see time_stream_us).
    gemm();
    h2d();
    CUDA_CHECK(cudaDeviceSynchronize());
    progress("interference gemm/h2d");
    auto report = [&](const std::string& a, const std::string& b, int ch, std::pair<double, double> alone_ab, std::pair<double, double> both) {
      add({{"key", "interference"},
           {"a", a},
           {"b", b},
           {"channels", ch},
           {"a_alone_us", alone_ab.first},
           {"b_alone_us", alone_ab.second},
           {"a_together_us", both.first},
           {"b_together_us", both.second},
           {"a_slowdown", both.first / alone_ab.first},
           {"b_slowdown", both.second / alone_ab.second}});
    };
    {
      const double ga = run_pair(g, nullptr).first, ha = run_pair(c_h2d, nullptr).first;
      report("gemm", "h2d", 0, {ga, ha}, run_pair(g, &c_h2d));
    }
    if (n >= 2) {
      for (int ch : opt.interference_channels) {
        cm = std::make_unique<Comms>(n, ch);
        send.clear();
        recv.clear();
        st.clear();
        std::vector<cudaStream_t> streams;
        for (int r = 0; r < n; ++r) {
          send.push_back(std::make_unique<DevBuf>(r, a2a_bytes));
          recv.push_back(std::make_unique<DevBuf>(r, a2a_bytes));
          st.push_back(std::make_unique<Stream>(r));
          streams.push_back(st.back()->s);
        }
        const Side a2a{"a2a", streams, [&] {
                         for (int i = 0; i < 4; ++i) enqueue(Coll::AllToAll, *cm, send, recv, st, a2a_bytes);
                       }};
        a2a.enqueue();
        for (int r = 0; r < n; ++r) {
          CUDA_CHECK(cudaSetDevice(r));
          CUDA_CHECK(cudaDeviceSynchronize());
        }
        progress("interference gemm/a2a ch=" + std::to_string(ch));
        const double ga = run_pair(g, nullptr).first, aa = run_pair(a2a, nullptr).first;
        report("gemm", "all_to_all", ch, {ga, aa}, run_pair(g, &a2a));
        if (ch == opt.interference_channels.front()) {
          // The same GEMM on every rank's GPU at once (a Ulysses group whose
          // ranks all compute beside the exchange): the all-to-all meets busy
          // SMs at both ends of every flow. Times are GPU 0's.
          {
            std::vector<std::unique_ptr<DevBuf>> ga, gb, gc;
            std::vector<std::unique_ptr<Stream>> gs;
            std::vector<std::unique_ptr<Blas>> gblas;
            std::vector<cudaStream_t> gstreams;
            for (int r = 0; r < n; ++r) {
              CUDA_CHECK(cudaSetDevice(r));
              ga.push_back(std::make_unique<DevBuf>(r, size_t(m) * k * 2));
              gb.push_back(std::make_unique<DevBuf>(r, size_t(k) * nn * 2));
              gc.push_back(std::make_unique<DevBuf>(r, size_t(m) * nn * 2));
              fill_random(ga.back()->p, size_t(m) * k * 2);
              fill_random(gb.back()->p, size_t(k) * nn * 2);
              gs.push_back(std::make_unique<Stream>(r));
              gblas.push_back(std::make_unique<Blas>(gs.back()->s));
              gstreams.push_back(gs.back()->s);
            }
            const Side g_all{"gemm_all", gstreams, [&] {
                               for (int i = 0; i < gemm_reps; ++i)
                                 for (int r = 0; r < n; ++r) {
                                   CUDA_CHECK(cudaSetDevice(r));
                                   gblas[static_cast<size_t>(r)]->gemm(m, nn, k, ga[static_cast<size_t>(r)]->p, gb[static_cast<size_t>(r)]->p,
                                                                       gc[static_cast<size_t>(r)]->p);
                                 }
                               CUDA_CHECK(cudaSetDevice(0));
                             }};
            progress("interference gemm_all/a2a ch=" + std::to_string(ch));
            g_all.enqueue();
            for (int r = 0; r < n; ++r) {
              CUDA_CHECK(cudaSetDevice(r));
              CUDA_CHECK(cudaDeviceSynchronize());
            }
            CUDA_CHECK(cudaSetDevice(0));
            const double gall = run_pair(g_all, nullptr).first;
            report("gemm_all", "all_to_all", ch, {gall, aa}, run_pair(g_all, &a2a));
          }
          progress("interference a2a/h2d");
          const double ha = run_pair(c_h2d, nullptr).first, da = run_pair(c_d2h, nullptr).first;
          report("all_to_all", "h2d", ch, {aa, ha}, run_pair(a2a, &c_h2d));
          report("all_to_all", "d2h", ch, {aa, da}, run_pair(a2a, &c_d2h));
          // Every rank's GPU copying 1 GiB at once beside the all-to-all (a
          // prefetching SP group): with NCCL_P2P_DISABLE=1 both move through
          // the host side together. Times are GPU 0's.
          PerGpuCopies all(n, h2d_bytes);
          std::vector<cudaStream_t> cs;
          for (int g = 0; g < n; ++g) cs.push_back(all.stream[g]->s);
          for (const bool up : {false, true}) {
            const Side c_all{up ? "d2h_all" : "h2d_all", cs, [&, up] {
                               for (int g = 0; g < n; ++g) {
                                 CUDA_CHECK(cudaSetDevice(g));
                                 if (up)
                                   CUDA_CHECK(cudaMemcpyAsync(all.host[g]->p, all.dev[g]->p, h2d_bytes, cudaMemcpyDeviceToHost, all.stream[g]->s));
                                 else
                                   CUDA_CHECK(cudaMemcpyAsync(all.dev[g]->p, all.host[g]->p, h2d_bytes, cudaMemcpyHostToDevice, all.stream[g]->s));
                               }
                               CUDA_CHECK(cudaSetDevice(0));
                             }};
            progress(std::string("interference a2a/") + c_all.name);
            c_all.enqueue();
            for (int g = 0; g < n; ++g) {
              CUDA_CHECK(cudaSetDevice(g));
              CUDA_CHECK(cudaDeviceSynchronize());
            }
            const double alone = run_pair(c_all, nullptr).first;
            report("all_to_all", c_all.name, ch, {aa, alone}, run_pair(a2a, &c_all));
          }
        }
        send.clear();
        recv.clear();
        st.clear();
        cm.reset();
      }
    }
  }
};

}  // namespace

OVV_KEYS("interference");
OVV_BENCH_TESTCASE(kinterference, "interference", [](BenchContext& c) { Interference(c).interference(); });

}  // namespace ovv
