#!/usr/bin/env bash
# overlapsim import-trace on the 4xH200 reference trace (validate/reference/h200x4-nvlink/traces/,
# one torch.profiler trace per rank; topology, calibration and step ranges as its manifest names them).
#   import           the four ranks imported, its summary, re-simulated op by op within 20 % of the
#                    trace; the schedule runs with what-ifs; outputs refused without --force; a
#                    malformed trace names its file and line, exit 2.
#
#   bash tests/cli/import-trace.sh OVERLAPSIM REPO_ROOT WORK_DIR CASE
source "$(dirname "$0")/lib.sh"
M=$REF/h200x4-nvlink
T=$(manifest $M traces.runs); TOPO=$(manifest $M topology); C=$(manifest $M calibration.file); STEPS=$(manifest $M traces.steps)
O=$W
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
  *) fail "no case $case" ;;
esac
ok
