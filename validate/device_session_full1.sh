#!/usr/bin/env bash
# Usage (on any GPU machine, repo root): validate/device_session_full1.sh [BINARY]; writes $OUT/r.tgz.
# One GPU measured whole with the hand-off's phase (README, "The hand-off's
# phase"): the full bench (`bench-default.json`: copies, overheads, GEMM
# table burst and under load with the validation set's shapes, sustained
# load, memory kernels), PyTorch SDPA (`attention-1.json`), the hand-off
# testcases with every sample twice (`bench-phase-1.json`, `-2.json`: 41
# samples a row), nvidia-smi every 100 ms, then the validation set's SP 1
# runs (`validation/`). About 5 minutes.
set -u
source "$(dirname "$0")/device_session_lib.sh"
session_start "${1:-}"
full_bench
attention_run 1
run_twice phase '^(copy_reps|copy_after_idle|handoff_wait|kernel_reps)$' --samples 41
validation_runs '^sp1-pf[0-3]-default$'
session_end
