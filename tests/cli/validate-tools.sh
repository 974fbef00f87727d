#!/usr/bin/env bash
# validate/'s tools that run without a GPU:
#   sets_generated  the hand-off and span sets are what their generators write (the topology line
#                   aside, which points from wherever it is written), and each runs
#   session_script  the device recipe (run only on a lent GPU machine) parses, prints its help,
#                   refuses no steps
#   program_twins   the reference program's twins, written without a GPU, are the ones its committed
#                   results hold (but the attention backend, which only a GPU run finds): bf16 and fp8
#                   weights, 26 in all
#
#   bash tests/cli/validate-tools.sh OVERLAPSIM REPO_ROOT WORK_DIR CASE
source "$(dirname "$0")/lib.sh"
cd $root
case $case in
  sets_generated)
    S=validate/sets
    for set in handoff span; do
      python3 $S/$set/generate.py $W/$set
      for c in $(cd $W/$set && ls); do
        # The generator gzips a large schedule: the same file name, the same text.
        f=$(cd $W/$set/$c && ls schedule.yaml*)
        test -f $S/$set/$c/$f || fail "$set/$c: the generator writes $f, the tree has $(ls $S/$set/$c)"
        diff <(zcat -f $W/$set/$c/$f | grep -v '^topology:') <(zcat -f $S/$set/$c/$f | grep -v '^topology:') || fail "$set/$c differs from its generator's"
        "$osim" run $S/$set/$c/$f > $W/run.txt; has $W/run.txt makespan
      done
    done
    test $(ls $W/handoff $W/span | grep -c -- -) -ge 10 || fail "fewer than 10 sets' cases" ;;
  session_script)
    for f in validate/session.sh validate/device_env.sh validate/sets/validation/make_set.sh; do bash -n $f || fail "$f does not parse"; done
    validate/session.sh --help > $W/help.txt; has $W/help.txt '^# Presets: whole-gpu'
    refused 2 'give at least one step' validate/session.sh ;;
  program_twins)
    for g in single fp8; do python3 validate/programs/dit_offload.py --out $W/$g --grid $g --twins-only > /dev/null; done
    python3 - $W <<'PY'
import json, glob, os, sys
n = 0
for grid, ran in (("single", "programs-run-15"), ("fp8", "fp8-programs")):
    for f in sorted(glob.glob(f"validate/reference/h200/{ran}/*.json")):
        w = json.load(open(f))["workload"]
        w["compute"].pop("attention_backend", None)
        w["compute"] or w.pop("compute")
        t = json.load(open(os.path.join(sys.argv[1], grid, os.path.basename(f)[:-5] + ".workload.json")))
        assert t == w, (f, t, w)
        n += 1
assert n == 26, n
PY
    ;;
  *) fail "no case $case" ;;
esac
ok
