#!/usr/bin/env bash
# Usage (on a 2- or 4-GPU machine, repo root): validate/device_session_gated.sh STAGE [BINARY]; writes $OUT/STAGE.tgz.
# Made validate/results/h200x2-nvlink-c/: the bench with gated collective timing
# (every rank's stream held while the host enqueues; samples kept).
#   STAGE 1: a quick gated smoke test, the full bench (GEMM table burst and under
#            load with the validation set's shapes), the P2P-disabled bench.
#   STAGE 2: the collectives again, both transports (run-to-run repeatability),
#            then the validation runs the GPU count allows (SP 1 and 2 on 2 GPUs).
set -u
stage=$1
B=${2:-.device/overlapsim-validate}
O=$OUT/r
mkdir -p $O
t0=$(date +%s)
if [ "$stage" = 1 ]; then
  nvidia-smi --query-gpu=name,pci.bus_id,driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv > $O/gpus.csv 2>&1
  validate/run_on_device.sh $B $O smoke --quick --filter '^nccl_all_to_all$' --watchdog 30 2> $O/smoke.err
  echo "smoke rc=$? at $(( $(date +%s)-t0 )) s"
  SCH=$(ls validate/results/h200x4-nvswitch/validation/*/schedule.yaml)
  validate/run_on_device.sh $B $O default --gemm-shapes-from $SCH --watchdog 60 2> $O/default.err
  echo "default rc=$? at $(( $(date +%s)-t0 )) s"
  (cd $OUT && tar czf s1a.tgz r)
  NCCL_P2P_DISABLE=1 validate/run_on_device.sh $B $O p2p-disable --filter 'nccl|interference|multi|overhead' --watchdog 60 2> $O/p2p.err
  echo "p2p rc=$? at $(( $(date +%s)-t0 )) s"
else
  validate/run_on_device.sh $B $O repeat --filter '^nccl' --watchdog 60 2> $O/repeat.err
  echo "repeat rc=$? at $(( $(date +%s)-t0 )) s"
  NCCL_P2P_DISABLE=1 validate/run_on_device.sh $B $O repeat-p2p-disable --filter '^nccl' --watchdog 60 2> $O/repeat-p2p.err
  echo "repeat p2p rc=$? at $(( $(date +%s)-t0 )) s"
  (cd $OUT && tar czf s2a.tgz r)
  ngpu=$(nvidia-smi -L | wc -l); filt=.; [ "$ngpu" -lt 4 ] && filt='^sp[12]-'
  mkdir -p $O/validation; WATCHDOG=60 validate/validation/make_set.sh measure $B validate/results/h200x4-nvswitch/validation $O/validation --filter "$filt" > $O/validation/measure.log 2>&1
  echo "validation done at $(( $(date +%s)-t0 )) s"
fi
(cd $OUT && tar czf s$stage.tgz r && rm -rf r)
