#!/usr/bin/env python3
"""A candidate model of NCCL's send/recv over the network (the all-to-all
across hosts), fitted on the public tables of manifest.yaml and checked on
the others; not in the simulator (docs/accuracy.md, "All-to-all across
nodes", says why).

Per rank, each remote peer's bytes b leave through the rank's NIC (PXN) one
peer after another: b / line + chunks x c + chunk / line, where the chunk is
NCCL 2.30.7's for a network peer (the step, NCCL_P2P_NET_CHUNKSIZE, halved
below 8 steps a peer and quartered below one: enqueue.cc addP2pToPlan),
chunks = ceil(b / chunk), c a per-chunk cost of the network path (proxy,
plugin, NIC) and the last term a pipeline's fill of one chunk. c is fitted
on the `tune` subset (AWS p5 on 2 and 4 nodes: 0.05 us grid, least median
|error| of busbw) and printed against every all-to-all table.

  python3 validate/nccl-public/net_p2p_candidate.py
"""
import math
import pathlib
import re

import yaml

MANIFEST = pathlib.Path(__file__).with_name("manifest.yaml")
KIB = 1024
TUNE = ("p5-h100-2node-efa", "p5-h100-4node-efa")
# name: (a GPU's share of its NIC's line, GB/s; GPUs whose chunks that NIC carries; step bytes; GPUs a node)
RUNS = {
    **{f"p5-h100-{n}node-efa": (50.0, 1, 512 * KIB, 8) for n in (2, 4, 8, 16, 32)},  # the run's NCCL_P2P_NET_CHUNKSIZE
    "ndm-a100-v4-2node": (25.0, 1, 128 * KIB, 8),     # NCCL's default step
    "a100-2node-4nic-roce": (12.5, 2, 128 * KIB, 8),  # one 25 GB/s NIC a GPU pair
    "roce400-h100-6node": (50.0, 1, 128 * KIB, 8),
}


def size(text):
    v, unit = re.fullmatch(r"([\d.]+)\s*(KiB|MiB|GiB)", text.strip()).groups()
    return float(v) * {"KiB": KIB, "MiB": KIB**2, "GiB": KIB**3}[unit]


def chunk_of(b, step):
    return step / 4 if b < step else step / 2 if b < 8 * step else step


def busbw(c_us, nodes, nbytes, line, share, step, ppn):
    n = ppn * nodes
    b = nbytes / n
    ch = chunk_of(b, step)
    per_peer_us = b / (line * 1e3) + share * math.ceil(b / ch) * c_us + ch / (line * 1e3)
    t_us = (n - ppn) * per_peer_us
    return nbytes / (t_us * 1e3) * (n - 1) / n


def points():
    for m in yaml.safe_load(MANIFEST.read_text())["machines"]:
        if m["name"] not in RUNS:
            continue
        for p in m["points"]:
            if p["collective"] == "all_to_all" and "busbw" in p:
                yield m["name"], m.get("nodes", 2), size(p["bytes"]), float(p["busbw"].split()[0])


def errors(c_us, names):
    return [busbw(c_us, nd, s, *RUNS[m]) / pub - 1 for m, nd, s, pub in points() if m in names]


def median(v):
    v = sorted(v)
    return (v[len(v) // 2] + v[(len(v) - 1) // 2]) / 2


best = min((median([abs(e) for e in errors(k * 0.05, TUNE)]), k * 0.05) for k in range(101))
c = best[1]
print(f"per-chunk cost fitted on {', '.join(TUNE)}: {c:.2f} us (median |error| {100 * best[0]:.1f} %)")
for name in RUNS:
    rows = [(s, pub, busbw(c, nd, s, *RUNS[name])) for m, nd, s, pub in points() if m == name]
    errs = [abs(mod / pub - 1) for _, pub, mod in rows]
    cells = " ".join(f"{s / KIB**2:g}M {pub:.1f}/{mod:.1f} ({100 * (mod / pub - 1):+.0f})" for s, pub, mod in rows)
    # the cost a chunk that would meet the run's largest size exactly
    _, nd, s, pub = [p for p in points() if p[0] == name][-1]
    lo, hi = 0.0, 10.0
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if busbw(mid, nd, s, *RUNS[name]) > pub else (lo, mid)
    print(f"{name:22} {'tune ' if name in TUNE else 'check'} median {100 * median(errs):.1f} % worst {100 * max(errs):.1f} %;"
          f" its own cost a chunk {lo:.2f} us; {cells}")
