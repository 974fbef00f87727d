#!/usr/bin/env python3
"""Attention timings at the Wan DiT shapes, for calibrating the simulator's
attention efficiency. The C++ bench has no fused attention kernel; the
workloads run FlashAttention through PyTorch's scaled_dot_product_attention,
so this measures exactly that (bf16, no mask). Writes overlapsim.bench/v1
JSON with `attention_sdpa` rows. Usage: attention.py OUT.json [TOKENS...]
(default tokens: 75600 32760, Wan 720p and 480p)"""
import json
import math
import sys

import torch
import torch.nn.functional as F


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def time_sdpa(heads, seq_q, seq_kv, d, samples=5, warmup=2, soak_ms=250.0, window_ms=200.0):
    """Returns (window mean, synchronised median, soak calls, window calls), in us.
    First `warmup + samples` calls each timed alone with a synchronise after
    it (their median: `sync_median_us`); then calls back
    to back until >= soak_ms have run, then the mean over >= window_ms (>= 3
    calls) of calls back to back, timed by one event pair: under the power cap
    the clock dithers, so single calls time one instant of it."""
    torch.manual_seed(0)
    q = torch.randn(1, heads, seq_q, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(1, heads, seq_kv, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(1, heads, seq_kv, d, device="cuda", dtype=torch.bfloat16)
    times = []
    for i in range(warmup + samples):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        out = F.scaled_dot_product_attention(q, k, v)
        b.record()
        torch.cuda.synchronize()
        assert torch.isfinite(out).all()
        if i >= warmup:
            times.append(a.elapsed_time(b) * 1e3)
    single = median(times)
    soak = max(0, math.ceil(soak_ms * 1e3 / single) - (warmup + samples))
    for _ in range(soak):
        F.scaled_dot_product_attention(q, k, v)
    calls = max(3, math.ceil(window_ms * 1e3 / single))
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(calls):
        out = F.scaled_dot_product_attention(q, k, v)
    b.record()
    torch.cuda.synchronize()
    assert torch.isfinite(out).all()
    return a.elapsed_time(b) * 1e3 / calls, single, warmup + samples + soak, calls


def sdpa_row(kind, heads, seq_q, seq_kv, backend):
    t, single, soak, calls = time_sdpa(heads, seq_q, seq_kv, 128)
    flops = 4.0 * heads * seq_q * seq_kv * 128
    return {"key": "attention_sdpa", "kind": kind, "heads": heads, "seq_q": seq_q, "seq_kv": seq_kv, "head_dim": 128,
            "time_us": t, "TFLOPs": flops / t * 1e-6, "backend": backend, "timing": "window", "soak_calls": soak,
            "window_calls": calls, "sync_median_us": single}


def main():
    out = sys.argv[1]
    token_counts = [int(t) for t in sys.argv[2:]] or [75600, 32760]
    backend = "default"
    try:  # prefer FlashAttention, as the DiT implementations do
        from torch.nn.attention import SDPBackend, sdpa_kernel
        ctx = sdpa_kernel([SDPBackend.FLASH_ATTENTION])
        backend = "flash"
    except Exception:
        import contextlib
        ctx = contextlib.nullcontext()
    rows = []
    with ctx:
        for tokens in token_counts:
            for u in (1, 2, 4, 8):
                heads = 40 // u
                rows.append(sdpa_row("self", heads, tokens, tokens, backend))  # self-attention after the all-to-all
                rows.append(sdpa_row("cross", 40, tokens // u, 512, backend))  # cross-attention to the text tokens
                print(rows[-2]["heads"], tokens, round(rows[-2]["TFLOPs"]), "TF self;", round(rows[-1]["TFLOPs"]), "TF cross", flush=True)
    env = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0), "env": {}}
    with open(out, "w") as f:
        json.dump({"schema": "overlapsim.bench/v1", "environment": env, "results": rows}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
