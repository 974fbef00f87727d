#!/usr/bin/env python3
"""Attention timings for calibrating the simulator's attention family: PyTorch's
scaled_dot_product_attention (bf16) with every backend this GPU and PyTorch
offer (cuDNN, FlashAttention-2, memory-efficient), at the Wan DiT shapes and a
head_dim of 64 too (no mask), causal (is_causal) at LLM prefill shapes, and
which backend PyTorch picks by default (the kernel its default call runs).
Writes overlapsim.bench/v1 JSON with `attention_sdpa` rows (one per backend and
shape; kind self, cross or causal) and one `attention_default` row.
Usage: attention.py OUT.json [--kinds self,cross,causal] [TOKENS...] (default
tokens: 75600 32760, Wan 720p and 480p; default kinds: all three)"""
import contextlib
import math
import sys

import torch
import torch.nn.functional as F

from bench_json import environment, write_bench

# Backend names as the simulator's schedules spell them.
try:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash2": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION}
except ImportError:  # an old PyTorch: its default only
    BACKENDS, sdpa_kernel = {}, None


def backend_of_kernel(name):
    """The SDPA backend a CUDA kernel's name belongs to, or None."""
    n = name.lower()
    if "cudnn" in n or "fort_native_sdpa" in n or "sdpa_sm" in n:
        return "cudnn"
    if "flash_fwd" in n or "flash::" in n:
        return "flash2"
    if "fmha" in n or "efficient_attention" in n or "mem_eff" in n:
        return "efficient"
    return None


def default_backend(heads=40, seq=8192, d=128):
    """Which backend PyTorch's default SDPA call runs here, and its kernel's name."""
    q = torch.randn(1, heads, seq, d, device="cuda", dtype=torch.bfloat16)
    return backend_run(q, q, q)


def backend_run(q, k, v):
    """The backend PyTorch's default SDPA call on these tensors runs, and its
    kernel's name: the kernels one call launches, seen by the profiler (math,
    where none of them is a fused attention kernel)."""
    from torch.profiler import ProfilerActivity, profile
    F.scaled_dot_product_attention(q, k, v)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        F.scaled_dot_product_attention(q, k, v)
        torch.cuda.synchronize()
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA and backend_of_kernel(e.name):
            return backend_of_kernel(e.name), e.name
    return "math", ""


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def time_sdpa(heads, seq_q, seq_kv, d, causal=False, samples=5, warmup=2, soak_ms=250.0, window_ms=200.0):
    """Returns (window mean, synchronised median, soak calls, window calls), in us.
    First `warmup + samples` calls each timed alone with a synchronise after
    it (their median: `sync_median_us`); then calls back to back until
    >= soak_ms have run, then the mean over >= window_ms (>= 3 calls) of calls
    back to back, timed by one event pair: under the power cap the clock
    dithers, so single calls time one instant of it."""
    torch.manual_seed(0)
    q = torch.randn(1, heads, seq_q, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(1, heads, seq_kv, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(1, heads, seq_kv, d, device="cuda", dtype=torch.bfloat16)
    times = []
    for i in range(warmup + samples):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        b.record()
        torch.cuda.synchronize()
        assert torch.isfinite(out).all()
        if i >= warmup:
            times.append(a.elapsed_time(b) * 1e3)
    single = median(times)
    soak = max(0, math.ceil(soak_ms * 1e3 / single) - (warmup + samples))
    for _ in range(soak):
        F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    calls = max(3, math.ceil(window_ms * 1e3 / single))
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(calls):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    b.record()
    torch.cuda.synchronize()
    assert torch.isfinite(out).all()
    return a.elapsed_time(b) * 1e3 / calls, single, warmup + samples + soak, calls


def pairs(seq_q, seq_kv, causal):
    """The query-key pairs computed: causal (the mask's diagonal at the top
    left, PyTorch's is_causal), query i sees keys 0..i."""
    if not causal:
        return seq_q * seq_kv
    tri = min(seq_q, seq_kv)
    return tri * (tri + 1) // 2 + (seq_q - tri) * seq_kv


def sdpa_row(kind, heads, seq_q, seq_kv, d, backend):
    causal = kind == "causal"
    t, single, soak, calls = time_sdpa(heads, seq_q, seq_kv, d, causal)
    flops = 4.0 * heads * pairs(seq_q, seq_kv, causal) * d
    return {"key": "attention_sdpa", "kind": kind, "heads": heads, "seq_q": seq_q, "seq_kv": seq_kv, "head_dim": d,
            "time_us": t, "TFLOPs": flops / t * 1e-6, "backend": backend, "timing": "window", "soak_calls": soak,
            "window_calls": calls, "sync_median_us": single}


def shapes(token_counts, kinds):
    """(kind, heads, seq_q, seq_kv, head_dim): self-attention after a Ulysses
    all-to-all of degree 1-8 and cross-attention to 512 text tokens (Wan: 40
    heads of 128), and the same hidden size as 80 heads of 64; causal at
    prefill lengths of 4K-32K tokens (Llama-3-8B: 32 heads of 128) and at
    16K as 8 heads (a tensor-parallel shard) and as 64 heads of 64."""
    out = []
    for tokens in token_counts:
        for u in (1, 2, 4, 8):
            out.append(("self", 40 // u, tokens, tokens, 128))
            out.append(("cross", 40, tokens // u, 512, 128))
    t = token_counts[-1]
    out += [("self", 80, t, t, 64), ("cross", 80, t, 512, 64)]
    out += [("causal", 32, s, s, 128) for s in (4096, 8192, 16384, 32768)]
    out += [("causal", 8, 16384, 16384, 128), ("causal", 64, 16384, 16384, 64)]
    return [x for x in out if x[0] in kinds]


def available(backend):
    try:
        q = torch.randn(1, 8, 256, 128, device="cuda", dtype=torch.bfloat16)
        with sdpa_kernel([BACKENDS[backend]]):
            F.scaled_dot_product_attention(q, q, q)
        torch.cuda.synchronize()
        return True
    except RuntimeError as e:
        print(f"{backend}: not available here ({str(e).splitlines()[0]})", flush=True)
        return False


def main():
    args = sys.argv[1:]
    out = args.pop(0)
    kinds = {"self", "cross", "causal"}
    if args[:1] == ["--kinds"]:
        kinds = set(args[1].split(","))
        if not kinds <= {"self", "cross", "causal"}:
            sys.exit(f"attention.py: --kinds takes self, cross and causal, comma-separated (got {args[1]})")
        args = args[2:]
    token_counts = [int(t) for t in args] or [75600, 32760]
    default, kernel = default_backend()
    print(f"PyTorch {torch.__version__}: the default SDPA runs {default} ({kernel})", flush=True)
    rows = [{"key": "attention_default", "backend": default, "kernel": kernel}]
    backends = [b for b in BACKENDS if available(b)] or ["default"]
    for backend in backends:
        ctx = sdpa_kernel([BACKENDS[backend]]) if backend in BACKENDS else contextlib.nullcontext()
        with ctx:
            for kind, heads, sq, skv, d in shapes(token_counts, kinds):
                rows.append(sdpa_row(kind, heads, sq, skv, d, backend))
                print(backend, kind, heads, sq, skv, d, round(rows[-1]["TFLOPs"]), "TFLOP/s", flush=True)
    env = environment(torch, default_kernel=kernel, env={})
    try:
        env["cudnn"] = torch.backends.cudnn.version()
    except RuntimeError as e:  # a cuDNN other than PyTorch's on the library path
        env["cudnn"] = str(e).splitlines()[0]
    write_bench(out, env, rows)


if __name__ == "__main__":
    main()
