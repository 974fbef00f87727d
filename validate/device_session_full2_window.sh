#!/usr/bin/env bash
# Usage (on a 2-GPU machine, repo root): validate/device_session_full2_window.sh [BINARY]; writes $OUT/r.tgz.
# Made validate/results/h200x2-nvlink-j/: a 2-GPU box whole on one lease with the
# bench that times GEMMs and SDPA under load as the mean over >= 200 ms
# (2026-11-23): the full gated bench (the validation set's GEMM shapes), the
# P2P-disabled bench (with nccl_all_to_all_loaded), SDPA, the GEMM table again
# (how far the window means move), nvidia-smi every 100 ms, then the 16 SP 1 /
# SP 2 runs.
set -u
source "$(dirname "$0")/device_session_lib.sh"
session_start "${1:-}"
box_bench
attention_run 1
validate/run_on_device.sh "$B" "$O" gemm-2 --filter '^gemm_bf16$' --gemm-shapes-from $SCH --watchdog 60 2> "$O/gemm-2.err"
mark "gemm-2 rc=$?"
validation_runs '^sp[12]-'
session_end
