#!/usr/bin/env python3
"""Where a layerwise-prefetch loop's host time goes: the reference program's
4,096-token configuration (dit_offload.py: 8 blocks x 2 steps, pinned weights),
its host issue time with the prefetch taken apart piece by piece, the variants
alternating round by round (no profiler):

  none      the weights resident (dit_offload.py's `none`)
  pf2       layerwise prefetch 2, as dit_offload.py runs it
  norecord  the same without record_stream (the blocks' buffers kept to the end)
  ring      the same into 16 buffers allocated up front (no allocation per block)
  nocopy    every prefetch call but the copy, the views from resident weights
  copyres   the copies, the views from resident weights

Each run's host issue time (the start of the loop to its last call, as
dit_offload.py's host_issue_s) and the host time inside the blocks' views and
their forward calls, summed; the medians over the rounds and every sample.

  prefetch_host.py OUT.json [--rounds N] [--cpu N]   (--cpu: bind the process, every thread, to that CPU)
"""
import argparse
import os
import statistics
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "src", "testcases"))
VARIANTS = ["none", "pf2", "norecord", "ring", "nocopy", "copyres"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--cpu", type=int, help="bind this process (before torch starts its threads) to this CPU")
    a = p.parse_args()
    if a.cpu is not None:
        os.sched_setaffinity(0, {a.cpu})
    import torch
    import dit_offload as D

    c = dict(tokens=4096, hidden=3072, heads=24, ffn=8192, text=512, blocks=8, steps=2, ulysses=1, all_to_all="none",
             nccl_p2p_disable=False, policy="layerwise", prefetch=2, host="pinned")
    dit = D.Dit(torch, c, "pinned")
    copy_stream = torch.cuda.Stream()
    resident = [w.to("cuda") for w in dit.host]
    ring = [torch.empty(dit.numel, device="cuda", dtype=torch.bfloat16) for _ in range(c["blocks"] * c["steps"])]
    x0 = torch.randn(c["tokens"], c["hidden"], device="cuda", dtype=torch.bfloat16)
    text = torch.randn(c["text"], c["hidden"], device="cuda", dtype=torch.bfloat16)
    P, L, total = c["prefetch"], c["blocks"], c["blocks"] * c["steps"]

    def run(variant):
        compute = torch.cuda.current_stream()
        torch.cuda.synchronize()
        views_s = block_s = 0.0
        kept, on_gpu, fetched = [], {}, set()

        def prefetch(g):  # dit_offload.py's, with the variants' changes
            if g in fetched:
                return
            fetched.add(g)
            with torch.cuda.stream(copy_stream):
                flat = ring[g] if variant == "ring" else torch.empty(dit.numel, device="cuda", dtype=torch.bfloat16)
                if variant != "nocopy":
                    flat.copy_(dit.host[g % L], non_blocking=True)
                ev = torch.cuda.Event()
                ev.record(copy_stream)
            on_gpu[g] = (flat, ev)

        def block(x, weights):
            nonlocal views_s, block_s
            t0 = time.perf_counter()
            w = dit.views(weights)
            t1 = time.perf_counter()
            x = dit.block(x, text, w)
            views_s += t1 - t0
            block_s += time.perf_counter() - t1
            return x

        start = time.perf_counter()
        x = x0
        if variant == "none":
            for g in range(total):
                x = block(x, resident[g % L])
        else:
            for j in range(P):
                prefetch(j)
            for g in range(total):
                if g % L % P == 0:
                    copy_stream.wait_stream(compute)
                    for j in range(g + P, min(g + 2 * P, total)):
                        prefetch(j)
                flat, ev = on_gpu.pop(g)
                compute.wait_event(ev)
                if variant == "norecord":
                    kept.append(flat)
                else:
                    flat.record_stream(compute)
                x = block(x, resident[g % L] if variant in ("nocopy", "copyres") else flat)
                del flat
        issued = time.perf_counter() - start
        torch.cuda.synchronize()
        return issued, views_s, block_s

    for v in VARIANTS:  # warm-up: the allocator's pool, cuBLAS's heuristics
        run(v), run(v)
    samples = {v: [] for v in VARIANTS}
    for _ in range(a.rounds):
        for v in VARIANTS:
            samples[v].append(run(v))
    doc = {"schema": "overlapsim.prefetch-host/v1", "program": "validate/programs/prefetch_host.py", "config": c, "rounds": a.rounds,
           "environment": {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "hostname": os.uname().nodename,
                           "cpu_affinity": sorted(os.sched_getaffinity(0))},
           "variants": {}}
    for v in VARIANTS:
        issue, views, blocks = (statistics.median(s[i] for s in samples[v]) * 1e3 for i in range(3))
        doc["variants"][v] = {"issue_ms": issue, "views_ms": views, "block_ms": blocks, "issue_samples_ms": [s[0] * 1e3 for s in samples[v]]}
        print(f"{v:9s} host issue {issue:6.2f} ms (views {views:5.2f} ms, blocks' forward {blocks:6.2f} ms)", flush=True)
    D.write_json(a.out, doc)


if __name__ == "__main__":
    main()
