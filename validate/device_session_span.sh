#!/usr/bin/env bash
# Usage (on any GPU machine, repo root): validate/device_session_span.sh [BINARY]; writes $OUT/r.tgz.
# Both ways at once against the host memory the copies stream through
# (README, "Both ways at once: the host buffer's span"): copy_span (pinned
# copies of 1-64 MiB walking through their own buffer or a 1 GiB one, one way
# and both ways, each direction's span apart; at 4 MiB spans of 16 MiB-512 MiB
# between), with the rows a calibration needs from the same lease (one-way,
# bidir_pinned, copy_reps, kernel_reps, overheads). Twice (run to run), plus
# the host's CPU and caches (host.txt); then the host-span set
# (validate/span/: copies both ways from one buffer or walking 1 GiB) with
# overlapsim-validate run into span/<case>/ (on an H200: its topology). About
# a minute on one GPU.
set -u
source "$(dirname "$0")/device_session_lib.sh"
session_start "${1:-}"
{ lscpu; echo; lscpu -C 2>/dev/null; echo; grep -m1 'model name' /proc/cpuinfo; nproc; echo;
  for c in /sys/devices/system/cpu/cpu0/cache/index*; do echo "$c: level $(cat $c/level) $(cat $c/type) $(cat $c/size) shared $(cat $c/shared_cpu_list)"; done
  echo; head -3 /proc/meminfo; numactl --hardware 2>/dev/null; } > "$O/host.txt" 2>&1
run_twice span '^(copy_span|copy_reps|copy_after_idle|kernel_reps|overhead|overhead_gpu_event_gap|h2d_pinned|d2h_pinned|bidir_pinned)$'
source validate/device_env.sh "$B"
topo=configs/topologies/dgx-h100.yaml
nvidia-smi -L | grep -q H200 && topo=configs/topologies/h200x4-nvlink.yaml
mkdir -p "$O/span"
for d in validate/span/*/; do
  name=$(basename "$d")
  "$B" run "$d/schedule.yaml" -t "$topo" -o "$O/span/$name" --warmup 2 --repeat 5 --force --verbose --watchdog 60 > "$O/span/$name.log" 2>&1
  mark "$name rc=$?"
done
session_end
