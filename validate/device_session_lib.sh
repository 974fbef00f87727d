# Sourced by the validate/device_session_*.sh scripts (repo root, on the device
# machine): session_start sets B (the bench binary: $1 or .device/overlapsim-validate),
# O ($OUT/r), SCH (the validation schedules, for --gemm-shapes-from) and
# mark (a stage's end, in seconds since the start, into $O/marks.txt); writes
# gpus.csv and starts nvidia-smi sampling clocks, power, temperature and
# throttle reasons every 100 ms into smi-log.csv. session_end stops it and
# packs $O into $OUT/r.tgz.
session_start() {
  B=${1:-.device/overlapsim-validate}
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
  (cd "$OUT" && tar czf r.tgz r && rm -rf r)
}
