#!/usr/bin/env python3
"""The costs a framework adds that the C++ bench cannot see, timed through
PyTorch itself: its pageable copies (`h2d_pageable`, `d2h_pageable`: a
tensor's `.copy_()` between pageable host memory and the GPU, from one tensor
again and again and from a fresh tensor each time) and the host time of one
framework op that launches a kernel (`overhead_framework_op`: small F.linear,
add, layer_norm, gelu and SDPA calls back to back, the GPU kept ahead of the
host). Writes overlapsim.bench/v1 JSON; `overlapsim calibrate` reads it after
the C++ bench, whose pageable rows it replaces. Usage: framework.py OUT.json"""
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def pageable_rows(samples=5):
    rows = []
    for mib in (1, 4, 16, 64, 256, 1024):
        n = mib << 19  # bf16 elements
        dev = torch.empty(n, device="cuda", dtype=torch.bfloat16)
        same = torch.randn(n, dtype=torch.bfloat16)
        fresh = [torch.randn(n, dtype=torch.bfloat16) for _ in range(2)] if mib <= 256 else [same]
        for key, h2d in (("h2d_pageable", True), ("d2h_pageable", False)):
            for host_buffer, hosts in (("same", [same]), ("rotating", fresh)):
                times = []
                for i in range(samples + 1):
                    host = hosts[i % len(hosts)]
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    if h2d:
                        dev.copy_(host, non_blocking=True)
                    else:
                        host.copy_(dev, non_blocking=True)
                    torch.cuda.synchronize()
                    if i:
                        times.append((time.perf_counter() - t0) * 1e6)
                us = statistics.median(times)
                rows.append({"key": key, "gpus": [0], "bytes": n * 2, "host_buffer": host_buffer, "time_us": us, "GBps": n * 2 / us * 1e-3,
                             "via": "torch"})
                print(key, mib, "MiB", host_buffer, round(n * 2 / us * 1e-3, 2), "GB/s", flush=True)
    return rows


def framework_op_rows(calls=2000):
    """Host time per op: calls back to back on tiny tensors behind a long
    kernel, so that the GPU never waits and the host's time is the ops' own."""
    x = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
    q = torch.randn(1, 2, 64, 64, device="cuda", dtype=torch.bfloat16)
    big = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    ops = {"linear": lambda: F.linear(x, w), "add": lambda: x + x, "layer_norm": lambda: F.layer_norm(x, (64,)),
           "gelu": lambda: F.gelu(x, approximate="tanh"), "sdpa": lambda: F.scaled_dot_product_attention(q, q, q)}
    rows = []
    for name, op in ops.items():
        for _ in range(50):
            op()
        torch.cuda.synchronize()
        per = []
        for _ in range(5):
            for _ in range(8):  # ~GEMMs queued ahead: the GPU is busy while the host issues
                big @ big
            t0 = time.perf_counter()
            for _ in range(calls // 5):
                op()
            per.append((time.perf_counter() - t0) * 1e6 / (calls // 5))
            torch.cuda.synchronize()
        us = statistics.median(per)
        rows.append({"key": "overhead_framework_op", "op": name, "host_us": us, "framework": "pytorch " + torch.__version__})
        print("framework op", name, round(us, 2), "us", flush=True)
    return rows


def main():
    out = sys.argv[1]
    rows = framework_op_rows() + pageable_rows()
    env = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0), "env": {}}
    with open(out + ".tmp", "w") as f:  # renamed over `out` once whole
        json.dump({"schema": "overlapsim.bench/v1", "environment": env, "results": rows}, f, indent=1)
        f.write("\n")
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
