#!/usr/bin/env bash
# Usage (on any GPU machine, repo root): validate/device_session_memory.sh [BINARY]; writes $OUT/r.tgz.
# A memory-bound kernel after what (README, "memory-bound kernels after a
# GEMM"): memory_kernel (back to back, and between GEMMs) and memory_after
# (one kernel after the same kernel, a GEMM, 200 us of spinning SMs or of one
# sleeping thread), 21 samples a row, every sample kept, twice. 25 s.
set -u
source "$(dirname "$0")/device_session_lib.sh"
session_start "${1:-}"
run_twice memory '^(memory_kernel|memory_after)$' --samples 21
session_end
