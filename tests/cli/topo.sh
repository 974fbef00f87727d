#!/usr/bin/env bash
# overlapsim topo:
#   import_nvidia_smi  --import-nvidia-smi: a bench result's matrix (its GPUs and PCIe links too) to a
#                      topology that reproduces it; refused over an existing file; topo --nvidia-smi
#                      prints a topology's matrix
#   import_c2c         a (synthetic) GH200 pair: --nvidia-smi-c2c, or a bench result's recorded
#                      `nvidia-smi c2c -s`, gives each GPU an nvlink_c2c host link at its links' sum;
#                      --nvidia-smi-q's GPU C2C Mode Enabled one at 450 GB/s ASSUMED; the same
#                      matrix without either keeps PCIe host links
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
  import_c2c)
    S=$DATA/nvidia-smi/gh200x2-synthetic
    "$osim" topo --import-nvidia-smi $S-topo.txt --nvidia-smi-c2c $S-c2c.txt -o $W/text.yaml > $W/text.txt
    has $W/text.txt "^gpu1's host link: nvlink_c2c, 447.12 GB/s a direction"
    "$osim" topo --import-nvidia-smi $S-bench.json -o $W/bench.yaml > $W/bench.txt
    for f in text bench; do
      has $W/$f.yaml '^  - \{name: gpu_c2c-gpu0, role: gpu_c2c, a: gpu0, b: cpu0, kind: nvlink_c2c, bandwidth: 447.12 GB/s' \
        '^  - \{name: gpu_c2c-gpu1, role: gpu_c2c, a: gpu1, b: cpu1, kind: nvlink_c2c, bandwidth: 447.12 GB/s'
      "$osim" topo $W/$f.yaml > $W/$f-routes.txt
      has $W/$f-routes.txt '^  cpu0 +-> gpu0 +host .* cpu0 -> gpu0$' '^  gpu1 +-> cpu1 +host .* gpu1 -> cpu1$'
    done
    "$osim" topo --import-nvidia-smi $S-topo.txt --nvidia-smi-q $S-q.txt -o $W/q.yaml > $W/q.txt
    has $W/q.txt "^gpu0's host link: nvlink_c2c, 450 GB/s a direction ASSUMED \(nvidia-smi -q: GPU C2C Mode Enabled\)"
    has $W/q.yaml '^  - \{name: gpu_c2c-gpu1, role: gpu_c2c, a: gpu1, b: cpu1, kind: nvlink_c2c, bandwidth: 450 GB/s, .*# ASSUMED'
    "$osim" topo --import-nvidia-smi $S-topo.txt -o $W/pcie.yaml > /dev/null
    ! grep -q nvlink_c2c $W/pcie.yaml || fail "an nvlink_c2c link without a C2C capture"
    "$osim" topo $W/pcie.yaml > $W/pcie-routes.txt
    has $W/pcie-routes.txt '^  cpu0 +-> gpu0 +host .* cpu0 -> rc0 -> gpu0$' ;;
  *) fail "no case $case" ;;
esac
ok
