#!/usr/bin/env bash
# overlapsim run as a user meets it: its --out folder (written whole or not at all, no stale
# records, paths that survive a move), its trace, its flags, what its summary says.
#   workload_out           a workload's run folder and written schedule; the schedule runs again
#   every_flow_same        closed-form all-to-alls change no result: the summaries match with --every-flow
#   unwritable_out         an output path that cannot be written: one line naming it, exit 2
#   paths_survive_a_move   a written schedule names its topology so that it resolves from its own folder
#                          (absolute where the topology lies outside the folder the command runs from,
#                          relative to the file where both lie under it); a copied run folder reports there.
#                          WORK_DIR must lie under REPO_ROOT (the build folder's does)
#   records_bounded        past 1,000,000 ops (the 128-rank cluster's one step) records.json and --ops
#                          hold the traced ranks alone and say so (--ops within its 200 lines: rank 0's
#                          first ops, rank 1 named alike); --records-all writes every rank
#   out_no_stale_records   --out over an earlier run's folder removes that run's records.json
#   out_whole_or_nothing   killed while it writes, no folder (nor a temporary once the next run is done);
#                          a folder of other files gets the outputs beside them; a non-folder is refused
#   runs_before            --runs-before N: the sustained-load state of N runs before (a 2xH200 validation
#                          run with its manifest's calibration: rested, then after three runs); -1 refused
#   trace_streamed_gzip_default  a small run's full trace is the bytes the writer gave before it streamed
#                          them (its SHA-256: changes with the golden outputs when the model does),
#                          --trace-gzip the same compressed; past 32 ranks x steps the first steps, --trace-all all
#   trace_bad_flags        bad --trace-* values refused by flag with what to write, exit 2, nothing written
#   reports_handoffs       the engine hand-offs a calibrated run paid (the hand-off set's same-stream
#                          schedule: 200 copies after a kernel, 199 kernels after a copy) in the summary
#                          and metrics.json; none without a calibration
#   calibration_note       the calibration a run used (and its GPU), or the defaults; another GPU's flagged;
#                          one of fewer GPUs than the topology's names what it did not measure there
#   summary_fits_a_screen  a 1,024-rank run prints at most 60 lines: ranks whose kernels take 1-4 ms by
#                          rank % 4 in 4 rows of 256 alike ranks; 1 us x (1 + rank) as min, median, max
#   ops_table_bounded      a 64-rank schedule of 960 ops prints its per-op table by default within 200 lines
#                          (every rank's: 1,153): ranks 0-3 once for 4 groups of alike ranks, or the first
#                          11 of 64 different ones, and a note; --ops-all prints all 64 ranks, no note;
#                          a single rank of 1,000 ops (every row: 1,004 lines): its first 195 ops within 200
#                          lines and a note, --ops-all all 1,000
#   steady_state           sim/bench/steady_state.py on a run's records.json: the period it finds (the Hopper
#                          box's layerwise run, 4 steps) is what a fifth step adds to the makespan, two
#                          forwards' worth (to the 10 ps metrics.json prints); forwards that differ (Flux.1's first
#                          three, its GPUs warming up): none
#
#   bash tests/cli/run.sh OVERLAPSIM REPO_ROOT WORK_DIR CASE
source "$(dirname "$0")/lib.sh"
WL=$CFG/workloads/wan22-720p-aces-layerwise.yaml
ACES=$CFG/topologies/aces-4xh100-pcie.yaml
S1=$REF/h200/validation/sp1-pf0-default/schedule.yaml
case $case in
  workload_out)
    D=$W/run-out; rm -rf $D
    "$osim" run $WL --set steps=1 --out $D --schedule-out $D/schedule.yaml > /dev/null
    test -s $D/trace.json || fail "no trace.json"
    "$osim" run $D/schedule.yaml -t $ACES > $D.txt
    has $D.txt '^schedule wan22-720p-aces-layerwise: 4 ranks on aces-4xh100-pcie' ;;
  every_flow_same)
    for w in wan22-720p-aces-layerwise wan22-720p-dgx-sp8-layerwise; do
      "$osim" run $CFG/workloads/$w.yaml --set steps=4 > $W/$w.closed.txt
      "$osim" run $CFG/workloads/$w.yaml --set steps=4 --every-flow > $W/$w.every.txt
      diff $W/$w.closed.txt $W/$w.every.txt || fail "$w: --every-flow changed the summary"
      has $W/$w.closed.txt makespan
    done ;;
  unwritable_out)
    refused 2 '' "$osim" run $CFG/schedules/prefetch-overlap-2gpu.yaml --out /proc/overlapsim-nope
    has $W/refused.err '^/proc/overlapsim-nope: error: .*: choose another path' ;;
  paths_survive_a_move)
    D=$W/moved; rm -rf $D; mkdir -p $D/a $D/b/c; cd $W
    "$osim" run $WL --set steps=1 --out $D/a/run --records --schedule-out $D/a/run/schedule.yaml > /dev/null
    grep -qx "topology: $(readlink -f $ACES)" $D/a/run/schedule.yaml || fail "the written schedule's topology is not $ACES"
    mv $D/a/run/schedule.yaml $D/b/c/s.yaml
    "$osim" run $D/b/c/s.yaml --set 'gpus=[gpu3,gpu2,gpu1,gpu0]' > $D/placed.txt
    has $D/placed.txt '^  0 +gpu3 '
    "$osim" run $WL --set steps=1 --out $D/a/run --records --schedule-out $D/a/run/schedule.yaml --force > /dev/null
    cp -r $D/a/run $D/b/c/copied
    "$osim" report $D/b/c/copied --out $D/b/c/copied-report > $D/report.txt
    has $D/report.txt 'on aces-4xh100-pcie'
    test -s $D/b/c/copied-report/metrics.json || fail "the copied folder's report wrote no metrics.json"
    (cd $root && "$osim" run configs/workloads/wan22-720p-aces-layerwise.yaml --set steps=1 --schedule-out $D/rel.yaml > /dev/null)
    R=$(sed -n 's/^topology: //p' $D/rel.yaml)
    case $R in /*) fail "topology $R: absolute, though both files lie under $root";; esac
    test $R -ef $ACES || test $D/$R -ef $ACES || fail "topology $R does not name $ACES"
    (cd / && "$osim" run $D/rel.yaml) > $D/rel.txt
    has $D/rel.txt '^schedule wan22-720p-aces-layerwise: 4 ranks on aces-4xh100-pcie' ;;
  records_bounded)
    D=$W/bounded; C=$CFG/workloads/wan22-720p-cluster-sp128.yaml
    "$osim" run $C --set steps=1 --out $D/run --records --ops > $D.txt
    has $D.txt '^  records.json holds ranks 0-1 of 128, every op of theirs \(the default past 1000000 ops; the run has 1174272\): --records-all for every rank$' \
      "^\(the per-op table holds ops 0-193 of rank 0's 9174, 1 more rank with the same ops at the same times, 126 other ranks left out \(the default past 1000000 ops in the run: the trace's ranks, within 200 lines\): --ops-all for every op of every rank\)$" \
      '^  \(rank 1: the same ops at the same times\)$'
    [ "$(wc -l < $D.txt)" -le 240 ] || fail "--ops past 1000000 ops: $(wc -l < $D.txt) lines, not within the table's 200 and the summary"
    if grep -q '^rank [1-9][0-9]* on ' $D.txt; then fail "--ops printed a rank other than 0"; fi
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert [r['rank'] for r in j['ranks']] == [0, 1]; assert j['meta']['left_out'].startswith('records.json holds ranks 0-1 of 128')" $D/run/records.json ||
      fail "records.json: not ranks 0-1 with meta.left_out"
    "$osim" run $C --set steps=1 --out $D/all --records --records-all > $D-all.txt
    if grep -q 'records.json holds' $D-all.txt; then fail "--records-all still left ranks out"; fi
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert len(j['ranks']) == 128 and 'left_out' not in j['meta']" $D/all/records.json ||
      fail "--records-all: not 128 ranks" ;;
  out_no_stale_records)
    D=$W/stale; rm -rf $D
    "$osim" run $S1 --out $D --records > /dev/null
    test -s $D/records.json || fail "no records.json"
    "$osim" run $S1 --out $D --force > /dev/null
    test ! -e $D/records.json || fail "records.json of the earlier run left"
    test -s $D/metrics.json || fail "no metrics.json" ;;
  out_whole_or_nothing)
    AT=$W/atomic; rm -rf $AT && mkdir -p $AT
    "$osim" run $WL --set steps=2 --out $AT/run > /dev/null & pid=$!
    until ls $AT/.run.tmp$pid/metrics.json > /dev/null 2>&1 || ! kill -0 $pid 2> /dev/null; do sleep 0.01; done
    kill -9 $pid 2> /dev/null || true; wait $pid || true
    if [ -e $AT/run ]; then for f in metrics.json trace.json summary.txt; do test -s $AT/run/$f || fail "a part folder: no $f"; done; fi
    "$osim" run $S1 --out $AT/run --force > /dev/null
    [ "$(ls -A $AT)" = run ] || fail "left beside the run: $(ls -A $AT)"
    [ "$(ls $AT/run | tr '\n' ' ')" = "metrics.json summary.txt trace.json " ] || fail "the run folder holds $(ls $AT/run)"
    mkdir $AT/mine && touch $AT/mine/notes.txt
    "$osim" run $S1 --out $AT/mine > /dev/null
    test -e $AT/mine/notes.txt -a -s $AT/mine/trace.json || fail "a folder's own files not kept beside the outputs"
    refused 2 'exists already: pass --force' "$osim" run $S1 --out $AT/mine
    refused 2 'is not a folder' "$osim" run $S1 --out $AT/mine/notes.txt ;;
  runs_before)
    M=$REF/h200x2-nvlink; V=$(manifest $M validation.runs); C=$(manifest $M calibration.file); S=$V/sp1-pf1-default/schedule.yaml.gz
    "$osim" run $S --calibration $C > $W/rested.txt; has $W/rested.txt 'makespan 394.936 ms'
    "$osim" run $S --calibration $C --runs-before 3 > $W/after3.txt; has $W/after3.txt 'makespan 404.564 ms'
    refused 2 '' "$osim" run $S --runs-before -1 ;;
  trace_streamed_gzip_default)
    TR=$W/trace-select; rm -rf $TR
    "$osim" run $WL --set steps=2 --out $TR/plain > /dev/null
    sha256sum $TR/plain/trace.json | grep -q '^bfc77ce93b2a3e90ebb3175501534674f08f7a676c55101cede862da958e1bb2 ' ||
      fail "trace.json is not the bytes the writer gave (SHA-256 $(sha256sum < $TR/plain/trace.json))"
    "$osim" run $WL --set steps=2 --out $TR/gz --trace-gzip > $TR/gz.txt; has $TR/gz.txt 'trace.json.gz \(open in'
    test ! -e $TR/gz/trace.json || fail "--trace-gzip wrote trace.json too"
    gzip -dc $TR/gz/trace.json.gz | cmp - $TR/plain/trace.json || fail "the gzipped trace is not the plain one"
    "$osim" run $WL --set steps=9 --out $TR/nine > /dev/null
    has $TR/nine/summary.txt '^  the trace holds steps 0-7 of 0-8, all 4 ranks \(the default past 32 ranks x steps\): --trace-all'
    "$osim" run $WL --set steps=9 --out $TR/nine-all --trace-all > /dev/null
    if grep -q 'the trace holds' $TR/nine-all/summary.txt; then fail "--trace-all still selects"; fi
    test $(stat -c %s $TR/nine/trace.json) -lt $(stat -c %s $TR/nine-all/trace.json) || fail "the default trace is not smaller than --trace-all's" ;;
  trace_bad_flags)
    O=$W/trace-bad; rm -rf $O
    t() { local says=$1; shift; refused 2 "$says" "$osim" run $WL --set steps=2 "$@"; }
    t "--trace-steps: error: the range '3-1' runs backwards: write it '1-3'" --out $O --trace-steps 3-1
    t "--trace-ranks: error: 'x' is not an index in 'x': write indices and ranges from 0, e.g. '0-1,39'" --out $O --trace-ranks x
    t "--trace-ranks: error: the run has no rank 9 (its ranks are 0-3)" --out $O --trace-ranks 9
    t "--trace-steps: error: the run has no step 5 (its steps are 0-1)" --out $O --trace-steps 5
    t "--trace-all: error: it traces every rank and step: drop --trace-ranks and --trace-steps" --out $O --trace-all --trace-ranks 0
    t "choose what the --out folder's trace holds: give --out DIR" --trace-ranks 0
    test ! -e $O || fail "a refused run wrote $O" ;;
  reports_handoffs)
    HO=$W/handoff-run; rm -rf $HO; S=$root/validate/sets/handoff/same-stream/schedule.yaml
    "$osim" run $S --calibration $CFG/calibrations/h200.yaml --out $HO > $HO.txt
    has $HO.txt 'engine hand-offs \(copy after kernel, kernel after copy\): 399 on 1 rank, 2.194 ms in all'
    python3 -c "import json,sys; h=json.load(open(sys.argv[1]))['handoffs']; assert h['count']==399 and abs(h['time_s']-2.194e-3)<1e-6, h" $HO/metrics.json
    "$osim" run $S --calibration none --out $HO --force > $HO.txt
    if grep -q 'engine hand-offs' $HO.txt; then fail "hand-offs without a calibration"; fi
    python3 -c "import json,sys; assert 'handoffs' not in json.load(open(sys.argv[1]))" $HO/metrics.json ;;
  calibration_note)
    cd $root
    last() { "$osim" run "$@" | tail -2 > $W/note.txt; }
    last configs/workloads/wan22-720p-aces-layerwise.yaml --set steps=1
    has $W/note.txt '^calibration: the measured defaults for these GPUs \(configs/calibrations/h100-sxm.yaml, measured on NVIDIA H100 80GB HBM3, built in\)' \
      '^not measured for 4 GPUs \(the calibration measured 1\): NCCL.s collectives \(NCCL.s own model stands in: its channels, latencies and rates by size\)$'
    last configs/workloads/wan22-720p-h200-layerwise.yaml --set steps=1
    has $W/note.txt '^calibration: the measured defaults for these GPUs \(configs/calibrations/h200x4-nvlink.yaml, measured on 4x NVIDIA H200, built in\)'
    if grep -q '^not measured' $W/note.txt; then fail "a 4-GPU calibration on 4 GPUs: $(cat $W/note.txt)"; fi
    last configs/workloads/wan22-720p-aces-layerwise.yaml --set steps=1 --calibration none
    has $W/note.txt '^uncalibrated: the model.s datasheet defaults'
    last configs/workloads/wan21-480p-4090-block.yaml --set steps=1
    has $W/note.txt '^uncalibrated: the model.s datasheet defaults'
    last configs/workloads/wan22-720p-h200-calibrated.yaml --set steps=1
    has $W/note.txt '^calibration: configs/workloads/../calibrations/h200x4-nvlink.yaml \(measured on 4x NVIDIA H200\)$'
    "$osim" run configs/workloads/wan22-720p-aces-layerwise.yaml --set steps=1 --calibration configs/calibrations/h200.yaml | tail -3 > $W/note.txt
    has $W/note.txt '^warning: the calibration was measured on NVIDIA H200, the topology.s GPUs are H100-PCIe' ;;
  summary_fits_a_screen)
    # screen DURATION: every rank runs one kernel of DURATION ({rank} substituted), then syncs.
    screen() {
      printf 'name: ranks-1024\nranks: 1024\nstreams: [compute]\nprograms:\n  - rank: all\n    ops:\n' > $W/s.yaml
      printf '      - {op: kernel, name: work, stream: compute, duration: "%s"}\n      - {op: device_sync}\n' "$1" >> $W/s.yaml
      "$osim" run $W/s.yaml -t $CFG/topologies/h100-128node-ib.yaml > $W/out.txt
      [ "$(wc -l < $W/out.txt)" -le 60 ] || fail "$1: $(wc -l < $W/out.txt) lines"
      if grep -Eq '^  [0-9]+ +n[0-9]+_gpu' $W/out.txt; then fail "$1: a row a rank"; fi
    }
    screen '{1 + rank % 4} ms'
    has $W/out.txt '^  makespan 4.004 ms$' '^  1024 ranks in 4 groups of alike ranks \(every column the same\):$'
    for g in 0 1 2 3; do
      has $W/out.txt "^  $g,$((g + 4)),$((g + 8)),… \(256\) +$((g + 1)).000 ms +0.000 ns +0.000 ns +0.000 ns +0.000 ns +1.00 +0 B$"
    done
    screen '{1 + rank} us'
    has $W/out.txt '^  1024 ranks, spread over them: +min \(rank\) +median +max \(rank\)$' \
      '^    compute +1.000 us \(0\) +512.500 us +1.024 ms \(1023\)$' '^    comm +0.000 ns \(0\) +0.000 ns +0.000 ns \(1023\)$' ;;
  ops_table_bounded)
    # ranks DURATION: 64 ranks of 14 kernels of DURATION ({rank} substituted) and a sync: 960 ops.
    ranks() {
      printf 'name: ranks-64\nranks: 64\nstreams: [compute]\nprograms:\n  - rank: all\n    ops:\n' > $W/s.yaml
      printf '      - op: loop\n        count: 14\n        ops: [{op: kernel, name: work, stream: compute, duration: "%s"}]\n' "$1" >> $W/s.yaml
      printf '      - {op: device_sync}\n' >> $W/s.yaml
      "$osim" run $W/s.yaml -t $CFG/topologies/h100-128node-ib.yaml "${@:2}" > $W/out.txt
    }
    ranks '{1 + rank % 4} us'
    [ "$(wc -l < $W/out.txt)" -le 120 ] || fail "alike ranks: $(wc -l < $W/out.txt) lines"
    [ "$(grep -c '^rank [0-9]* on ' $W/out.txt)" = 4 ] || fail "alike ranks: not 4 ranks' rows"
    has $W/out.txt '^rank 3 on n0_gpu3: ends 59.836 us, ' '^  \(ranks 4,8,12,… \(15\): the same ops at the same times\)$' \
      '^\(the per-op table holds ranks 0-3 of 64, 60 more with the same ops at the same times \(the default past 200 lines; every rank.s: 1153\): --ops-all for every rank\)$'
    ranks '{1 + rank} us'
    [ "$(wc -l < $W/out.txt)" -le 240 ] || fail "different ranks: $(wc -l < $W/out.txt) lines"
    [ "$(grep -c '^rank [0-9]* on ' $W/out.txt)" = 11 ] || fail "different ranks: not 11 ranks' rows"
    has $W/out.txt '^\(the per-op table holds ranks 0-10 of 64, 53 left out \(the default past 200 lines; every rank.s: 1153\): --ops-all for every rank\)$'
    ranks '{1 + rank} us' --ops-all
    [ "$(grep -c '^rank [0-9]* on ' $W/out.txt)" = 64 ] || fail "--ops-all: not 64 ranks' rows"
    [ "$(grep -c '^ *[0-9]* kernel  ' $W/out.txt)" = $((64 * 14)) ] || fail "--ops-all: not 896 kernels' rows"
    has $W/out.txt '^rank 63 on n7_gpu7: '
    if grep -q 'the per-op table holds' $W/out.txt; then fail "--ops-all still left ranks out"; fi
    # one [FLAGS]: a single rank of 999 kernels of 1 us and a sync, 1,000 ops (printed by default).
    one() {
      printf 'name: one-rank\nranks: 1\nstreams: [compute]\nprograms:\n  - rank: all\n    ops:\n' > $W/one.yaml
      printf '      - op: loop\n        count: 999\n        ops: [{op: kernel, name: work, stream: compute, duration: 1 us}]\n' >> $W/one.yaml
      printf '      - {op: device_sync}\n' >> $W/one.yaml
      "$osim" run $W/one.yaml -t $CFG/topologies/h100-128node-ib.yaml "$@" > $W/out.txt
    }
    one
    # The table (heading to the line saying the rest) is 200 lines; the note, a blank line and the summary follow.
    t=$(sed -n '/^schedule one-rank: 1 ranks, makespan /,/^  (ops 195-999 of rank 0 left out)$/p' $W/out.txt | wc -l)
    [ "$t" = 200 ] || fail "one rank of 1,000 ops: a table of $t lines, not 200"
    [ "$(grep -c '^ *[0-9]* kernel  ' $W/out.txt)" = 195 ] || fail "one rank: not 195 kernels' rows"
    [ "$(wc -l < $W/out.txt)" -le 240 ] || fail "one rank: $(wc -l < $W/out.txt) lines"
    has $W/out.txt '^   194 kernel ' \
      '^\(the per-op table holds ops 0-194 of rank 0.s 1000 \(the default past 200 lines; all of it: 1004\): --ops-all for every op\)$'
    if grep -q '^   195 kernel ' $W/out.txt; then fail "one rank: op 195 printed"; fi
    one --ops-all
    [ "$(grep -c '^ *[0-9]* kernel  ' $W/out.txt)" = 999 ] || fail "one rank --ops-all: not 999 kernels' rows"
    has $W/out.txt '^   999 device_sync '
    if grep -q 'the per-op table holds\|of rank 0 left out' $W/out.txt; then fail "one rank --ops-all still left ops out"; fi ;;
  steady_state)
    "$osim" run $WL --set steps=4 --out $W/s4 --records > /dev/null
    "$osim" run $WL --set steps=5 --out $W/s5 > /dev/null
    python3 $root/sim/bench/steady_state.py $W/s4/records.json > $W/steady.txt
    has $W/steady.txt 'repeating from forward [0-9]+, period [0-9]+ ps; pairs: .* = =$'
    period=$(sed -E 's/.*, period ([0-9]+) ps.*/\1/' $W/steady.txt)
    span() { sed -nE 's/^ *"makespan_s": ([0-9.]+),?$/\1/p' $1/metrics.json; }
    awk -v a="$(span $W/s4)" -v b="$(span $W/s5)" -v p="$period" 'BEGIN { d = (b - a) * 1e12 - 2 * p; exit !(a > 0 && (d < 0 ? -d : d) <= 10) }' ||
      fail "a fifth step added $(span $W/s5) - $(span $W/s4) s, not 2 x $period ps"
    "$osim" run $CFG/workloads/flux1-dev-1024-h200x4.yaml --set steps=3 --out $W/flux --records > /dev/null
    python3 $root/sim/bench/steady_state.py $W/flux/records.json > $W/flux.txt
    has $W/flux.txt 'repeating from forward none; pairs: [0-9]+$' ;;
  *) fail "no case $case" ;;
esac
ok
