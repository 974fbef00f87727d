#!/usr/bin/env bash
# Usage (on a 1-GPU H100 machine, repo root): validate/device_session_h100.sh [BINARY]; writes $OUT/h100.tgz.
# Made validate/results/h100x1-b/: the current bench on one H100 (GEMM table burst
# and under load with the validation set's shapes, sustained load, memory kernels,
# interference), PyTorch SDPA at the Wan shapes, and the validation set's SP 1 runs.
set -u
B=${1:-.device/overlapsim-validate}
O=$OUT/r
mkdir -p $O
t0=$(date +%s)
nvidia-smi --query-gpu=name,pci.bus_id,driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv > $O/gpus.csv 2>&1
SCH=$(ls validate/results/h200x4-nvswitch/validation/*/schedule.yaml)
validate/run_on_device.sh $B $O default --gemm-shapes-from $SCH --watchdog 60 2> $O/default.err
echo "default rc=$? at $(( $(date +%s)-t0 )) s"
(cd $OUT && tar czf h100a.tgz r)
PY=python3; $PY -c 'import torch' 2>/dev/null || PY=$(ls /usr/local/bin/python3* /opt/*/bin/python3 2>/dev/null | head -1)
timeout 120 $PY validate/attention_bench.py $O/attention.json > $O/attention.log 2>&1
echo "attention rc=$? at $(( $(date +%s)-t0 )) s"
mkdir -p $O/validation; WATCHDOG=60 validate/validation/make_set.sh measure $B validate/results/h200x4-nvswitch/validation $O/validation --filter '^sp1-pf[0-3]-default$' > $O/validation/measure.log 2>&1
echo "validation done at $(( $(date +%s)-t0 )) s"
(cd $OUT && tar czf h100.tgz r && rm -rf r)
