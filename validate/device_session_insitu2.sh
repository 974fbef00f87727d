#!/usr/bin/env bash
# Usage (on a 2-GPU machine, repo root): validate/device_session_insitu2.sh [BINARY]; writes $OUT/r.tgz.
# Made validate/results/h200x2-nvlink-l/: the in-situ and loaded all-to-all
# testcases again on another lease (their repeatability; the bench with both
# sharing one two-rank set-up), NCCL defaults and NCCL_P2P_DISABLE=1.
set -u
source "$(dirname "$0")/device_session_lib.sh"
session_start "${1:-}"
both_transports a2a '^nccl_all_to_all_(insitu|loaded)$'
session_end
