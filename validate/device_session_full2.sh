#!/usr/bin/env bash
# Usage (on a 2-GPU machine, repo root): validate/device_session_full2.sh [BINARY]; writes $OUT/r.tgz.
# Made validate/results/h200x2-nvlink-f/: one lease, everything a 2-GPU box's
# own calibration and validation need, the all-to-all with the clock down
# included (so its comm_clock_share is this box's): the full gated bench
# (with the validation set's GEMM shapes), the P2P-disabled bench (with
# nccl_all_to_all_loaded), nvidia-smi every 100 ms, then the 16 SP 1 / SP 2 runs.
set -u
source "$(dirname "$0")/device_session_lib.sh"
session_start "${1:-}"
box_bench
validation_runs '^sp[12]-'
session_end
