#!/usr/bin/env bash
# Calibrates this node in one command (docs/calibrate-your-node.md).
#
#   validate/calibrate-node.sh [--out DIR] [--binary PATH] [--deps PREFIX] [--resume] [--measure-only | --fit-only [FROM]]
#
# Paths (DIR, FROM, --binary, --deps, $OVERLAPSIM) are taken from the folder
# it is called from.
#
# 0. Without overlapsim-validate (build/bin/ or --binary), builds it alone
#    (the validate-only preset: CUDA, cuBLAS, NCCL, yaml-cpp, fmt, CLI11 and
#    nlohmann-json; not the simulator's Boost, Eigen or TBB) into
#    build-validate/; --deps PREFIX: where those four libraries are when the
#    system has none (e.g. Debian packages unpacked with dpkg -x);
#    CUDNN_FRONTEND_HOME: cudnn-frontend (its SDPA, and the bench's SDPA load).
# 1. Measures, with validate/session.sh, one step at a time (each step's
#    results stay if a later one fails; --resume skips the steps whose results
#    are there): on one GPU the full bench, PyTorch's SDPA and own costs (its
#    pageable copies and dispatch, its elementwise kernels, its fp8 GEMMs against
#    bf16, cuDNN's convolutions at the VAE decoders' shapes, the video VAEs'
#    memory-bound kernels on channels-first tensors, its memory beyond
#    the tensors), the hand-off testcases twice and the single-GPU reference
#    programs; on
#    several GPUs also the bench with NCCL_P2P_DISABLE=1 and the Ulysses
#    programs under torchrun. Every bench testcase runs under a watchdog.
# 2. Fits, with ./build/bin/overlapsim (or $OVERLAPSIM): the node's topology
#    from the matrix, GPU names and PCIe links the bench recorded and the
#    NVLink-C2C links machine/nvidia-smi-c2c.txt lists (or, without it, the
#    GPU C2C Mode of machine/nvidia-smi-q.txt) (into
#    DIR/topology-imported.yaml, and DIR/topology.yaml unless that file is
#    there and differs: an edited topology is kept and fitted with), the
#    calibration, and DIR/report.txt: what was fitted and how well (every bench
#    row replayed; the reference programs, none of them a fit input, simulated).
#    --fit-only FROM fits the results in FROM, plain or .gz, into DIR (without
#    --out: FROM itself). FROM a reference folder (validate/reference/<m>/):
#    the sources, second run and topology its manifest.yaml names, so that
#    DIR's calibration.yaml is the committed one byte for byte; the folder is
#    not written (DIR defaults to calibrate-node-out/).
#
# DIR (default calibrate-node-out/) ends with: bench-*.json, attention.json,
# framework.json, eager.json, gemm.json, conv.json, channels-first.json, vram.json, programs/, machine/, topology.yaml,
# topology-imported.yaml, calibration.yaml,
# calibrate.txt, replay.csv, programs.txt, report.txt.
# Needs: nvidia-smi; overlapsim-validate (bash setup.sh builds it where CUDA,
# cuBLAS and NCCL are found, for this node's GPUs); PyTorch for the SDPA,
# framework and program steps (skipped, with a note, without it).
set -uo pipefail
caller=$PWD
root=$(cd "$(dirname "$0")/.." && pwd)
out=calibrate-node-out out_given=0 bin="" resume=0 measure=1 fit=1 deps="" from=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2 out_given=1; shift 2 ;;
    --binary) bin=$2; shift 2 ;;
    --deps) deps=$2; shift 2 ;;
    --resume) resume=1; shift ;;
    --measure-only) fit=0; shift ;;
    --fit-only)
      measure=0; shift
      if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then from=$1; shift; fi ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "calibrate-node: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
