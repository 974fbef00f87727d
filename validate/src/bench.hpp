#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace ovv {

struct Options {
  bool quick = false;      // fewer sizes, smaller buffers
  int warmup = 2;
  int samples = 5;         // medians of this many
  int max_gpus = 0;        // 0 = all
  int watchdog_s = 120;
  bool verbose = false;
  std::string filter;      // regex on testcase keys
  std::string partial_out; // where the watchdog writes the results so far
};

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
