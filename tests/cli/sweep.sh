#!/usr/bin/env bash
# overlapsim sweep and merge on the shipped sweeps (configs/sweeps/):
#   threads_and_shards  the same CSV with 1 or 2 threads, and three shards merged into the unsharded
#                       CSV, byte for byte; the recommendation printed
#   missing_shard       merge of shards 1 and 3 of 3 (threads_and_shards's) refused: point 1 is in none
#   resume              a sweep killed midway goes on from its journal with --resume into the CSV an
#                       uninterrupted run writes; a journal left behind is never silently dropped
#   bounded_and_honest  a grid past --max-points refused before it starts (nothing written), a sweep with
#                       a failing point exits 1 saying how many, a second sweep on a locked -o refused,
#                       merge refuses shards of two sweeps with the same columns
#   usp                 the Ulysses x ring sweep runs every point
#   tp_overlap          seed 002's question: chunked TP overlap against in-line collectives on PCIe and
#                       NVLink; chunked wins on both (the H100s' measured defaults)
#
#   bash tests/cli/sweep.sh OVERLAPSIM REPO_ROOT WORK_DIR CASE
source "$(dirname "$0")/lib.sh"
S=$CFG/sweeps/prefetch-sp-pcie-vs-nvlink.yaml
WL=$CFG/workloads/wan22-720p-aces-layerwise.yaml
case $case in
  threads_and_shards)
    "$osim" sweep $S -o $W/j1.csv -j 1 > /dev/null
    "$osim" sweep $S -o $W/j2.csv -j 2 > $W/j2.txt
    cmp $W/j1.csv $W/j2.csv || fail "1 and 2 threads differ"
    for i in 1 2 3; do "$osim" sweep $S --shard $i/3 -o $W/s$i.csv > /dev/null; done
    "$osim" merge $W/s1.csv $W/s2.csv $W/s3.csv -o $W/merged.csv --sweep $S > /dev/null
    cmp $W/j1.csv $W/merged.csv || fail "the merged shards differ from the whole sweep"
    has $W/j2.txt 'recommendation: on aces-4xh100-pcie' ;;
  missing_shard)
    SW=$top/sweep.threads_and_shards
    refused 2 'point 1 is in no shard' "$osim" merge $SW/s1.csv $SW/s3.csv -o $W/bad.csv ;;
  resume)
    "$osim" sweep $S -o $W/whole.csv --resume > /dev/null
    test ! -e $W/whole.csv.journal || fail "a finished sweep left its journal"
    "$osim" sweep $S -o $W/cut.csv -j 1 > /dev/null & pid=$!
    until [ $(wc -l < $W/cut.csv.journal 2> /dev/null || echo 0) -ge 3 ]; do kill -0 $pid || fail "the sweep ended before it was cut"; done
    kill -9 $pid; wait $pid || true
    test ! -e $W/cut.csv || fail "a cut sweep wrote its CSV"
    rows=$(($(wc -l < $W/cut.csv.journal) - 2))
    refused 2 'pass --resume' "$osim" sweep $S -o $W/cut.csv
    "$osim" sweep $S -o $W/cut.csv --resume > $W/resumed.txt
    has $W/resumed.txt 'points finished already'
    cmp $W/whole.csv $W/cut.csv || fail "the resumed CSV differs from the whole sweep's"
    test ! -e $W/cut.csv.journal || fail "the resumed sweep left its journal"
    echo "resumed after $rows rows" ;;
  bounded_and_honest)
    printf 'name: big\nworkload: %s\ngrid:\n  steps: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n  video.frames: [5, 9, 13, 17, 21, 25, 29, 33, 37, 41]\n  parallelism.ulysses: [1, 2, 4]\n  offload.prefetch_size: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34]\n' $WL > $W/big.yaml
    refused 2 '10500 points (10 steps x 10 video.frames x 3 parallelism.ulysses x 35 offload.prefetch_size): more than the limit of 1000 a run. Pass --max-points 10500' \
      "$osim" sweep $W/big.yaml -o $W/big.csv --max-points 1000
    test ! -e $W/big.csv -a ! -e $W/big.csv.journal || fail "a refused sweep wrote its CSV or journal"
    for n in 1 2; do printf 'name: s%s\nworkload: %s\nset: {steps: %s}\ngrid:\n  offload.prefetch_size: [1, 99]\n' $n $WL $n > $W/s$n.yaml; done
    refused 1 '' "$osim" sweep $W/s1.yaml -o $W/s1.csv --no-progress
    has $W/refused.err '^1 of 2 points failed'
    refused 2 '' flock $W/s1.csv.lock "$osim" sweep $W/s1.yaml -o $W/s1.csv --force
    has $W/refused.err 'another overlapsim sweep is writing this CSV'
    "$osim" sweep $W/s1.yaml --shard 1/2 -o $W/a1.csv > /dev/null || true
    "$osim" sweep $W/s2.yaml --shard 2/2 -o $W/b2.csv > /dev/null || true
    refused 2 'these are shards of different sweeps' "$osim" merge $W/a1.csv $W/b2.csv -o $W/mixed.csv
    test ! -e $W/mixed.csv || fail "a refused merge wrote its CSV" ;;
  usp)
    cd $root
    "$osim" sweep configs/sweeps/usp-ulysses-ring-dgx.yaml -o $W/usp.csv --force > $W/usp.txt
    has $W/usp.txt '^4 points: 4 ran, 0 failed'
    test $(grep -c ',ok,' $W/usp.csv) -eq 4 || fail "not 4 ok rows" ;;
  tp_overlap)
    cd $root
    "$osim" sweep configs/sweeps/tp-overlap-nvlink-vs-pcie.yaml -o $W/tp.csv --force > $W/tp.txt
    has $W/tp.txt '^10 points: 10 ran, 0 failed' 'on aces-4xh100-pcie, run parallelism.tp_overlap=chunked' 'on dgx-h100, run parallelism.tp_overlap=chunked' ;;
  *) fail "no case $case" ;;
esac
ok
