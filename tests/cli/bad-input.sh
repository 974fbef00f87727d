#!/usr/bin/env bash
# Careless input, one case per class: each refused with exit 2 and a message naming the file (line
# and column where there is one) and what is wrong; never a crash, a hang or an internal error.
#   NAME [--exit=N] EXPECT ARGS...
#                        `overlapsim ARGS...` from the repository's root (the inputs under
#                        tests/cli/bad-inputs/) exits 2 (or N: 0 where the input is read with a
#                        note that accounts for it) within 60 s, its output holding EXPECT and no
#                        internal error or sanitizer report; %OUT% in ARGS is the case's own folder
#   flag_values          a bad flag or value exits 2 like every input error; a gate of NaN is
#                        refused, not switched off
# The cases of the issue-78 audit (one a case of it) that need more than one command:
#   smi_spaces           an nvidia-smi matrix whose tabs became spaces (copied from a terminal) is
#                        imported as the tabbed one is, to the byte
#   smi_crlf             the same with CRLF line ends (the 18 devices of a DGX H100)
#   ref_full_empty       a shipped reference manifest with `calibration.sources: []`: its line
#   sweep_1e6, sweep_1e7, sweep_overflow
#                        grids of 10^6, 10^7 and past 10^19 points refused before enumerating,
#                        naming the count and --max-points
#   merge_two_sweeps     shards of two different sweeps; merge_no_header: a shard without its line
#   sweep_locked         a second sweep on a locked -o; sweep_after_kill: one killed (-9) midway
#                        leaves its journal, which the next run names (--resume or --force)
#   run_term_0.2, run_term_0.5
#                        run --out sent SIGTERM at that second: finished or stopped, nothing left
#   run_force_term       the same over an earlier run (--force): the earlier folder intact
#
#   bash tests/cli/bad-input.sh OVERLAPSIM REPO_ROOT WORK_DIR CASE [[--exit=N] EXPECT ARGS...]
source "$(dirname "$0")/lib.sh"
cd $root
BAD=tests/cli/bad-inputs
WL=$CFG/workloads/wan22-720p-aces-layerwise.yaml
CRASH='internal error|terminate called|Segmentation|AddressSanitizer|LeakSanitizer|runtime error:'
# sure RC EXPECT CMD...: CMD exits RC within 60 s, its output holds EXPECT (fixed) and no crash.
sure() {
  local want=$1 expect=$2 rc=0; shift 2
  timeout 60 "$@" > $W/out.txt 2>&1 || rc=$?
  cat $W/out.txt
  [ $rc = $want ] || fail "exit $rc, not $want"
  grep -qF -- "$expect" $W/out.txt || fail "no message '$expect'"
  ! grep -qE "$CRASH" $W/out.txt || fail "a crash or an internal error"
}
# grid N: a sweep file of N axes of 100 values each (the base's GEMM sizes), on stdout.
grid() {
  printf 'name: big\nschedule: %s/%s/sweep/schedule.yaml\ngrid:\n' $root $BAD
  local keys=(m n k) i
  for ((i = 0; i < $1; i++)); do
    echo "  programs.0.ops.$((i / 3)).gemm.${keys[i % 3]}: [$(seq -s ', ' ${2:-64} $((${2:-64} + ${3:-100} - 1)))]"
  done
}
case $case in
  flag_values)
    refused 2 'is not a percentage' "$osim" sweep configs/sweeps/prefetch-sp-pcie-vs-nvlink.yaml --tolerance inf -o $W/never.csv
    refused 2 '' "$osim" compare --simulate x --max-error nan
    refused 2 '' "$osim" run --no-such-flag
    test ! -e $W/never.csv || fail "a refused sweep wrote its CSV"
    "$osim" --help > /dev/null ;;
  smi_spaces)  # each copy named node.txt: the name and header comment come from the file's name
    mkdir $W/tabs $W/spaces && cp tests/badinput/nvidia-smi/good.txt $W/tabs/node.txt && cp $BAD/nvidia-smi/spaces-good.txt $W/spaces/node.txt
    sure 0 'spaces/node.yaml: 5 devices' "$osim" topo --import-nvidia-smi $W/spaces/node.txt -o $W/spaces/node.yaml
    grep -qF 'note: 6 line(s) of the matrix have no tabs (copied from a terminal?): their cells were split at spaces' $W/out.txt || fail "no note"
    "$osim" topo --import-nvidia-smi $W/tabs/node.txt -o $W/tabs/node.yaml > $W/tabs.txt
    ! grep -q 'no tabs' $W/tabs.txt || fail "a note on the tabbed matrix"
    cmp $W/tabs/node.yaml $W/spaces/node.yaml || fail "the spaced matrix imports otherwise than the tabbed one" ;;
  smi_crlf)
    mkdir $W/lf $W/crlf && cp $DATA/nvidia-smi/dgx-h100.txt $W/lf/node.txt && sed 's/$/\r/' $W/lf/node.txt > $W/crlf/node.txt
    sure 0 'crlf/node.yaml: 18 devices' "$osim" topo --import-nvidia-smi $W/crlf/node.txt -o $W/crlf/node.yaml
    "$osim" topo --import-nvidia-smi $W/lf/node.txt -o $W/lf/node.yaml > /dev/null
    cmp $W/lf/node.yaml $W/crlf/node.yaml || fail "CRLF line ends import otherwise" ;;
  ref_full_empty)
    mkdir $W/ref && sed -E '/^  sources:/,/^[a-z]/{/^  sources:/c\  sources: []
