#!/usr/bin/env bash
# Ctrl-C (SIGINT) and SIGTERM during a command that writes outputs (sim/cli/interrupt.hpp):
#   run_term   run --out DIR of the cluster workload sent SIGTERM once its temporary folder exists: exit
#              status 143, no .DIR.tmp* left, DIR's earlier run (--force) byte for byte as it was
#   run_int    the same with SIGINT (Ctrl-C): exit status 130, and --schedule-out's file untouched too
#   sweep_int  sweep -o CSV sent SIGINT midway: 130, no CSV, no CSV.tmp* or CSV.lock, the journal kept
#              for --resume and the message says so
#
#   bash tests/cli/interrupt.sh OVERLAPSIM REPO_ROOT WORK_DIR CASE
source "$(dirname "$0")/lib.sh"
# A background job of a script starts with SIGINT ignored (and overlapsim keeps an ignored signal
# ignored); started with job control on (set -m), it takes SIGINT as under an interactive shell.
BIG=$CFG/workloads/wan22-720p-cluster-sp128.yaml
SMALL=$CFG/workloads/wan22-720p-aces-layerwise.yaml
# interrupted SIGNAL STATUS PID: sends SIGNAL to PID and checks it exits with STATUS.
interrupted() {
  local rc=0
  kill -$1 $3
  wait $3 || rc=$?
  [ "$rc" = "$2" ] || fail "SIG$1: exited $rc, not $2: $(cat $W/err.txt)"
  has $W/err.txt "^interrupted \\(SIG$1\\): stopped; [0-9]+ temporary outputs? removed"
}
# wait_for GLOB PID: waits (60 s at most) until a path in $W matches GLOB while PID runs.
wait_for() {
  for _ in $(seq 600); do
    compgen -G "$W/$1" > /dev/null && return 0
    kill -0 $2 2> /dev/null || fail "it ended before $1 appeared: $(cat $W/err.txt)"
    sleep 0.1
  done
  fail "no $1 after 60 s"
}
# leftovers: temporaries and lock files anywhere under $W.
leftovers() { find $W -name '.*.tmp*' -o -name '*.tmp[0-9]*' -o -name '*.lock'; }
case $case in
  run_term | run_int)
    sig=TERM status=143; [ $case = run_int ] && sig=INT status=130
    "$osim" run $SMALL --set steps=1 --out $W/out --schedule-out $W/sched.yaml > /dev/null
    (cd $W && md5sum out/* sched.yaml) > $W/before.md5
    set -m
    "$osim" run $BIG --out $W/out --schedule-out $W/sched.yaml --force > /dev/null 2> $W/err.txt & pid=$!
    set +m
    wait_for '.out.tmp*' $pid
    interrupted $sig $status $pid
    [ -z "$(leftovers)" ] || fail "left behind: $(leftovers)"
    (cd $W && md5sum --quiet -c before.md5) || fail "the earlier run's outputs changed"
    [ "$(ls -A $W/out | wc -l)" = 3 ] || fail "out/ holds $(ls -A $W/out)" ;;
  sweep_int)
    S=$CFG/sweeps/prefetch-sp-pcie-vs-nvlink.yaml
    set -m
    "$osim" sweep $S -o $W/cut.csv -j 1 --no-progress > /dev/null 2> $W/err.txt & pid=$!
    set +m
    until [ $( (wc -l < $W/cut.csv.journal) 2> /dev/null || echo 0) -ge 3 ]; do kill -0 $pid || fail "the sweep ended before it was cut"; done
    interrupted INT 130 $pid
    has $W/err.txt "finished points are kept in .*cut.csv.journal: run the same command with --resume"
    test ! -e $W/cut.csv || fail "an interrupted sweep wrote its CSV"
    test -s $W/cut.csv.journal || fail "an interrupted sweep lost its journal"
    [ -z "$(leftovers)" ] || fail "left behind: $(leftovers)" ;;
  *) fail "no case $case" ;;
esac
ok
