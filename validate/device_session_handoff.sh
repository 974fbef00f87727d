#!/usr/bin/env bash
# Usage (on any GPU machine, repo root): validate/device_session_handoff.sh [BINARY]; writes $OUT/r.tgz.
# The hand-offs between engines end to end (README, "Hand-offs between
# engines"): the bench's copies per burst, copies after a kernel done before,
# kernels after a copy, the event rows and the host's API overheads
# (bench-handoff.json: a calibration from the same lease), then the hand-off
# set (validate/handoff/: kernels and copies in ping-pong on one stream or
# through events, and side by side) with overlapsim-validate run into
# handoff/<case>/. About 20 s on one GPU.
set -u
source "$(dirname "$0")/device_session_lib.sh"
session_start "${1:-}"
validate/run_on_device.sh "$B" "$O" handoff --filter '^(copy_reps|copy_after_idle|handoff_wait|kernel_reps|overhead|overhead_gpu_event_gap|h2d_pinned|d2h_pinned|bidir_pinned)$' \
  --watchdog 60 2> "$O/handoff.err"
mark "bench rc=$?"
source validate/device_env.sh "$B"
mkdir -p "$O/handoff"
for d in validate/handoff/*/; do
  name=$(basename "$d")
  "$B" run "$d/schedule.yaml" -o "$O/handoff/$name" --warmup 2 --repeat 5 --force --verbose --watchdog 60 > "$O/handoff/$name.log" 2>&1
  mark "$name rc=$?"
done
session_end
