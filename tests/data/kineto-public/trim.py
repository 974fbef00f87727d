#!/usr/bin/env python3
"""Trim a torch.profiler (Kineto) trace to the events of one step, to keep it small.

    python3 trim.py IN.json[.gz] OUT.json.gz --step 'ProfilerStep#5'

Kept: the header keys (deviceProperties, distributedInfo, baseTimeNanoseconds, ...), metadata
events (ph 'M'), host events that start within the step's range (the step range itself included),
and the GPU activities, sync events and flow arrows whose correlation id belongs to a CUDA call kept.
Nothing is rewritten: kept events are byte-for-byte the recorded ones (re-serialised, compact).
"""
import argparse, gzip, json, sys

GPU = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "cuda_sync", "Kernel", "Memcpy", "Memset"}  # and PyTorch 1.8's names
CALLS = {"cuda_runtime", "cuda_driver", "Runtime"}
FLOWS = {"ac2g", "async", "async_gpu"}


def load(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input"); ap.add_argument("output"); ap.add_argument("--step", required=True, help="the name of the range to keep")
    a = ap.parse_args()
    doc = load(a.input)
    ev = doc["traceEvents"]
    steps = [e for e in ev if e.get("name") == a.step and e.get("ph") == "X"]
    if not steps:
        sys.exit(f"{a.input}: no complete event named {a.step!r}")
    t0 = steps[0]["ts"]; t1 = t0 + steps[0]["dur"]
    inside = lambda e: "ts" in e and t0 <= e["ts"] < t1
    kept_corr = {e["args"]["correlation"] for e in ev if e.get("cat") in CALLS and inside(e) and "correlation" in e.get("args", {})}
    out = []
    for e in ev:
        cat = e.get("cat")
        if e.get("ph") == "M":
            out.append(e)
        elif cat in GPU:
            if e.get("args", {}).get("correlation") in kept_corr: out.append(e)
        elif cat in FLOWS:
            if e.get("id") in kept_corr: out.append(e)
        elif inside(e):
            out.append(e)
    doc["traceEvents"] = out
    with open(a.output, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:  # no name, no time: reproducible
        f.write(json.dumps(doc, separators=(",", ":")).encode())
    print(f"{a.output}: {len(out)} of {len(ev)} events, {a.step} ({(t1 - t0) / 1000:.3f} ms)")


if __name__ == "__main__":
    main()
