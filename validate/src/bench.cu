// overlapsim-validate bench: microbenchmarks in the manner of nvbandwidth and
// nccl-tests (STYLE.md): one testcase per stable key (testcases/), medians of
// several samples after warm-ups, JSON out with the environment, a watchdog
// on every testcase.
#include <algorithm>
#include <fstream>

#include "testcases/testcase.cuh"

namespace ovv {

std::vector<BenchTestcase>& bench_testcases() {
  static std::vector<BenchTestcase> t;
  return t;
}

namespace {
std::vector<BenchTestcase> testcases_in_order() {
  std::vector<BenchTestcase> order = bench_testcases();
  std::sort(order.begin(), order.end(), [](const BenchTestcase& a, const BenchTestcase& b) { return a.order < b.order; });
  return order;
}
}  // namespace

std::vector<std::string> testcase_order() {
  std::vector<std::string> names;
  for (const BenchTestcase& t : testcases_in_order()) names.push_back(t.name);
  return names;
}

struct Runner::Impl : BenchContext {};

Runner::Runner(Options o) : impl_(std::make_unique<Impl>()) { impl_->opt = std::move(o); }
Runner::~Runner() = default;

int Runner::gpu_count() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return -1;
  return n;
}

nlohmann::ordered_json Runner::run() {
  Impl& I = *impl_;
  I.ngpus = gpu_count();
  if (I.ngpus <= 0) throw GpuError("no CUDA GPU found: run overlapsim-validate bench on a machine with NVIDIA GPUs");
  if (I.opt.max_gpus > 0) I.ngpus = std::min(I.ngpus, I.opt.max_gpus);
  // Watchdog: a hung collective ends with a message, not a hang.
  std::atomic<bool> done{false};
  I.progress("start");
  std::thread dog([&] {
    while (!done) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(Clock::now().time_since_epoch()).count();
      if (now - I.last_progress > I.opt.watchdog_s) {
        std::lock_guard<std::mutex> lock(I.mu);
        std::cerr << "overlapsim-validate: watchdog: '" << I.current << "' made no progress for " << I.opt.watchdog_s
                  << " s; aborting (raise --watchdog if this machine is slow)" << std::endl;
        if (!I.opt.partial_out.empty()) {
          std::ofstream f(I.opt.partial_out);
          f << json{{"schema", "overlapsim.bench/v1"}, {"partial", true}, {"aborted_at", I.current}, {"results", I.results}}.dump(1) << "\n";
        }
        std::_Exit(4);
      }
    }
  });
  struct Join {
    std::atomic<bool>& d;
    std::thread& t;
    ~Join() {
      d = true;
      t.join();
    }
  } join{done, dog};
  // Load every helper kernel on every GPU before anything is gated: with
  // CUDA's lazy module loading, a kernel's first launch loads it, which waits
  // for the device — forever, behind a gate's spin kernel (this hung
  // multi_h2d_pipelined, whose sleep kernel first ran on GPU 1 behind a gate).
  for (int g = 0; g < I.ngpus; ++g) {
    CUDA_CHECK(cudaSetDevice(g));
    prime_kernels(g);
  }
  CUDA_CHECK(cudaSetDevice(0));
  for (const BenchTestcase& t : testcases_in_order()) t.run(I);
  return I.results;
}

}  // namespace ovv
