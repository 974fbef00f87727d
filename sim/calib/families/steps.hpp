// Each effect family's fit steps and its replay, as the calibration pipeline
// (calib/pipeline.cpp) calls them: that table says when each step runs, what
// it reads and writes, and which bench keys each replay takes.
#pragma once

#include "calib/family.hpp"

namespace osim::families {

namespace overheads {
void fit_api(FitContext& ctx);
void fit_framework_op(FitContext& ctx);
void fit_framework_collective(FitContext& ctx);
void fit_launch_queue(FitContext& ctx);
void fit_framework_view(FitContext& ctx);
void fit_event_time(FitContext& ctx);
void fit_wait_return(FitContext& ctx);
void replay_row(ReplayContext& ctx, const json& row, Comparison c, std::vector<Comparison>& out);
}  // namespace overheads

namespace handoff {
void fit_copy_burst(FitContext& ctx);
void fit_copy_reps_report(FitContext& ctx);
void fit_handoff_wait_report(FitContext& ctx);
void fit_kernel_reps(FitContext& ctx);
void fit_phase(FitContext& ctx);
void replay_row(ReplayContext& ctx, const json& row, Comparison c, std::vector<Comparison>& out);
}  // namespace handoff

namespace copies {
void fit_pinned(FitContext& ctx);
void fit_pageable(FitContext& ctx);
void fit_pageable_aggregate(FitContext& ctx);
void fit_bidir_factor(FitContext& ctx);
void fit_bidir_table(FitContext& ctx);
void fit_host_aggregate(FitContext& ctx);
void fit_host_bidir_aggregate(FitContext& ctx);
void replay_row(ReplayContext& ctx, const json& row, Comparison c, std::vector<Comparison>& out);
}  // namespace copies

namespace nccl {
void fit_reps_report(FitContext& ctx);
void fit_channels(FitContext& ctx);
void fit_tables(FitContext& ctx);
void replay_row(ReplayContext& ctx, const json& row, Comparison c, std::vector<Comparison>& out);
}  // namespace nccl

namespace power {
void fit_sustained(FitContext& ctx);
void fit_attention_load(FitContext& ctx);
void fit_memory_load(FitContext& ctx);
void fit_sustained_copy_report(FitContext& ctx);
void fit_straggler(FitContext& ctx);
void fit_comm_clock_share(FitContext& ctx);
void fit_comm_load(FitContext& ctx);
void replay_row(ReplayContext& ctx, const json& row, Comparison c, std::vector<Comparison>& out);
}  // namespace power

namespace gemm {
void fit_shapes(FitContext& ctx);
void fit_fp8(FitContext& ctx);
void replay_row(ReplayContext& ctx, const json& row, Comparison c, std::vector<Comparison>& out);
}  // namespace gemm

namespace conv {
void fit_conv(FitContext& ctx);
void replay_row(ReplayContext& ctx, const json& row, Comparison c, std::vector<Comparison>& out);
}  // namespace conv

namespace memory {
void fit_memory(FitContext& ctx);
void fit_framework_elementwise(FitContext& ctx);
void fit_framework_channels_first(FitContext& ctx);
void replay_row(ReplayContext& ctx, const json& row, Comparison c, std::vector<Comparison>& out);
}  // namespace memory

namespace attention {
void fit_attention(FitContext& ctx);
void replay_row(ReplayContext& ctx, const json& row, Comparison c, std::vector<Comparison>& out);
}  // namespace attention

namespace nvlink {
void fit_insitu_steps(FitContext& ctx);
void fit_wake_by_simulation(FitContext& ctx);
void fit_awake_slowdown(FitContext& ctx);
void replay_row(ReplayContext& ctx, const json& row, Comparison c, std::vector<Comparison>& out);
}  // namespace nvlink

namespace interference {
void fit_pairs(FitContext& ctx);
void fit_receiver(FitContext& ctx);
void fit_host_transport_rates(FitContext& ctx);
void fit_host_transport_simulated(FitContext& ctx);
void fit_host_reader(FitContext& ctx);
/// Copy weights against an all-to-all of `ranks` ranks through host memory
/// from one bench document's copy_beside_host_memory_kernel rows, for a rank
/// that moves `rank_GBps` alone, its CTAs loading from host memory growing
/// with its peers as NCCL's channels do (interference.cpp, fit_host_reader);
/// `points` 0 where the document holds no load rows beside both copy
/// directions.
struct HostReaderWeights {
  double h2d = 0, d2h = 0;                      // the copy weights
  int ranks = 2;                                // the all-to-all's ranks
  double one_cta_GBps = 0, ctas = 0;            // r1 and n = (ranks - 1) rank_GBps / r1
  double slowdown_h2d = 0, slowdown_d2h = 0;    // the rank's rate alone / beside each copy
  double copy_h2d_GBps = 0, copy_d2h_GBps = 0;  // the copies alone
  int points = 0;
};
HostReaderWeights copy_weights_beside_host_reader(const json& doc, double rank_GBps, int ranks = 2);
void replay_row(ReplayContext& ctx, const json& row, Comparison c, std::vector<Comparison>& out);
void replay_copy_collective(ReplayContext& ctx, const json& row, Comparison c, std::vector<Comparison>& out);
}  // namespace interference

namespace vram {
void fit_vram(FitContext& ctx);
}  // namespace vram

}  // namespace osim::families
