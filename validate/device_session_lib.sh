# Sourced by the validate/device_session_*.sh scripts (repo root, on the device
# machine): session_start sets B (the bench binary: $1 or .device/overlapsim-validate),
# O ($OUT/r), SCH (the validation schedules, for --gemm-shapes-from) and
# mark (a stage's end, in seconds since the start, into $O/marks.txt); writes
# gpus.csv and starts nvidia-smi sampling clocks, power, temperature and
# throttle reasons every 100 ms into smi-log.csv. session_end stops it,
# gzips the runs' trace.json and smi-log.csv and packs $O into $OUT/r.tgz.
session_start() {
  B=${1:-.device/overlapsim-validate}
  source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh" "$B"  # unpacks an xz-carried build
  O=$OUT/r
  mkdir -p "$O"
  t0=$(date +%s)
  SCH=$(ls validate/results/h200x4-nvswitch/validation/*/schedule.yaml)
  nvidia-smi --query-gpu=name,pci.bus_id,driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv > "$O/gpus.csv" 2>&1
  nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
    --format=csv -lms 100 > "$O/smi-log.csv" 2>&1 &
  smi=$!
}
mark() { echo "$1 at $(( $(date +%s) - t0 )) s" | tee -a "$O/marks.txt"; }
session_end() {
  kill "$smi" 2>/dev/null
  # Runs' Perfetto traces (ui.perfetto.dev opens them as they are) and the nvidia-smi logs travel
  # and are committed gzipped: the working tree a lent machine copies is limited to 64 MiB.
  find "$O" \( -name trace.json -o -name smi-log.csv \) -exec gzip -9 -n {} +
  (cd "$OUT" && tar czf r.tgz r && rm -rf r)
}
# The full bench with NCCL defaults (gated collectives where there are two
# GPUs, the validation set's GEMM shapes): bench-default.json.
full_bench() {
  validate/run_on_device.sh "$B" "$O" default --gemm-shapes-from $SCH --watchdog 60 2> "$O/default.err"
  mark "default rc=$?"
}
# A box's bench: the full one and the NCCL_P2P_DISABLE=1 one (collectives,
# interference, multi-GPU copies, overheads).
box_bench() {
  full_bench
  NCCL_P2P_DISABLE=1 validate/run_on_device.sh "$B" "$O" p2p-disable --filter 'nccl|interference|multi|overhead' --watchdog 60 2> "$O/p2p.err"
  mark "p2p rc=$?"
}
# The validation runs whose names match $1 (e.g. '^sp[12]-'), into $O/validation.
validation_runs() {
  mkdir -p "$O/validation"
  WATCHDOG=60 validate/validation/make_set.sh measure "$B" validate/results/h200x4-nvswitch/validation "$O/validation" --filter "$1" > "$O/validation/measure.log" 2>&1
  mark "validation done"
}
# PyTorch SDPA at the Wan shapes (validate/attention_bench.py) into
# $O/attention-$1.json, with the Python that has torch.
attention_run() {
  local py=python3
  $py -c 'import torch' 2>/dev/null || py=$(ls /usr/local/bin/python3* /opt/*/bin/python3 2>/dev/null | head -1)
  timeout 240 $py validate/attention_bench.py "$O/attention-$1.json" > "$O/attention-$1.log" 2>&1
  mark "attention-$1 rc=$?"
}
# One bench --filter ($2) with NCCL defaults and with NCCL_P2P_DISABLE=1:
# bench-$1.json and bench-$1-p2p-disable.json.
both_transports() {
  validate/run_on_device.sh "$B" "$O" "$1" --filter "$2" --watchdog 60 2> "$O/$1.err"
  mark "$1 rc=$?"
  NCCL_P2P_DISABLE=1 validate/run_on_device.sh "$B" "$O" "$1-p2p-disable" --filter "$2" --watchdog 60 2> "$O/$1-p2p.err"
  mark "$1 p2p rc=$?"
}
# One bench --filter ($2) twice in a row (run to run): bench-$1-1.json,
# bench-$1-2.json; further arguments go to the bench (e.g. --samples 41).
run_twice() {
  for i in 1 2; do
    validate/run_on_device.sh "$B" "$O" "$1-$i" --filter "$2" --watchdog 60 "${@:3}" 2> "$O/$1-$i.err"
    mark "$1-$i rc=$?"
  done
}
