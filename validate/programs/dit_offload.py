#!/usr/bin/env python3
"""A reference program: what video-DiT stacks (sglang, LightX2V) run on one GPU,
written as they write it, in plain PyTorch with random weights.

A stack of DiT blocks (norm, QKV, rope, self-attention through PyTorch's default
scaled_dot_product_attention, out projection, cross-attention to text tokens,
GELU FFN, residuals) whose weights live in host memory and are offloaded the
way those stacks do it:
  layerwise  sglang's LayerwiseOffloadManager: blocks copied ahead on a copy
             stream, `prefetch` blocks at a time (0: a blocking copy per block)
  block      LightX2V: two GPU buffers, the next block copied while this one
             computes, both streams synchronised after every block
  none       every block resident on the GPU
from pinned or pageable host memory.

Each configuration runs `warmup` times untimed, then `repeat` times timed by
CUDA events on the compute stream (no profiler); with --profile one more run
is recorded by torch.profiler (a Chrome trace, gzipped). For each it writes
NAME.json (schema overlapsim.program/v1): the measured makespans, the SDPA
backend PyTorch ran, the environment, and the program's twin as an overlapsim
workload (`workload:`), which `overlapsim reference` simulates and compares.

  dit_offload.py --out DIR [--grid single] [--profile]          every configuration of the grid
  dit_offload.py --out DIR --policy layerwise --prefetch 2 ...    one
  dit_offload.py --out DIR --grid single --twins-only             the twins' files only (no GPU)
"""
import argparse
import gzip
import json
import os
import shutil
import statistics
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "src", "testcases"))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder for NAME.json (and NAME.trace.json.gz)")
    p.add_argument("--grid", choices=["single"], help="every single-GPU configuration (see GRIDS)")
    p.add_argument("--policy", choices=["layerwise", "block", "none"], default="layerwise")
    p.add_argument("--prefetch", type=int, default=2, help="layerwise: blocks copied ahead (0: a blocking copy per block)")
    p.add_argument("--host", choices=["pinned", "pageable"], default="pinned")
    p.add_argument("--tokens", type=int, default=8192)
    p.add_argument("--hidden", type=int, default=3072)
    p.add_argument("--heads", type=int, default=24)
    p.add_argument("--ffn", type=int, default=8192)
    p.add_argument("--text", type=int, default=512)
    p.add_argument("--blocks", type=int, default=8)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--profile", action="store_true", help="also write a torch.profiler trace of one run")
    p.add_argument("--twins-only", action="store_true", help="write each configuration's twin workload, run nothing")
    p.add_argument("--only", help="comma-separated configuration names: run only these of the grid")
    return p.parse_args()


def configurations(a):
    """The configurations to run: the grid's, or the one the options give."""
    base = {k: getattr(a, k) for k in ("tokens", "hidden", "heads", "ffn", "text", "blocks", "steps")}
    if a.grid != "single":
        return [dict(base, policy=a.policy, prefetch=a.prefetch, host=a.host)]
    out = []
    # Copy-bound (4,096 tokens: a block computes ~2 ms, copies ~4.6 ms) and
    # compute-bound (16,384: ~12 ms against the same copy).
    for tokens in (4096, 16384):
        for pf in (0, 1, 2, 3):
            out.append(dict(base, tokens=tokens, policy="layerwise", prefetch=pf, host="pinned"))
        for pf in (0, 2):
            out.append(dict(base, tokens=tokens, policy="layerwise", prefetch=pf, host="pageable"))
        out.append(dict(base, tokens=tokens, policy="block", prefetch=0, host="pinned"))
        out.append(dict(base, tokens=tokens, policy="none", prefetch=0, host="pinned"))
    return out


def name_of(c):
    policy = f"layerwise-pf{c['prefetch']}" if c["policy"] == "layerwise" else c["policy"]
    host = "" if c["policy"] == "none" else "-" + c["host"]
    return f"dit-{c['tokens']}-{policy}{host}"


