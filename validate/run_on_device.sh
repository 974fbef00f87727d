#!/usr/bin/env bash
# Runs overlapsim-validate on a GPU machine and collects what a results folder
# needs: raw JSON, nvidia-smi topo -m, versions. Usage:
#   validate/run_on_device.sh BINARY OUTDIR NAME [bench options...]
# Finds libnccl.so.2 and libcublas.so.13 wherever they are (e.g. inside a
# Python environment's nvidia/ packages) and keeps NCCL_NVLS_ENABLE=0.
set -uo pipefail
bin=$1; out=$2; name=$3; shift 3
export NCCL_NVLS_ENABLE=0
libdirs=""
for lib in libnccl.so.2 libcublas.so.13 libcublasLt.so.13; do
  p=$(find / -xdev -name "$lib" -not -path '*/proc/*' 2>/dev/null | head -1)
  [ -n "$p" ] && libdirs="$libdirs:$(dirname "$p")"
done
export LD_LIBRARY_PATH="${libdirs#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$out"
nvidia-smi topo -m > "$out/nvidia-smi-topo.txt" 2>&1
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
{ echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"; ldd "$bin"; uname -a; cat /etc/os-release 2>/dev/null | head -2; } > "$out/versions-$name.txt" 2>&1
start=$(date +%s)
"$bin" bench -o "$out/bench-$name.json" "$@"
rc=$?
echo "bench $name: exit $rc after $(( $(date +%s) - start )) s" | tee -a "$out/versions-$name.txt"
exit $rc
