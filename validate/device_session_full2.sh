#!/usr/bin/env bash
# Usage (on a 2-GPU machine, repo root): validate/device_session_full2.sh [BINARY]; writes $OUT/r.tgz.
# Made validate/results/h200x2-nvlink-f/: one lease, everything a 2-GPU box's
# own calibration and validation need, the all-to-all with the clock down
# included (so its comm_clock_share is this box's): the full gated bench
# (with the validation set's GEMM shapes), the P2P-disabled bench (with
# nccl_all_to_all_loaded), nvidia-smi every 100 ms, then the 16 SP 1 / SP 2 runs.
set -u
B=${1:-.device/overlapsim-validate}
O=$OUT/r
mkdir -p $O
t0=$(date +%s)
mark() { echo "$1 at $(( $(date +%s)-t0 )) s" | tee -a $O/marks.txt; }
nvidia-smi --query-gpu=name,pci.bus_id,driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv > $O/gpus.csv 2>&1
nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 100 > $O/smi-log.csv 2>&1 &
smi=$!
SCH=$(ls validate/results/h200x4-nvswitch/validation/*/schedule.yaml)
validate/run_on_device.sh $B $O default --gemm-shapes-from $SCH --watchdog 60 2> $O/default.err
mark "default rc=$?"
NCCL_P2P_DISABLE=1 validate/run_on_device.sh $B $O p2p-disable --filter 'nccl|interference|multi|overhead' --watchdog 60 2> $O/p2p.err
mark "p2p rc=$?"
mkdir -p $O/validation
WATCHDOG=60 validate/validation/make_set.sh measure $B validate/results/h200x4-nvswitch/validation $O/validation --filter '^sp[12]-' > $O/validation/measure.log 2>&1
mark "validation done"
kill $smi
(cd $OUT && tar czf r.tgz r && rm -rf r)
