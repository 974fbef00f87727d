#!/usr/bin/env bash
# Careless input, one case per class: each refused with exit 2 and a message naming the file (line
# and column where there is one) and what is wrong; never a crash, a hang or an internal error.
#   NAME EXPECT ARGS...  `overlapsim ARGS...` from the repository's root (the inputs under
#                        tests/cli/bad-inputs/) exits 2 within 60 s, its output holding EXPECT
#   flag_values          a bad flag or value exits 2 like every input error; a gate of NaN is
#                        refused, not switched off
#
#   bash tests/cli/bad-input.sh OVERLAPSIM REPO_ROOT WORK_DIR CASE [EXPECT ARGS...]
source "$(dirname "$0")/lib.sh"
cd $root
case $case in
  flag_values)
    refused 2 'is not a percentage' "$osim" sweep configs/sweeps/prefetch-sp-pcie-vs-nvlink.yaml --tolerance inf -o $W/never.csv
    refused 2 '' "$osim" compare --simulate x --max-error nan
    refused 2 '' "$osim" run --no-such-flag
    test ! -e $W/never.csv || fail "a refused sweep wrote its CSV"
    "$osim" --help > /dev/null ;;
  *)
    expect=${1:?$case: give EXPECT and the ARGS}; shift
    rc=0; timeout 60 "$osim" "$@" > $W/out.txt 2>&1 || rc=$?
    cat $W/out.txt
    [ $rc = 2 ] || fail "exit $rc, not 2"
    grep -qF -- "$expect" $W/out.txt || fail "no message '$expect'" ;;
esac
ok
