#!/usr/bin/env bash
# overlapsim import-trace on the 4xH200 reference trace (validate/reference/h200x4-nvlink/traces/,
# one torch.profiler trace per rank; topology, calibration and step ranges as its manifest names them).
#   import           the four ranks imported, its summary, re-simulated op by op within 20 % of the
#                    trace; the schedule runs with what-ifs; outputs refused without --force; a
#                    malformed trace names its file and line, exit 2.
#   symmetric_ranks  rank 2's trace alone replayed as every rank of the job (--symmetric-ranks): its
#                    step within 1 % of the four ranks' import (105.585 against 105.435 ms); two traces,
#                    or one of a single-GPU run, refused saying why.
#
#   bash tests/cli/import-trace.sh OVERLAPSIM REPO_ROOT WORK_DIR CASE
source "$(dirname "$0")/lib.sh"
M=$REF/h200x4-nvlink
T=$(manifest $M traces.runs); TOPO=$(manifest $M topology); C=$(manifest $M calibration.file); STEPS=$(manifest $M traces.steps)
O=$W
# step FILE: the step time `run` prints (ms).
step() { sed -En 's/^  makespan .* steps, step time mean ([0-9.]+) ms .*/\1/p' "$1"; }
case $case in
  import)
    "$osim" import-trace $T/*.trace.json.gz --steps "$STEPS" -t $TOPO -o $O/imp > $O/imp.txt
    has $O/imp.txt '^4 rank.s., 46516 trace events$' '^ +256  collective all_to_all$' '^steps: 1$'
    "$osim" compare --simulate $O/imp --calibration $C --max-error 20 > $O/compare.txt
    has $O/compare.txt '^  step 0 .step 0. +1 +91.077 ms'
    "$osim" run $O/imp/schedule.yaml --calibration $C --host-memory pageable --remodel-kernels > $O/whatif.txt
    has $O/whatif.txt '^  makespan'
    refused 2 'exists already' "$osim" import-trace $T/*.rank0.trace.json.gz -o $O/imp
    refused 2 'bad-trace.json:3: error: not JSON' "$osim" import-trace $DATA/bad-trace.json -o $O/bad.yaml ;;
  symmetric_ranks)
    "$osim" import-trace $T/*.trace.json.gz --steps "$STEPS" -t $TOPO -o $O/all > /dev/null
    "$osim" import-trace $T/*.rank2.trace.json.gz --symmetric-ranks --steps "$STEPS" -t $TOPO -o $O/r2 > $O/r2.txt
    has $O/r2.txt '^4 rank.s., ' "^note: rank 2's trace replayed as each of the job's 4 ranks \(--symmetric-ranks\)"
    "$osim" run $O/all/schedule.yaml --calibration $C > $O/all-run.txt
    "$osim" run $O/r2/schedule.yaml --calibration $C > $O/r2-run.txt
    has $O/r2-run.txt '^schedule .*: 4 ranks on h200x4-nvlink'
    a=$(step $O/all-run.txt); b=$(step $O/r2-run.txt)
    [ -n "$a" ] && [ -n "$b" ] || fail "no step time printed"
    python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(abs(b - a) > 0.01 * a)' $a $b ||
      fail "rank 2 as every rank: step $b ms, more than 1 % from the four ranks' $a ms"
    echo "step: rank 2 as every rank $b ms, the four ranks $a ms"
    refused 2 "--symmetric-ranks takes one rank's trace: give one file" \
      "$osim" import-trace $T/*.rank0.trace.json.gz $T/*.rank1.trace.json.gz --symmetric-ranks -o $O/two
    refused 2 "--symmetric-ranks: the trace's distributedInfo names no job of several ranks" \
      "$osim" import-trace $REF/h100-sxm/traces/dit-16384-layerwise-pf0-pinned.trace.json.gz --symmetric-ranks -o $O/single
    [ ! -e $O/two ] && [ ! -e $O/single ] || fail "a refused import wrote its output" ;;
  *) fail "no case $case" ;;
esac
ok
