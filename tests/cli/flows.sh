#!/usr/bin/env bash
# The flow-solver benchmark (overlapsim_bench_flows):
#   instance  the instance it writes for the SimGrid comparison: every transfer a line with its
#             route, and the makespan `overlapsim flows` prints
#
#   bash tests/cli/flows.sh OVERLAPSIM REPO_ROOT WORK_DIR CASE BENCH_FLOWS
source "$(dirname "$0")/lib.sh"
bench=${1:?usage: flows.sh OVERLAPSIM REPO_ROOT WORK_DIR CASE BENCH_FLOWS}
case $case in
  instance)
    S=$CFG/scenarios/h2d-plus-exchange-4gpu.yaml; T=$CFG/topologies/aces-4xh100-pcie.yaml
    "$bench" $S $T --runs 1 --instance $W/flows.inst > $W/flows.out
    head -1 $W/flows.inst | grep -qx 'overlapsim-flow-instance 1' || fail "not a flow instance"
    awk '/^flows/ {n = $2; f = NR} f && NR > f && NF == 7 + 2 * $7 {ok++} END {exit !(n == 16 && ok == 16)}' $W/flows.inst ||
      fail "not 16 flows each with its route"
    a=$("$osim" flows $S -t $T | awk '/^makespan/ {print $2, $3}'); b=$(awk '/^makespan/ {printf "%.3f ms", $2 / 1e9}' $W/flows.out)
    echo "makespan $a, bench $b"
    [ -n "$a" ] && [ "$a" = "$b" ] || fail "flows' makespan $a, the bench's $b" ;;
  *) fail "no case $case" ;;
esac
ok
