// The effect families' calibrations against the bench's testcase table
// (schedule/bench_keys.hpp): every key a family replays is a testcase of
// that family, and every family's fit steps run in a distinct stage.
#include <doctest/doctest.h>

#include <set>

#include "calib/family.hpp"
#include "schedule/bench_keys.hpp"

using namespace osim;

TEST_CASE("every key a calibration family replays is the bench's testcase of that family") {
  // One calibration family per family of the bench's testcases, and no other.
  std::set<std::string> bench_families, calibrated;
  for (const bench::Testcase& t : bench::kTestcases) bench_families.insert(std::string(t.family));
  for (const CalibFamily* f : calib_families()) calibrated.insert(f->name);
  CHECK(calibrated == bench_families);
  CHECK(calibrated.size() == calib_families().size());
  for (const CalibFamily* f : calib_families()) {
    CAPTURE(f->name);
    CHECK((static_cast<bool>(f->replay) || f->keys.empty()));  // vram: direct readings, nothing to replay
    for (const std::string& k : f->keys) {
      CAPTURE(k);
      CHECK(bench::known(k));
      CHECK(bench::family_of(k) == f->name);
      CHECK(calib_family_for(k) == f);
    }
  }
  // The testcases no family replays, fitted or reported only: the overheads'
  // host times, the kernels after a hand-off, the memory kernel after what,
  // pageable copies beside compute, PyTorch's all-to-alls, its host's pace
  // after a wait and the sustained-load series.
  std::set<std::string> unreplayed;
  for (const bench::Testcase& t : bench::kTestcases)
    if (!calib_family_for(std::string(t.key))) unreplayed.insert(std::string(t.key));
  CHECK(unreplayed == std::set<std::string>{"overhead_kernel_launch", "overhead_event_record", "overhead_stream_sync_idle", "overhead_memcpy_async_pinned_return",
                                            "overhead_stream_wait_event", "overhead_framework_op", "overhead_framework_collective", "launch_queue", "h2d_pageable_beside_compute", "framework_all_to_all", "kernel_reps", "memory_after", "gemm_sustained", "gemm_sustained_long", "gemm_sustained_copy",
                                            "vram_context", "vram_gemm_workspace", "vram_allocator_reserve", "vram_nccl",
                                            "framework_elementwise", "host_after_wait", "host_op_loop", "overhead_framework_fp8_gemm"});
}

TEST_CASE("fit steps run in distinct stages, so their order is the registry's, not the linker's") {
  std::set<int> stages;
  size_t steps = 0;
  for (const CalibFamily* f : calib_families())
    for (const FitStep& s : f->fits) {
      stages.insert(s.stage);
      ++steps;
    }
  CHECK(stages.size() == steps);
}
