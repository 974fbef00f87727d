#!/usr/bin/env bash
# Usage (on a 2-GPU machine, repo root): validate/device_session_skew.sh [BINARY]; writes $OUT/r.tgz.
# Made validate/results/h200x2-nvlink-m/: how far two GPUs drift apart over
# 2, 8 and 30 ms of GEMMs, loaded and rested (bench nccl_barrier_skew), twice,
# with nvidia-smi every 100 ms.
set -u
source "$(dirname "$0")/device_session_lib.sh"
session_start "${1:-}"
run_twice skew '^nccl_barrier_skew$'
session_end
