"""Host-time helpers the framework testcases share: GEMMs that keep the GPU
busy, and the host's time per call of an op behind them."""
import statistics
import time

import torch


def keep_gpu_busy(big):
    """GEMMs queued ahead on the current stream: the GPU is busy while the host issues."""
    for _ in range(8):
        big @ big


def host_us_per_call(op, calls, warmup, big, before=None):
    """The host's time per call of `op`: `calls` calls back to back behind
    GEMMs on `big` that keep the GPU busy, so the host never waits on it;
    the median of 5 such bursts (each after `before`, if given)."""
    for _ in range(warmup):
        op()
    torch.cuda.synchronize()
    per = []
    for _ in range(5):
        if before:
            before()
        keep_gpu_busy(big)
        t0 = time.perf_counter()
        for _ in range(calls):
            op()
        per.append((time.perf_counter() - t0) * 1e6 / calls)
        torch.cuda.synchronize()
    return statistics.median(per)
