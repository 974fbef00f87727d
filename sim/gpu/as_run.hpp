// A measured run as the simulator re-runs it (`compare --simulate`): the
// kernels as the runner realised them (schedule/realise.hpp), and a run with
// the runner's timing events seen as a run of the schedule without them.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "gpu/executor.hpp"
#include "gpu/params.hpp"
#include "schedule/realise.hpp"
#include "schedule/schedule.hpp"

namespace osim {

/// The schedule as `overlapsim-validate run` executes it: every attention or
/// FLOP-count kernel gets the efficiency that makes its time the realised
/// GEMM's, at `p`'s efficiency for that GEMM shape (the calibration's measured
/// entry, else gemm_efficiency). GEMM kernels are unchanged. `sdpa`: the
/// runner ran attention_runs_as_sdpa ops as cuDNN's SDPA; those stay attention,
/// of backend cudnn (the runner's default).
Schedule as_realised(const Schedule& s, const ModelParams& p, double attention_slowdown, bool sdpa = false);

/// A run of with_timing_events(s) seen as a run of `s`: each original op's
/// record (pointing at s's op; a stream wait's binding mapped back), the
/// added events' left out. `r.ops` must hold every op's record.
ExecResult without_timing_events(const Schedule& s, ExecResult r, const std::vector<std::vector<int>>& at);

}  // namespace osim
