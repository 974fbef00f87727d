#!/usr/bin/env bash
# overlapsim topo:
#   import_nvidia_smi  --import-nvidia-smi: a bench result's matrix (its GPUs and PCIe links too) to a
#                      topology that reproduces it; refused over an existing file; topo --nvidia-smi
#                      prints a topology's matrix
#   import_c2c         a (synthetic) GH200 pair: --nvidia-smi-c2c, or a bench result's recorded
#                      `nvidia-smi c2c -s`, gives each GPU an nvlink_c2c host link at its links' sum;
#                      --nvidia-smi-q's GPU C2C Mode Enabled one at 450 GB/s ASSUMED; the same
#                      matrix without either keeps PCIe host links; the bench's GPUs (NVIDIA GH200
#                      480GB, PCIe x1) get the GH200's datasheet row, the x1 only their own PCIe lines
#                      (NICs gen5 x16), and without the C2C capture the x1 is pointed out
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
    has $W/bench.yaml '^  - \{name: gpu0, kind: gpu, model: GH200, memory: 96 GiB, hbm_bandwidth: 4.0 TB/s, sms: 132, .*# NVIDIA GH200 480GB$' \
      '^  - \{name: gpu_pcie-gpu1, role: gpu_pcie, a: gpu1, b: rc1, pcie: gen5 x1, latency: 1 us\}$' \
      '^  - \{name: nic_pcie-nic1, role: nic_pcie, a: nic1, b: rc3, pcie: gen5 x16, latency: 1 us\}$' \
      "^# The GPUs' PCIe links are gen5 x1 as nvidia-smi reported them; the NICs' and switches' are gen5 x16$"
    ! grep -q "reports the GPUs' PCIe link" $W/bench.txt || fail "the x1 pointed out though the bench recorded C2C links"
    sed 's/"nvidia_smi_c2c"/"c2c_not_captured"/' $S-bench.json > $W/no-c2c.json  # a bench from before it recorded C2C
    "$osim" topo --import-nvidia-smi $W/no-c2c.json -o $W/no-c2c.yaml > $W/no-c2c.txt
    has $W/no-c2c.txt "^nvidia-smi reports the GPUs' PCIe link as gen5 x1, as a Grace Hopper's GPU does .*: give --nvidia-smi-c2c or --nvidia-smi-q"
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
