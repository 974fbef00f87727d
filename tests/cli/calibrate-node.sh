#!/usr/bin/env bash
# validate/calibrate-node.sh without a GPU (its --fit-only half), called from another folder:
#   fit_only.MACHINE  --fit-only on a reference folder with a relative --out: the manifest's sources and
#                     topology fit the calibration the manifest names (configs/calibrations/) byte for
#                     byte, and nothing is written into the reference folder
#   paths             the caller's paths: a relative --out that cannot be measured into leaves no folder
#                     (there or at the root); --fit-only FROM fits gzipped results in FROM, the VAE
#                     steps' conv.json and channels-first.json among them
#
#   bash tests/cli/calibrate-node.sh OVERLAPSIM REPO_ROOT WORK_DIR CASE
source "$(dirname "$0")/lib.sh"
node() { OVERLAPSIM=$osim bash $root/validate/calibrate-node.sh "$@"; }
cd $W
case $case in
  fit_only.*)
    M=$REF/${case#fit_only.}
    node --fit-only $M --out fit > fit.txt
    C=$(manifest $M calibration.file)
    cmp fit/calibration.yaml $C || fail "not the calibration $C"
    test ! -e $M/calibration.yaml -a ! -e $M/report.txt || fail "wrote into $M" ;;
  paths)
    R=$REF/h100-sxm; mkdir res
    if ! command -v nvidia-smi > /dev/null; then
      refused 2 'no nvidia-smi' node --out nodir
      test ! -e nodir -a ! -e $root/nodir || fail "a run that could not measure left its --out folder"
    fi
    cp $R/bench-default.json.gz res/; gzip -c $R/attention.json > res/attention.json.gz; cp $R/bench-phase-2.json.gz res/
    cp $R/conv/conv.json.gz $R/channels-first/channels-first.json.gz res/
    node --fit-only res > fit.txt
    has res/calibration.yaml '^#   .*res/bench-default.json.gz$' '^#   .*res/attention.json.gz$' '^#   .*res/conv.json.gz$' \
      '^#   .*res/channels-first.json.gz$'
    has res/report.txt 'fitted from 4 files' '^  second run \(.*res/bench-phase-2.json.gz\)'
    test -s res/topology.yaml || fail "no topology.yaml" ;;
  *) fail "no case $case" ;;
esac
ok
