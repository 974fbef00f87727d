#!/usr/bin/env bash
# Usage (on a 2+ GPU machine, repo root): validate/device_session_loaded.sh [BINARY]; writes $OUT/r.tgz.
# Made validate/results/h200x2-nvlink-e/: the 2-rank all-to-all with the
# clock down (after >= 300 ms of GEMMs on both GPUs) against rested
# (`nccl_all_to_all_loaded`), NCCL defaults twice and NCCL_P2P_DISABLE=1 once,
# with nvidia-smi sampling clocks and power every 100 ms.
set -u
source "$(dirname "$0")/device_session_lib.sh"
session_start "${1:-}"
validate/run_on_device.sh $B $O loaded-1 --filter '^nccl_all_to_all_loaded$' --watchdog 60 --verbose 2> $O/loaded-1.err
mark "loaded-1 rc=$?"
NCCL_P2P_DISABLE=1 validate/run_on_device.sh $B $O loaded-p2p-disable --filter '^nccl_all_to_all_loaded$' --watchdog 60 2> $O/loaded-p2p.err
mark "loaded-p2p-disable rc=$?"
validate/run_on_device.sh $B $O loaded-2 --filter '^nccl_all_to_all_loaded$' --watchdog 60 2> $O/loaded-2.err
mark "loaded-2 rc=$?"
session_end
