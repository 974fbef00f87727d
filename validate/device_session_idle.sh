#!/usr/bin/env bash
# Usage (on any GPU machine, repo root): validate/device_session_idle.sh [BINARY]; writes $OUT/r.tgz.
# The GPU's return from idle (bench gemm_after_idle: GEMMs after a gap with
# the GPU idle, with copies only, or with a sleep kernel resident), twice
# (run-to-run), and the sustained-load GEMM series on the same lease.
set -u
source "$(dirname "$0")/device_session_lib.sh"
session_start "${1:-}"
validate/run_on_device.sh "$B" "$O" idle-1 --filter '^gemm_after_idle$' --watchdog 60 2> "$O/idle-1.err"
mark "idle-1 rc=$?"
validate/run_on_device.sh "$B" "$O" sustained --filter '^gemm_sustained$' --watchdog 60 2> "$O/sustained.err"
mark "sustained rc=$?"
validate/run_on_device.sh "$B" "$O" idle-2 --filter '^gemm_after_idle$' --watchdog 60 2> "$O/idle-2.err"
mark "idle-2 rc=$?"
session_end
