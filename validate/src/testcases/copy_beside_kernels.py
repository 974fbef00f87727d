#!/usr/bin/env python3
"""A pinned H2D or D2H copy on a side stream beside device work on GPU 0: the
one-GPU part of issue 76's question (on NVLink boxes a 512 MiB H2D copy on
every GPU slowed a 256 MiB-a-rank all-to-all ~1.5x; which resource do the
two share?). Each copy (64 and 512 MiB, both directions, PyTorch's
`copy_(non_blocking=True)`, i.e. cudaMemcpyAsync on the copy engine) is timed
alone and beside each of:
  `copy_beside_memory_kernel`   an fp32 add over 1 GiB tensors on every SM
                                (HBM pressure: 3 GiB moved a call);
  `copy_beside_sm_copy_kernel`  a load/store copy kernel (Triton) on a fixed
                                grid of 8, 16, 32 or 132 CTAs, like NCCL's
                                channels (HBM through few SMs);
  `copy_beside_d2d_memcpy`      a same-dtype contiguous D2D `dst.copy_(src)`
                                of 2 GiB (cudaMemcpyAsync: copy engines).
Both sides are recorded: the copy's time beside the kernel against alone,
and the kernel's time per call beside the copies against alone, with the
bytes each moves. One run enqueues the copies on one stream and the kernel
calls on another behind a gate (a sleep kernel on a third stream both wait
on), a CUDA event after every call; the kernel outlasts the copies, the
copy's time beside is the median of the copies that ran wholly inside the
kernel's span, the kernel's the median of its calls wholly inside the copies'
span. Rounds (5) repeat every case, alone and beside, and each figure is the
median over them (the rounds' values kept). Writes overlapsim.bench/v1 JSON;
reported, not a calibration source.
With --host-memory the kernels are instead what NCCL's SHM transport runs
when P2P is off (`copy_beside_host_memory_kernel`): the same Triton copy on
1, 2, 4, 8 or 32 CTAs whose source (`host_load`: SM loads from pinned host
memory over PCIe, the receiver's side) or destination (`host_store`: SM
stores to it, the sender's side) is pinned host memory; their bytes are
counted once (what crosses PCIe). Beside a copy engine's copy on the same
link they show the two's shares of it on one GPU.
Usage: copy_beside_kernels.py OUT.json [--quick | --small-kernels | --host-memory]
(--quick: small sizes, one round, to check the script; --small-kernels: the
kernels' tensors 16x smaller, the copies as they are: the few-CTA kernels'
buffers then fit in the 60 MB L2, as NCCL's channel buffers do; its ~50 us
calls also carry each launch's and event's cost, which an H2D copy raises by
a few us: the copy-interference note in docs/journal/)"""
import math
import statistics
import sys

import torch

from bench_json import environment, write_bench

try:
    import triton
    import triton.language as tl
except ImportError:  # then no sm_copy rows
    triton = None

MiB = 1 << 20
GIB = 1 << 30

