#!/usr/bin/env bash
# Usage (on a 1-GPU H100 machine, repo root): validate/device_session_h100_repeat.sh [BINARY]; writes $OUT/r.tgz.
# Made validate/results/h100x1-c/: the GEMM table (burst and under load, with the
# validation set's shapes) and PyTorch SDPA at the Wan shapes, each measured
# twice in a row on one lease, with nvidia-smi sampling clocks and power every
# 100 ms: how far one shape's time moves between two runs of the same bench.
set -u
source "$(dirname "$0")/device_session_lib.sh"
session_start "${1:-}"
PY=python3; $PY -c 'import torch' 2>/dev/null || PY=$(ls /usr/local/bin/python3* /opt/*/bin/python3 2>/dev/null | head -1)
for i in 1 2; do
  validate/run_on_device.sh $B $O gemm-$i --filter '^gemm_bf16$' --gemm-shapes-from $SCH --watchdog 60 2> $O/gemm-$i.err
  mark "gemm-$i rc=$?"
  timeout 150 $PY validate/attention_bench.py $O/attention-$i.json > $O/attention-$i.log 2>&1
  mark "attention-$i rc=$?"
done
session_end
