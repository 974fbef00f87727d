#!/usr/bin/env bash
# Usage (on a 2-GPU machine, repo root): validate/device_session_runs2.sh [BINARY]; writes $OUT/r.tgz.
# Made validate/results/h200x2-nvlink-o/: the 16 SP 1 / SP 2 validation runs on
# a fresh lease (for calibrations made on other boxes: out of sample), then the
# barrier skew once, with nvidia-smi every 100 ms.
set -u
source "$(dirname "$0")/device_session_lib.sh"
session_start "${1:-}"
validation_runs '^sp[12]-'
validate/run_on_device.sh "$B" "$O" skew --filter '^nccl_barrier_skew$' --watchdog 60 2> "$O/skew.err"
mark "skew rc=$?"
session_end