if triton is not None:
    @triton.jit
    def _sm_copy(src, dst, n, BLOCK: tl.constexpr):
        """Each CTA copies every grid-th block of BLOCK elements (NCCL's
        channels each walk their share of the buffer in the same way)."""
        pid = tl.program_id(0)
        step = tl.num_programs(0) * BLOCK
        for start in range(pid * BLOCK, n, step):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)

    @triton.jit
    def _sm_copy_pair(src0, dst0, src1, dst1, n, BLOCK: tl.constexpr):
        """Even CTAs copy src0 to dst0, odd ones src1 to dst1, each half
        walking its buffer as _sm_copy does (a channel sending and receiving)."""
        pid = tl.program_id(0)
        step = (tl.num_programs(0) // 2) * BLOCK
        if pid % 2 == 0:
            for start in range((pid // 2) * BLOCK, n, step):
                offs = start + tl.arange(0, BLOCK)
                mask = offs < n
                tl.store(dst0 + offs, tl.load(src0 + offs, mask=mask), mask=mask)
        else:
            for start in range((pid // 2) * BLOCK, n, step):
                offs = start + tl.arange(0, BLOCK)
                mask = offs < n
                tl.store(dst1 + offs, tl.load(src1 + offs, mask=mask), mask=mask)


def kernels(scale):
    """(key, name, ctas, bytes moved a call, launch) for each device workload, its tensors 1/scale of the full size."""
    x = torch.randn(2 * GIB // 4 // scale, device="cuda")  # random data: see METHOD.md
    y = torch.randn(2 * GIB // 4 // scale, device="cuda")
    z = torch.empty(GIB // 4 // scale, device="cuda")
    half = z.numel()
    xa, ya = x[:half], y[:half]
    out = [("copy_beside_memory_kernel", "add_fp32", torch.cuda.get_device_properties(0).multi_processor_count, 3 * half * 4,
            lambda: torch.add(xa, ya, out=z)),
           ("copy_beside_d2d_memcpy", "d2d_copy_", None, 2 * x.numel() * 4, lambda: y.copy_(x))]
    if triton is not None:
        for ctas in (8, 16, 32, 132):
            n = min(x.numel(), 32 * MiB // 4 * ctas // scale)  # ~1-2 ms a call whatever the grid
            out.append(("copy_beside_sm_copy_kernel", f"triton_copy_{ctas}", ctas, 2 * n * 4,
                        lambda n=n, ctas=ctas: _sm_copy[(ctas,)](x, y, n, BLOCK=8192, num_warps=16)))
    return out


def host_kernels():
    """(key, name, ctas, PCIe bytes a call, launch): Triton copies between
    pinned host memory and the GPU by SM loads or stores (zero-copy, as NCCL's
    SHM transport moves a channel's data when P2P is off)."""
    n = 64 * MiB // 4
    dev = torch.randn(n, device="cuda")
    host = torch.empty(n, pin_memory=True)
    host.copy_(dev.cpu())
    dev2 = torch.empty_like(dev)
    host2 = torch.empty(n, pin_memory=True)
    out = []
    for ctas in (1, 2, 4, 8, 32):
        out.append(("copy_beside_host_memory_kernel", f"host_load_{ctas}", ctas, n * 4,
                    lambda ctas=ctas: _sm_copy[(ctas,)](host, dev2, n, BLOCK=8192, num_warps=16)))
        out.append(("copy_beside_host_memory_kernel", f"host_store_{ctas}", ctas, n * 4,
                    lambda ctas=ctas: _sm_copy[(ctas,)](dev, host, n, BLOCK=8192, num_warps=16)))
    # Half the CTAs load, half store, at once: a channel of an all-to-all
    # through host memory receives and sends (bytes: both directions').
    for ctas in (2, 4, 8):
        out.append(("copy_beside_host_memory_kernel", f"host_both_{ctas}", ctas, 2 * n * 4,
                    lambda ctas=ctas: _sm_copy_pair[(ctas,)](host, dev2, dev, host2, n, BLOCK=8192, num_warps=16)))
    kept = []
    for k in out:
        try:
            k[-1]()
            torch.cuda.synchronize()
            kept.append(k)
        except Exception as e:  # a Triton that cannot run it: measure the others
            print(f"{k[1]}: not measured ({type(e).__name__}: {e})", flush=True)
    return kept


def copies(quick):
    """(direction, bytes, launch) for each copy; pinned host memory, one device buffer."""
    big = (32 if quick else 512) * MiB
    dev = torch.randint(0, 256, (big,), dtype=torch.uint8, device="cuda")
    host = torch.empty(big, dtype=torch.uint8, pin_memory=True)
    host.copy_(dev)
    out = []
    for nbytes in ((4 if quick else 64) * MiB, big):
        d, h = dev[:nbytes], host[:nbytes]
        out.append(("h2d", nbytes, lambda d=d, h=h: d.copy_(h, non_blocking=True)))
        out.append(("d2h", nbytes, lambda d=d, h=h: h.copy_(d, non_blocking=True)))
    return out


class Runner:
    """Runs a kernel's calls and a copy's copies on their own streams behind one gate."""
    GATE_CYCLES = 60_000_000  # ~30 ms at 1.98 GHz: time to enqueue everything

    def __init__(self):
        self.ks, self.cs, self.gs = torch.cuda.Stream(), torch.cuda.Stream(), torch.cuda.Stream()

    def run(self, kernel, n_calls, copy, n_copies, gate=True):
        """Per-call (start, end) ms for the kernel's and the copy's calls, from the gate's end; whether the gate held."""
        t0, open_ = torch.cuda.Event(enable_timing=True), torch.cuda.Event()
        with torch.cuda.stream(self.gs):
            if gate:
                torch.cuda._sleep(self.GATE_CYCLES)
            t0.record(self.gs)
            open_.record(self.gs)
        evs = {}
        for name, fn, n, s in (("copy", copy, n_copies, self.cs), ("kernel", kernel, n_calls, self.ks)):  # copies first: few
            if fn is None or n == 0:
                continue
            s.wait_event(open_)
            e = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
            with torch.cuda.stream(s):
                e[0].record(s)
                for i in range(n):
                    fn()
                    e[i + 1].record(s)
            evs[name] = e
        held = not open_.query()
        torch.cuda.synchronize()
        spans = {name: [(t0.elapsed_time(e[i]), t0.elapsed_time(e[i + 1])) for i in range(len(e) - 1)] for name, e in evs.items()}
        return spans, held

    def alone_ms(self, fn, is_copy, n):
        spans, _ = self.run(None if is_copy else fn, 0 if is_copy else n, fn if is_copy else None, n if is_copy else 0, gate=False)
        return statistics.median(b - a for a, b in spans["copy" if is_copy else "kernel"])


def inside(spans, lo, hi, eps=1e-3):
    """The durations (ms) of the spans wholly inside [lo, hi]."""
    return [b - a for a, b in spans if a >= lo - eps and b <= hi + eps]


def warm(fn, n=3):
    for _ in range(n):
        fn()
    torch.cuda.synchronize()


def measure(quick, ks, max_calls):
    rounds = 1 if quick else 5
    cs = copies(quick)
    r = Runner()
    for *_, fn in ks:
        warm(fn)
    for *_, fn in cs:
        warm(fn)
    n_copies = {nbytes: (16 if nbytes < 256 * MiB else 6) for _, nbytes, _ in cs}
    per = {}  # (kernel name, direction, bytes) -> lists over rounds
    for rnd in range(rounds):
        order = ks if rnd % 2 == 0 else ks[::-1]  # drift falls on both ends alike
        for key, kname, ctas, kbytes, kfn in order:
            once = r.alone_ms(kfn, False, 3)
            k_alone = r.alone_ms(kfn, False, max(10, math.ceil(30.0 / max(once, 1e-3))))
            for direction, nbytes, cfn in cs:
                nc = n_copies[nbytes]
                c_alone = r.alone_ms(cfn, True, nc)
                calls = min(max_calls, math.ceil((2.5 * nc * c_alone + 5.0) / k_alone))
                spans, held = r.run(kfn, calls, cfn, nc)
                kspan, cspan = spans["kernel"], spans["copy"]
                c_in = inside(cspan, kspan[0][0], kspan[-1][1])
                k_in = inside(kspan, cspan[0][0], cspan[-1][1])
                d = per.setdefault((key, kname, ctas, kbytes, direction, nbytes), {"k_alone": [], "c_alone": [], "k_beside": [], "c_beside": [],
                                                                                "copies_inside": [], "calls_inside": [], "gate_held": []})
                d["k_alone"].append(k_alone)
                d["c_alone"].append(c_alone)
                d["c_beside"].append(statistics.median(c_in) if c_in else None)
                d["k_beside"].append(statistics.median(k_in) if k_in else None)
                d["copies_inside"].append(len(c_in))
                d["calls_inside"].append(len(k_in))
                d["gate_held"].append(held)
                print(f"round {rnd} {kname:>16} {direction} {nbytes // MiB:>4} MiB: copy {c_alone:.3f} -> "
                      f"{d['c_beside'][-1] or float('nan'):.3f} ms ({len(c_in)}/{nc}), kernel {k_alone:.3f} -> "
                      f"{d['k_beside'][-1] or float('nan'):.3f} ms ({len(k_in)}/{calls}), gate held {held}", flush=True)
    rows = []
    for (key, kname, ctas, kbytes, direction, nbytes), d in per.items():
        med = lambda v: statistics.median([x for x in v if x is not None]) if any(x is not None for x in v) else None
        ka, kb, ca, cb = (med(d[f]) for f in ("k_alone", "k_beside", "c_alone", "c_beside"))
        gbps = lambda b, ms: b / (ms * 1e-3) * 1e-9 if ms else None
        row = {"key": key, "gpus": [0], "kernel": kname, "ctas": ctas, "kernel_bytes": kbytes, "copy": direction, "copy_bytes": nbytes,
               "copy_alone_us": ca * 1e3, "copy_beside_us": cb * 1e3 if cb else None, "copy_slowdown": cb / ca if cb else None,
               "copy_alone_GBps": gbps(nbytes, ca), "copy_beside_GBps": gbps(nbytes, cb),
               "kernel_alone_us": ka * 1e3, "kernel_beside_us": kb * 1e3 if kb else None, "kernel_slowdown": kb / ka if kb else None,
               "kernel_alone_GBps": gbps(kbytes, ka), "kernel_beside_GBps": gbps(kbytes, kb),
               "rounds": {f: d[f] for f in d}, "via": "torch copy_(non_blocking) on a side stream; " +
               ("triton" if key != "copy_beside_memory_kernel" and key != "copy_beside_d2d_memcpy" else "torch")}
        rows.append(row)
    return rows


def device_activities(fn):
    """The names of the GPU activities one call of `fn` runs (a kernel's name, or 'Memcpy DtoD ...')."""
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            fn()
            torch.cuda.synchronize()
        return sorted({e.name for e in p.events() if str(e.device_type).endswith("CUDA")})
    except Exception as e:  # the profiler missing: say so, measure anyway
        return [f"unknown ({type(e).__name__}: {e})"]


def main():
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] not in ("--quick", "--small-kernels", "--host-memory")):
        sys.exit(__doc__)
    quick = sys.argv[2:] == ["--quick"]
    host_memory = sys.argv[2:] == ["--host-memory"]
    scale = 16 if sys.argv[2:] == ["--small-kernels"] else 1
    props = torch.cuda.get_device_properties(0)
    if host_memory and triton is None:
        sys.exit("copy_beside_kernels.py: --host-memory needs Triton")
    ks = host_kernels() if host_memory else kernels(scale)
    activities = {name: device_activities(fn) for _, name, _, _, fn in ks if name in ("add_fp32", "d2d_copy_")}
    # Short calls need many to outlast the copies: past CUDA's launch queue
    # the host waits for the gate to open, which only delays the copies' start.
    rows = measure(quick, ks, 600 if scale == 1 else 2500)
    env = environment(torch, sms=props.multi_processor_count, l2_bytes=getattr(props, "L2_cache_size", None),
                      triton=triton.__version__ if triton is not None else None, device_activities=activities, quick=quick,
                      kernel_scale=scale, host_memory=host_memory)
    write_bench(sys.argv[1], env, rows)
    print("activities:", activities)
    print(f"{'kernel':>16} {'copy':>4} {'MiB':>4} {'copy GB/s alone':>15} {'beside':>7} {'x':>5} {'kernel GB/s alone':>17} {'beside':>7} {'x':>5}")
    for w in rows:
        f = lambda v, p=1: "-" if v is None else f"{v:.{p}f}"
        print(f"{w['kernel']:>16} {w['copy']:>4} {w['copy_bytes'] // MiB:>4} {f(w['copy_alone_GBps']):>15} {f(w['copy_beside_GBps']):>7} "
              f"{f(w['copy_slowdown'], 3):>5} {f(w['kernel_alone_GBps'], 0):>17} {f(w['kernel_beside_GBps'], 0):>7} {f(w['kernel_slowdown'], 3):>5}")


if __name__ == "__main__":
    main()
