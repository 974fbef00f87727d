#!/usr/bin/env bash
# Every shipped input through one build's overlapsim, each output kept as text
# or, where large, as its SHA-256: two builds' folders are `diff -r` equal when
# a refactor keeps every output byte-identical.
#
#   bash tests/golden/outputs.sh [BIN_DIR] OUT_DIR      # BIN_DIR: build/bin
#   git stash; ...build...; bash tests/golden/outputs.sh /tmp/before
#   ...build the change...; bash tests/golden/outputs.sh /tmp/after; diff -r /tmp/before /tmp/after
#
# Run from the repository's root; outputs go through .golden-work/ there so
# that the paths they print are the same in every checkout. About 3 minutes on
# 2 cores. The cluster workload runs without --out (with it, a traced run of
# every rank and flow: minutes; docs/performance.md).
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ $# -eq 2 ]; then bin=$1; out=$2; else bin=build/bin; out=${1:?usage: outputs.sh [BIN_DIR] OUT_DIR}; fi
osim=$(readlink -f "$bin/overlapsim")
[ -x "$osim" ] || { echo "outputs.sh: no overlapsim in $bin: build first" >&2; exit 2; }
mkdir -p "$out"
work=.golden-work
# One run at a time per checkout: the outputs name the work folder, so it
# cannot move; a second run would delete the first one's.
exec 9>"$work.lock"
flock -n 9 || { echo "outputs.sh: another outputs.sh is running in this checkout ($work): wait for it, or run from another checkout" >&2; exit 2; }
rm -rf "$work" && mkdir -p "$work"

# run NAME ARGS...: the command's stdout and stderr and its exit code into OUT/NAME.txt
run() {
  local name=$1; shift
  "$osim" "$@" >"$out/$name.txt" 2>&1
  echo "exit $?" >>"$out/$name.txt"
}
# hashes NAME DIR: every file under DIR with its SHA-256 appended to OUT/NAME.txt, then DIR removed
hashes() {
  [ -d "$2" ] && (cd "$2" && find . -type f | LC_ALL=C sort | xargs -r sha256sum) >>"$out/$1.txt"
  rm -rf "$2"
}

for t in configs/topologies/*.yaml; do
  n=$(basename "$t" .yaml)
  run "topo-$n" topo "$t"
  run "topo-$n-nvidia-smi" topo "$t" --nvidia-smi
  run "topo-$n-p2p-disable" topo "$t" --p2p-disable
  run "topo-$n-nccl" topo "$t" --nccl
done
for w in configs/workloads/*.yaml; do
  n=$(basename "$w" .yaml)
  case "$n" in
    *cluster*) run "run-$n" run "$w" ;;
    *) run "run-$n" run "$w" --out "$work/$n" --records --schedule-out "$work/$n.schedule.yaml"
       mv "$work/$n.schedule.yaml" "$work/$n/schedule.yaml" 2>/dev/null
       # (a written schedule names the workload's topology relative to the workload: -t gives it)
       topo="configs/workloads/$(sed -n 's/^topology: *//p' "$w" | head -1)"
       [ -f "$work/$n/records.json" ] && run "report-$n" report "$work/$n" -t "$topo" --out "$work/$n-report"
       hashes "report-$n" "$work/$n-report"
       hashes "run-$n" "$work/$n" ;;
  esac
done
run run-aces-layerwise-prefetch1 run configs/workloads/wan22-720p-aces-layerwise.yaml --set offload.prefetch_size=1
run run-h200-fp8 run configs/workloads/wan22-720p-h200-calibrated.yaml --set model.dtype=fp8
for s in configs/schedules/*.yaml; do
  n=$(basename "$s" .yaml)
  run "schedule-$n" run "$s" --out "$work/$n" --records
  hashes "schedule-$n" "$work/$n"
done
for sc in configs/scenarios/*.yaml; do
  n=$(basename "$sc" .yaml)
  case "$n" in
    exchange-1024gpu*) run "flows-$n" flows "$sc" -t configs/topologies/h100-128node-ib.yaml ;;
    *) for t in aces-4xh100-pcie h200x4-nvlink; do run "flows-$n-$t" flows "$sc" -t "configs/topologies/$t.yaml"; done ;;
  esac
done
for s in configs/sweeps/*.yaml; do
  n=$(basename "$s" .yaml)
  run "sweep-$n" sweep "$s" -j 2 --no-progress --force -o "$work/$n.csv"
  sed -i -E '1s/ in [0-9.]+ s;/ in (time) s;/' "$out/sweep-$n.txt"  # the wall time it took
  mkdir -p "$work/$n.d" && mv "$work/$n.csv" "$work/$n.d/" 2>/dev/null
  hashes "sweep-$n" "$work/$n.d"
done
for m in validate/reference/*/; do
  n=$(basename "$m")
  run "reference-$n" reference "$m"
done
run calibration-fields calibration-fields
T=validate/reference/h100-sxm/traces/dit-4096-layerwise-pf2-pinned.trace.json.gz
run import-trace import-trace "$T" --steps '^step \d+$' -t configs/topologies/dgx-h100.yaml -o "$work/mine"
run compare-simulate compare --simulate "$work/mine" --calibration configs/calibrations/h100-sxm.yaml
run run-imported-pageable run "$work/mine/schedule.yaml" --calibration configs/calibrations/h100-sxm.yaml --host-memory pageable
hashes import-trace "$work/mine"
rm -rf "$work"
echo "outputs.sh: $(ls "$out" | wc -l) outputs in $out"
