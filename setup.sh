#!/usr/bin/env bash
# Installs what overlapsim needs from Debian's packages (skipping what is
# already there) and builds it in ./build. Safe to re-run.
#   bash setup.sh               the simulator; the GPU runner (overlapsim-validate) too where a GPU is
#   bash setup.sh --validate    the GPU runner also without a GPU here (to carry to a GPU node)
#   bash setup.sh --no-validate never the GPU runner
set -euo pipefail
cd "$(dirname "$0")"
validate=auto
for a in "$@"; do
  case "$a" in
    --validate) validate=ON ;;
    --no-validate) validate=OFF ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "setup.sh: unknown option '$a' (--validate, --no-validate)" >&2; exit 2 ;;
  esac
done
# The GPU runner is most of the compile time: build it where it can run, or when asked.
if [ $validate = auto ]; then
  if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then validate=ON; else validate=OFF; fi
fi

packages=(cmake ninja-build g++ libboost-graph-dev libyaml-cpp-dev libeigen3-dev doctest-dev libcli11-dev
          nlohmann-json3-dev libfmt-dev libtbb-dev libbenchmark-dev libjemalloc-dev zlib1g-dev
          # notebooks/ (executed by the tests) and the validate sets: Jupyter, pandas, matplotlib, PyYAML
          jupyter-nbconvert python3-nbconvert python3-ipykernel python3-pandas python3-matplotlib python3-yaml)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cmake --preset default -DOVERLAPSIM_BUILD_VALIDATE=$validate >/dev/null
cmake --build --preset default -j "$(nproc)"
echo "setup: built ./build/bin/overlapsim"
if [ $validate = OFF ]; then
  echo "setup: overlapsim-validate not built: no GPU here ('bash setup.sh --validate' builds it to carry to a GPU node)"
elif [ -x build/bin/overlapsim-validate ]; then
  echo "setup: built ./build/bin/overlapsim-validate (GPU code for sm_$(sed -n 's/^OVERLAPSIM_VALIDATE_ARCHS:INTERNAL=//p' build/CMakeCache.txt))"
  if grep -q '^CUDNN_FRONTEND_INCLUDE_DIR:PATH=.*NOTFOUND' build/CMakeCache.txt; then
    echo "setup: its attention runs as GEMM stand-ins: for cuDNN's SDPA give cmake -DCUDNN_FRONTEND_INCLUDE_DIR=... (docs/measuring.md)"
  fi
else
  echo "setup: overlapsim-validate not built (no CUDA compiler, cuBLAS or NCCL found): the simulator alone"
fi
