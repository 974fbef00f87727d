#!/usr/bin/env bash
# A reference machine re-checked as its manifest states (docs/accuracy.md):
# `overlapsim reference FOLDER` exits 0 and says ok, its calibration is what
# its sources make today, and every figure the manifest's `expected:` names is
# printed and within its limit. The limits are read from the manifest here,
# apart from the binary's own check, so that a figure it stops making or
# checking fails this test too.
#
# With SOURCE (another reference machine's folder, named as the manifest's
# `predicted_from:` names it, e.g. ../h200): leave one machine out, FOLDER's
# runs predicted with SOURCE's calibration, against that entry's figures.
#
#   bash tests/cli/reference.sh OVERLAPSIM FOLDER WORK_DIR [SOURCE]
set -euo pipefail
osim=${1:?usage: reference.sh OVERLAPSIM FOLDER WORK_DIR [SOURCE]}; folder=${2:?}; work=${3:?}; source=${4:-}
out=$work/reference-$(basename "$folder")${source:+-from-$(basename "$source")}.txt
mkdir -p "$work"
"$osim" reference "$folder" ${source:+--calibration-from "$folder/$source"} > "$out" ||
  { rc=$?; cat "$out"; echo "reference.sh: overlapsim reference exited $rc" >&2; exit 1; }
python3 - "$folder/manifest.yaml" "$out" "$source" <<'PY'
import re, sys
import yaml

manifest, out, source = yaml.safe_load(open(sys.argv[1])), open(sys.argv[2]).read(), sys.argv[3]
expected = (manifest.get("predicted_from") or {}).get(source) if source else manifest.get("expected") or {}
if expected is None: sys.exit(f"reference.sh: the manifest has no predicted_from: entry {source}")
failed = []
NUM = r"(-?[0-9.]+)"

def line(pattern, what):
    """The numbers of the one printed line matching `pattern` (a figure the manifest expects must be printed)."""
    m = re.search(r"^" + pattern + r"$", out, re.M)
    if not m:
        failed.append(f"{what}: no line matches {pattern!r}")
        return None
    return [float(g) if g is not None and re.fullmatch(r"-?[0-9.]+", g) else g for g in m.groups()]

def at_most(value, limit, what):  # an error, printed to 0.1: at most its limit
    if value > limit + 0.05 + 1e-9: failed.append(f"{what}: {value} above {limit}")

def at_least(value, limit, what):  # a rank correlation, printed to 0.01: at least its limit
    if value < limit - 0.005 - 1e-9: failed.append(f"{what}: {value} below {limit}")

machine = manifest["machine"]
sources = manifest["calibration"]["sources"]
if source:
    other = yaml.safe_load(open(f"{sys.argv[1].rsplit('/', 1)[0]}/{source}/manifest.yaml"))["machine"]
    last = f"reference {machine} from {other}: ok"
else:
    last = f"reference {machine}: ok"
    if not re.search(rf"^  calibration: .* is what calibrate fits from the {len(sources)} bench files today$", out, re.M):
        failed.append("calibration: not what its sources make today")
if "above what the manifest expects" in out: failed.append("a figure above what the manifest expects")
if out.splitlines()[-1] != last: failed.append(f"last line not '{last}'")

if "replay_held_over_5pct" in expected:
    g = line(r"  replay: [0-9]+ rows, [0-9]+ of effects the model holds; of those over 5 % outside the hand-off's phase: ([0-9]+)", "replay")
    if g and g[0] > expected["replay_held_over_5pct"]: failed.append(f"replay: {g[0]} held rows over 5 %")
for key, label in (("validation", "validation runs"), ("validation_timing_events", "with their timing events")):
    if key in expected:
        g = line(rf"  {label}: [0-9]+ runs, makespan error median {NUM} %, worst {NUM} %", key)
        if g: at_most(g[0], expected[key]["median_pct"], key + " median"); at_most(g[1], expected[key]["worst_pct"], key + " worst")
for s in ("programs", "fp8_programs", "requests"):
    if s in expected:
        g = line(rf"  {s}: [0-9]+ runs, makespan error median {NUM} %, worst {NUM} %, rank correlation at least {NUM}", s)
        if g:
            e = expected[s]
            at_most(g[0], e["median_pct"], s + " median"); at_most(g[1], e["worst_pct"], s + " worst"); at_least(g[2], e["spearman_min"], s + " rank correlation")
