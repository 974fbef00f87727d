#!/usr/bin/env bash
# Usage (on a 1-GPU H100 machine, repo root): validate/device_session_h100_d.sh [BINARY]; writes $OUT/r.tgz.
# Made validate/results/h100x1-d/: one lease, an H100 box whole with the bench
# that times GEMMs and SDPA under load as the mean over a >= 200 ms window
# (2026-11-23): the full bench (GEMM table with the validation set's shapes),
# SDPA, then the GEMM table and SDPA again (how far the window means move
# between two runs), nvidia-smi every 100 ms, then the set's SP 1 runs.
set -u
source "$(dirname "$0")/device_session_lib.sh"
session_start "${1:-}"
full_bench
attention_run 1
validate/run_on_device.sh "$B" "$O" gemm-2 --filter '^gemm_bf16$' --gemm-shapes-from $SCH --watchdog 60 2> "$O/gemm-2.err"
mark "gemm-2 rc=$?"
attention_run 2
validation_runs '^sp1-pf[0-3]-default$'
session_end
