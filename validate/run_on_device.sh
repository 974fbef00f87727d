#!/usr/bin/env bash
# Runs overlapsim-validate on a GPU machine and collects what a results folder
# needs: raw JSON, nvidia-smi topo -m, versions. Usage:
#   validate/run_on_device.sh BINARY OUTDIR NAME [bench options...]
# Libraries and NCCL_NVLS_ENABLE=0: see device_env.sh.
set -uo pipefail
bin=$1; out=$2; name=$3; shift 3
source "$(dirname "$0")/device_env.sh" "$bin"
mkdir -p "$out"
nvidia-smi topo -m > "$out/nvidia-smi-topo.txt" 2>&1
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
{ echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"; ldd "$bin"; uname -a; cat /etc/os-release 2>/dev/null | head -2; } > "$out/versions-$name.txt" 2>&1
start=$(date +%s)
"$bin" bench -o "$out/bench-$name.json" "$@"
rc=$?
echo "bench $name: exit $rc after $(( $(date +%s) - start )) s" | tee -a "$out/versions-$name.txt"
exit $rc
