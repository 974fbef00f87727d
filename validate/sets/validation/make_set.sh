#!/usr/bin/env bash
# The validation set: schedules the calibration never saw.
#   make_set.sh generate OUT        write OUT/<case>/schedule.yaml with overlapsim (no GPU)
#   make_set.sh measure BIN SETDIR OUT [--filter REGEX]
#                                   run each case with overlapsim-validate run on the GPUs
# Cases: SP {1,2,4} x prefetch {0 (blocking), 1, 2, 3} x {NCCL defaults,
# NCCL_P2P_DISABLE=1}, plus LightX2V's block offload with the pairwise
# all-to-all (SP 4, both transports).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mode=$1; shift
case "$mode" in
  generate)
    out=$1
    osim=${OVERLAPSIM:-$here/../../../build/bin/overlapsim}
    mkdir -p "$out"
    gen() {  # name, --set pairs...
      local name=$1; shift
      local sets=(--set "name=$name")
      for kv in "$@"; do sets+=(--set "$kv"); done
      mkdir -p "$out/$name"
      "$osim" run "$here/wan-small.yaml" "${sets[@]}" --schedule-out "$out/$name/schedule.yaml" --force > /dev/null
    }
    for p2p in default p2poff; do
      flag=false; [ $p2p = p2poff ] && flag=true
      for sp in 1 2 4; do
        for pf in 0 1 2 3; do
          gen "sp$sp-pf$pf-$p2p" "parallelism.ulysses=$sp" "offload.prefetch_size=$pf" "runtime.nccl_p2p_disable=$flag"
        done
      done
      gen "lightx2v-block-pairwise-sp4-$p2p" "parallelism.ulysses=4" "parallelism.all_to_all=pairwise" "offload.policy=block" \
          "offload.prefetch_size=null" "runtime.nccl_p2p_disable=$flag"
    done
    # Rewrite the topology path so it is right from OUT/<case>/.
    topo=$(cd "$here/../../../configs/topologies" && pwd)/h200x4-nvlink.yaml
    for d in "$out"/*/; do
      rel=$(python3 -c "import os,sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))" "$topo" "$d")
      sed -i "s|^topology: .*|topology: $rel|" "$d/schedule.yaml"
    done
    ls "$out"
    ;;
  measure)
    bin=$1; set=$2; out=$3; shift 3
    filter=.
    [ "${1:-}" = --filter ] && filter=$2
    # The libraries the binary was linked with (and NCCL_NVLS_ENABLE=0).
    source "$here/../../device_env.sh" "$bin"
    mkdir -p "$out"
    for d in "$set"/*/; do
      name=$(basename "$d")
      [[ "$name" =~ $filter ]] || continue
      [ -s "$out/$name/records.json" ] && continue  # measured already
      sched=$d/schedule.yaml; [ -f "$sched" ] || sched=$sched.gz  # the reference sets keep theirs gzipped
      start=$(date +%s%N)
      if "$bin" run "$sched" -o "$out/$name" --force --verbose --watchdog "${WATCHDOG:-60}" > "$out/$name.log" 2>&1; then
        echo "$name: ok in $(( ($(date +%s%N) - start) / 1000000 )) ms: $(grep -m1 makespan "$out/$name.log")"
      else
        echo "$name: FAILED (exit $?): $(tail -3 "$out/$name.log")"
      fi
    done
    ;;
  *) echo "usage: make_set.sh generate OUT | measure BIN SETDIR OUT [--filter REGEX]" >&2; exit 2 ;;
esac
