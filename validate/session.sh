#!/usr/bin/env bash
# One measurement session on a GPU machine (repo root; docs/measuring.md).
#
#   validate/session.sh [--binary PATH] [--out DIR] [--pack] STEP...
#
# Steps, run in the order given:
#   bench              the full bench with NCCL defaults (copy_collective   -> bench-default.json
#                      apart: its own steps)
#   bench-p2p-off      collectives, interference, multi-GPU copies and
#                      overheads with NCCL_P2P_DISABLE=1                     -> bench-p2p-disable.json
#   copy-collective    pinned H2D/D2H copies on GPU 0 and on every GPU       -> bench-copy-collective.json
#                      beside all-to-all, all-gather, reduce-scatter and
#                      all-reduce, 8/64/512 MiB per rank (issue 76; sizes:
#                      -- --copy-collective-sizes 1,8,64,512,1024)
#   copy-collective-p2p-off  the same with NCCL_P2P_DISABLE=1               -> bench-copy-collective-p2p-disable.json
#   attention          PyTorch SDPA at the workloads' shapes, every backend  -> attention.json
#   attention:KINDS    the same, only these kinds (self, cross, causal;     -> attention-KINDS.json
#                      comma-separated)
#   attention-runner   the runner's cuDNN SDPA at those shapes               -> attention-runner/
#                      (validate/sets/attention/cudnn-shapes.yaml)
#   framework          PyTorch's own pageable copies and per-op host time   -> framework.json
#   framework:NAME     one of framework.py's testcases (pageable, launch_queue, -> framework-NAME.json
#                      pageable_buffers, all_to_all_time, sync_return, pageable_processes,
#                      host_calls, after_wait, fp8_calls, profiler_cost)
#   gemm               PyTorch's GEMMs: fp8 (torch._scaled_mm) beside bf16   -> gemm.json
#                      at the Wan shapes
#   conv               cuDNN convolutions at the VAE decoders' shapes        -> conv.json
#   conv-workspace     the memory those calls take beyond their tensors     -> conv-workspace.json
#                      (cuDNN's workspace, layout copies; no times)
#   copy-interference  pinned H2D/D2H copies beside a memory-bound kernel, a  -> copy-interference.json
#                      few-CTA copy kernel and a D2D memcpy (issue 76)
#   copy-interference-host the same copies beside few-CTA kernels that load -> copy-interference-host.json
#                      from or store to pinned host memory (NCCL's SHM
#                      transport with P2P off, on one GPU)
#   eager              PyTorch's own elementwise kernels at shapes the       -> eager.json
#                      programs do not use, and its norms by row length
#   channels-first     the memory-bound kernels of video VAEs on 5-D         -> channels-first.json
#                      channels-first tensors (norms over the channels, pads,
#                      frame copies, upsampling, transposes)
#   vram               PyTorch's memory beyond its tensors (context, cuBLAS
#                      workspace, the allocator's reserve; NCCL's on
#                      several GPUs)                                        -> vram.json
#   programs-memory    the reference program's memory grid (peak allocated  -> memory/
#                      and in use over model widths and policies)
#   models             the other presets' blocks as their reference code     -> models/
#                      runs them (validate/programs/model_blocks.py)
#   models-profiled    the same, and a torch.profiler trace of each         -> models/
#   programs[:NAMES]   the reference programs (validate/programs/), each    -> programs/
#                      profiled too; NAMES: only these (comma-separated)
#   programs-default-trace[:NAMES] the same programs profiled as torch.profiler -> programs-default-trace/
#                      records by default (no shapes, no CUDA sync events),
#                      12 timed runs each: the profiled run comes after the
#                      power limiter's first dip, as the steps it stands for
#   request[:NAMES]    the reference request (validate/programs/             -> request/
#                      request_pipeline.py): text encoder, DiT and VAE decode
#                      timed end to end and by stage, resident and offloaded,
#                      each configuration in a process of its own
#   vae-profile        the request's VAE decode under torch.profiler: its  -> vae-profile/
#                      kernels by kind and its convolutions by shape
#                      (validate/programs/vae_profile.py; not a calibration input)
#   programs-fp8       the single-GPU pinned and resident programs with     -> programs-fp8/
#                      fp8 weights (not profiled)
#   prefetch-host      the 4,096-token program's host with the prefetch     -> prefetch-host.json,
#                      taken apart (validate/programs/prefetch_host.py),        prefetch-host-one-cpu.json
#                      then bound to one CPU
#   programs-sp[:NAMES] the Ulysses reference programs under torchrun on    -> programs/
#                      every GPU (NCCL defaults; the 16,384-token NCCL ones
#                      also with NCCL_P2P_DISABLE=1, and on 2 GPUs of 4+);
#                      NAMES: only these, each profiled (comma-separated)
#   programs-sp-pinN[:NAMES] the same on every GPU with NCCL defaults, each  -> programs-pinN/
#                      rank bound to N physical cores of its own (not profiled)
#   phase              the hand-off testcases, every sample kept, twice      -> bench-phase-1.json, -2.json
#   bench:NAME:REGEX   one bench --filter REGEX                              -> bench-NAME.json
#   twice:NAME:REGEX   the same, twice in a row                              -> bench-NAME-1.json, -2.json
#   validation[:REGEX] the validation set's runs (the schedules of           -> validation/<case>/
#                      validate/reference/h200x4-nvlink/validation/)
# Presets: whole-gpu = bench attention attention-runner framework eager gemm vram phase validation:^sp1-pf[0-3]-default$ programs programs-fp8 programs-memory models
#          box       = bench bench-p2p-off copy-collective copy-collective-p2p-off attention framework programs-sp validation
# Every session also writes the machine's description (machine/: nvidia-smi,
# its topology matrix, nvidia-smi -q, its C2C links, the GPUs' PCIe links (lspci), their clocks and limits, library versions, lscpu), samples
# clocks, power and throttle reasons every 100 ms (smi-log.csv.gz), and the
# time each step ended (marks.txt). Extra bench options after `--` go to every
# bench step (e.g. -- --samples 41). With --pack, DIR is packed into DIR.tgz.
# NCCL_NVLS_ENABLE=0 always: the machines are shared.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=.device/overlapsim-validate out=${OUT:-out}/session pack=0 steps=() extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --pack) pack=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
    *) steps+=("$1"); shift ;;
  esac
