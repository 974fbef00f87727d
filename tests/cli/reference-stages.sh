#!/usr/bin/env bash
# A reference machine's requests checked per stage (docs/accuracy.md, "Whole requests"): the H100's
# manifest, copied beside links to its folder's files, with one expected figure changed.
#   figures       as shipped: exit 0; a request's row holds its result's median_stages_s and the
#                 median over its runs of peak_allocated_bytes, and its errors agree with the printed times
#   tight_times   requests_stages worst 1 %: exit 1, naming the stage times above what it expects
#   tight_memory  requests_memory allocated_worst_pct 1 %: exit 1, naming the stages' peak allocated
#
#   bash tests/cli/reference-stages.sh OVERLAPSIM REPO_ROOT WORK_DIR CASE
. "$(dirname "$0")/lib.sh"
src=$REF/h100-sxm
for e in "$src"/*; do [ "$(basename "$e")" = manifest.yaml ] || ln -s "$e" "$W/"; done
case $case in
  figures) edit='' ;;
  tight_times) edit='s/^  requests_stages: .*/  requests_stages: {median_pct: 1.0, worst_pct: 1.0}/' ;;
  tight_memory) edit='s/^  requests_memory: .*/  requests_memory: {allocated_worst_pct: 1.0}/' ;;
  *) fail "no case $case" ;;
esac
sed "$edit; s|\.\./\.\./\.\./|$root/|; s|^  \.\./h|  $REF/h|" "$src/manifest.yaml" > "$W/manifest.yaml"
[ -n "$edit" ] && cmp -s "$W/manifest.yaml" <(sed "s|\.\./\.\./\.\./|$root/|; s|^  \.\./h|  $REF/h|" "$src/manifest.yaml") && fail "$case edited nothing"
rc=0; "$osim" reference "$W" > "$W/out.txt" 2>&1 || rc=$?
case $case in
  figures)
    [ "$rc" = 0 ] || fail "exit $rc: $(tail -5 "$W/out.txt")"
    # One request's row, built here from its result file: the measured columns, and each error from the printed columns.
    python3 - "$src/request/request-480x832x33-enc-offloaded-dit-block-vae-offloaded-fp32.json" "$W/out.txt" <<'PY' || fail "a stage row disagrees with its result file"
import json, re, statistics, sys
doc, out = json.load(open(sys.argv[1])), open(sys.argv[2]).read()
UNIT = {"s": 1, "ms": 1e-3, "GiB": 2**30}
for stage in ("encode", "dit", "decode"):
    m = re.search(rf"^  {doc['name']} +{stage} +([0-9.]+) (m?s) +([0-9.]+) (m?s) +([-+][0-9.]+)%(?: +([0-9.]+) GiB +([0-9.]+) GiB +([-+][0-9.]+)%)?$", out, re.M)
    assert m, f"no row for {stage}"
    measured, simulated = float(m[1]) * UNIT[m[2]], float(m[3]) * UNIT[m[4]]
    assert abs(measured - doc["median_stages_s"][stage]) <= 0.0005 * measured, (stage, measured)
    assert abs(100 * (simulated / measured - 1) - float(m[5])) <= 0.15, (stage, m[5])
    if stage == "dit": assert m[6] is None, "dit: a peak compared, the twin has no dit stage window"; continue
    peak = statistics.median(r["peak_allocated_bytes"][stage] for r in doc["runs"])
    assert abs(float(m[6]) * 2**30 - peak) <= 0.006 * 2**30, (stage, m[6], peak)
    assert abs(100 * (float(m[7]) / float(m[6]) - 1) - float(m[8])) <= 0.2, (stage, m[8])
PY
    has "$W/out.txt" '^  requests stages: 24 stages of 8 runs, time error median [0-9.]+ %, worst [0-9.]+ %; peak allocated \(16 stages\) error' \
      '^    dit: 8 runs, time error median [0-9.]+ %, worst [0-9.]+ %; peak allocated not compared$' 'ok$' ;;
  tight_times | tight_memory)
    [ "$rc" = 1 ] || fail "exit $rc, not 1: $(tail -5 "$W/out.txt")"
    says="requests' stage times \(median [0-9.]+ %, worst [0-9.]+ %; expected at most 1.0 % and 1.0 %\)"
    [ "$case" = tight_memory ] && says="requests' stage peak allocated \(worst [0-9.]+ %; expected at most 1.0 %\)"
    has "$W/out.txt" "^  above what the manifest expects: $says$" 'FAILED$'
    [ "$(grep -c 'above what the manifest expects' "$W/out.txt")" = 1 ] || fail "more than the one figure missed" ;;
esac
ok
