#!/usr/bin/env bash
# overlapsim compare and report on the reference machines' measured runs, each with the topology
# and calibration its manifest names (validate/reference/<machine>/manifest.yaml):
#   gaps            the measured gaps between two compute ops of a 4xH200 SP 4 prefetching run:
#                   ~10 us with every GPU's own prefetch running (720 gaps), ~3 us without
#   simulated_out   --simulated-out keeps the re-simulated run (records with the runs simulated before
#                   it, trace) and refuses to overwrite it without --force
#   report_measured report on a measured run folder: the median run's summary, metrics and trace where
#                   --out says (the run's own folder by default, refused there without --force)
#   report_damaged  report on a run folder whose schedule.yaml is cut short inside an op: refused,
#                   naming the file, the line and what to do
#   programs        compare --programs: the reference programs' twins simulated (the H200's 16
#                   configurations); a topology is required; --carry-from carries the H100's
#                   calibration to the H200 and leaves the H200's alone
#
#   bash tests/cli/compare.sh OVERLAPSIM REPO_ROOT WORK_DIR CASE
source "$(dirname "$0")/lib.sh"
case $case in
  gaps)
    M=$REF/h200x4-nvlink; V=$(manifest $M validation.runs); C=$(manifest $M calibration.file)
    "$osim" compare --simulate $V/sp4-pf2-default --calibration $C > $W/gaps.txt
    has $W/gaps.txt '^  [|][|] h2d +720 +7.169 ms +0.000 ms +9.86 us +0.00 us$' '^  alone +48 +0.142 ms +0.000 ms +2.96 us +0.00 us$' ;;
  simulated_out)
    M=$REF/h200x2-nvlink; V=$(manifest $M validation.runs); C=$(manifest $M calibration.file); RUN=$V/sp1-pf1-default; SO=$W/simulated-out
    "$osim" compare --simulate $RUN --calibration $C --simulated-out $SO > $W/so.txt
    has $W/so.txt 'simulated as run 4 of the schedule back to back'
    test -s $SO/sp1-pf1-default/trace.json || fail "no trace.json"
    has $SO/sp1-pf1-default/records.json '"runs_before":3'
    refused 2 'exists already' "$osim" compare --simulate $RUN --calibration $C --simulated-out $SO
    "$osim" compare --simulate $RUN --calibration $C --simulated-out $SO --force > /dev/null ;;
  report_measured)
    RUN=$REF/h100-sxm/validation/sp1-pf1-default
    "$osim" report $RUN --out $W/report > $W/report.txt
    has $W/report.txt '^  makespan 390.095 ms   2 steps'
    test -s $W/report/trace.json || fail "no trace.json"
    head -n -1 $W/report.txt | cmp - $W/report/summary.txt || fail "summary.txt is not what report printed"
    refused 2 'exists already' "$osim" report $RUN --out $W/report ;;
  report_damaged)
    RUN=$REF/h100-sxm/validation/sp1-pf1-default; D=$W/damaged
    mkdir -p $D && cp $RUN/records.json* $D/ && gzip -dc $RUN/schedule.yaml.gz > $W/whole.yaml
    L=$(grep -n '{op: kernel' $W/whole.yaml | sed -n 40p | cut -d: -f1)
    { head -n $((L - 1)) $W/whole.yaml; sed -n ${L}p $W/whole.yaml | cut -c1-30; } > $D/schedule.yaml
    refused 2 "$D/schedule.yaml:$((L + 1)):1: error" "$osim" report $D --out $W/damaged-report  # where the op was cut off
    has $W/refused.err 'YAML syntax error' 'copy it again, or write it again as the run did'
    test ! -e $W/damaged-report || fail "a report was written" ;;
  programs)
    M=$REF/h200
    P=$(manifest $M programs.runs); TOPO=$(manifest $M topology); C=$(manifest $M calibration.file)
    "$osim" compare --programs $P/*.json -t $TOPO --calibration $C > $W/programs.txt
    has $W/programs.txt '^  dit-16384-none +182.88 ms +185.69 ms +[+]1.5%$' '^  dit-4096: 8 programs, makespan error median 1.0 %, worst 4.3 %, rank correlation 0.95$'
    # --carry-from (the topology the calibration was fitted on): another GPU family's carried to this
    # topology's GPU, one of the same family's left as it is.
    H=$REF/h100-sxm
    "$osim" compare --programs $P/*.json -t $TOPO --calibration $(manifest $H calibration.file) --carry-from $(manifest $H topology) > $W/carried.txt
    has $W/carried.txt '^calibration carried from H100-SXM5 to H200 through the datasheets' 'SMs 132 -> 132 .*: shares x0.698$' \
      '^16 programs: makespan error median 2.2 %, worst 17.4 %'
    "$osim" compare --programs $P/*.json -t $TOPO --calibration $C --carry-from $TOPO | cmp - $W/programs.txt ||
      fail "--carry-from within one GPU family changed the output"
    refused 2 '' "$osim" compare --programs $M/programs/dit-4096-none.json
    has $W/refused.err 'needs the machine.s topology' ;;
  *) fail "no case $case" ;;
esac
ok
