#!/usr/bin/env python3
"""GEMMs as PyTorch runs them on GPU 0: fp8 (e4m3) through torch._scaled_mm
with a bf16 output, beside the same shape in bf16 through torch.mm, at the
Wan 14B DiT's shapes (hidden 5120; none of the reference programs' shapes).
fp8 weights halve what an offloaded block copies; what an fp8 GEMM gains
over bf16 is this testcase's question (`gemm_fp8`: per shape and scaling,
the fp8 time and the bf16 time, alternating shape by shape so both see the
same clock). Scalings: `tensorwise` (one scale per operand, cuBLASLt) and
`rowwise` (a scale per row of the activations and per column of the weights,
what per-token quantisation runs; another kernel). Each time is the median of
CUDA-event windows of the op back to back after a warm-up: the rate under
load. Writes overlapsim.bench/v1 JSON; `overlapsim calibrate` fits the fp8
GEMM's efficiency against bf16's from the tensorwise rows.
Usage: gemm.py OUT.json"""
import sys

import torch

from bench_json import environment, window_us, write_bench


def time_us(fn, window_us_target=30000.0):
    """The median of CUDA-event windows of ~30 ms of `fn` back to back (us a call)."""
    once = window_us(torch, fn, calls=1, windows=1)
    return window_us(torch, fn, calls=max(3, int(window_us_target / max(1.0, once))))


def shapes():
    # Wan 14B's projections (qkv as three, out, FFN up and down) at 4,096 to
    # 32,760 tokens a rank.
    for m in (4096, 8192, 16384, 32760):
        for n, k in ((15360, 5120), (5120, 5120), (13824, 5120), (5120, 13824)):
            yield m, n, k


def gemm_rows():
    rows = []
    e4m3 = torch.float8_e4m3fn
    for m, n, k in shapes():
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)  # nn.Linear's [out, in]
        xq, wq = x.to(e4m3), w.to(e4m3)  # random data: constant bytes draw less power
        one = torch.ones((), device="cuda", dtype=torch.float32)
        rows_a = torch.ones(m, 1, device="cuda", dtype=torch.float32)
        cols_b = torch.ones(1, n, device="cuda", dtype=torch.float32)
        bf16 = lambda: torch.mm(x, w.t())
        tensorwise = lambda: torch._scaled_mm(xq, wq.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        rowwise = lambda: torch._scaled_mm(xq, wq.t(), scale_a=rows_a, scale_b=cols_b, out_dtype=torch.bfloat16)
        flops = 2.0 * m * n * k
        bf16_us = time_us(bf16)
        for scaling, fn in (("tensorwise", tensorwise), ("rowwise", rowwise)):
            try:
                us = time_us(fn)
            except RuntimeError as e:  # a scaling this PyTorch or GPU lacks
                print(f"gemm_fp8 {scaling} {m}x{n}x{k}: {e}", flush=True)
                continue
            rows.append({"key": "gemm_fp8", "gpus": [0], "m": m, "n": n, "k": k, "scaling": scaling, "time_us": us, "TFLOPs": flops / us * 1e-6,
                         "bf16_time_us": bf16_us, "bf16_TFLOPs": flops / bf16_us * 1e-6, "via": "torch._scaled_mm"})
            print(f"gemm_fp8 {scaling} {m}x{n}x{k}: {flops / us * 1e-6:.0f} TFLOP/s, bf16 {flops / bf16_us * 1e-6:.0f}", flush=True)
        del x, w, xq, wq
    return rows


def main():
    out = sys.argv[1]
    write_bench(out, environment(torch, env={}), gemm_rows())


if __name__ == "__main__":
    main()