done
[ ${#steps[@]} -gt 0 ] || { echo "session.sh: give at least one step (see --help)" >&2; exit 2; }
expanded=()
for s in "${steps[@]}"; do
  case "$s" in
    whole-gpu) expanded+=(bench attention attention-runner framework eager gemm vram phase 'validation:^sp1-pf[0-3]-default$' programs programs-fp8 programs-memory models) ;;
    box) expanded+=(bench bench-p2p-off copy-collective copy-collective-p2p-off attention framework programs-sp validation) ;;
    *) expanded+=("$s") ;;
  esac
done
# PyTorch brings its own cuDNN, cuBLAS and NCCL: its steps run with the
# environment as it was, the bench's with the libraries device_env.sh finds.
torch_ld=${LD_LIBRARY_PATH:-}
source validate/device_env.sh "$bin"  # libraries, NCCL_NVLS_ENABLE=0
py=python3
$py -c 'import torch' 2>/dev/null || py=$(ls /usr/local/bin/python3* /opt/*/bin/python3 2>/dev/null | head -1)
torch_py=(env LD_LIBRARY_PATH="$torch_ld" PYTHONUNBUFFERED=1 "$py")
mkdir -p "$out/machine"
t0=$(date +%s)
mark() { echo "$1 at $(( $(date +%s) - t0 )) s" | tee -a "$out/marks.txt"; }
nvidia-smi topo -m > "$out/machine/nvidia-smi-topo.txt" 2>&1
nvidia-smi > "$out/machine/nvidia-smi.txt" 2>&1
nvidia-smi -q > "$out/machine/nvidia-smi-q.txt" 2>&1
# The GPUs' NVLink-C2C links to their CPU (a Grace Hopper's; topo --import-nvidia-smi makes them nvlink_c2c
# host links). Drivers without the subcommand print their usage, which the import reads as no C2C.
nvidia-smi c2c -s > "$out/machine/nvidia-smi-c2c.txt" 2>&1 || true
# The GPUs' PCIe links as the kernel sees them (width and speed: what topo --import-nvidia-smi cannot).
command -v lspci > /dev/null && lspci -vv -d 10de: 2> /dev/null | grep -E '^[0-9a-f]|LnkCap:|LnkSta:' > "$out/machine/lspci-nvidia.txt"
nvidia-smi --query-gpu=name,pci.bus_id,driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv > "$out/machine/gpus.csv" 2>&1
{ echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"; ldd "$bin"; uname -a; head -2 /etc/os-release 2>/dev/null; } > "$out/machine/versions.txt" 2>&1
command -v lscpu > /dev/null && lscpu > "$out/machine/lscpu.txt" 2>&1
nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv -lms 100 > "$out/smi-log.csv" 2>&1 &
smi=$!
# The validation set's GEMM shapes join the bench's GEMM table (--gemm-shapes-from).
shapes=$(ls validate/reference/h200x4-nvlink/validation/*/schedule.yaml* 2>/dev/null)
bench() {  # name, env..., -- bench options
  local name=$1; shift
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" "$bin" bench -o "$out/bench-$name.json" --watchdog 60 "$@" "${extra[@]}" 2> "$out/$name.err"
  mark "bench-$name rc=$?"
}
for s in "${expanded[@]}"; do
  case "$s" in
    bench) bench default -- --filter '^(?!copy_collective$)' --gemm-shapes-from $shapes ;;
    bench-p2p-off) bench p2p-disable NCCL_P2P_DISABLE=1 -- --filter 'nccl|interference|multi|overhead' ;;
    copy-collective) bench copy-collective -- --filter '^copy_collective$' ;;
    copy-collective-p2p-off) bench copy-collective-p2p-disable NCCL_P2P_DISABLE=1 -- --filter '^copy_collective$' ;;
    attention)
      timeout 300 "${torch_py[@]}" validate/src/testcases/attention.py "$out/attention.json" > "$out/attention.log" 2>&1
      mark "attention rc=$?" ;;
    attention:*)
      kinds=${s#attention:}
      timeout 300 "${torch_py[@]}" validate/src/testcases/attention.py "$out/attention-${kinds//,/-}.json" --kinds "$kinds" > "$out/attention-${kinds//,/-}.log" 2>&1
      mark "attention:$kinds rc=$?" ;;
    attention-runner)
      timeout 300 "$bin" run validate/sets/attention/cudnn-shapes.yaml -o "$out/attention-runner" --force > "$out/attention-runner.log" 2>&1
      mark "attention-runner rc=$?" ;;
    framework)
      timeout 120 "${torch_py[@]}" validate/src/testcases/framework.py "$out/framework.json" > "$out/framework.log" 2>&1
      mark "framework rc=$?" ;;
    framework:*)
      t=${s#framework:}
      timeout 120 "${torch_py[@]}" validate/src/testcases/framework.py "$out/framework-$t.json" "$t" > "$out/framework-$t.log" 2>&1
      mark "framework:$t rc=$?" ;;
    gemm)
      timeout 120 "${torch_py[@]}" validate/src/testcases/gemm.py "$out/gemm.json" > "$out/gemm.log" 2>&1
      mark "gemm rc=$?" ;;
    conv)
      timeout 540 "${torch_py[@]}" validate/src/testcases/conv.py "$out/conv.json" > "$out/conv.log" 2>&1
      mark "conv rc=$?" ;;
    conv-workspace)
      timeout 300 "${torch_py[@]}" validate/src/testcases/conv.py "$out/conv-workspace.json" --workspace > "$out/conv-workspace.log" 2>&1
      mark "conv-workspace rc=$?" ;;
    copy-interference)
      timeout 180 "${torch_py[@]}" validate/src/testcases/copy_beside_kernels.py "$out/copy-interference.json" > "$out/copy-interference.log" 2>&1
      mark "copy-interference rc=$?" ;;
    copy-interference-host)
      timeout 420 "${torch_py[@]}" validate/src/testcases/copy_beside_kernels.py "$out/copy-interference-host.json" --host-memory > "$out/copy-interference-host.log" 2>&1
      mark "copy-interference-host rc=$?" ;;
    eager)
      timeout 120 "${torch_py[@]}" validate/src/testcases/eager.py "$out/eager.json" > "$out/eager.log" 2>&1
      mark "eager rc=$?" ;;
    channels-first)
      timeout 200 "${torch_py[@]}" validate/src/testcases/channels_first.py "$out/channels-first.json" > "$out/channels-first.log" 2>&1
      mark "channels-first rc=$?" ;;
    vram)
      timeout 120 "${torch_py[@]}" validate/src/testcases/vram.py "$out/vram.json" > "$out/vram.log" 2>&1
      mark "vram rc=$?" ;;
    models|models-profiled)
      timeout 300 "${torch_py[@]}" validate/programs/model_blocks.py --out "$out/models" $([ "$s" = models-profiled ] && echo --profile) > "$out/models.log" 2>&1
      mark "$s rc=$?" ;;
    programs-memory)
      timeout 300 "${torch_py[@]}" validate/programs/dit_offload.py --out "$out/memory" --grid memory --repeat 1 > "$out/programs-memory.log" 2>&1
      mark "programs-memory rc=$?" ;;
    programs|programs:*)
      only=${s#programs}; only=${only#:}
      timeout 240 "${torch_py[@]}" validate/programs/dit_offload.py --out "$out/programs" --grid single --profile ${only:+--only "$only"} \
        > "$out/programs.log" 2>&1
      mark "programs rc=$?" ;;
    programs-default-trace|programs-default-trace:*)
      only=${s#programs-default-trace}; only=${only#:}
      timeout 240 "${torch_py[@]}" validate/programs/dit_offload.py --out "$out/programs-default-trace" --grid single --profile \
        --profile-settings default --repeat 12 ${only:+--only "$only"} > "$out/programs-default-trace.log" 2>&1
      mark "programs-default-trace rc=$?" ;;
    vae-profile)
      timeout 300 "${torch_py[@]}" validate/programs/vae_profile.py --out "$out/vae-profile" > "$out/vae-profile.log" 2>&1 &&
        timeout 200 "${torch_py[@]}" validate/programs/vae_profile.py --out "$out/vae-profile" --frames 33 --dtype fp32 >> "$out/vae-profile.log" 2>&1
      mark "vae-profile rc=$?" ;;
    request|request:*)
      # Each configuration in a process of its own: its memory figures start
      # from nothing, and the host's memory is given back between them.
      only=${s#request}; only=${only#:}
      [ -n "$only" ] || only=$("$py" validate/programs/request_pipeline.py --grid single --list | paste -sd, -)
      rc=0
      : > "$out/request.log"
      for name in ${only//,/ }; do
        timeout 120 "${torch_py[@]}" validate/programs/request_pipeline.py --out "$out/request" --grid single --only "$name" \
          >> "$out/request.log" 2>&1 || rc=$?
      done
      mark "request rc=$rc" ;;
    programs-fp8)
      timeout 240 "${torch_py[@]}" validate/programs/dit_offload.py --out "$out/programs-fp8" --grid fp8 > "$out/programs-fp8.log" 2>&1
      mark "programs-fp8 rc=$?" ;;
    prefetch-host)
      timeout 120 "${torch_py[@]}" validate/programs/prefetch_host.py "$out/prefetch-host.json" > "$out/prefetch-host.log" 2>&1
      mark "prefetch-host rc=$?"
      cpu=$(python3 -c 'import os; print(sorted(os.sched_getaffinity(0))[2 % len(os.sched_getaffinity(0))])' 2>/dev/null || echo 0)
      timeout 120 "${torch_py[@]}" validate/programs/prefetch_host.py "$out/prefetch-host-one-cpu.json" --cpu "$cpu" > "$out/prefetch-host-one-cpu.log" 2>&1
      mark "prefetch-host one CPU rc=$?" ;;
    programs-sp|programs-sp:*|programs-sp-pin[0-9]*)
      head=${s%%:*}; only=${s#"$head"}; only=${only#:}
      pin=${head#programs-sp}; pin=${pin#-pin}
      ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
      sp() {  # label, env..., -- dit_offload.py options
        local label=$1; shift
        local envs=()
        while [ "$1" != -- ]; do envs+=("$1"); shift; done
        shift
        timeout 300 env "${envs[@]}" "${torch_py[@]}" -m torch.distributed.run --standalone --nproc-per-node "$nproc" \
          validate/programs/dit_offload.py --out "$out/programs${pin:+-pin$pin}" --grid sp ${pin:+--pin-cores "$pin"} "$@" \
          > "$out/programs-$label.log" 2>&1
        mark "programs-$label rc=$?"
      }
      if [ "$ngpus" -lt 2 ]; then mark "$head skipped: $ngpus GPU"; continue; fi
      nproc=$ngpus
      if [ -n "$pin" ]; then sp "sp$nproc-pin$pin" NCCL_NVLS_ENABLE=0 -- ${only:+--only "$only"}; continue; fi
      if [ -n "$only" ]; then sp sp$nproc NCCL_NVLS_ENABLE=0 -- --profile --only "$only"; continue; fi
      sp sp$nproc NCCL_NVLS_ENABLE=0 -- --profile --profile-only "dit-sp$nproc-16384-nccl-layerwise-pf2-pinned"
      sp sp$nproc-p2poff NCCL_P2P_DISABLE=1 -- --grid-tokens 16384 --grid-a2a nccl
      if [ "$ngpus" -ge 4 ]; then nproc=2; sp sp2 CUDA_VISIBLE_DEVICES=0,1 -- --grid-tokens 16384 --grid-a2a nccl; fi ;;
    phase) for i in 1 2; do bench "phase-$i" -- --filter '^(copy_reps|copy_after_idle|handoff_wait|kernel_reps)$' --samples 41; done ;;
    bench:*:*) IFS=: read -r _ name re <<< "$s"; bench "$name" -- --filter "$re" ;;
    twice:*:*) IFS=: read -r _ name re <<< "$s"; for i in 1 2; do bench "$name-$i" -- --filter "$re"; done ;;
    validation|validation:*)
      re=${s#validation}; re=${re#:}
      WATCHDOG=60 validate/sets/validation/make_set.sh measure "$bin" validate/reference/h200x4-nvlink/validation "$out/validation" --filter "${re:-.}" \
        > "$out/validation.log" 2>&1
      mark "validation rc=$?" ;;
    *) echo "session.sh: unknown step '$s' (see --help)" >&2 ;;
  esac
done
kill "$smi" 2>/dev/null
gzip -9 -n -f "$out/smi-log.csv"
if [ $pack = 1 ]; then tar czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")" && rm -rf "$out"; fi
