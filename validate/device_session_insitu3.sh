#!/usr/bin/env bash
# Usage (on a 2-GPU machine, repo root): validate/device_session_insitu3.sh [BINARY]; writes $OUT/r.tgz.
# Made validate/results/h200x2-nvlink-p/: the in-situ all-to-all testcase with
# copies that outlast the GEMMs under load (`ncopies`), the GEMMs' span and the
# copies' margin per case, at 4, 16, 40 and 80 MiB (NCCL defaults and
# NCCL_P2P_DISABLE=1); the validation set's SP 1 / SP 2 runs and the barrier
# skew on the same lease (out of sample for box m's calibration).
set -u
source "$(dirname "$0")/device_session_lib.sh"
session_start "${1:-}"
both_transports insitu '^nccl_all_to_all_insitu$'
validation_runs '^sp[12]-'
validate/run_on_device.sh "$B" "$O" skew --filter '^nccl_barrier_skew$' --watchdog 60 2> "$O/skew.err"
mark "skew rc=$?"
session_end
