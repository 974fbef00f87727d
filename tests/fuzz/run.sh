#!/usr/bin/env bash
# Runs the libFuzzer harnesses, each on its own corpus seeded with the
# shipped configs, and prints executions and findings per target.
#   cmake --preset asan && cmake --build --preset asan
#   bash tests/fuzz/run.sh [--seconds N | --runs N --seed S] [--build DIR] [--keep-going [--jobs J]] [--parallel] [TARGET...]
# TARGET: topology schedule workload calibration sweep nvidia_smi kineto (default: all).
# --keep-going: run the whole time, past findings (libFuzzer's fork mode), for long campaigns;
#   --jobs J: J worker processes per target sharing its corpus (fork mode), default 1.
# --parallel: the targets at once (a many-core machine), not one after another.
# --runs N --seed S: N inputs from a fixed seed, the same ones every time (CI's smoke run).
# Corpora and findings (crash-*, timeout-*, oom-*) land in DIR/fuzz/TARGET/.
# Exit status 1 when any target found something.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=60 runs="" seed="" build=build-asan targets=() keep_going=() jobs=1 parallel=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --keep-going) keep_going=(-ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1); shift ;;
    --jobs) jobs="$2"; shift 2 ;;
    --parallel) parallel=1; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(topology schedule workload calibration sweep nvidia_smi kineto)
[ ${#keep_going[@]} -eq 0 ] || keep_going+=(-fork="$jobs")
# Each target's seed files (the shipped configs; nvidia-smi captures, good and damaged; torch.profiler
# traces cut to a few kB).
declare -A seeds=([topology]="configs/topologies/*.yaml" [schedule]="configs/schedules/*.yaml" [workload]="configs/workloads/*.yaml"
  [calibration]="configs/calibrations/*.yaml" [sweep]="configs/sweeps/*.yaml"
  [nvidia_smi]="tests/data/nvidia-smi/*.txt tests/badinput/nvidia-smi/*.txt validate/reference/*/machine/nvidia-smi-topo.txt"
  [kineto]="tests/fuzz/seeds/kineto/*.json tests/data/bad-trace.json")
for t in "${targets[@]}"; do
  [ -n "${seeds[$t]:-}" ] || { echo "fuzz: no target '$t' (topology schedule workload calibration sweep nvidia_smi kineto)" >&2; exit 2; }
  [ -x "$build/bin/fuzz_$t" ] || { echo "fuzz: $build/bin/fuzz_$t not built: cmake --preset asan && cmake --build --preset asan" >&2; exit 2; }
done
# One target: its line in DIR/summary; exit 1 on a finding.
fuzz_one() {
  local t="$1" bin="$build/bin/fuzz_$1" dir="$build/fuzz/$1" result status=0 log budget findings inputs
  mkdir -p "$dir/corpus"
  # Seeds named by their path, as files of one name (nvidia-smi-topo.txt) come from several folders.
  for f in ${seeds[$t]}; do cp -n "$f" "$dir/corpus/$(echo "$f" | tr / _)" 2>/dev/null || true; done
  log="$dir/last.log"
  # Findings: a crash or sanitizer report, an input over 10 s, over 2 GB of memory.
  budget=(-max_total_time="$seconds")
  [ -z "$runs" ] || budget=(-runs="$runs")
  [ -z "$seed" ] || budget+=(-seed="$seed")
  if "$bin" "$dir/corpus" "${budget[@]}" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len=16384 \
       -artifact_prefix="$dir/" -print_final_stats=1 "${keep_going[@]}" > "$log" 2>&1; then result="no finding"; else result="FINDING (see $log)"; status=1; fi
  findings=$(find "$dir" -maxdepth 1 \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) | wc -l)
  [ "$findings" -eq 0 ] || { result="$findings FINDING(S) in $dir (see $log)"; status=1; }
  # Inputs run: the final stats line (one process), or the fork mode's last "#N: cov: ..." line.
  inputs=$(sed -n 's/^stat::number_of_executed_units: *//p; s/^#\([0-9][0-9]*\):\{0,1\}[[:space:]]*\(cov\|INITED\|DONE\|pulse\|NEW\|REDUCE\).*/\1/p' "$log" | tail -1)
  echo "fuzz_$t: ${inputs:-?} inputs, corpus $(ls "$dir/corpus" | wc -l) files, ${jobs} job(s): $result" > "$dir/summary"
  return $status
}
status=0
if [ "$parallel" = 1 ]; then
  pids=()
  for t in "${targets[@]}"; do fuzz_one "$t" & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p" || status=1; done
else
  for t in "${targets[@]}"; do fuzz_one "$t" || status=1; done
fi
for t in "${targets[@]}"; do cat "$build/fuzz/$t/summary"; done
exit $status
