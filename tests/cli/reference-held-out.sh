#!/usr/bin/env bash
# Reference data the manifests hold no figures for, checked with the shipped
# topologies and calibrations (docs/accuracy.md):
#   h200x4_held_out_box  boxes whose programs the 4xH200 calibration never saw
#     (programs-run-3/, and -4/ minutes later on the same box, which gave it
#     PyTorch's all-to-all microbenchmark; programs-run-5/ on another): within
#     the median (3 %). Run 5 measured each rank's host issue time: the
#     twins' hosts issue their ops 2-7x faster than PyTorch's did ("The host's pace").
#   h200_programs_run_2  the single-GPU programs again, on GPU 0 of a 4xH200 box
#     (h200/programs-run-2/) and on another 1xH200 box (programs-run-3/): within 3 % (median).
#   h200_block_loop_second_run  the block loop's second run on the calibration's box, replayed
#     out of sample with the wait return fitted from the first; another box's
#     framework.py run fits its own ("A block loop's waits").
#
#   bash tests/cli/reference-held-out.sh OVERLAPSIM REPO_ROOT WORK_DIR CASE
set -euo pipefail
osim=${1:?usage: reference-held-out.sh OVERLAPSIM REPO_ROOT WORK_DIR CASE}; root=${2:?}; W=${3:?}; case=${4:?}
REF=$root/validate/reference; CFG=$root/configs
mkdir -p "$W"
case $case in
  h200x4_held_out_box)
    "$osim" compare --programs $REF/h200x4-nvlink/programs-run-3/*.json $REF/h200x4-nvlink/programs-run-4/*.json \
      $REF/h200x4-nvlink/programs-run-5/*.json -t $CFG/topologies/h200x4-nvlink.yaml --calibration $CFG/calibrations/h200x4-nvlink.yaml \
      --max-median-error 3 > $W/held-out.txt
    grep -q '^108 programs: makespan error median' $W/held-out.txt
    grep -Eq '^  dit-sp4-16384-pairwise-none +69.34 ms +18.50 ms +-73.3%$' $W/held-out.txt
    grep -q '^36 programs measured their host issue time: error median 41.4 %, worst 83.7 %$' $W/held-out.txt
    grep -q 'the twins. not .*: dit-sp4-16384-pairwise-layerwise-pf1-pinned dit-sp4-16384-pairwise-none$' $W/held-out.txt ;;
  h200_programs_run_2)
    "$osim" compare --programs $REF/h200/programs-run-2/*.json -t $CFG/topologies/h200x4-nvlink.yaml \
      --calibration $CFG/calibrations/h200.yaml --max-median-error 3 --csv $W/h200-run-2.csv --force > $W/h200-run-2.txt
    grep -q '^16 programs: makespan error median 0.8 %, worst 9.6 %' $W/h200-run-2.txt
    grep -Eq '^  dit-16384-none +7.52 ms +6.12 ms +-18.7%$' $W/h200-run-2.txt
    grep -q '^dit-16384-none,dit-16384,184.4301,185.6935,0.685,7.5207,6.1155$' $W/h200-run-2.csv
    "$osim" compare --programs $REF/h200/programs-run-3/*.json -t $CFG/topologies/h200x4-nvlink.yaml \
      --calibration $CFG/calibrations/h200.yaml --max-median-error 3 > $W/h200-run-3.txt
    grep -q '^16 programs: makespan error median 1.3 %, worst 8.7 %' $W/h200-run-3.txt ;;
  h200_block_loop_second_run)
    "$osim" calibrate $REF/h200/framework-sync-return-4.json -t $CFG/topologies/h200x4-nvlink.yaml \
      --replay-with $CFG/calibrations/h200.yaml > $W/block-loop.txt
    grep -Eq '^overhead_framework_sync_return block_loop: .* 69.9 us +60.3 us +-13.8%$' $W/block-loop.txt
    grep -Eq '^overhead_framework_sync_return block_loop_compute: .* 171.5 us +243.6 us +[+]42.0%$' $W/block-loop.txt
    "$osim" calibrate $REF/h200/bench-default.json.gz $REF/h200/framework-3.json -t $CFG/topologies/h200x4-nvlink.yaml \
      -o $W/box-e.yaml --force > /dev/null
    grep -q '^  framework_wait_return: 19.5894 us$' $W/box-e.yaml ;;
  *) echo "reference-held-out.sh: no case $case" >&2; exit 2 ;;
esac
echo "held-out ok: $case"
