// How `overlapsim-validate run` realises a kernel on a GPU that has no fused
// kernel for it, shared with the simulator so `compare --simulate` simulates
// what ran and `bench --gemm-shapes-from` times exactly those GEMMs:
//   gemm       one cuBLAS GEMM of the given shape;
//   attention  a GEMM with m = batch * seq_q, n = heads * head_dim and k chosen
//              so its FLOPs are the attention's times `attention_slowdown`,
//              split into k-chunks of <= 8,192 (multiples of 64) that
//              accumulate into one output (beta = 1 after the first);
//   flops      the same, as a 4,096 x 4,096 GEMM.
// And the timing events the runner records around every op.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "schedule/realised_gemm.hpp"
#include "schedule/schedule.hpp"

namespace osim {

inline constexpr int64_t kRealiseChunkK = 8192;

/// A multiple of 64 (at least 64), so rows stay 128-byte aligned: cuBLAS
/// falls back to slow kernels for odd leading dimensions.
int64_t aligned_k(double k);

/// The GEMM a kernel op runs as; nullopt for kernels that are not GEMM-like
/// (duration, memory-bound).
std::optional<RealisedGemm> realised_gemm(const Op& op, double attention_slowdown);

/// Whether a runner built with cuDNN runs this attention op as cuDNN's fused
/// SDPA (backend cudnn, or the default, which PyTorch runs as cuDNN's on
/// Hopper); the other backends have no C++ kernel there and run as realised_gemm.
bool attention_runs_as_sdpa(const Op& op);

/// The schedule with `overlapsim-validate run`'s timing events written in: it
/// records an event before and after every kernel, copy and collective on the
/// op's stream, and one after every event record, stream wait and marker on a
/// stream. They become event_record ops of one added event (`_timing`).
/// `at[r][i]`: where rank r's op i of `s` went.
Schedule with_timing_events(const Schedule& s, std::vector<std::vector<int>>& at);

}  // namespace osim
