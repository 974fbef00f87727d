"""What the PyTorch testcases share: the environment a bench document
records, writing it (schema overlapsim.bench/v1) whole or not at all, and
timing an op back to back by CUDA events."""
import json
import os
import statistics
import time


def environment(torch, **extra):
    """The date (UTC), PyTorch and CUDA versions and GPU 0's name, with `extra`."""
    env = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "torch": torch.__version__, "cuda": torch.version.cuda,
           "gpu": torch.cuda.get_device_name(0)}
    env.update(extra)
    return env


def write_bench(out, env, rows):
    """Writes OUT as an overlapsim.bench/v1 document, renamed over `out` once whole."""
    with open(out + ".tmp", "w") as f:
        json.dump({"schema": "overlapsim.bench/v1", "environment": env, "results": rows}, f, indent=1)
        f.write("\n")
    os.replace(out + ".tmp", out)


def window_us(torch, fn, calls, windows=5, before=None):
    """`fn`'s GPU time per call (us): three calls to warm up, then the median
    over `windows` CUDA-event windows of `calls` calls back to back
    (`before()`, if given, run ahead of each window, outside it)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(windows):
        if before is not None:
            torch.cuda.synchronize()
            before()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(calls):
            fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / calls)
    return statistics.median(times)
