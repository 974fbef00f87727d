#!/usr/bin/env bash
# Usage (on a 2-GPU machine, repo root): validate/device_session_insitu.sh [BINARY]; writes $OUT/r.tgz.
# Made validate/results/h200x2-nvlink-k/: the all-to-all as a Ulysses layer
# meets it (bench testcase nccl_all_to_all_insitu: after 2-100 ms of GEMMs,
# with and without H2D copies on every GPU, 16 and 80 MiB), NCCL defaults and
# NCCL_P2P_DISABLE=1, with nvidia-smi every 100 ms.
set -u
source "$(dirname "$0")/device_session_lib.sh"
session_start "${1:-}"
both_transports insitu '^nccl_all_to_all_insitu$'
session_end
