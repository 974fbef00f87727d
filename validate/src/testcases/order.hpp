// The bench's testcases in the order they run: one table, so the sequence is
// read in one place and a new testcase joins it by name. Host and copy costs
// first, on a rested GPU; then GEMMs and the sustained-load cases that heat it
// (each rests 300 ms or more first); memory kernels; then the multi-GPU
// collectives, whose loaded cases need the clock-down fits' GEMM; interference,
// the longest, and copies beside collectives last. A testcase file registers
// with OVV_BENCH_TESTCASE, and a name missing here does not compile.
#pragma once

#include <string_view>

namespace ovv {

inline constexpr std::string_view kBenchOrder[] = {
    "overheads",
    "gpu_event_gap",
    "copies",
    "copy_reps",
    "copy_after_idle",
    "copy_span",
    "handoff_wait",
    "kernel_reps",
    "multi_gpu_copies",
    "multi_bidir_copies",
    "p2p",
    "gemms",
    "gemm_sustained",
    "gemm_between_attention",
    "gemm_between_memory_bound",
    "gemm_sustained_shapes",
    "gemm_after_idle",
    "memory_kernels",
    "memory_after",
    "multi_h2d_pipelined",
    "collectives",
    "collectives_loaded",
    "gemm_between_all_to_all",
    "collectives_insitu",
    "barrier_skew",
    "interference",
    "copy_collective",
};

// A testcase's place in kBenchOrder; -1 where it is missing.
constexpr int bench_position(std::string_view name) {
  for (size_t i = 0; i < std::size(kBenchOrder); ++i)
    if (kBenchOrder[i] == name) return static_cast<int>(i);
  return -1;
}

static_assert(
    [] {
      for (size_t i = 0; i < std::size(kBenchOrder); ++i)
        if (bench_position(kBenchOrder[i]) != static_cast<int>(i)) return false;
      return true;
    }(),
    "a testcase is listed twice in kBenchOrder");

}  // namespace ovv