/^            /d}; s|\.\./\.\./\.\./configs|'$root/configs'|' $REF/h200x2-nvlink/manifest.yaml > $W/ref/manifest.yaml
    line=$(grep -n '^  sources: \[\]' $W/ref/manifest.yaml | cut -d: -f1)
    sure 2 "ref/manifest.yaml:$line:12: error: calibration 'sources': expected a list of the bench files" "$osim" reference $W/ref ;;
  sweep_1e6)
    grid 3 > $W/s.yaml
    sure 2 "s.yaml: error: 1000000 points (100 programs.0.ops.0.gemm.m x 100 programs.0.ops.0.gemm.n x 100 programs.0.ops.0.gemm.k): more than the limit of 100000 a run. Pass --max-points 1000000" \
      "$osim" sweep $W/s.yaml -o $W/s.csv -j 1 --no-progress
    test ! -e $W/s.csv || fail "a refused sweep wrote its CSV" ;;
  sweep_1e7)
    { grid 3; echo "  programs.0.ops.1.gemm.m: [$(seq -s ', ' 64 73)]"; } > $W/s.yaml
    sure 2 "s.yaml: error: 10000000 points (" "$osim" sweep $W/s.yaml -o $W/s.csv -j 1 --no-progress
    grep -qF 'Pass --max-points 10000000' $W/out.txt || fail "no --max-points" ;;
  sweep_overflow)
    grid 6 64 2000 > $W/s.yaml
    sure 2 "s.yaml: error: more than 10^19 points (2000 programs.0.ops.0.gemm.m x 2000 programs.0.ops.0.gemm.n" \
      "$osim" sweep $W/s.yaml -o $W/s.csv -j 1 --no-progress ;;
  merge_two_sweeps | merge_no_header)
    "$osim" sweep $BAD/sweep/good.yaml --shard 1/2 -o $W/sh1.csv -j 1 --no-progress > /dev/null
    "$osim" sweep $BAD/sweep/other.yaml --shard 2/2 -o $W/sh2.csv -j 1 --no-progress > /dev/null
    if [ $case = merge_two_sweeps ]; then
      sure 2 "sh2.csv:1:1: error: shard 2/2 of sweep " "$osim" merge $W/sh1.csv $W/sh2.csv -o $W/merged.csv
      grep -qF 'these are shards of different sweeps' $W/out.txt || fail "not said: different sweeps"
    else
      tail -n +2 $W/sh2.csv > $W/sh2-nohdr.csv
      sure 2 "sh2-nohdr.csv:1:1: error: not a shard's CSV (it has no '# overlapsim sweep shard I/N of HASH' line)" \
        "$osim" merge $W/sh1.csv $W/sh2-nohdr.csv -o $W/merged.csv
    fi
    test ! -e $W/merged.csv || fail "a refused merge wrote its CSV" ;;
  sweep_locked)
    grid 1 > $W/s.yaml
    sure 2 "lock.csv: error: another overlapsim sweep is writing this CSV (it holds $W/lock.csv.lock): wait for it to finish, or choose another output" \
      flock $W/lock.csv.lock "$osim" sweep $W/s.yaml -o $W/lock.csv -j 1 --no-progress --force ;;
  sweep_after_kill)
    grid 1 64 2000 > $W/s.yaml
    "$osim" sweep $W/s.yaml -o $W/k.csv -j 1 --no-progress > /dev/null 2>&1 & pid=$!
    until [ $(wc -l < $W/k.csv.journal 2> /dev/null || echo 0) -ge 3 ]; do kill -0 $pid || fail "the sweep ended before it was cut"; done
    kill -9 $pid; wait $pid || true
    sure 2 "k.csv.journal: error: an interrupted run of this sweep left its finished points here: pass --resume to go on from them, or --force to start over" \
      "$osim" sweep $W/s.yaml -o $W/k.csv -j 1 --no-progress ;;
  run_term_*)
    rc=0; timeout -s TERM ${case#run_term_} "$osim" run $WL --out $W/run > /dev/null 2> $W/err.txt || rc=$?
    cat $W/err.txt
    [ $rc = 0 -o $rc = 124 ] || fail "exit $rc"
    ! grep -qE "$CRASH" $W/err.txt || fail "a crash or an internal error"
    ! compgen -G "$W/.run.tmp*" > /dev/null || fail "temporary outputs left: $(ls -A $W)"
    [ $rc = 124 ] && ! test -e $W/run || [ $rc = 0 -a -e $W/run/metrics.json ] || fail "a run folder in part: $(ls -A $W/run)" ;;
  run_force_term)
    "$osim" run $WL --out $W/run > /dev/null && md5sum $W/run/* > $W/run.md5
    # 400 steps (seconds of work) so that TERM lands mid-run, not after the swap of a run that just ended
    rc=0; timeout -s TERM 0.5 "$osim" run $WL --set offload.prefetch_size=1 --set steps=400 --out $W/run --force > /dev/null 2> $W/err.txt || rc=$?
    cat $W/err.txt
    [ $rc = 0 -o $rc = 124 ] || fail "exit $rc"
    ! compgen -G "$W/.run.tmp*" > /dev/null || fail "temporary outputs left: $(ls -A $W)"
    [ $rc = 0 ] || md5sum --quiet -c $W/run.md5 || fail "the earlier run's folder changed" ;;
  *)
    want=2
    case ${1:-} in --exit=*) want=${1#--exit=}; shift ;; esac
    expect=${1:?$case: give EXPECT and the ARGS}; shift
    sure $want "$expect" "$osim" "${@//%OUT%/$W}" ;;
esac
ok