def twin(c, backend):
    """The program as an overlapsim workload (docs/formats/workload.md): the
    same blocks, shapes, steps, offload policy and host memory."""
    w = {"name": name_of(c),
         "model": {"preset": "custom", "blocks": c["blocks"], "hidden": c["hidden"], "ffn": c["ffn"], "heads": c["heads"],
                   "head_dim": c["hidden"] // c["heads"], "text_tokens": c["text"]},
         "tokens": c["tokens"], "steps": c["steps"], "cfg": "none", "parallelism": {"ulysses": 1}, "runtime": {"framework": "pytorch"}}
    if c["policy"] == "layerwise":
        w["offload"] = {"policy": "layerwise", "prefetch_size": c["prefetch"], "host_memory": c["host"]}
    elif c["policy"] == "block":
        w["offload"] = {"policy": "block", "host_memory": c["host"]}
    if backend:
        w["compute"] = {"attention_backend": backend}
    return w


class Dit:
    """The blocks' weights (host copies) and the forward pass."""

    def __init__(self, torch, c, host):
        self.t, self.c = torch, c
        h, f = c["hidden"], c["ffn"]
        # One flat bf16 tensor per block: qkv, out, cross q, cross kv, cross out, ffn up, ffn down.
        self.parts = [("qkv", 3 * h, h), ("out", h, h), ("cq", h, h), ("ckv", 2 * h, h), ("cout", h, h), ("up", f, h), ("down", h, f)]
        self.numel = sum(o * i for _, o, i in self.parts)
        self.host = []
        for b in range(c["blocks"]):
            w = (torch.randn(self.numel, device="cuda", dtype=torch.bfloat16) * 0.02).cpu()
            self.host.append(w.pin_memory() if host == "pinned" else w)
        torch.cuda.synchronize()

    def views(self, flat):
        out, at = {}, 0
        for name, o, i in self.parts:
            out[name] = flat[at:at + o * i].view(o, i)
            at += o * i
        return out

    def block(self, x, text, w):
        F, c = self.t.nn.functional, self.c
        S, h, H = x.shape[0], c["hidden"], c["heads"]
        d = h // H
        y = F.layer_norm(x, (h,))
        q, k, v = F.linear(y, w["qkv"]).split(h, dim=-1)
        q, k = q * 0.5, k * 0.5  # rope's elementwise traffic
        a = F.scaled_dot_product_attention(q.view(1, S, H, d).transpose(1, 2), k.view(1, S, H, d).transpose(1, 2), v.view(1, S, H, d).transpose(1, 2))
        x = x + F.linear(a.transpose(1, 2).reshape(S, h), w["out"])
        y = F.layer_norm(x, (h,))
        cq = F.linear(y, w["cq"])
        ck, cv = F.linear(text, w["ckv"]).split(h, dim=-1)
        T = text.shape[0]
        ca = F.scaled_dot_product_attention(cq.view(1, S, H, d).transpose(1, 2), ck.view(1, T, H, d).transpose(1, 2), cv.view(1, T, H, d).transpose(1, 2))
        x = x + F.linear(ca.transpose(1, 2).reshape(S, h), w["cout"])
        y = F.layer_norm(x, (h,))
        return x + F.linear(F.gelu(F.linear(y, w["up"]), approximate="tanh"), w["down"])


def run_once(torch, dit, c, x0, text):
    """One run of the program; returns its makespan (s) from CUDA events on the compute stream."""
    compute = torch.cuda.current_stream()
    copy = dit.copy_stream
    L, total = c["blocks"], c["blocks"] * c["steps"]
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(compute)
    x = x0
    if c["policy"] == "none":
        for g in range(total):
            x = dit.block(x, text, dit.views(dit.resident[g % L]))
    elif c["policy"] == "layerwise" and c["prefetch"] == 0:  # the blocking .to() per block
        for g in range(total):
            flat = dit.host[g % L].to("cuda", non_blocking=False)
            x = dit.block(x, text, dit.views(flat))
            del flat
    elif c["policy"] == "layerwise":
        P, on_gpu, fetched = c["prefetch"], {}, set()

        def prefetch(g):
            if g in fetched:  # on the GPU or on its way already (the next step's first blocks)
                return
            fetched.add(g)
            with torch.cuda.stream(copy):
                flat = torch.empty(dit.numel, device="cuda", dtype=torch.bfloat16)
                flat.copy_(dit.host[g % L], non_blocking=True)
                ev = torch.cuda.Event()
                ev.record(copy)
            on_gpu[g] = (flat, ev)

        for j in range(min(P, total)):
            prefetch(j)
        for g in range(total):
            if g % L % P == 0:
                copy.wait_stream(compute)  # copy_stream.wait_stream(compute), as sglang does
                for j in range(g + P, min(g + 2 * P, total)):
                    prefetch(j)
            flat, ev = on_gpu.pop(g)
            compute.wait_event(ev)
            flat.record_stream(compute)
            x = dit.block(x, text, dit.views(flat))
            del flat
    else:  # block: two buffers, the next block's copy beside this one's compute
        bufs = dit.buffers
        with torch.cuda.stream(copy):
            bufs[0].copy_(dit.host[0], non_blocking=True)
        copy.synchronize()
        for g in range(total):
            if g + 1 < total:
                with torch.cuda.stream(copy):
                    bufs[(g + 1) % 2].copy_(dit.host[(g + 1) % L], non_blocking=True)
            x = dit.block(x, text, dit.views(bufs[g % 2]))
            compute.synchronize()
            copy.synchronize()
    end.record(compute)
    torch.cuda.synchronize()
    assert torch.isfinite(x).all()
    return start.elapsed_time(end) * 1e-3


def measure(torch, c, dit, args, out_dir, backend, environment):
    h = c["hidden"]
    x0 = torch.randn(c["tokens"], h, device="cuda", dtype=torch.bfloat16)
    text = torch.randn(c["text"], h, device="cuda", dtype=torch.bfloat16)
    dit.copy_stream = torch.cuda.Stream()
    dit.resident = [w.to("cuda") for w in dit.host] if c["policy"] == "none" else []
    dit.buffers = [torch.empty(dit.numel, device="cuda", dtype=torch.bfloat16) for _ in range(2)] if c["policy"] == "block" else []
    for _ in range(args.warmup):
        run_once(torch, dit, c, x0, text)
    makespans = [run_once(torch, dit, c, x0, text) for _ in range(args.repeat)]
    name = name_of(c)
    if args.profile:
        from torch.profiler import ProfilerActivity, profile
        # Shapes (GEMM m, n, k) and the CUDA synchronisation events (which
        # stream waits on which event record): what `overlapsim import-trace` reads.
        extra = {}
        try:
            extra["experimental_config"] = torch._C._profiler._ExperimentalConfig(enable_cuda_sync_events=True)
        except (AttributeError, TypeError):
            pass
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True, **extra) as prof:
            run_once(torch, dit, c, x0, text)
        raw = os.path.join(out_dir, name + ".trace.json")
        prof.export_chrome_trace(raw)
        with open(raw, "rb") as src, gzip.open(raw + ".gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.remove(raw)
    # The median run, and how many ran before it back to back (the GPU's
    # sustained-load state at its start: `overlapsim run --runs-before`).
    med = statistics.median(makespans)
    order = sorted(range(len(makespans)), key=lambda i: makespans[i])
    runs_before = args.warmup + order[len(order) // 2]
    doc = {"schema": "overlapsim.program/v1", "name": name, "group": f"dit-{c['tokens']}", "program": "validate/programs/dit_offload.py", "config": c,
           "warmup": args.warmup, "makespans_s": makespans, "median_s": med, "runs_before": runs_before, "sdpa_backend": backend,
           "workload": twin(c, backend), "environment": environment}
    write_json(os.path.join(out_dir, name + ".json"), doc)
    print(f"{name}: {med * 1e3:.2f} ms (runs {', '.join(f'{m * 1e3:.2f}' for m in makespans)})", flush=True)
    dit.resident, dit.buffers = [], []


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    configs = configurations(args)
    if args.only:
        configs = [c for c in configs if name_of(c) in args.only.split(",")]
    if args.twins_only:
        for c in configs:
            write_json(os.path.join(args.out, name_of(c) + ".workload.json"), twin(c, None))
        return
    import torch
    from attention import backend_run
    # The backend PyTorch's SDPA picks for the blocks' own calls: [1, S, H, d]
    # projections viewed as [1, H, S, d], self- and cross-attention.
    d = args.hidden // args.heads
    q = torch.randn(1, 4096, args.heads, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    kv = torch.randn(1, args.text, args.heads, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    backend, kernel = backend_run(q, q, q)
    cross_backend, _ = backend_run(q, kv, kv)
    if cross_backend != backend:
        print(f"note: cross-attention runs {cross_backend}, self-attention {backend}; the twin takes {backend}", flush=True)
    environment = {"torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": str(torch.backends.cudnn.version()),
                   "gpu": torch.cuda.get_device_name(0), "sdpa_kernel": kernel, "sdpa_cross_backend": cross_backend, "hostname": os.uname().nodename}
    print(f"PyTorch {torch.__version__} on {environment['gpu']}: SDPA runs {backend}", flush=True)
    dits = {}
    for c in configs:
        key = (c["hidden"], c["ffn"], c["blocks"], c["host"])
        if key not in dits:  # the host weights, made once per model and host memory
            dits.clear()
            torch.cuda.empty_cache()
            dits[key] = Dit(torch, c, c["host"])
        t0 = time.time()
        measure(torch, c, dits[key], args, args.out, backend, environment)
        torch.cuda.empty_cache()
        print(f"  ({time.time() - t0:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
