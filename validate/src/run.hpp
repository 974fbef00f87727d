// overlapsim-validate run: executes a schedule (the simulator's input) on
// real GPUs, one host thread per rank, and writes the same per-op records as
// `overlapsim run --records` with the schedule it ran, so `overlapsim report`
// gives a measured run the simulator's metrics, trace and summary, and
// `overlapsim compare` pairs it with a simulated one op by op
// (docs/calibrate-your-node.md).
#pragma once

#include <string>
#include <vector>

#include "schedule/realised_gemm.hpp"

namespace ovv {

struct RunOptions {
  std::string schedule;  // schedule file (YAML/JSON)
  std::string out_dir;   // where records.json and schedule.yaml go
  std::string topology;  // for names in the metrics; default: the schedule's 'topology:'
  int warmup = 1;        // untimed runs first (NCCL connections, cuBLAS heuristics, first touch)
  int repeat = 3;        // timed runs; the one with the median makespan is reported
  int watchdog_s = 120;  // abort when no rank issues an op for this long
  // Attention kernels run as a cuBLAS GEMM of the same FLOPs times this factor,
  // so their time matches a fused attention kernel's. On an H200 at 16,384
  // tokens, PyTorch SDPA reaches 372 TFLOP/s and the GEMM ~770: 2.1 (at Wan
  // 720p's 75,600 tokens the ratio is 2.4). docs/calibrate-your-node.md.
  double attention_slowdown = 2.1;
  std::vector<int> devices;  // rank -> CUDA device (default: rank r on device r)
  bool force = false;
  bool verbose = false;
};

/// The GEMMs `run` realises for these schedules' kernels (GEMMs, attention,
/// FLOP kernels; osim::realised_gemm), each distinct shape once, in order.
/// Throws osim::InputError for a schedule that does not parse.
std::vector<osim::RealisedGemm> realised_gemm_shapes(const std::vector<std::string>& schedules, double attention_slowdown);

/// Runs the schedule; returns the process exit code. Throws osim::InputError
/// for a bad schedule or one that does not fit the machine, ovv::GpuError for
/// a failing CUDA/NCCL/cuBLAS call.
int run_schedule(const RunOptions& o);

}  // namespace ovv
