// How `overlapsim-validate run` realises a kernel on a GPU that has no fused
// kernel for it, shared with the simulator so `compare --simulate` simulates
// what ran and `bench --gemm-shapes-from` times exactly those GEMMs:
//   gemm       one cuBLAS GEMM of the given shape;
//   attention  a GEMM with m = batch * seq_q, n = heads * head_dim and k chosen
//              so its FLOPs are the attention's times `attention_slowdown`,
//              split into k-chunks of <= 8,192 (multiples of 64) that
//              accumulate into one output (beta = 1 after the first);
//   flops      the same, as a 4,096 x 4,096 GEMM.
// README "validate: running a schedule on GPUs".
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "gpu/executor.hpp"
#include "gpu/params.hpp"
#include "schedule/schedule.hpp"

namespace osim {

struct RealisedGemm {
  int64_t m = 0, n = 0, k = 0;  // one chunk's shape
  int chunks = 1;               // chunks after the first accumulate into the same output
  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * chunks; }
  bool operator==(const RealisedGemm&) const = default;
  auto operator<=>(const RealisedGemm&) const = default;
};

inline constexpr int64_t kRealiseChunkK = 8192;

/// A multiple of 64 (at least 64), so rows stay 128-byte aligned: cuBLAS
/// falls back to slow kernels for odd leading dimensions.
int64_t aligned_k(double k);

/// The GEMM a kernel op runs as; nullopt for kernels that are not GEMM-like
/// (duration, memory-bound).
std::optional<RealisedGemm> realised_gemm(const Op& op, double attention_slowdown);

/// The schedule as `overlapsim-validate run` executes it: every attention or
/// FLOP-count kernel gets the efficiency that makes its time the realised
/// GEMM's, at `p`'s efficiency for that GEMM shape (the calibration's measured
/// entry, else gemm_efficiency). GEMM kernels are unchanged.
Schedule as_realised(const Schedule& s, const ModelParams& p, double attention_slowdown);

/// The schedule with `overlapsim-validate run`'s timing events written in: it
/// records an event before and after every kernel, copy and collective on the
/// op's stream, and one after every event record, stream wait and marker on a
/// stream. They become event_record ops of one added event (`_timing`), which
/// hold their stream ModelParams::event_gpu_time (+ event_gpu_time_h2d) as
/// any event record does. `at[r][i]`: where rank r's op i of `s` went.
Schedule with_timing_events(const Schedule& s, std::vector<std::vector<int>>& at);

/// A run of with_timing_events(s) seen as a run of `s`: each original op's
/// record (pointing at s's op; a stream wait's binding mapped back), the
/// added events' left out. `r.ops` must hold every op's record.
ExecResult without_timing_events(const Schedule& s, ExecResult r, const std::vector<std::vector<int>>& at);

}  // namespace osim