if "requests_stages" in expected or "requests_memory" in expected:
    g = line(rf"  requests stages: [0-9]+ stages of [0-9]+ runs, time error median {NUM} %, worst {NUM} %"
             rf"(?:; peak allocated \([0-9]+ stages\) error median {NUM} %, worst {NUM} %|; peak allocated not compared)", "requests stages")
    if g and "requests_stages" in expected:
        e = expected["requests_stages"]
        at_most(g[0], e["median_pct"], "requests_stages median"); at_most(g[1], e["worst_pct"], "requests_stages worst")
    if g and "requests_memory" in expected:
        if g[3] is None: failed.append("requests_memory: no stage's peak allocated compared")
        else: at_most(g[3], expected["requests_memory"]["allocated_worst_pct"], "requests_memory allocated")
if "models" in expected:
    g = line(rf"  models: [0-9]+ runs, makespan error median {NUM} %, worst {NUM} %; peak allocated median {NUM} %, worst {NUM} %", "models")
    if g:
        e = expected["models"]
        at_most(g[0], e["median_pct"], "models median"); at_most(g[1], e["worst_pct"], "models worst"); at_most(g[3], e["allocated_worst_pct"], "models allocated")
for s in ("programs", "fp8_programs", "requests", "models"):
    key = s + "_repeated"
    if key not in expected: continue
    e = expected[key]
    g = line(rf"  {s} over [0-9]+ sessions: [0-9]+ measured more than once, error against each one's median run: median {NUM} %, worst {NUM} %, "
             rf"[0-9]+ within their measured range, medians' rank correlation at least {NUM}"
             rf"(?: \(half the sessions' medians against the other half's: at least {NUM}\))?; configuration pairs every session ran in the same "
             rf"order: [0-9]+, ordered otherwise by the simulation: ([0-9]+)", key)
    if g:
        at_most(g[0], e["median_pct"], key + " median"); at_most(g[1], e["worst_pct"], key + " worst"); at_least(g[2], e["spearman_min"], key + " rank correlation")
        if "halves_spearman_min" in e:
            if g[3] is None or abs(g[3] - e["halves_spearman_min"]) > 0.005 + 1e-9: failed.append(f"{key}: halves {g[3]} not {e['halves_spearman_min']}")
        if "pairs_misordered_max" in e and g[4] > e["pairs_misordered_max"]: failed.append(f"{key}: {g[4]} pairs ordered otherwise")
    if "host_median_pct" in e:
        g = line(rf"  {s}' host issue time over [0-9]+ sessions: [0-9]+ runs, error median {NUM} %, worst {NUM} %", key + " host")
        if g: at_most(g[0], e["host_median_pct"], key + " host median")
if "memory" in expected:
    g = line(rf"  memory: [0-9]+ runs, peak allocated error median {NUM} %, worst {NUM} %; peak in use median {NUM} %, worst {NUM} %", "memory")
    if g: at_most(g[1], expected["memory"]["allocated_worst_pct"], "memory allocated"); at_most(g[3], expected["memory"]["device_worst_pct"], "memory in use")
if "traces" in expected:
    g = line(rf"  traces: [0-9]+ imported, step time error against the program's worst {NUM} % pinned, {NUM} % pageable", "traces")
    if g: at_most(g[0], expected["traces"]["pinned_worst_pct"], "traces pinned"); at_most(g[1], expected["traces"]["pageable_worst_pct"], "traces pageable")
if "traces_default" in expected:
    g = line(rf"  traces_default: [0-9]+ imported \(torch.profiler's defaults\), step time error against the program's worst {NUM} % pinned, {NUM} % pageable; "
             rf"stream waits inferred [0-9]+, [0-9]+ confirmed by the timeline", "traces_default")
    if g:
        e = expected["traces_default"]
        at_most(g[0], e["pinned_worst_pct"], "traces_default pinned"); at_most(g[1], e["pageable_worst_pct"], "traces_default pageable")

for f in failed: print("reference.sh:", f, file=sys.stderr)
if failed: sys.exit(1)
print(f"{last}, {len(expected)} expected figures each printed within its limit")
PY
