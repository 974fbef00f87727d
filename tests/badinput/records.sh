#!/usr/bin/env bash
# `report` and `compare` on records files with impossible times: each refused
# naming the file, the rank and op, and what is wrong; never a summary with a
# negative makespan or overlap.
#   records.sh OVERLAPSIM SOURCE_DIR WORK_DIR
set -u
OSIM="$1" D="$2/tests/badinput/records" W="$3"
. "$2/tests/badinput/common.sh"
mkdir -p "$W"
report() { rm -rf "$W/report"; "$OSIM" report "$1" --out "$W/report"; }
report "$D/good.json" | grep -q '^  makespan 2.000 us$' || { echo "FAIL good.json: not reported"; exit 1; }
refuse "$D/makespan-negative.json" ": error: makespan_ns -1 is no run's length" report "$D/makespan-negative.json"
refuse "$D/makespan-zero.json" ": error: makespan_ns 0 is no run's length" report "$D/makespan-zero.json"
refuse "$D/makespan-huge.json" ": error: makespan_ns 1e+300 is no run's length" report "$D/makespan-huge.json"
refuse "$D/op-negative-start.json" ": error: rank 0 op 1 ('k1'): start -5000000.000 ns is before the run's start" report "$D/op-negative-start.json"
refuse "$D/op-end-before-start.json" ": error: rank 0 op 1 ('k1'): end 500.000 ns is before its start 1000.000 ns" report "$D/op-end-before-start.json"
refuse "$D/op-returned-before-issue.json" "rank 0 op 1 ('k1'): returned 5.000 ns is before its issue 20.000 ns" report "$D/op-returned-before-issue.json"
refuse "$D/op-after-makespan.json" "rank 0 op 1 ('k1'): it ends at 2000000.000 ns, after the run's makespan_ns 2000.000" report "$D/op-after-makespan.json"
refuse "$D/op-huge-end.json" "rank 0 op 1 ('k1'): end 1e+300 ns is no time of a run" report "$D/op-huge-end.json"
refuse "$D/op-overflow-end.json" ": error: not valid JSON" report "$D/op-overflow-end.json"
refuse "$D/rank-negative.json" ": error: ranks[0] is rank -1: each rank is listed once, in order from 0" report "$D/rank-negative.json"
refuse "$D/ranks-out-of-order.json" ": error: ranks[1] is rank 0, after rank 1: each rank is listed once, in order from 0" report "$D/ranks-out-of-order.json"
refuse "$D/ranks-out-of-order.json" "ranks[1] is rank 0, after rank 1" "$OSIM" compare "$D/good.json" "$D/ranks-out-of-order.json"
refuse "$D/op-end-before-start.json" "end 500.000 ns is before its start" "$OSIM" compare "$D/good.json" "$D/op-end-before-start.json"
refuse "$D/makespan-negative.json" "makespan_ns -1 is no run's length" "$OSIM" compare "$D/makespan-negative.json" "$D/good.json"
finish records
