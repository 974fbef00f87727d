#!/usr/bin/env bash
# overlapsim calibrate on the reference machines' bench files (validate/reference/):
#   gpu_mismatch    a bench of another GPU family than the topology's refused (exit 2), and a fit
#                   above the topology's peaks (an H100 SXM's GEMMs on an H100 PCIe's 756 TFLOP/s)
#   replay_with     a calibration replayed on bench rows, nothing fitted; with -o refused
#   gzipped_bench   a gzipped bench replays as a plain one (the workloads' GEMM shapes between SDPA
#                   kernels: every shape's three series, SDPA alone once); a truncated one, and a row
#                   without its series, refused naming the file
#   bad_case        a bench row outside its testcase's cases: the file and the row named, exit 2
#   csv             --csv: every replayed row, quoted where a case holds a comma; hand-off rows carry
#                   the simulated times at either end of the hand-off's phase; refused over a file
#   second_run      --second-run: how much of the error is the measurement's (the H100's two phase
#                   runs); a second-run file that is not a bench refused, naming it, before any replay
#
#   bash tests/cli/calibrate.sh OVERLAPSIM REPO_ROOT WORK_DIR CASE
source "$(dirname "$0")/lib.sh"
cd $root
H200=validate/reference/h200; T4=configs/topologies/h200x4-nvlink.yaml
replay() { "$osim" calibrate "$@" -t $T4 --replay-with configs/calibrations/h200.yaml; }
case $case in
  gpu_mismatch)
    B=validate/reference/h100-sxm/bench-default.json.gz
    refused 2 '' "$osim" calibrate $B -t configs/topologies/rtx4090x8-pcie.yaml -o $W/mismatch.yaml
    has $W/refused.err 'topology rtx4090x8-pcie.s GPUs are RTX-4090: fit against the measured node.s topology'
    refused 2 '' "$osim" calibrate $B -t configs/topologies/aces-4xh100-pcie.yaml -o $W/mismatch.yaml
    has $W/refused.err 'the fit is out of range \(calibration model .gemm_efficiency.: must be in .0.001, 1.'
    test ! -e $W/mismatch.yaml || fail "a refused fit wrote its calibration" ;;
  replay_with)
    replay $H200/bench-phase-2.json.gz > $W/replay.txt
    has $W/replay.txt '^rows of effects the model holds: '
    refused 2 'drop -o' replay $H200/bench-phase-2.json.gz -o $W/never.yaml
    test ! -e $W/never.yaml || fail "--replay-with -o wrote a calibration" ;;
  gzipped_bench)
    G=$H200/bench-sustained-shapes.json.gz
    replay $G > $W/gz.out
    test $(grep -c '^gemm_sustained_shapes .* between SDPA' $W/gz.out) = 10 || fail "not 10 rows between SDPA"
    test $(grep -c '^gemm_sustained_shapes .* alone ' $W/gz.out) = 6 || fail "not 6 rows alone"
    head -c 20000 $G > $W/cut.json.gz
    refused 2 'cut.json.gz: error: cannot be decompressed' replay $W/cut.json.gz
    python3 -c "import gzip,json,sys; d=json.load(gzip.open('$G')); d['results'][0]['alone_time_us']=[]; json.dump(d, open(sys.argv[1], 'w'))" $W/empty-series.json
    refused 2 'empty-series.json: error: a bench testcase is malformed (gemm_sustained_shapes row with no alone_time_us)' replay $W/empty-series.json ;;
  bad_case)
    python3 -c "import gzip,json,sys; d=json.load(gzip.open('$H200/bench-phase-1.json.gz')); r=[r for r in d['results'] if r['key']=='copy_after_idle'][0]; r['before']='kernel_dne'; json.dump(d, open(sys.argv[1], 'w'))" $W/bad-case.json
    refused 2 "bad-case.json: error: a bench testcase is malformed (copy_after_idle row with before 'kernel_dne': expected one of host, kernel_done, kernel_wait_done)" \
      replay $W/bad-case.json ;;
  csv)
    CC=$W/calibrate-rows.csv
    replay $H200/bench-phase-2.json.gz --csv $CC > $CC.txt
    test $(wc -l < $CC) = 261 || fail "$(wc -l < $CC) lines, not 261"
    head -1 $CC | grep -qx 'source,class,key,case,measured_us,simulated_us,error_pct,not_modelled,simulated_lo_us,simulated_hi_us' || fail "the header"
    has $CC 'x 1 after a kernel done before, on the stream, H2D.,13.6000,14.3198,5.292,,9.0090,16.3722$' 'x 1 after a host function alone, H2D.,8.5120,8.4650,-0.553,,,$'
    has $CC.txt '^rows with a hand-off, whose phase \(0.54-7.91 us\) moves them: 132; over 5% but within it: 32; the rest over 5%: 0, worst 4.1%'
    refused 2 'exists already' replay $H200/bench-phase-2.json.gz --csv $CC
    replay $H200/bench-phase-2.json.gz --csv $CC --force > /dev/null ;;
  second_run)
    R=validate/reference/h100-sxm; T=configs/topologies/dgx-h100.yaml; C=configs/calibrations/h100-sxm.yaml
    "$osim" calibrate $R/bench-phase-1.json.gz -t $T --replay-with $C --second-run $R/bench-phase-2.json.gz > $W/second.txt
    has $W/second.txt '\): 206 rows of effects the model holds measured in both$' ': 38 \(18.4%\)' '2 \(1.0%\); 11 more within the hand-off.s phase in both$'
    refused 2 'dgx-h100.yaml' "$osim" calibrate $R/bench-phase-1.json.gz -t $T --replay-with $C --second-run $T
    test ! -s $W/refused.out || fail "replayed before refusing the second run" ;;
  *) fail "no case $case" ;;
esac
ok
