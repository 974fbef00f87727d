"""What the PyTorch testcases share: the environment a bench document
records, and writing it (schema overlapsim.bench/v1) whole or not at all."""
import json
import os
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
