#!/usr/bin/env bash
# Usage (on a 2-GPU machine, repo root): validate/device_session_pergpu.sh [BINARY]; writes $OUT/r.tgz.
# Made validate/results/h200x2-nvlink-d/: a gated bench of a fresh box plus
# the sustained-load series on each GPU, alone and both at once (does the
# second GPU slow down more under full duty, as the SP 2 validation runs of
# boxes a, b and c suggest?), with nvidia-smi sampling clocks, power and
# temperature every 100 ms throughout; then the 16 SP 1 / SP 2 validation runs.
set -u
source "$(dirname "$0")/device_session_lib.sh"
session_start "${1:-}"
box_bench
for g in 0 1; do
  sleep 5
  mark "sustained-gpu$g start"
  CUDA_VISIBLE_DEVICES=$g validate/run_on_device.sh $B $O sustained-gpu$g --filter '^gemm_sustained(_long)?$' --watchdog 60 2> $O/sustained-gpu$g.err
  mark "sustained-gpu$g rc=$?"
done
sleep 5
mark "sustained-both start"
CUDA_VISIBLE_DEVICES=0 validate/run_on_device.sh $B $O sustained-both-gpu0 --filter '^gemm_sustained(_long)?$' --watchdog 60 2> $O/sustained-both-gpu0.err &
p0=$!
CUDA_VISIBLE_DEVICES=1 validate/run_on_device.sh $B $O sustained-both-gpu1 --filter '^gemm_sustained(_long)?$' --watchdog 60 2> $O/sustained-both-gpu1.err
wait $p0
mark "sustained-both done"
validation_runs '^sp[12]-'
session_end
