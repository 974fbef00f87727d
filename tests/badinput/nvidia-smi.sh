#!/usr/bin/env bash
# `topo --import-nvidia-smi` on damaged `nvidia-smi topo -m` captures: each
# refused naming the file, the line, the cell and what is wrong.
#   nvidia-smi.sh OVERLAPSIM SOURCE_DIR WORK_DIR
set -u
OSIM="$1" D="$2/tests/badinput/nvidia-smi" W="$3"
. "$2/tests/badinput/common.sh"
mkdir -p "$W"
import() { rm -f "$W/smi.yaml"; "$OSIM" topo --import-nvidia-smi "$1" -o "$W/smi.yaml"; }
import "$D/good.txt" > /dev/null || { echo "FAIL good.txt: not imported"; exit 1; }
refuse "$D/extra-cell.txt" ":4: error: GPU2 has 9 cells; the header has 8 (5 devices, CPU Affinity, NUMA Affinity, GPU NUMA ID): a cell too many" import "$D/extra-cell.txt"
refuse "$D/extra-affinity-cell.txt" ":4: error: GPU2 has 9 cells; the header has 8" import "$D/extra-affinity-cell.txt"
refuse "$D/missing-cell.txt" ":3: error: GPU1-NIC0 (cell 5 of the row): '0-31' is no relation nvidia-smi prints" import "$D/missing-cell.txt"
refuse "$D/missing-cell.txt" "a cell missing or one too many before it?" import "$D/missing-cell.txt"
refuse "$D/nic-extra-cell.txt" ":6: error: NIC0 CPU Affinity (cell 6 of the row): 'SYS' is no list of CPUs" import "$D/nic-extra-cell.txt"
for nv in nv-100000 nv-20-digits nv-0; do
  refuse "$D/$nv.txt" ":2: error: GPU0-GPU1 (cell 2 of the row): 'NV" import "$D/$nv.txt"
  refuse "$D/$nv.txt" "' is no plausible count of NVLinks (NV1 to NV36" import "$D/$nv.txt"
done
refuse "$D/numa-abc.txt" ":4: error: GPU2 NUMA Affinity (cell 7 of the row): 'abc' is no NUMA node (a number from 0 to 1023, or N/A)" import "$D/numa-abc.txt"
refuse "$D/numa-negative.txt" "'-1' is no NUMA node" import "$D/numa-negative.txt"
refuse "$D/numa-20-digits.txt" "'12345678901234567890' is no NUMA node" import "$D/numa-20-digits.txt"
refuse "$D/cpu-affinity-text.txt" ":2: error: GPU0 CPU Affinity (cell 6 of the row): 'zero to 31' is no list of CPUs" import "$D/cpu-affinity-text.txt"
finish nvidia-smi
