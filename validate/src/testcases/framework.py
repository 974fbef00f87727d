#!/usr/bin/env python3
"""The costs a framework adds that the C++ bench cannot see, timed through
PyTorch itself: its pageable copies (`h2d_pageable`, `d2h_pageable`: a
tensor's `.copy_()` between pageable host memory and the GPU, from one tensor
again and again and from a fresh tensor each time) and the host time of one
framework op that launches a kernel (`overhead_framework_op`: small F.linear,
add, layer_norm, gelu and SDPA calls back to back, the GPU kept ahead of the
host) and of the calls between them that launch nothing
(`overhead_framework_view`: slices, views, transposes, splits, reshapes);
the host time of launching ops at a block's shapes
(`overhead_framework_op_sized`, reported, not fitted); with several GPUs, pageable copies from one process per GPU at once, as
the ranks of a torchrun job copy (`multi_h2d_pageable`, `multi_d2h_pageable`:
the host-wide limit of the CPU copies that stage them) and the host time of a
Ulysses all-to-all as PyTorch programs call it, one process per GPU under NCCL
(`overhead_framework_collective`: `all_to_all_single`, and the pairwise
exchange: the rank's own chunk copied, then a `batch_isend_irecv` round per
partner, the GPU kept ahead of the host) and its GPU time, CUDA events around
each call with the GPU otherwise idle (`framework_all_to_all`, 1-96 MiB a
rank, reported, not fitted); how many launches the host gets ahead of the GPU
before one blocks (`launch_queue`); how long the host takes to go on after
waiting for the GPU (`overhead_framework_sync_return`: items run one after
another with the host waiting for each, against the same items queued back
to back; among them LightX2V's block loop at small shapes); with
`after_wait` alone, how fast it issues a block's calls right after a wait, a
sleep, or warm (`host_after_wait`, `host_op_loop`; reported); with
`profiler_cost` alone, the host time per call bare and under torch.profiler
(`overhead_profiler`; reported). Writes
overlapsim.bench/v1 JSON; `overlapsim calibrate` reads it after the C++ bench,
whose pageable rows it replaces. Usage: framework.py OUT.json [launch_queue |
pageable | pageable_buffers | all_to_all_time | sync_return | host_calls | after_wait] (one of them alone; `pageable`: the h2d_pageable and d2h_pageable rows, each with every sample); `pageable_buffers`: 256 MiB pageable H2D copies
rotating over 1, 2 and 8 host tensors (a layerwise program's weights are one
tensor a block), alone (`h2d_pageable` rows with `buffers`) and beside GEMMs on
another stream (`h2d_pageable_beside_compute`, reported, not fitted), the
samples' median, fastest and slowest rate."""
import multiprocessing as mp
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from bench_json import environment, write_bench
from host_timing import host_us_per_call, keep_gpu_busy
from profiler_cost import profiler_cost_rows


def pageable_copy_us(dev, host, h2d):
    """One pageable copy between `host` and `dev`, waited for: its time in us."""
    t0 = time.perf_counter()
    if h2d:
        dev.copy_(host, non_blocking=True)
    else:
        host.copy_(dev, non_blocking=True)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e6


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
                    torch.cuda.synchronize()
                    us = pageable_copy_us(dev, hosts[i % len(hosts)], h2d)
                    if i:
                        times.append(us)
                us = statistics.median(times)
                rows.append({"key": key, "gpus": [0], "bytes": n * 2, "host_buffer": host_buffer, "time_us": us, "GBps": n * 2 / us * 1e-3,
                             "samples_us": times, "via": "torch"})
                print(key, mib, "MiB", host_buffer, round(n * 2 / us * 1e-3, 2), "GB/s", flush=True)
    return rows


