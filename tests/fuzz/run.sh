#!/usr/bin/env bash
# Runs the libFuzzer harnesses, each on its own corpus seeded with the
# shipped configs, and prints executions and findings per target.
#   cmake --preset asan && cmake --build --preset asan
#   bash tests/fuzz/run.sh [--seconds N | --runs N --seed S] [--build DIR] [--keep-going] [TARGET...]
# TARGET: topology schedule workload calibration sweep (default: all).
# --keep-going: run the whole time, past findings (libFuzzer's fork mode), for long campaigns.
# --runs N --seed S: N inputs from a fixed seed, the same ones every time (CI's smoke run).
# Corpora and findings (crash-*, timeout-*, oom-*) land in DIR/fuzz/TARGET/.
# Exit status 1 when any target found something.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=60 runs="" seed="" build=build-asan targets=() keep_going=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --keep-going) keep_going=(-fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1); shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(topology schedule workload calibration sweep)
declare -A seeds=([topology]=topologies [schedule]=schedules [workload]=workloads [calibration]=calibrations [sweep]=sweeps)
status=0
for t in "${targets[@]}"; do
  bin="$build/bin/fuzz_$t"
  [ -n "${seeds[$t]:-}" ] || { echo "fuzz: no target '$t' (topology schedule workload calibration sweep)" >&2; exit 2; }
  [ -x "$bin" ] || { echo "fuzz: $bin not built: cmake --preset asan && cmake --build --preset asan" >&2; exit 2; }
  dir="$build/fuzz/$t"
  mkdir -p "$dir/corpus"
  cp -n configs/"${seeds[$t]}"/*.yaml "$dir/corpus/" 2>/dev/null || true
  log="$dir/last.log"
  # Findings: a crash or sanitizer report, an input over 10 s, over 2 GB of memory.
  budget=(-max_total_time="$seconds")
  [ -z "$runs" ] || budget=(-runs="$runs")
  [ -z "$seed" ] || budget+=(-seed="$seed")
  if "$bin" "$dir/corpus" "${budget[@]}" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len=16384 \
       -artifact_prefix="$dir/" -print_final_stats=1 "${keep_going[@]}" > "$log" 2>&1; then result="no finding"; else result="FINDING (see $log)"; status=1; fi
  findings=$(find "$dir" -maxdepth 1 \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) | wc -l)
  [ "$findings" -eq 0 ] || { result="$findings FINDING(S) in $dir (see $log)"; status=1; }
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p; s/^#\([0-9]*\): cov:.*/\1/p' "$log" | tail -1)
  echo "fuzz_$t: ${runs:-?} inputs, corpus $(ls "$dir/corpus" | wc -l) files: $result"
done
exit $status
