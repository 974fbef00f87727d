#!/usr/bin/env bash
# The flow solver against SimGrid's (docs/performance.md "Against SimGrid"):
# each scenario's transfers simulated by overlapsim (overlapsim_bench_flows)
# and by SimGrid's s4u max-min model on the same instance (flows_simgrid), each
# in a process of its own, alternating, --runs times; prints both makespans
# and the simulation wall times.
#
#   sim/bench/simgrid/compare.sh --simgrid PREFIX [--runs N] [SCENARIO ...]
#
# PREFIX: a SimGrid install (include/simgrid/s4u.hpp, lib/libsimgrid.so), e.g.
# SimGrid 4.1 built from its source with the defaults and
#   cmake -DCMAKE_BUILD_TYPE=Release -Denable_smpi=OFF -Denable_model-checking=OFF \
#         -Denable_java=OFF -Denable_python=OFF -DCMAKE_INSTALL_PREFIX=PREFIX SRC && make install
# SCENARIO: scenario files on configs/topologies/h100-128node-ib.yaml (default:
# the 1,024-GPU exchange, equal sizes and in waves). Needs ./build (setup.sh).
set -euo pipefail
cd "$(dirname "$0")/../../.."
prefix="" runs=3 scenarios=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --simgrid) prefix="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    -*) echo "compare.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) scenarios+=("$1"); shift ;;
  esac
done
[[ -n "$prefix" && -f "$prefix/include/simgrid/s4u.hpp" ]] || { echo "compare.sh: --simgrid PREFIX must be a SimGrid install (PREFIX/include/simgrid/s4u.hpp); see --help" >&2; exit 2; }
[[ ${#scenarios[@]} -gt 0 ]] || scenarios=(configs/scenarios/exchange-1024gpu.yaml configs/scenarios/exchange-1024gpu-waves.yaml)
topology=configs/topologies/h100-128node-ib.yaml
bench=./build/bin/overlapsim_bench_flows
[[ -x "$bench" ]] || cmake --build build --target overlapsim_bench_flows
cmake -S sim/bench/simgrid -B build-simgrid-bench -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build build-simgrid-bench >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# SimGrid's plain max-min model: no bandwidth or latency factors (CM02), no
# reverse-direction acknowledgement traffic, no TCP window bound.
cfg=(--cfg=network/model:CM02 --cfg=network/crosstraffic:0 --cfg=network/TCP-gamma:0)
printf '%-26s %9s %16s %16s %9s %9s %9s %7s\n' scenario flows "makespan osim" "makespan simgrid" "osim s" "sg lazy s" "sg full s" ratio
for sc in "${scenarios[@]}"; do
  name=$(basename "$sc" .yaml)
  "$bench" "$sc" "$topology" --runs 1 --instance "$work/$name.inst" >/dev/null
  for ((i = 1; i <= runs; ++i)); do
    o=$("$bench" "$sc" "$topology" --runs 1)
    l=$(./build-simgrid-bench/flows_simgrid "$work/$name.inst" "${cfg[@]}" --cfg=network/optim:Lazy 2>/dev/null)
    f=$(./build-simgrid-bench/flows_simgrid "$work/$name.inst" "${cfg[@]}" --cfg=network/optim:Full 2>/dev/null)
    flows=$(awk 'NR == 1 {print $1}' <<<"$o")
    om=$(awk '/^makespan/ {print $2}' <<<"$o")
    os=$(awk '/^run 1:/ {print $3}' <<<"$o")
    sm=$(awk '/^makespan/ {print $2}' <<<"$l")
    fm=$(awk '/^makespan/ {print $2}' <<<"$f")
    ls=$(awk '/^makespan/ {print $(NF-1)}' <<<"$l")
    fs=$(awk '/^makespan/ {print $(NF-1)}' <<<"$f")
    [[ "$sm" == "$fm" ]] || sm="$sm/$fm"
    ratio=$(awk -v o="$os" -v a="$ls" -v b="$fs" 'BEGIN {m = a < b ? a : b; printf "%.2fx", m / o}')
    printf '%-26s %9s %13s ps %13s ps %9s %9s %9s %7s\n' "$name" "$flows" "$om" "$sm" "$os" "$ls" "$fs" "$ratio"
  done
done
echo "osim s: overlapsim's simulation (routes known, as SimGrid's); sg: SimGrid's engine.run() with network/optim Lazy and Full; ratio: SimGrid's faster of the two / overlapsim"
