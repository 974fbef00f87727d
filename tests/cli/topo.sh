#!/usr/bin/env bash
# overlapsim topo:
#   import_nvidia_smi  --import-nvidia-smi: a bench result's matrix (its GPUs and PCIe links too) to a
#                      topology that reproduces it; refused over an existing file; topo --nvidia-smi
#                      prints a topology's matrix
#
#   bash tests/cli/topo.sh OVERLAPSIM REPO_ROOT WORK_DIR CASE
source "$(dirname "$0")/lib.sh"
case $case in
  import_nvidia_smi)
    "$osim" topo --import-nvidia-smi $REF/h200x4-nvlink/bench-default.json.gz -o $W/node.yaml > $W/node.txt
    has $W/node.txt 'every pair.s path type as nvidia-smi.s matrix has it'
    has $W/node.yaml 'model: H200' 'gen5 x16 \(the GPUs. link as nvidia-smi reported it\)' \
      'kind: host_bridge, throughput_from_host: 164.0 GB/s, throughput_to_host: 126.3 GB/s}  # measured'
    "$osim" topo $W/node.yaml > $W/topo.txt; has $W/topo.txt '4 GPUs, 0 NICs, 1 sockets'
    refused 2 'exists already' "$osim" topo --import-nvidia-smi $DATA/nvidia-smi/dgx-h100.txt -o $W/node.yaml
    "$osim" topo $CFG/topologies/dgx-h100.yaml --nvidia-smi > $W/matrix.txt
    has $W/matrix.txt $'^GPU0\t X \tNV18' ;;
  *) fail "no case $case" ;;
esac
ok
