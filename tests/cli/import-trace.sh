#!/usr/bin/env bash
# overlapsim import-trace on the 4xH200 reference trace (validate/reference/h200x4-nvlink/traces/,
# one torch.profiler trace per rank; topology, calibration and step ranges as its manifest names them).
#   import           the four ranks imported, its summary, re-simulated op by op within 20 % of the
#                    trace; the schedule runs with what-ifs; outputs refused without --force; a
#                    malformed trace names its file and line, exit 2.
#   symmetric_ranks  rank 2's trace alone replayed as every rank of the job (--symmetric-ranks): its
#                    step within 1 % of the four ranks' import (105.585 against 105.435 ms); two traces,
#                    or one of a single-GPU run, refused saying why.
#   prefetch         the H100 depth-2 trace re-planned to depth 3 (--prefetch 3 --prefetch-cycle 8): its summary
#                    (depth 2 -> 3, 16 blocks, 6 buffers), the schedule runs (peak VRAM 1.41 GiB of weights); the
#                    schedule imported as measured, run with --prefetch 3 --keep-measured-clock, gives the same run;
#                    a folder as -o, a trace with no prefetch (the resident program) and --prefetch on a workload
#                    refused, nothing written.
#   reclock          the H200 grid's blocking 16,384-token trace (no shapes; its GPU idles between blocks) re-planned
#                    to depth 1: by default (as with --reclock-measured) its 422 measured kernels slow with the busier
#                    GPU's clock, the step from ~168.6 (--keep-measured-clock) to within 3 % of the depth-1 program's
#                    timed 185.7 ms; replayed at its own depth --reclock-measured keeps the makespan; both flags
#                    together, and --reclock-measured on a workload, refused.
#   copy_rates       the H200 grid's pageable depth-2 16,384-token trace: the import writes its copies' rate
#                    (settings.copy_rates, printed) as the trace's events give it; run --copy-rates-as-traced
#                    takes it in place of the calibration's and lands within 10 % of the program's timed runs,
#                    where the calibration's rate misses by more; by default (run alone) its pageable copies
#                    take the trace's pageable rates, --pageable-rate-from-calibration the calibration's; a
#                    schedule without rates and a workload refused.
#   pageable_rates   a one-rank schedule with settings.copy_rates (pinned and pageable), 1 and 2 GB copies of each
#                    kind one after the other: by default a pageable copy runs at the schedule's pageable rate (the
#                    2 GB copy takes 1 GB / rate longer than the 1 GB one, to the ns), a pinned one at the
#                    calibration's (as with --pageable-rate-from-calibration, which runs the pageable ones at the
#                    calibration's); an unmeasured direction keeps the calibration's, even where the calibration
#                    gives D2H no rate of its own; the summary says so in one line; -t another topology takes none
#                    (and says so), -t the schedule's own topology by another path takes them; --host-memory pinned
#                    prints no line; --copy-rates-as-traced takes the pinned rate too; it and the opt-out together,
#                    and the opt-out on a workload, refused.
#   compare_pageable_rates  that schedule's run re-simulated by compare --simulate: its pageable copies at the
#                    calibration's rates, with --pageable-rate-from-trace at the schedule's (1 GB / rate apart, to the
#                    ns, as run's default), pinned ones at the calibration's either way, its summary saying so in one
#                    line; -t another topology takes none (and says so); the flag without --simulate or with
#                    --programs refused.
#
#   bash tests/cli/import-trace.sh OVERLAPSIM REPO_ROOT WORK_DIR CASE
source "$(dirname "$0")/lib.sh"
M=$REF/h200x4-nvlink
T=$(manifest $M traces.runs); TOPO=$(manifest $M topology); C=$(manifest $M calibration.file); STEPS=$(manifest $M traces.steps)
O=$W
# step FILE: the step time `run` prints (ms).
step() { sed -En 's/^  makespan .* steps, step time mean ([0-9.]+) ms .*/\1/p' "$1"; }
# sched NAME RATES: a schedule of 1 and 2 GB copies, each kind alone, on dgx-h100's first GPU.
sched() {
  cat > $O/$1.yaml <<YAML
name: $1
topology: $CFG/topologies/dgx-h100.yaml
ranks: 1
settings: {copy_rates: {$2}}
streams: [compute]
programs:
  - rank: 0
    ops:
      - {op: memcpy, kind: h2d, bytes: 1 GB, stream: compute, host: pageable, name: h2d-pageable-1}
      - {op: memcpy, kind: h2d, bytes: 2 GB, stream: compute, host: pageable, name: h2d-pageable-2}
      - {op: memcpy, kind: h2d, bytes: 1 GB, stream: compute, host: pinned, name: h2d-pinned-1}
      - {op: memcpy, kind: h2d, bytes: 2 GB, stream: compute, host: pinned, name: h2d-pinned-2}
      - {op: memcpy, kind: d2h, bytes: 1 GB, stream: compute, host: pageable, name: d2h-pageable-1}
      - {op: memcpy, kind: d2h, bytes: 2 GB, stream: compute, host: pageable, name: d2h-pageable-2}
      - {op: stream_sync, stream: compute}
YAML
}
# rates NAME: per kind, 1 GB over what the second copy took beyond the first (GB/s; set-ups cancel).
rates() {
  python3 -c 'import gzip, json, sys
ops = {o[2]: o[6] - o[5] for o in json.load(open(sys.argv[1]))["ranks"][0]["ops"]}
print(" ".join("%.6f" % (1e9 / (ops[k + "-2"] - ops[k + "-1"])) for k in ("h2d-pageable", "h2d-pinned", "d2h-pageable")))' $O/$1/records.json
}
# runs NAME SCHEDULE ARGS...: the run's summary into NAME.txt, its kinds' rates (rates) echoed.
runs() { local n=$1 s=$2; shift 2; "$osim" run $O/$s.yaml --out $O/$n --records "$@" > $O/$n.txt; rates $n; }
# same NAME GOT WANT: each rate within 1e-6 of the one wanted (GB/s).
same() {
  python3 -c 'import sys; g, w = sys.argv[1].split(), sys.argv[2].split(); sys.exit(not all(abs(float(a) / float(b) - 1) < 1e-6 for a, b in zip(g, w)))' "$2" "$3" ||
    fail "$1: copies at $2 GB/s (h2d pageable, h2d pinned, d2h pageable), not $3"
}
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
  prefetch)
    H=$REF/h100-sxm; HT=$(manifest $H traces.runs); HTOPO=$(manifest $H topology); HC=$(manifest $H calibration.file)
    "$osim" import-trace $HT/dit-4096-layerwise-pf2-pinned.trace.json.gz -t $HTOPO --prefetch 3 --prefetch-cycle 8 -o $O/pf3.yaml > $O/pf3.txt
    has $O/pf3.txt '^re-planned \(--prefetch 3\): layer-weight prefetch depth 2 -> 3 \(every 3 blocks of a cycle of 8, the next 3 blocks. copies issued\), 1 rank\(s\): 16 blocks, 16 host-to-device copies \(240.00 MiB per block\), 11 blocks. copies issued before another block than measured$' \
      '^  weight buffers on the GPU at once: 4 -> 6 \(960.00 MiB -> 1.41 GiB\)'
    "$osim" run $O/pf3.yaml --calibration $HC > $O/pf3-run.txt
    has $O/pf3-run.txt '^  peak VRAM 1.41 GiB \(rank 0\): weights 1.41 GiB' '^  makespan .* steps, step time mean 76\.[0-9]+ ms'
    # The same what-if on the schedule imported as measured: `run --prefetch` with its measured kernels at their
    # recorded clock gives the same run, and says it re-planned (by default it re-clocks them: a run of its own).
    "$osim" import-trace $HT/dit-4096-layerwise-pf2-pinned.trace.json.gz -t $HTOPO -o $O/pf2.yaml > /dev/null
    "$osim" run $O/pf2.yaml --calibration $HC --prefetch 3 --prefetch-cycle 8 --keep-measured-clock > $O/pf2-run3.txt
    grep -v '^re-planned\|^  weight buffers on the GPU at once' $O/pf2-run3.txt | diff - $O/pf3-run.txt > /dev/null ||
      fail "run --prefetch 3 on the imported schedule differs from import-trace --prefetch 3's run"
    has $O/pf2-run3.txt '^re-planned \(--prefetch 3\): layer-weight prefetch depth 2 -> 3 '
    refused 2 "wan22-720p-h200-layerwise.yaml is a workload: --set offload.prefetch_size=2" \
      "$osim" run $CFG/workloads/wan22-720p-h200-layerwise.yaml --prefetch 2
    refused 2 "--prefetch-cycle goes with --prefetch N" "$osim" run $O/pf2.yaml --prefetch-cycle 8
    refused 2 "--prefetch writes a program the trace did not measure" \
      "$osim" import-trace $HT/dit-4096-layerwise-pf2-pinned.trace.json.gz --prefetch 1 -o $O/dir
    refused 2 "--prefetch: rank 0: no host-to-device copies: there is no weight prefetch to re-plan" \
      "$osim" import-trace $HT/dit-16384-none.trace.json.gz --prefetch 1 -o $O/none.yaml
    refused 2 "--prefetch-cycle goes with --prefetch N" "$osim" import-trace $HT/dit-16384-none.trace.json.gz --prefetch-cycle 8 -o $O/c.yaml
    [ ! -e $O/dir ] && [ ! -e $O/none.yaml ] && [ ! -e $O/c.yaml ] || fail "a refused import wrote its output" ;;
  reclock)
    G=$REF/h200; GT=$G/traces-default-grid; GTOPO=$(manifest $G topology); GC=$(manifest $G calibration.file)
    "$osim" import-trace $GT/dit-16384-layerwise-pf0-pinned.trace.json.gz -t $GTOPO -o $O/pf0.yaml > /dev/null
    "$osim" run $O/pf0.yaml --calibration $GC --prefetch 1 --prefetch-cycle 8 --keep-measured-clock > $O/pf1.txt
    "$osim" run $O/pf0.yaml --calibration $GC --prefetch 1 --prefetch-cycle 8 > $O/pf1-reclock.txt
    "$osim" run $O/pf0.yaml --calibration $GC --prefetch 1 --prefetch-cycle 8 --reclock-measured > $O/pf1-asked.txt
    cmp -s $O/pf1-reclock.txt $O/pf1-asked.txt || fail "--reclock-measured is the default under --prefetch, yet its output differs"
    refused 2 "it keeps the clock --reclock-measured changes: give one of the two" \
      "$osim" run $O/pf0.yaml --calibration $GC --prefetch 1 --reclock-measured --keep-measured-clock
    has $O/pf1-reclock.txt '^  measured kernels re-clocked: 422, at clock 0\.9[0-9]+-1\.000 \(mean 0\.9[0-9]+\) as recorded$'
    a=$(step $O/pf1.txt); b=$(step $O/pf1-reclock.txt)
    python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(not (a < 172 and abs(b / 185.66 - 1) < 0.03))' $a $b ||
      fail "depth 0 to 1: step $a ms measured kernels, $b ms re-clocked; the program's timed runs 185.66 ms"
    echo "depth 0 to 1: step $a ms measured kernels, $b ms re-clocked (timed 185.66 ms)"
    "$osim" run $O/pf0.yaml --calibration $GC > $O/self.txt
    "$osim" run $O/pf0.yaml --calibration $GC --reclock-measured > $O/self-reclock.txt
    [ "$(grep '^  makespan' $O/self.txt)" = "$(grep '^  makespan' $O/self-reclock.txt)" ] ||
      fail "replayed at its own depth, --reclock-measured changed the makespan"
    refused 2 "it re-clocks a schedule's measured kernels; " "$osim" run $CFG/workloads/wan22-720p-h200-layerwise.yaml --reclock-measured
    # With --remodel-kernels the kernels that carry a shape are modelled in both runs (the H100 trace with shapes: all of them).
    H=$REF/h100-sxm
    "$osim" import-trace $H/traces/dit-16384-layerwise-pf0-pinned.trace.json.gz -t $(manifest $H topology) -o $O/h0.yaml > /dev/null
    "$osim" run $O/h0.yaml --calibration $(manifest $H calibration.file) --prefetch 1 --prefetch-cycle 8 --remodel-kernels --keep-measured-clock > $O/h1.txt
    "$osim" run $O/h0.yaml --calibration $(manifest $H calibration.file) --prefetch 1 --prefetch-cycle 8 --remodel-kernels > $O/h1-reclock.txt
    has $O/h1-reclock.txt '^  measured kernels re-clocked: none '
    [ "$(grep '^  makespan' $O/h1.txt)" = "$(grep '^  makespan' $O/h1-reclock.txt)" ] ||
      fail "every kernel re-modelled: --reclock-measured changed the makespan" ;;
  copy_rates)
    G=$REF/h200; GT=$G/traces-default-grid; GTOPO=$(manifest $G topology); GC=$(manifest $G calibration.file)
    P=$GT/dit-16384-layerwise-pf2-pageable
    "$osim" import-trace $P.trace.json.gz -t $GTOPO -o $O/pg.yaml > $O/pg-import.txt
    # The rate from the trace's own events: every pageable H2D copy's bytes over its time.
    want=$(python3 -c 'import gzip, json, sys
e = [x for x in json.load(gzip.open(sys.argv[1]))["traceEvents"] if x.get("cat") == "gpu_memcpy" and "HtoD" in x["name"] and "Pageable" in x["name"]]
print(sum(x["args"]["bytes"] for x in e) / sum(x["dur"] for x in e) / 1e3, len(e))' $P.trace.json.gz)
    got=$(sed -En 's/^host copies measured .*: h2d_pageable ([0-9.]+) GB\/s \(([0-9]+) copies.*/\1 \2/p' $O/pg-import.txt)
    python3 -c 'import sys; a, n, b, m = map(float, sys.argv[1:]); sys.exit(not (abs(a / b - 1) < 1e-3 and n == m))' $want $got ||
      fail "pageable H2D rate: the import says '$got' (GB/s, copies), the trace's events '$want'"
    has $O/pg.yaml '^settings: .*copy_rates: \{.*h2d_pageable: [0-9.]+ GB/s'
    "$osim" run $O/pg.yaml --calibration $GC --pageable-rate-from-calibration > $O/cal.txt
    "$osim" run $O/pg.yaml --calibration $GC --copy-rates-as-traced > $O/own.txt
    "$osim" run $O/pg.yaml --calibration $GC > $O/default.txt
    has $O/own.txt '^copy rates: as the trace.s copies ran \(.*h2d_pageable [0-9.]+ GB/s \(was 7\.55\)'
    has $O/default.txt '^copy rates: pageable copies at the rates the trace.s ran at \(h2d_pageable [0-9.]+ GB/s \(was 7\.55\).*--pageable-rate-from-calibration'
    ! grep -q '^copy rates' $O/cal.txt || fail "--pageable-rate-from-calibration: the run still says it took rates"
    timed=$(python3 -c 'import json, statistics, sys; print(1e3 * statistics.median(json.load(open(sys.argv[1]))["makespans_s"]))' $P.json)
    a=$(step $O/cal.txt); b=$(step $O/own.txt); d=$(step $O/default.txt)
    python3 -c 'import sys; a, b, d, t = map(float, sys.argv[1:]); sys.exit(not (abs(b / t - 1) < 0.10 and abs(d / t - 1) < 0.10 and abs(a / t - 1) > max(abs(b / t - 1), abs(d / t - 1))))' $a $b $d $timed ||
      fail "as recorded: $a ms at the calibration's rate, $b ms at the trace's own, $d ms by default; timed $timed ms"
    echo "pageable as recorded: $a ms at the calibration's rate, $b ms at the trace's own, $d ms by default (its pageable rates) (timed $timed ms)"
    "$osim" import-trace $REF/h100-sxm/traces/dit-16384-none.trace.json.gz -t $(manifest $REF/h100-sxm topology) -o $O/none.yaml > /dev/null
    refused 2 "holds no measured copy rates" "$osim" run $O/none.yaml --copy-rates-as-traced
    refused 2 "it takes an imported trace's measured copy rates; " "$osim" run $CFG/workloads/wan22-720p-h200-layerwise.yaml --copy-rates-as-traced ;;
  pageable_rates)
    HC=$(manifest $REF/h100-sxm calibration.file)
    # The H100 calibration without a D2H pageable rate of its own (D2H then runs at H2D's).
    grep -v '^  pageable_bandwidth_d2h:' $HC > $O/no-d2h.yaml
    sched both 'h2d_pinned: 20 GB/s, h2d_pageable: 5 GB/s, d2h_pageable: 4 GB/s'
    sched h2d 'h2d_pinned: 20 GB/s, h2d_pageable: 5 GB/s'
    cal=$(runs cal both --calibration $HC --pageable-rate-from-calibration)
    read -r cal_pg cal_pin cal_d2h <<< "$cal"
    same "--pageable-rate-from-calibration" "$cal_pg $cal_d2h" "8.5195 14.4226"
    ! grep -q '^copy rates' $O/cal.txt || fail "--pageable-rate-from-calibration: the run says it took rates"
    same "default" "$(runs default both --calibration $HC)" "5 $cal_pin 4"
    has $O/default.txt '^copy rates: pageable copies at the rates the trace.s ran at \(h2d_pageable 5\.00 GB/s \(was 8\.52\), d2h_pageable 4\.00 GB/s \(was 14\.42\); settings\.copy_rates\), pinned ones at the calibration.s: --pageable-rate-from-calibration'
    [ $(grep -c '^copy rates' $O/default.txt) = 1 ] || fail "default: not one line on the copy rates"
    # D2H unmeasured, the calibration without a D2H rate: D2H keeps the H2D rate it had (8.52), not the schedule's H2D.
    same "H2D alone measured" "$(runs h2d-only h2d --calibration $O/no-d2h.yaml)" "5 $cal_pin 8.5195"
    read -r other_pg _ other_d2h <<< "$(runs other both --calibration $HC -t $CFG/topologies/h100x8-pcie.yaml)"
    same "-t another topology" "$other_pg $other_d2h" "8.5195 14.4226"
    has $O/other.txt "^copy rates: the schedule's measured pageable rates \(settings\.copy_rates\) not taken: .*-t gives another topology"
    same "-t its own topology" "$(cd $CFG && runs own both --calibration $HC -t topologies/../topologies/dgx-h100.yaml)" "5 $cal_pin 4"
    "$osim" run $O/both.yaml --calibration $HC --host-memory pinned > $O/pinned.txt
    ! grep -q '^copy rates' $O/pinned.txt || fail "--host-memory pinned: a line on pageable rates with no pageable copy left"
    same "--copy-rates-as-traced" "$(runs traced both --calibration $HC --copy-rates-as-traced)" "5 20 4"
    refused 2 "--copy-rates-as-traced takes every measured rate, the pageable ones too: give one of the two" \
      "$osim" run $O/both.yaml --copy-rates-as-traced --pageable-rate-from-calibration
    refused 2 "it keeps the calibration's pageable rate for an imported trace's measured one; " \
      "$osim" run $CFG/workloads/wan22-720p-h200-layerwise.yaml --pageable-rate-from-calibration
    echo "pageable copies at the schedule's 5 and 4 GB/s, pinned at the calibration's $cal_pin GB/s; opt-out: $cal_pg and $cal_d2h GB/s" ;;
  compare_pageable_rates)
    HC=$(manifest $REF/h100-sxm calibration.file)
    sched both 'h2d_pinned: 20 GB/s, h2d_pageable: 5 GB/s, d2h_pageable: 4 GB/s'
    # A measured run of it: its records (as run --records writes them), the schedule beside them (as import-trace -o DIR).
    "$osim" run $O/both.yaml --out $O/measured --records --calibration $HC --pageable-rate-from-calibration > /dev/null
    cp $O/both.yaml $O/measured/schedule.yaml
    # resim NAME ARGS...: compare --simulate's summary into NAME.txt, its simulated copies' rates (rates) echoed.
    resim() { local n=$1; shift; "$osim" compare --simulate $O/measured --calibration $HC --simulated-out $O/$n "$@" > $O/$n.txt; rates $n/both; }
    read -r cal_pg cal_pin cal_d2h <<< "$(resim cal)"
    same "compare --simulate" "$cal_pg $cal_d2h" "8.5195 14.4226"
    ! grep -q 'copy rates' $O/cal.txt || fail "compare --simulate: a line on copy rates without --pageable-rate-from-trace"
    same "--pageable-rate-from-trace" "$(resim trace --pageable-rate-from-trace)" "5 $cal_pin 4"
    has $O/trace.txt '^  copy rates: pageable copies at the rates the trace.s ran at \(h2d_pageable 5\.00 GB/s \(was 8\.52\), d2h_pageable 4\.00 GB/s \(was 14\.42\); settings\.copy_rates\), pinned ones at the calibration.s \(--pageable-rate-from-trace\)$'
    read -r other_pg _ other_d2h <<< "$(resim other --pageable-rate-from-trace -t $CFG/topologies/h100x8-pcie.yaml)"
    same "--pageable-rate-from-trace -t another topology" "$other_pg $other_d2h" "8.5195 14.4226"
    has $O/other.txt "^  copy rates: the schedule's measured pageable rates \(settings\.copy_rates\) not taken: .*-t gives another topology"
    refused 2 "--pageable-rate-from-trace applies to the re-simulated runs (an imported trace's): add --simulate" \
      "$osim" compare $O/measured $O/measured --pageable-rate-from-trace
    refused 2 "--pageable-rate-from-trace takes an imported trace's measured rates; --programs simulates" \
      "$osim" compare --programs $O/measured --pageable-rate-from-trace
    echo "compare --simulate: pageable copies at the calibration's $cal_pg and $cal_d2h GB/s; --pageable-rate-from-trace: the schedule's 5 and 4 GB/s, pinned at $cal_pin" ;;
  *) fail "no case $case" ;;
esac
ok
