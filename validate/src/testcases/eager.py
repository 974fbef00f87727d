#!/usr/bin/env python3
"""The elementwise and normalisation kernels eager PyTorch runs for a model's
ops, timed through PyTorch itself on GPU 0 over [tokens, hidden] bf16
tensors at shapes none of the reference programs uses, as model code calls
them (`framework_elementwise`: layer and RMS norms, a broadcast scale and
shift, a residual add, GELU, SiLU times a gate, a strided split view scaled,
roll, a concatenation; each row its bytes read and written and its time),
and layer and RMS norms over rows of 64 to 10,240 elements (`row`: per-head
q/k norms normalise rows of head_dim; a norm spends a fixed cost on each
row), contiguous and, at 128, on a split view of a fused projection.
Each op runs back to back after a warm-up, its time the median of CUDA-event
windows. Writes overlapsim.bench/v1 JSON; `overlapsim calibrate` fits the
framework's memory-bound rate from it. Usage: eager.py OUT.json"""
import sys

import torch
import torch.nn.functional as F

from bench_json import environment, window_us, write_bench


def time_us(fn):
    return window_us(torch, fn, calls=20)


def elementwise_rows():
    rows = []
    for tokens, hidden in ((6144, 2560), (12288, 1536), (20480, 2048)):
        mk = lambda *s: torch.randn(*s, device="cuda", dtype=torch.bfloat16)
        x, y, m = mk(tokens, hidden), mk(tokens, hidden), mk(1, hidden)
        qkv = mk(tokens, 3 * hidden)
        gate, up = mk(tokens, 4 * hidden), mk(tokens, 4 * hidden)
        n = tokens * hidden * 2  # bytes of one [tokens, hidden] bf16 tensor
        q = qkv[:, :hidden]  # a split view: strided
        ops = [("layer_norm", lambda: F.layer_norm(x, (hidden,)), 2 * n),
               ("rms_norm", lambda: F.rms_norm(x, (hidden,)), 2 * n),
               ("scale_shift", lambda: x * (1 + m) + m, 4 * n),
               ("residual_add", lambda: x + y, 3 * n),
               ("gelu", lambda: F.gelu(x, approximate="tanh"), 2 * n),
               ("silu_mul", lambda: F.silu(gate) * up, 5 * 4 * n),
               ("strided_scale", lambda: q * 0.5, 2 * n),
               ("roll", lambda: x.roll(1, -1), 2 * n),
               ("cat", lambda: torch.cat([x, y]), 4 * n)]
        for name, fn, nbytes in ops:
            us = time_us(fn)
            rows.append({"key": "framework_elementwise", "gpus": [0], "op": name, "tokens": tokens, "hidden": hidden, "bytes": nbytes, "time_us": us,
                         "GBps": nbytes / us * 1e-3, "via": "torch"})
            print("elementwise", name, tokens, hidden, round(nbytes / us * 1e-3), "GB/s", flush=True)
    return rows


def norm_row_rows():
    """The same norms over 15.7 M elements in rows of `row` elements."""
    rows = []
    tokens, hidden = 6144, 2560
    mk = lambda *s: torch.randn(*s, device="cuda", dtype=torch.bfloat16)
    n = tokens * hidden * 2
    cases = [(row, "contiguous", mk(tokens * hidden // row, row)) for row in (64, 128, 256, 512, 1280, 2560, 5120, 10240)]
    qkv = mk(tokens, 3 * hidden)
    cases.append((128, "split", qkv[:, :hidden].view(tokens, hidden // 128, 128)))  # q of a fused qkv projection
    for row, view, x in cases:
        for name, fn in (("layer_norm", lambda: F.layer_norm(x, (row,))), ("rms_norm", lambda: F.rms_norm(x, (row,)))):
            us = time_us(fn)
            rows.append({"key": "framework_elementwise", "gpus": [0], "op": name, "tokens": tokens, "hidden": hidden, "row": row, "view": view,
                         "bytes": 2 * n, "time_us": us, "GBps": 2 * n / us * 1e-3, "via": "torch"})
            print("norm rows", name, row, view, round(2 * n / us * 1e-3), "GB/s", flush=True)
    return rows


def main():
    out = sys.argv[1]
    write_bench(out, environment(torch, env={}), elementwise_rows() + norm_row_rows())


if __name__ == "__main__":
    main()