# A path the caller gave, from the caller's folder; the repository's own from the root.
from_caller() { case "$1" in /*) echo "$1" ;; *) echo "$caller/$1" ;; esac; }
# --fit-only FROM alone fits a node's results where they are (a reference folder's into calibrate-node-out).
[ -z "$from" ] || [ $out_given = 1 ] || [ -e "$from/manifest.yaml" ] || out=$from
out=$(from_caller "$out")
[ -z "$from" ] || from=$(from_caller "$from")
[ -z "$deps" ] || deps=$(from_caller "$deps")
bin_given=0
if [ -n "$bin" ]; then bin=$(from_caller "$bin") bin_given=1; else bin=build/bin/overlapsim-validate; fi
[ -z "${OVERLAPSIM:-}" ] || OVERLAPSIM=$(from_caller "$OVERLAPSIM")
cd "$root"

if [ $measure = 1 ]; then
  command -v nvidia-smi > /dev/null || { echo "calibrate-node: no nvidia-smi: run it on the GPU node" >&2; exit 2; }
  mkdir -p "$out"
  if [ ! -x "$bin" ] && [ ! -e "$bin.xz" ] && [ $bin_given = 0 ]; then
    bin=build-validate/bin/overlapsim-validate
    if [ ! -x "$bin" ]; then
      echo "calibrate-node: building overlapsim-validate alone (cmake --preset validate-only; log in $out/build.log)"
      t0=$(date +%s)
      extra=()
      [ -z "$deps" ] || extra=(-DCMAKE_PREFIX_PATH="$deps")
      { cmake --preset validate-only "${extra[@]}" && cmake --build --preset validate-only; } > "$out/build.log" 2>&1
      [ -x "$bin" ] || { echo "calibrate-node: the build made no $bin: see $out/build.log (CUDA, cuBLAS and NCCL are needed; yaml-cpp, fmt, CLI11, nlohmann-json from the system or --deps)" >&2; exit 2; }
      echo "    took $(( $(date +%s) - t0 )) s: $(grep -m1 -o 'validate: building overlapsim-validate for sm_[0-9]*' "$out/build.log" || echo "$bin")"
    fi
  fi
  [ -x "$bin" ] || [ -e "$bin.xz" ] || { echo "calibrate-node: no $bin: run 'bash setup.sh' on this node (it builds overlapsim-validate where CUDA, cuBLAS and NCCL are found), or pass --binary" >&2; exit 2; }
  gpus=$(nvidia-smi -L | grep -c '^GPU')
  echo "calibrate-node: $gpus GPU(s): $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | sed 's/^ *//' | paste -sd, -)"
  # Each step: its results (what --resume looks for) and about how long it takes on an H100/H200 node.
  if [ "$gpus" -gt 1 ]; then
    steps=(bench bench-p2p-off attention framework eager gemm conv channels-first vram phase programs-sp)
  else
    steps=(bench attention framework eager gemm conv channels-first vram phase programs)
  fi
  declare -A result=([bench]=bench-default.json [bench-p2p-off]=bench-p2p-disable.json [attention]=attention.json [framework]=framework.json
                     [eager]=eager.json [gemm]=gemm.json [conv]=conv.json [channels-first]=channels-first.json [vram]=vram.json [phase]=bench-phase-2.json [programs]=programs [programs-sp]=programs)
  declare -A seconds=([bench]=240 [bench-p2p-off]=120 [attention]=60 [framework]=90 [eager]=10 [gemm]=15 [conv]=120 [channels-first]=10 [vram]=30 [phase]=90 [programs]=120 [programs-sp]=180)
  left=0
  for s in "${steps[@]}"; do left=$((left + ${seconds[$s]})); done
  total=$left
  # On a terminal, a bar redrawn every second while a step runs: the steps'
  # expected times done so far, and what is left of them.
  bar() {  # DONE_S TOTAL_S TEXT
    local width=30 fill
    fill=$((width * $1 / $2))
    printf '\r    [%-*s] %3d %%, about %d min left (%s)' "$width" "$(printf '%*s' "$fill" '' | tr ' ' '#')" $((100 * $1 / $2)) $((($2 - $1 + 59) / 60)) "$3"
  }
  i=0
  for s in "${steps[@]}"; do
    i=$((i + 1))
    if [ $resume = 1 ] && [ -e "$out/${result[$s]}" ]; then
      echo "[$i/${#steps[@]}] $s: done before (--resume)"
      left=$((left - ${seconds[$s]}))
      continue
    fi
    echo "[$i/${#steps[@]}] $s: about $(( (${seconds[$s]} + 59) / 60 )) min (about $(( (left + 59) / 60 )) min left in all)"
    t0=$(date +%s)
    validate/session.sh --binary "$bin" --out "$out" "$s" > "$out/session-$s.log" 2>&1 &
    pid=$!
    if [ -t 1 ]; then
      while kill -0 "$pid" 2> /dev/null; do
        spent=$(($(date +%s) - t0))
        bar $((total - left + (spent < ${seconds[$s]} ? spent : ${seconds[$s]}))) "$total" "$s: $spent s"
        sleep 1
      done
      printf '\r\033[K'
    fi
    wait "$pid"
    tail -1 "$out/marks.txt" 2>/dev/null | sed 's/^/    /'
    left=$((left - ${seconds[$s]}))
    echo "    took $(( $(date +%s) - t0 )) s"
  done
fi

if [ $fit = 1 ]; then
  osim=${OVERLAPSIM:-build/bin/overlapsim}
  [ -x "$osim" ] || { echo "calibrate-node: no $osim to fit with: run 'bash setup.sh', or copy $out to a machine that has it and run --fit-only $out" >&2; exit 2; }
  from=${from:-$out}
  # A result as measured or gzipped since.
  result() { if [ -e "$from/$1" ]; then echo "$from/$1"; elif [ -e "$from/$1.gz" ]; then echo "$from/$1.gz"; fi; }
  # Named from the repository root where they lie inside it, as the committed calibrations name theirs.
  shown() {
    local r
    r=$(realpath -m -s --relative-to="$root" "$1")
    case $r in ../*) realpath -m -s "$1" ;; *) echo "$r" ;; esac
  }
  second=()
  if [ -e "$from/manifest.yaml" ]; then
    # A reference folder: its manifest's sources, second run and topology, each relative to it.
    mapfile -t listed < <(python3 - "$from/manifest.yaml" <<'PY'
import sys, yaml
m = yaml.safe_load(open(sys.argv[1]))
print(m["topology"])
for s in m["calibration"]["sources"]: print("source", s)
for s in m["calibration"].get("second_run", []): print("second", s)
if m["calibration"].get("fill_from_family"): print("fill --fill-from-family")
PY
) || { echo "calibrate-node: cannot read $from/manifest.yaml (python3 with PyYAML reads it)" >&2; exit 2; }
    [ ${#listed[@]} -gt 1 ] || { echo "calibrate-node: $from/manifest.yaml names no calibration sources" >&2; exit 2; }
    topology=$(shown "$from/${listed[0]}") sources=()
    for l in "${listed[@]:1}"; do
      f=$(shown "$from/${l#* }")
      [ "${l%% *}" = fill ] || [ -e "$f" ] || { echo "calibrate-node: $from/manifest.yaml names ${l#* }, which is not there" >&2; exit 2; }
      case $l in source\ *) sources+=("$f") ;; second\ *) second+=(--second-run "$f") ;; fill\ *) second+=(--fill-from-family) ;; esac
    done
    topology_note="the manifest's"
    mkdir -p "$out"
  else
    bench=$(result bench-default.json)
    [ -n "$bench" ] || { echo "calibrate-node: no $from/bench-default.json(.gz): measure first (without --fit-only)" >&2; exit 2; }
    mkdir -p "$out"
    # The C2C links session.sh captured (a Grace Hopper's GPU reaches its CPU over NVLink-C2C); a bench
    # result that recorded them (environment.nvidia_smi_c2c) serves without the file.
    # Captures without it (made before session.sh saved it): nvidia-smi -q's GPU C2C Mode, the rate ASSUMED.
    c2c=()
    [ ! -s "$from/machine/nvidia-smi-c2c.txt" ] || c2c=(--nvidia-smi-c2c "$from/machine/nvidia-smi-c2c.txt")
    [ ! -s "$from/machine/nvidia-smi-q.txt" ] || c2c+=(--nvidia-smi-q "$from/machine/nvidia-smi-q.txt")
    "$osim" topo --import-nvidia-smi "$bench" "${c2c[@]}" --name topology -o "$out/topology-imported.yaml" --force > "$out/topology.txt" || exit 2
    topology=$out/topology.yaml sources=("$(shown "$bench")")
    # topology.yaml is the import until you edit it: a file that differs from this import stays, and fits with it.
    if [ ! -e "$topology" ]; then
      cp "$out/topology-imported.yaml" "$topology"
      topology_note="imported: $(grep -c 'kind: gpu' "$topology") GPUs; set the lines marked ASSUMED"
    elif cmp -s "$topology" "$out/topology-imported.yaml"; then
      topology_note="imported: $(grep -c 'kind: gpu' "$topology") GPUs; set the lines marked ASSUMED"
    else
      topology_note="yours, kept: it differs from the import in $out/topology-imported.yaml; delete it to take the import"
    fi
    grep -q 'kind: nvlink_c2c' "$topology" && topology_note+="; its nvlink_c2c host links fit the C2C copy-engine caps"
    for f in bench-p2p-disable.json attention.json framework.json eager.json gemm.json conv.json channels-first.json vram.json bench-phase-1.json; do
      r=$(result $f)
      [ -z "$r" ] || sources+=("$(shown "$r")")
    done
    r=$(result bench-phase-2.json)
    [ -z "$r" ] || second=(--second-run "$(shown "$r")")
  fi
  "$osim" calibrate "${sources[@]}" -t "$topology" -o "$out/calibration.yaml" --csv "$out/replay.csv" --force "${second[@]}" \
    > "$out/calibrate.txt" || exit 2
  {
    echo "calibrate-node: $out"
    echo "topology: $topology ($topology_note)"
    echo "calibration: $out/calibration.yaml, fitted from ${#sources[@]} files"
    grep -E '^(rows of effects the model holds|rows with a hand-off|second run)' "$out/calibrate.txt" | sed 's/^/  /'
    defaults=$(grep -E '^  # [a-z]+: nothing measured' "$out/calibration.yaml" | sed 's/^  # \([a-z]*\):.*/\1/' | paste -sd, -)
    [ -n "$defaults" ] && echo "  families left at the model's defaults (nothing measured them): $defaults"
    if ls "$from"/programs/*.json > /dev/null 2>&1; then
      "$osim" compare --programs "$from"/programs/*.json -t "$topology" --calibration "$out/calibration.yaml" > "$out/programs.txt" 2>&1
      echo "reference programs (measured here, none of them a fit input), simulated with this calibration:"
      grep -E '^  [a-z0-9-]+: [0-9]+ programs|^[0-9]+ programs:' "$out/programs.txt" | sed 's/^/  /'
    fi
    # The topology as a path that resolves from any folder (a reference folder's is named from the root above).
    echo "use it: overlapsim run WORKLOAD.yaml -t $(realpath -m -s "$topology") --calibration $out/calibration.yaml"
  } | tee "$out/report.txt"
fi
