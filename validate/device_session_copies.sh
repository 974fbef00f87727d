#!/usr/bin/env bash
# Usage (on any GPU machine, repo root): validate/device_session_copies.sh [BINARY]; writes $OUT/r.tgz.
# One GPU's copies and memory-bound kernels, twice (run-to-run): pinned H2D /
# D2H, both directions at once timed as the one-way rows (reps per sample,
# one gate), two H2D streams, pageable copies from the same host buffer and
# from a rotating one, the host API overheads, what an event between two ops
# costs the GPU (overhead_gpu_event_gap: also beside an H2D copy on the same
# GPU and on every GPU, the validation runs' 3 -> 7-10 us), the memory-bound kernel alone and
# between GEMMs under load.
set -u
source "$(dirname "$0")/device_session_lib.sh"
session_start "${1:-}"
F='^(h2d_pinned|d2h_pinned|bidir_pinned|copy_reps|h2d_two_streams|h2d_pageable|d2h_pageable|multi_h2d_pinned|multi_d2h_pinned|overhead.*|memory_kernel)$'
validate/run_on_device.sh "$B" "$O" copies-1 --filter "$F" --watchdog 60 2> "$O/copies-1.err"
mark "copies-1 rc=$?"
validate/run_on_device.sh "$B" "$O" copies-2 --filter "$F" --watchdog 60 2> "$O/copies-2.err"
mark "copies-2 rc=$?"
session_end
