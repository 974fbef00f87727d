#!/usr/bin/env bash
# Usage (on a 2+ GPU machine, repo root): validate/device_session_loaded.sh [BINARY]; writes $OUT/r.tgz.
# Made validate/results/h200x2-nvlink-e/: the 2-rank all-to-all with the
# clock down (after >= 300 ms of GEMMs on both GPUs) against rested
# (`nccl_all_to_all_loaded`), NCCL defaults twice and NCCL_P2P_DISABLE=1 once,
# with nvidia-smi sampling clocks and power every 100 ms.
set -u
B=${1:-.device/overlapsim-validate}
O=$OUT/r
mkdir -p $O
t0=$(date +%s)
mark() { echo "$1 at $(( $(date +%s)-t0 )) s" | tee -a $O/marks.txt; }
nvidia-smi --query-gpu=name,pci.bus_id,driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv > $O/gpus.csv 2>&1
nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 100 > $O/smi-log.csv 2>&1 &
smi=$!
validate/run_on_device.sh $B $O loaded-1 --filter '^nccl_all_to_all_loaded$' --watchdog 60 --verbose 2> $O/loaded-1.err
mark "loaded-1 rc=$?"
NCCL_P2P_DISABLE=1 validate/run_on_device.sh $B $O loaded-p2p-disable --filter '^nccl_all_to_all_loaded$' --watchdog 60 2> $O/loaded-p2p.err
mark "loaded-p2p-disable rc=$?"
validate/run_on_device.sh $B $O loaded-2 --filter '^nccl_all_to_all_loaded$' --watchdog 60 2> $O/loaded-2.err
mark "loaded-2 rc=$?"
kill $smi
(cd $OUT && tar czf r.tgz r && rm -rf r)
