#!/usr/bin/env bash
# `calibrate` (and a bench given to `topo --import-nvidia-smi`) on bench
# results with impossible values (signs, sizes, times past an hour, counts,
# GPU lists): each refused naming the file, the row and its testcase key, and
# what is wrong.
#   bench.sh OVERLAPSIM SOURCE_DIR WORK_DIR
set -u
OSIM="$1" D="$2/tests/badinput/bench" W="$3" T="$2/configs/topologies/h200x4-nvlink.yaml"
. "$2/tests/badinput/common.sh"
mkdir -p "$W"
calibrate() { "$OSIM" calibrate "$1" -t "$T"; }
# The good document passes the checks (calibrate then finds too few testcases to fit).
if calibrate "$D/good.json" 2>&1 | grep -q 'results\['; then echo "FAIL good.json: refused"; exit 1; fi
refuse "$D/time-negative.json" ": error: results[0] (testcase h2d_pinned): time_us -2.86 is negative" calibrate "$D/time-negative.json"
refuse "$D/time-overflow.json" ": error: not valid JSON" calibrate "$D/time-overflow.json"
refuse "$D/bytes-negative.json" "results[0] (testcase h2d_pinned): bytes -4096 is negative" calibrate "$D/bytes-negative.json"
refuse "$D/rate-negative.json" "results[0] (testcase h2d_pinned): GBps -1.43 is negative" calibrate "$D/rate-negative.json"
refuse "$D/reps-zero.json" "results[0] (testcase h2d_pinned): reps 0 is no count (at least 1)" calibrate "$D/reps-zero.json"
refuse "$D/samples-empty.json" "results[1] (testcase copy_after_idle): samples_us holds no samples" calibrate "$D/samples-empty.json"
refuse "$D/sample-negative.json" "results[1] (testcase copy_after_idle): samples_us[1] -3.2 is negative" calibrate "$D/sample-negative.json"
refuse "$D/gpus-empty.json" "results[0] (testcase h2d_pinned): gpus [] names no GPU" calibrate "$D/gpus-empty.json"
refuse "$D/gpus-negative.json" "results[0] (testcase h2d_pinned): gpus [-1] holds -1, no GPU index (0 to 65535)" calibrate "$D/gpus-negative.json"
refuse "$D/bytes-fraction.json" "results[0] (testcase h2d_pinned): bytes 40.5 is not a size (whole bytes, at most 2^47)" calibrate "$D/bytes-fraction.json"
refuse "$D/bytes-huge.json" "results[0] (testcase h2d_pinned): bytes 1e+30 is not a size" calibrate "$D/bytes-huge.json"
refuse "$D/time-zero.json" "results[0] (testcase h2d_pinned): time_us 0 is no measured time" calibrate "$D/time-zero.json"
refuse "$D/time-huge.json" "results[0] (testcase h2d_pinned): time_us 1e+300 is over an hour" calibrate "$D/time-huge.json"
refuse "$D/reps-fraction.json" "results[0] (testcase h2d_pinned): reps 2.5 is no count (a whole number)" calibrate "$D/reps-fraction.json"
rm -f "$W/bench-smi.yaml"
refuse "$D/time-negative.json" "time_us -2.86 is negative" "$OSIM" topo --import-nvidia-smi "$D/time-negative.json" -o "$W/bench-smi.yaml"
finish bench
