#!/usr/bin/env bash
# Usage (on the GPU machine, repo root): validate/device_session_x4.sh [BINARY]; writes $OUT/s1-3.tgz.
# Made validate/results/h200x4-nvswitch-b/ (plus the NCCL sweep of validate/results/README.md).
# One 4xH200 session: new-style full bench (burst/under-load GEMM table with the
# validation set's realised shapes), the 26 validation runs, P2P-disabled bench.
# Each stage is tarred into $OUT as soon as it ends, so a cut-off keeps the rest.
set -u
B=${1:-.device/overlapsim-validate}
O=$OUT/r
mkdir -p $O
nvidia-smi --query-gpu=name,pci.bus_id,driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv > $O/gpus.csv 2>&1
SCH=$(ls validate/results/h200x4-nvswitch/validation/*/schedule.yaml)
t0=$(date +%s)
validate/run_on_device.sh $B $O pipelined --filter '^multi_h2d_pipelined$' --watchdog 30 --verbose 2> $O/pipelined.err
echo "pipelined rc=$? at $(( $(date +%s)-t0 )) s"
validate/run_on_device.sh $B $O default --gemm-shapes-from $SCH --watchdog 60 --verbose 2> $O/default.err
echo "default rc=$? at $(( $(date +%s)-t0 )) s"
(cd $OUT && tar czf s1.tgz r)
mkdir -p $O/validation; WATCHDOG=60 validate/validation/make_set.sh measure $B validate/results/h200x4-nvswitch/validation $O/validation 2>&1 | tee $O/validation/measure.log
echo "validation done at $(( $(date +%s)-t0 )) s"
(cd $OUT && tar czf s2.tgz r/validation)
NCCL_P2P_DISABLE=1 validate/run_on_device.sh $B $O p2p-disable --filter 'nccl|interference|multi|overhead' --watchdog 60 2> $O/p2p.err
echo "p2p rc=$? at $(( $(date +%s)-t0 )) s"
(cd $OUT && tar czf s3.tgz r/bench-p2p-disable.json r/versions-p2p-disable.txt r/p2p.err)
rm -rf $O
