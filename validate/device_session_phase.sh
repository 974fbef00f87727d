#!/usr/bin/env bash
# Usage (on any GPU machine, repo root): validate/device_session_phase.sh [BINARY]; writes $OUT/r.tgz.
# The hand-off's phase (README, "The hand-off's phase"): the benches whose
# bursts follow a kernel or a copy on the other engine (copy_reps,
# copy_after_idle, handoff_wait, kernel_reps) with 41 samples a row and every
# sample kept (samples_us), twice (run to run); then once, at the bench's
# default samples, the rows a calibration needs besides (one-way and
# both-ways copies, copy_span, overheads). About a minute on one GPU.
set -u
source "$(dirname "$0")/device_session_lib.sh"
session_start "${1:-}"
run_twice phase '^(copy_reps|copy_after_idle|handoff_wait|kernel_reps)$' --samples 41
validate/run_on_device.sh "$B" "$O" rest --filter '^(copy_span|overhead|overhead_gpu_event_gap|h2d_pinned|d2h_pinned|bidir_pinned)$' --watchdog 60 2> "$O/rest.err"
mark "rest rc=$?"
session_end
