#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedule/realised_gemm.hpp"

namespace ovv {

struct Options {
  bool quick = false;  // fewer sizes, smaller buffers
  int warmup = 2;
  int samples = 5;   // medians of this many
  int max_gpus = 0;  // 0 = all
  int watchdog_s = 120;
  bool verbose = false;
  std::string filter;       // regex on testcase keys
  std::string partial_out;  // where the watchdog writes the results so far
  // NCCL sweep shape (defaults: channels 0 (NCCL's choice), 4, 8, 16 for
  // all_to_all/all_reduce; ranks 2 and all; sizes x4).
  std::vector<int> channels{0, 4, 8, 16};
  std::vector<int> ranks;  // empty: 2 and all GPUs
  int size_step = 4;
  bool all_collectives_at_all_channels = false;
  std::vector<int> interference_channels{0, 4};
  std::vector<int> copy_collective_mib{8, 64, 512};  // per-rank collective sizes beside copies (MiB)
  std::vector<osim::RealisedGemm> gemm_shapes;  // extra GEMM-table shapes (--gemm-shapes-from)
};

/// The bench's testcases by name, in the order they run (testcases/order.hpp).
std::vector<std::string> testcase_order();

class Runner {
 public:
  explicit Runner(Options o);
  ~Runner();
  /// Runs every testcase the filter allows; the results array.
  nlohmann::ordered_json run();
  static int gpu_count();  // -1 when the CUDA runtime reports an error (no driver)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ovv