def pageable_buffers_rows(mib=256, counts=(1, 2, 8), samples=8):
    """Pageable H2D copies of `mib` MiB rotating over each count of host
    tensors, alone and with GEMMs queued on another stream (as a program's
    prefetch overlaps its compute): the median, fastest and slowest sample."""
    n = mib << 19
    dev = torch.empty(n, device="cuda", dtype=torch.bfloat16)
    hosts = [torch.randn(n, dtype=torch.bfloat16) for _ in range(max(counts))]
    big = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    side = torch.cuda.Stream()
    rows = []
    for beside in ("none", "gemm"):
        for count in counts:
            for i in range(count):  # warm: every buffer copied once
                pageable_copy_us(dev, hosts[i], True)
            rates = []
            for i in range(samples):
                if beside == "gemm":
                    with torch.cuda.stream(side):
                        for _ in range(40):  # ~40 ms of GEMMs, longer than the copy
                            big @ big
                us = pageable_copy_us(dev, hosts[i % count], True)
                rates.append(n * 2 / us * 1e-3)
            torch.cuda.synchronize()
            # Beside GEMMs is another effect: its own key, so the pageable fit never reads it.
            key = "h2d_pageable" if beside == "none" else "h2d_pageable_beside_compute"
            rows.append({"key": key, "gpus": [0], "bytes": n * 2, "host_buffer": "rotating" if count > 1 else "same",
                         "buffers": count, "beside": beside, "GBps": statistics.median(rates), "GBps_min": min(rates),
                         "GBps_max": max(rates), "time_us": n * 2 / statistics.median(rates) * 1e-3, "samples": samples, "via": "torch"})
            print("h2d_pageable", mib, "MiB over", count, "buffers, beside", beside, [round(r, 2) for r in rates], flush=True)
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
        us = host_us_per_call(op, calls // 5, 50, big)
        rows.append({"key": "overhead_framework_op", "op": name, "host_us": us, "framework": "pytorch " + torch.__version__})
        print("framework op", name, round(us, 2), "us", flush=True)
    return rows


def host_call_rows(calls=2000):
    """Host time of the calls a program makes between the ops that launch
    kernels, which launch nothing (`overhead_framework_view`: a slice, view,
    transpose, split, reshape or contiguous of a GPU tensor, or an empty_like
    from the caching allocator, as a block's code slices its weights out of a
    flat buffer and lays q, k and v out for attention), and of ops that
    launch one at a block's shapes (`overhead_framework_op_sized`: F.linear,
    add and layer_norm over [tokens, 3072] bf16, 64, 4,096 and 16,384 tokens;
    reported, not fitted), and the calls a layerwise prefetch makes beside its
    copy (`overhead_framework_stream_call`; reported, not fitted): calls back to back behind GEMMs that keep the GPU
    busy, as framework_op_rows. A view row's `tensors`: how many the call
    returns (a split's three)."""
    big = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    flat = torch.randn(1 << 20, device="cuda", dtype=torch.bfloat16)
    t = torch.randn(256, 3 * 64, device="cuda", dtype=torch.bfloat16)
    q = torch.randn(1, 256, 4, 16, device="cuda", dtype=torch.bfloat16)
    views = {"slice": lambda: flat[4096:8192], "view": lambda: flat.view(1024, 1024), "transpose": lambda: q.transpose(1, 2),
             "split": lambda: t.split(64, dim=-1), "reshape": lambda: q.reshape(256, 64), "contiguous": lambda: t.contiguous(),
             "empty_like": lambda: torch.empty_like(t)}
    rows = []
    for name, op in views.items():
        us = host_us_per_call(op, calls // 5, 50, big)
        returned = op()
        rows.append({"key": "overhead_framework_view", "op": name, "host_us": us, "tensors": len(returned) if isinstance(returned, tuple) else 1,
                     "framework": "pytorch " + torch.__version__})
        print("framework view", name, round(us, 2), "us", flush=True)
    # What a layerwise prefetch calls beside its copy (dit_offload.py): a
    # stream's context, an event made and recorded, a wait on an event or a
    # stream, record_stream, a weights-sized buffer from the caching allocator
    # (freed at once), and a small pinned H2D copy.
    side, compute = torch.cuda.Stream(), torch.cuda.current_stream()
    ev = torch.cuda.Event()
    ev.record(side)
    pinned = torch.empty(2048, dtype=torch.bfloat16, pin_memory=True)
    small = torch.empty(2048, device="cuda", dtype=torch.bfloat16)

    def stream_context():
        with torch.cuda.stream(side):
            pass

    stream_calls = {"stream_context": stream_context, "event_record": lambda: torch.cuda.Event().record(side),
                    "wait_event": lambda: compute.wait_event(ev), "wait_stream": lambda: side.wait_stream(compute),
                    "record_stream": lambda: small.record_stream(side), "empty": lambda: torch.empty(1 << 25, device="cuda", dtype=torch.bfloat16),
                    "copy_pinned": lambda: small.copy_(pinned, non_blocking=True)}
    for name, op in stream_calls.items():
        us = host_us_per_call(op, calls // 5, 50, big)
        rows.append({"key": "overhead_framework_stream_call", "op": name, "host_us": us, "framework": "pytorch " + torch.__version__})
        print("framework stream call", name, round(us, 2), "us", flush=True)
    h = 3072
    w = torch.randn(h, h, device="cuda", dtype=torch.bfloat16)
    for tokens in (64, 4096, 16384):
        x = torch.randn(tokens, h, device="cuda", dtype=torch.bfloat16)
        ops = {"linear": lambda: F.linear(x, w), "add": lambda: x + x, "layer_norm": lambda: F.layer_norm(x, (h,))}
        for name, op in ops.items():
            # 100 calls: at most ~50 ms of GPU work queued, under CUDA's launch queue.
            us = host_us_per_call(op, 100, 5, big)
            rows.append({"key": "overhead_framework_op_sized", "op": name, "tokens": tokens, "hidden": h, "host_us": us,
                         "framework": "pytorch " + torch.__version__})
            print("framework op", name, tokens, "tokens", round(us, 2), "us", flush=True)
        del x
    return rows


def host_to_pinned_us(pinned, host):
    """The CPU's side of a pageable H2D alone: `host` copied into pinned memory, in us."""
    t0 = time.perf_counter()
    pinned.copy_(host)
    return (time.perf_counter() - t0) * 1e6


def pageable_worker(rank, nprocs, keys, mib, samples, barrier, results):
    """One process (on GPU rank % GPUs): for each key and each count n of
    processes copying (1..nprocs), the processes below n copy `mib` MiB each,
    all released by one barrier per sample; the others wait at the barriers.
    Puts (key, n, rank, [us per sample]). One CPU thread a process: the
    driver stages a pageable copy on the calling thread, and torch's own
    host copy would otherwise spread over every core."""
    torch.set_num_threads(1)
    torch.cuda.set_device(rank % torch.cuda.device_count())
    n_el = mib << 19
    dev = torch.empty(n_el, device="cuda", dtype=torch.bfloat16)
    host = torch.randn(n_el, dtype=torch.bfloat16)
    pinned = torch.empty(n_el, dtype=torch.bfloat16, pin_memory=True) if any(k.endswith("host_to_pinned") for k in keys) else None
    for key in keys:
        for n in range(1, nprocs + 1):
            times = []
            for i in range(samples + 1):
                barrier.wait()
                if rank < n:
                    us = host_to_pinned_us(pinned, host) if key.endswith("host_to_pinned") else pageable_copy_us(dev, host, "h2d" in key)
                    if i:
                        times.append(us)
                barrier.wait()
            if rank < n:
                results.put((key, n, rank, times))


def pageable_processes(nprocs, keys, mib, samples):
    """`pageable_worker` in nprocs spawned processes: {(key, n): {rank: [us]}}."""
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(nprocs), ctx.Queue()
    procs = [ctx.Process(target=pageable_worker, args=(r, nprocs, keys, mib, samples, barrier, results)) for r in range(nprocs)]
    for p in procs:
        p.start()
    got = {}
    for _ in range(len(keys) * nprocs * (nprocs + 1) // 2):
        key, n, rank, times = results.get(timeout=120)
        got.setdefault((key, n), {})[rank] = times
    for p in procs:
        p.join(timeout=30)
    return got


def aggregate_row(key, n, per_rank, mib, samples):
    """Per sample the slowest process's time; the aggregate over the median sample."""
    slowest = [max(per_rank[r][i] for r in per_rank) for i in range(samples)]
    us = statistics.median(slowest)
    per_proc = [mib * 2**20 / statistics.median(per_rank[r]) * 1e-3 for r in sorted(per_rank)]
    print(key, n, round(n * (mib << 20) / us * 1e-3, 2), "GB/s together", flush=True)
    return {"key": key, "bytes_per_gpu": mib << 20, "time_us": us, "aggregate_GBps": n * (mib << 20) / us * 1e-3, "per_gpu_GBps": per_proc}


def multi_pageable_rows(mib=256, samples=5):
    """Pageable copies from one process per GPU at once (1..all GPUs): per
    sample the slowest process's time; the aggregate over the median sample."""
    ngpus = torch.cuda.device_count()
    if ngpus < 2:
        return []
    got = pageable_processes(ngpus, ("multi_h2d_pageable", "multi_d2h_pageable"), mib, samples)
    return [{**aggregate_row(key, n, per_rank, mib, samples), "gpus": n, "via": "torch, one process per GPU"}
            for (key, n), per_rank in sorted(got.items())]


def pageable_processes_rows(nprocs=4, mib=256, samples=5):
    """Pageable copies from 1..nprocs processes at once on however many GPUs
    the box has (process r on GPU r % GPUs: on a 1-GPU box all on one), and
    the CPU's side alone (pageable into pinned host memory, no GPU): how the
    host shares its pageable path among processes, which a 1-GPU box cannot
    measure one process per GPU (issue 76: pageable_h2d_aggregate)."""
    ngpus = torch.cuda.device_count()
    keys = ("processes_h2d_pageable", "processes_d2h_pageable", "processes_host_to_pinned")
    got = pageable_processes(nprocs, keys, mib, samples)
    return [{**aggregate_row(key, n, per_rank, mib, samples), "processes": n, "gpus": min(n, ngpus),
             "via": f"torch, {n} processes on {min(n, ngpus)} GPU(s)" if not key.endswith("host_to_pinned") else f"torch, {n} processes, CPU only"}
            for (key, n), per_rank in sorted(got.items())]


def circle_partners(U, me):
    """The pairwise all-to-all's partners by round (the circle method, as the
    simulator and validate/programs/dit_offload.py pair ranks; -1: a bye)."""
    m = U + U % 2
    teams, partners = list(range(m)), []
    for _ in range(m - 1):
        partner = -1
        for t in range(m // 2):
            a, b = teams[t], teams[m - 1 - t]
            if a < U and b < U and me in (a, b):
                partner = b if a == me else a
        partners.append(partner)
        teams = [teams[0], teams[-1]] + teams[1:-1]
    return partners


def join_group(rank, world, port):
    """This process as rank `rank` of a NCCL group of `world` on this host,
    on GPU `rank`: torch.distributed, initialised."""
    import torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    return dist


def run_ranks(target, world, args, messages, timeout):
    """target(rank, *args, results) in one spawned process per rank of
    `world`: the `messages` items they put on `results`, in arrival order."""
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    procs = [ctx.Process(target=target, args=(r, *args, results)) for r in range(world)]
    for p in procs:
        p.start()
    got = [results.get(timeout=timeout) for _ in range(messages)]
    for p in procs:
        p.join(timeout=60)
    return got


def all_to_all_calls(dist, rank, partners, send, recv):
    """A Ulysses all-to-all as PyTorch programs call it, both ways: NCCL's
    all_to_all_single, and the pairwise exchange (the rank's own chunk
    copied, then a batch_isend_irecv round per partner, waited on)."""

    def pairwise():
        recv[rank].copy_(send[rank])
        for p in partners:
            for req in dist.batch_isend_irecv([dist.P2POp(dist.isend, send[p], p), dist.P2POp(dist.irecv, recv[p], p)]):
                req.wait()

    return {"all_to_all_single": lambda: dist.all_to_all_single(recv, send), "all_to_all_pairwise": pairwise}


def collective_worker(rank, world, port, calls, results):
    """One rank of `world`: host time per all-to-all call, both ways of
    calling it, behind GEMMs that keep the GPU busy."""
    dist = join_group(rank, world, port)
    send = torch.randn(world, 1024, device="cuda", dtype=torch.bfloat16)
    recv = torch.empty_like(send)
    big = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    partners = [p for p in circle_partners(world, rank) if p >= 0]
    for name, op in all_to_all_calls(dist, rank, partners, send, recv).items():
        results.put((name, rank, host_us_per_call(op, calls, 20, big, before=dist.barrier), len(partners)))
    dist.barrier()
    dist.destroy_process_group()


def collective_time_worker(rank, world, port, sizes, calls, results):
    """One rank of `world`: the GPU time of one Ulysses all-to-all as PyTorch
    programs call it (both ways), CUDA events around each call on the
    current stream, the GPU otherwise idle."""
    dist = join_group(rank, world, port)
    partners = [p for p in circle_partners(world, rank) if p >= 0]
    for nbytes in sizes:
        send = torch.randn(world, nbytes // (2 * world), device="cuda", dtype=torch.bfloat16)
        recv = torch.empty_like(send)
        for name, op in all_to_all_calls(dist, rank, partners, send, recv).items():
            for _ in range(5):
                op()
            torch.cuda.synchronize()
            dist.barrier()
            events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(calls)]
            for a, b in events:
                a.record()
                op()
                b.record()
            torch.cuda.synchronize()
            results.put((name, nbytes, rank, [a.elapsed_time(b) * 1e3 for a, b in events]))
    dist.barrier()
    dist.destroy_process_group()


def collective_time_rows(calls=20):
    """The GPU time of a Ulysses all-to-all as PyTorch calls it, on 2 GPUs
    and on all of them (`framework_all_to_all`): bytes a rank sends in all
    (its own chunk included), the slowest rank's median."""
    ngpus = torch.cuda.device_count()
    if ngpus < 2:
        return []
    sizes = [1 << 20, 4 << 20, 16 << 20, 24 << 20, 48 << 20, 96 << 20]
    rows = []
    for world in sorted({2, ngpus}):
        got = {}
        for name, nbytes, rank, us in run_ranks(collective_time_worker, world, (world, 29600 + world, sizes, calls), 2 * world * len(sizes), 300):
            got.setdefault((name, nbytes), {})[rank] = us
        for (name, nbytes), per_rank in sorted(got.items()):
            med = {r: statistics.median(v) for r, v in per_rank.items()}
            slow = max(med, key=med.get)
            rows.append({"key": "framework_all_to_all", "op": name, "ranks": world, "bytes": nbytes, "time_us": med[slow],
                         "rank_median_us": [med[r] for r in sorted(med)], "samples_us": per_rank[slow], "framework": "pytorch " + torch.__version__})
            print("framework all-to-all", name, world, "ranks", nbytes >> 20, "MiB", [round(med[r], 1) for r in sorted(med)], "us", flush=True)
    return rows


def collective_rows(calls=100):
    """Host time per Ulysses all-to-all call on all GPUs (2 and more), the
    median over ranks: one row per way of calling it."""
    ngpus = torch.cuda.device_count()
    if ngpus < 2:
        return []
    rows = []
    for world in sorted({2, ngpus}):
        got = {}
        for name, rank, us, rounds in run_ranks(collective_worker, world, (world, 29500 + world, calls), 2 * world, 180):
            got.setdefault(name, []).append((us, rounds))
        for name, per_rank in sorted(got.items()):
            us = statistics.median(u for u, _ in per_rank)
            rows.append({"key": "overhead_framework_collective", "op": name, "ranks": world, "rounds": max(r for _, r in per_rank), "host_us": us,
                         "framework": "pytorch " + torch.__version__})
            print("framework collective", name, world, "ranks", round(us, 1), "us", flush=True)
    return rows


def sleep_cycles(seconds):
    """torch.cuda._sleep's cycles for about `seconds` on this GPU."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1_000_000)  # loaded before timing
    torch.cuda.synchronize()
    start.record()
    torch.cuda._sleep(100_000_000)
    end.record()
    end.synchronize()
    return int(100_000_000 * seconds / (start.elapsed_time(end) * 1e-3))


def launch_queue_rows(launches=20000, hold_s=1.0):
    """How far the host can launch ahead of the GPU (`launch_queue`): each of
    1-16 streams is held by a long kernel, then tiny kernels are launched
    round-robin; the first launch that takes more than a tenth of the hold
    blocked on a full queue. The launches before it, and the host time of the
    ones that did not block."""
    x = torch.zeros(1, device="cuda")
    x.add_(1)  # loaded before the GPU is held: a kernel's first launch may wait for the device
    cycles = sleep_cycles(hold_s)
    rows = []
    for streams in (1, 2, 4, 8, 16):
        ss = [torch.cuda.Stream() for _ in range(streams)]
        torch.cuda.synchronize()
        for s in ss:
            with torch.cuda.stream(s):
                torch.cuda._sleep(cycles)
        times = []
        for i in range(launches):
            with torch.cuda.stream(ss[i % streams]):
                t0 = time.perf_counter()
                x.add_(1)
                times.append(time.perf_counter() - t0)
        torch.cuda.synchronize()
        blocked = next((i for i, t in enumerate(times) if t > hold_s / 10), None)
        free = times[:blocked] if blocked else times
        rows.append({"key": "launch_queue", "streams": streams, "launches": launches if blocked is None else blocked,
                     "blocked": blocked is not None, "host_us": statistics.median(free) * 1e6, "hold_us": hold_s * 1e6,
                     "device_max_connections": int(os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS", "8")), "framework": "pytorch " + torch.__version__})
        print("launch queue", streams, "streams:", rows[-1]["launches"], "launches before one blocked" if blocked is not None else "launches, none blocked",
              flush=True)
    return rows


def sync_return_rows(items=100, samples=5, mib=64):
    """The host's return from waiting on the GPU, as a program's loop meets
    it: `items` items one after another, the host waiting for each (`wait`:
    `kernel_sync`, a ~1 ms kernel then its stream's synchronize;
    `copy_stream_sync`, a pinned H2D copy of `mib` MiB on a side stream then
    that stream's synchronize; `blocking_to`, a blocking `.to("cuda")` of it,
    as a prefetch-0 offload does; `block_loop`, LightX2V's block offload loop
    at small shapes: the copy on the side stream, seven slices of a flat
    weight buffer and `ops` small ops (norm, linears, gelu, adds) on the
    compute stream, then both streams' synchronize; `block_loop_compute`, the
    same with a kernel of `compute_us` after the ops, the block
    compute-bound), against the same items
    queued back to back. CUDA events on the copy's (or kernel's) stream time
    both; the difference per item (`gap_us`, the median of `samples`) is the
    GPU idle from one item's end to the next one's start: the wait's return,
    the Python between, and the next call."""
    cycles = sleep_cycles(1e-3)
    host = torch.empty(mib << 20, dtype=torch.uint8, pin_memory=True)
    dev = torch.empty_like(host, device="cuda")
    side = torch.cuda.Stream()
    compute = torch.cuda.current_stream()
    h, tokens = 3072, 64
    part = h * h // 8
    flat = torch.randn(7 * part, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(tokens, h, device="cuda", dtype=torch.bfloat16)

    def kernel(wait):
        torch.cuda._sleep(cycles)
        if wait:
            compute.synchronize()

    def copy(wait):
        with torch.cuda.stream(side):
            dev.copy_(host, non_blocking=True)
        if wait:
            side.synchronize()

    def to(wait):
        t = host.to("cuda", non_blocking=not wait)
        del t

    def block_loop(wait, compute_us=0):
        with torch.cuda.stream(side):
            dev.copy_(host, non_blocking=True)
        ws = [flat[i * part:(i + 1) * part].view(h // 8, h) for i in range(7)]
        y = F.layer_norm(x, (h,))
        y = F.gelu(F.linear(y, ws[0]))
        z = x + F.linear(y, ws[1].t())
        z = z + F.linear(F.gelu(F.linear(F.layer_norm(z, (h,)), ws[2])), ws[3].t())
        if compute_us:
            torch.cuda._sleep(int(cycles * compute_us * 1e-3))
        del ws, y, z
        if wait:
            compute.synchronize()
            side.synchronize()

    block_ops = 10  # block_loop's ops that launch a kernel: 2 norms, 4 linears, 2 gelus, 2 adds
    rows = []
    # block_loop_compute: the same with a 2 ms kernel after the ops, longer
    # than the copy (the block compute-bound): the compute stream's idle.
    for name, item, stream in (("kernel_sync", kernel, compute), ("copy_stream_sync", copy, side), ("blocking_to", to, compute),
                               ("block_loop", block_loop, side), ("block_loop_compute", lambda wait: block_loop(wait, 2000), compute)):
        for _ in range(3):
            item(True)
        per = {True: [], False: []}
        for _ in range(samples):
            for wait in (False, True):
                torch.cuda.synchronize()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record(stream)
                for _ in range(items):
                    item(wait)
                end.record(stream)
                end.synchronize()
                per[wait].append(start.elapsed_time(end) * 1e3 / items)  # us per item
        queued, waited = statistics.median(per[False]), statistics.median(per[True])
        row = {"key": "overhead_framework_sync_return", "wait": name, "item_us": queued, "waited_us": waited, "gap_us": waited - queued,
               "items": items, "copy_mib": mib, "framework": "pytorch " + torch.__version__}
        if name.startswith("block_loop"):
            # views: the calls that launch nothing before the first op, a slice
            # and a view per weight (as the presets' blocks count them).
            row.update({"ops": block_ops, "views": 14, "compute_us": 2000 if name == "block_loop_compute" else 0})
        rows.append(row)
        print("sync return", name, "item", round(queued, 1), "us, waited", round(waited, 1), "us: gap", round(waited - queued, 1), "us", flush=True)
    return rows


def after_wait_rows(samples=25):
    """How fast PyTorch's host issues a block's calls, as a program's loop
    makes them (`host_after_wait`): a stream's context and a pinned copy on
    it, seven slices of a flat weight buffer, then norm, linear, split, mul,
    transposes, SDPA, add, linear, gelu, linear, add, on small tensors (the
    GPU never the bound), each call's end stamped by perf_counter. `after`:
    what came just before the sequence: `sync`, a stream synchronize that
    waited `wait_ms` for a sleeping kernel; `sleep`, the host asleep as long
    with the GPU idle (no CUDA wait); `none`, the same sequence just before
    (the host warm, the GPU idle); `busy`, GEMMs queued just before (the GPU
    busy while the host issues); `copy`, a synchronize that waited for a
    pinned H2D copy of `copy_mib` (32, 128, 512 MiB; `wait_ms` the wait
    measured), as a blocking prefetch waits before each block. Per call, the median host time over
    `samples`; the first call's time counts from the wait's return. Then
    (`host_op_loop`) each launching call alone, 50 back to back, with the GPU
    idle and busy: the host time per call as framework_op_rows measures it."""
    h, tokens = 3072, 64
    flat = torch.randn(7 * h * h // 8, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(tokens, h, device="cuda", dtype=torch.bfloat16)
    big = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    pinned = torch.empty(32 << 20, dtype=torch.uint8, pin_memory=True)
    dev = torch.empty_like(pinned, device="cuda")
    side, compute = torch.cuda.Stream(), torch.cuda.current_stream()
    part = h * h // 8
    w0 = flat[:part].view(h // 8, h)
    q0 = torch.randn(1, 1, tokens, 128, device="cuda", dtype=torch.bfloat16)

    def block():
        with torch.cuda.stream(side):
            dev.copy_(pinned, non_blocking=True)
        yield "copy"
        ws = []
        for i in range(7):
            ws.append(flat[i * part:(i + 1) * part].view(h // 8, h))
            yield "slice"
        y = F.layer_norm(x, (h,))
        yield "layer_norm"
        qkv = F.linear(y, ws[0])
        yield "linear"
        q, k, v = qkv.split(128, dim=-1)
        yield "split"
        q = q * 0.5
        yield "mul"
        k = k * 0.5
        yield "mul"
        q, k, v = (t.reshape(1, tokens, 1, 128).transpose(1, 2) for t in (q, k, v))
        yield "transpose"
        o = F.scaled_dot_product_attention(q, k, v)
        yield "sdpa"
        o = o.transpose(1, 2).reshape(tokens, 128)
        yield "reshape"
        z = x + y
        yield "add"
        z = F.linear(z, ws[1])
        yield "linear"
        z = F.gelu(z)
        yield "gelu"
        z = F.linear(z, ws[2].t())
        yield "linear"
        z = z + x
        yield "add"
        del o, z

    def run(stamps):
        t = time.perf_counter()
        for name in block():
            now = time.perf_counter()
            stamps.append((name, now - t))
            t = now

    cycles = {ms: sleep_cycles(ms * 1e-3) for ms in (0.1, 0.5, 2, 10)}
    for _ in range(5):
        run([])
    keep_gpu_busy(big)
    torch.cuda.synchronize()
    # A synchronize that waited for a pinned H2D copy, as a blocking prefetch (depth 0) does before each
    # block: the copy reads host memory through the CPU's caches while the host waits.
    big_pinned = torch.empty(512 << 20, dtype=torch.uint8, pin_memory=True)
    big_dev = torch.empty_like(big_pinned, device="cuda")
    rows = []
    for after in ("none", "busy", "sync", "sleep", "copy"):
        for ms in ((0,) if after in ("none", "busy") else (32, 128, 512) if after == "copy" else (0.1, 0.5, 2, 10)):
            per, waited = [], []
            for _ in range(samples):
                torch.cuda.synchronize()
                if after == "copy":  # ms: the copy's MiB here
                    t0 = time.perf_counter()
                    big_dev[:ms << 20].copy_(big_pinned[:ms << 20], non_blocking=True)
                    compute.synchronize()
                    waited.append((time.perf_counter() - t0) * 1e3)
                elif after == "sync":
                    torch.cuda._sleep(cycles[ms])
                    compute.synchronize()
                elif after == "sleep":
                    time.sleep(ms * 1e-3)
                elif after == "busy":
                    run([])
                    keep_gpu_busy(big)
                else:
                    run([])
                stamps = []
                run(stamps)
                per.append(stamps)
            calls = [{"call": per[0][i][0], "host_us": statistics.median(p[i][1] for p in per) * 1e6} for i in range(len(per[0]))]
            total = statistics.median(sum(t for _, t in p) for p in per) * 1e6
            row = {"key": "host_after_wait", "after": after, "wait_ms": statistics.median(waited) if waited else ms, "samples": samples,
                   "total_us": total, "calls": calls, "framework": "pytorch " + torch.__version__}
            if after == "copy":
                row["copy_mib"] = ms
            rows.append(row)
            print("host after wait", after, ms, "ms:", round(total, 1), "us for", len(calls), "calls; first five",
                  [round(c["host_us"], 1) for c in calls[:5]], flush=True)
    ops = {"layer_norm": lambda: F.layer_norm(x, (h,)), "linear": lambda: F.linear(x, w0), "add": lambda: x + x, "mul": lambda: x * 0.5,
           "gelu": lambda: F.gelu(x), "sdpa": lambda: F.scaled_dot_product_attention(q0, q0, q0), "slice": lambda: flat[part:2 * part].view(h // 8, h)}
    for name, op in ops.items():
        for gpu in ("idle", "busy"):
            per = []
            for _ in range(9):
                torch.cuda.synchronize()
                if gpu == "busy":
                    keep_gpu_busy(big)
                t0 = time.perf_counter()
                for _ in range(50):
                    op()
                per.append((time.perf_counter() - t0) * 1e6 / 50)
            rows.append({"key": "host_op_loop", "op": name, "gpu": gpu, "host_us": statistics.median(per), "framework": "pytorch " + torch.__version__})
            print("host op loop", name, "gpu", gpu, round(rows[-1]["host_us"], 2), "us", flush=True)
    return rows


def fp8_call_rows(calls=200):
    """Host time of the calls an fp8 linear makes in eager PyTorch beside
    F.linear's (`overhead_framework_fp8_gemm`): torch._scaled_mm (e4m3,
    tensorwise scales, bf16 out), the input's multiply by its scale and its
    cast to e4m3, over [tokens, 3072] at 64, 4,096 and 16,384 tokens; calls
    back to back behind GEMMs that keep the GPU busy, as framework_op_rows.
    Reported, not fitted: the model charges each call as a framework op."""
    big = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    e4m3 = torch.float8_e4m3fn
    one = torch.ones((), device="cuda", dtype=torch.float32)
    w = torch.randn(3072, 3072, device="cuda", dtype=torch.bfloat16)
    wq = w.to(e4m3)
    rows = []
    for tokens in (64, 4096, 16384):
        x = torch.randn(tokens, 3072, device="cuda", dtype=torch.bfloat16)
        xq = x.to(e4m3)
        ops = {"linear": lambda: F.linear(x, w), "scaled_mm": lambda: torch._scaled_mm(xq, wq.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
               "scale": lambda: x * 0.125, "cast": lambda: x.to(e4m3)}
        for name, op in ops.items():
            us = host_us_per_call(op, calls, 20, big)
            rows.append({"key": "overhead_framework_fp8_gemm", "op": name, "tokens": tokens, "hidden": 3072, "host_us": us,
                         "framework": "pytorch " + torch.__version__})
            print("fp8 calls", name, tokens, round(us, 2), "us", flush=True)
    return rows


def main():
    # framework.py OUT.json [NAME]: only the rows of testcase NAME (one of `alone`).
    alone = {"pageable": pageable_rows, "launch_queue": launch_queue_rows, "pageable_buffers": pageable_buffers_rows, "all_to_all_time": collective_time_rows,
             "sync_return": sync_return_rows, "host_calls": host_call_rows, "after_wait": after_wait_rows,
             "fp8_calls": fp8_call_rows, "pageable_processes": pageable_processes_rows, "profiler_cost": profiler_cost_rows}
    if len(sys.argv) < 2 or len(sys.argv) > 3 or (len(sys.argv) == 3 and sys.argv[2] not in alone):
        sys.exit(f"usage: framework.py OUT.json [{' | '.join(alone)}] (nothing after OUT.json: every testcase)")
    out = sys.argv[1]
    if len(sys.argv) == 3:
        rows = alone[sys.argv[2]]()
    else:
        rows = (framework_op_rows() + host_call_rows() + fp8_call_rows() + pageable_rows() + multi_pageable_rows() + collective_rows() + collective_time_rows() + launch_queue_rows()
                + sync_return_rows())
    write_bench(out, environment(torch, env={}), rows)


if __name__ == "__main__":
    main()
