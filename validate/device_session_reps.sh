#!/usr/bin/env bash
# Usage (on any GPU machine, repo root): validate/device_session_reps.sh [BINARY]; writes $OUT/r.tgz.
# Burst size against op size (README, "Is the copy step the bench's?"): the
# bench's one-way copy rows, both-ways rows and gated NCCL tables time 20 ops
# per burst below 1 MiB, 5 below 64 MiB and 1-2 above, where the copy step
# (~1 us from 1 MiB), the small both-ways share (below 1 MiB) and a
# collective timed alone (~5 us over the table) show. copy_reps: pinned
# copies at 256 KiB-4 MiB, 1-50 per burst, after a spin kernel or a host
# function, one way and both ways; copy_after_idle: the same after a kernel
# done before the copies were issued (is the hand-off paid?);
# overhead_gpu_event_gap with its rows beside
# an H2D copy; nccl_reps (2+ GPUs): the all-to-all at 256 KiB-16 MiB, 1-20 per
# burst, NCCL defaults and NCCL_P2P_DISABLE=1. Twice each (run to run); about
# a minute on one GPU, two on two.
set -u
source "$(dirname "$0")/device_session_lib.sh"
session_start "${1:-}"
run_twice reps '^(copy_reps|copy_after_idle|kernel_reps|overhead_gpu_event_gap|h2d_pinned|d2h_pinned|bidir_pinned)$'
if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
  both_transports nccl-reps '^nccl_reps$'
fi
session_end
