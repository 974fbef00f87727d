// The bench's testcases as the simulator replays them: the schedule a bench
// run amounts to (one program per rank, two streams, one group), its ops,
// and the timing patterns the bench uses (gated bursts, a hot GPU, windows).
// Host calls take no time in replays unless a family says otherwise: the
// bench issues everything before it opens its gate.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/executor.hpp"

namespace osim {

/// `ranks` programs, streams "s" and "copy", a group "world" of every rank.
Schedule bench_schedule(int ranks, bool p2p_disabled = false);
/// Runs one program per rank; every op's record, by its place in the
/// program (the records' `op` pointers are the schedule's, gone once this returns).
ExecResult replay_programs(Schedule s, const std::vector<std::vector<Op>>& programs, const hw::Topology& topo, const ModelParams& p);
/// One op per rank; the longest op's time in us.
double replay(Schedule s, const std::vector<Op>& per_rank, const hw::Topology& topo, const ModelParams& p);

/// The bench's GEMM of shape [m, n, k] (a row's "gemm") on stream 0.
Op bench_gemm(const nlohmann::json& shape);
/// The bench's SDPA of `shape` on stream 0 (bf16).
Op bench_attention(const AttentionShape& shape);
/// The bench's memory-bound kernel moving `hbm_bytes` on stream 0.
Op bench_memory_kernel(double hbm_bytes);
/// Stream 0 busy for `t` with no work (an idle gap or a start offset).
Op bench_idle(Time t);
/// A pinned copy of `bytes` on `stream`.
Op bench_copy(CopyKind kind, Bytes bytes, int stream = 0);
/// One rank's NCCL all-to-all of `bytes` on stream 0 of the bench's group.
Op bench_a2a(Bytes bytes);

/// Ops timed per gated burst as the bench ran them (one-way and both-ways
/// pinned copies, copy_reps, copy_after_idle, handoff_wait): per lane (one op
/// run `reps` times on stream `lane index` of rank `dev`) the gate holding
/// it, an event, the ops, an event; per lane the time per op between the
/// events. Gates: "kernel" (a spin kernel on the lane's stream, or one of
/// `busy` on every SM), "kernel_wait" (one spin kernel on a third stream the
/// lanes wait on), "host" (nothing on the GPU before), "kernel_done" /
/// "kernel_wait_done" (one lane: a spin kernel on its stream / waited on,
/// done before the host issues the rest behind a host function).
std::vector<double> replay_gated(const std::vector<Op>& lanes, int reps, const std::string& gate, int dev, const hw::Topology& topo,
                                 const ModelParams& params, std::optional<Time> busy = std::nullopt);

/// A kernel timed under load (the GEMM table after >= 250 ms of it, SDPA):
/// ~0.25 s of compute first brings the sustained-load model to full duty.
double replay_hot(const Schedule& s, const Op& op, const hw::Topology& topo, const ModelParams& p);
/// A row timed over a window: `soak` calls back to back, then `window` more;
/// the window's mean per call in us.
double replay_window(const Schedule& s, const Op& op, int soak, int window, const hw::Topology& topo, const ModelParams& p);

}  // namespace osim
