#!/usr/bin/env python3
"""The VRAM a PyTorch job holds beyond its own tensors, read through PyTorch
itself on GPU 0: the memory the process holds outside the caching allocator
once cuBLAS and SDPA have run (`vram_context`: the GPU's used memory less
what the allocator has reserved), cuBLAS's workspace for a stream that runs
its first GEMM (`vram_gemm_workspace`: what the allocator hands out beyond
the GEMM's output), and the allocator's reserve over the activations of a
forward pass (`vram_allocator_reserve`: a stack of transformer-like blocks
whose intermediates live until each block returns, at three shapes none of
which the reference programs use; the peak reserved less the peak
allocated, as a fraction of the activations); on several GPUs NCCL's own
memory per rank (`vram_nccl`: one process per GPU, 2 ranks and all, peer to
peer and with NCCL_P2P_DISABLE=1, after the first all_to_all_single, after
a pairwise exchange, after a second communicator's first all-to-all: the
ranks in pairs, and after each of three fresh communicators of every rank
that runs one kind of call: a ring exchange, an all-reduce, an all-gather). Writes overlapsim.bench/v1
JSON; `overlapsim calibrate` fits the vram family from it. Usage: vram.py OUT.json"""
import os
import sys

import torch
import torch.nn.functional as F

from bench_json import environment, write_bench


def mib(b):
    return round(b / 2**20, 1)


def context_row():
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    (a @ a).sum().item()
    q = torch.randn(1, 8, 1024, 128, device="cuda", dtype=torch.bfloat16)
    F.scaled_dot_product_attention(q, q, q).sum().item()
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    used = total - free
    reserved = torch.cuda.memory_reserved()
    print("context", mib(used - reserved), "MiB (used", mib(used), "reserved", mib(reserved), ")", flush=True)
    return {"key": "vram_context", "gpus": [0], "bytes": used - reserved, "used_bytes": used, "reserved_bytes": reserved}


def workspace_row():
    a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    before = torch.cuda.memory_allocated()
    with torch.cuda.stream(s):
        c = a @ a
    s.synchronize()
    ws = torch.cuda.memory_allocated() - before - c.numel() * c.element_size()
    print("gemm workspace", mib(ws), "MiB", flush=True)
    return {"key": "vram_gemm_workspace", "gpus": [0], "bytes": ws}


def block(x, w, heads):
    """A transformer-like block in eager PyTorch; its intermediates live until it returns."""
    S, h = x.shape
    d = h // heads
    y = F.layer_norm(x, (h,))
    q, k, v = F.linear(y, w["qkv"]).split(h, dim=-1)
    q, k = q * 0.5, k * 0.5
    a = F.scaled_dot_product_attention(q.view(1, S, heads, d).transpose(1, 2), k.view(1, S, heads, d).transpose(1, 2),
                                       v.view(1, S, heads, d).transpose(1, 2))
    a = a.transpose(1, 2).reshape(S, h)
    x = x + F.linear(a, w["out"])
    y = F.layer_norm(x, (h,))
    return x + F.linear(F.gelu(F.linear(y, w["up"]), approximate="tanh"), w["down"])


def reserve_rows():
    rows = []
    for tokens, hidden, heads, ffn in ((6144, 2560, 20, 10240), (12288, 2048, 16, 5632), (20480, 1536, 12, 6144)):
        torch.cuda.empty_cache()
        mk = lambda o, i: torch.randn(o, i, device="cuda", dtype=torch.bfloat16) * 0.02
        w = {"qkv": mk(3 * hidden, hidden), "out": mk(hidden, hidden), "up": mk(ffn, hidden), "down": mk(hidden, ffn)}
        x0 = torch.randn(tokens, hidden, device="cuda", dtype=torch.bfloat16)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        for _ in range(3):
            x = x0
            for _ in range(4):
                x = block(x, w, heads)
        torch.cuda.synchronize()
        allocated, reserved = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
        activations = allocated - base
        fraction = (reserved - allocated) / activations
        print("reserve", tokens, hidden, ffn, "activations", mib(activations), "MiB reserve", mib(reserved - allocated), "MiB", round(fraction, 3), flush=True)
        rows.append({"key": "vram_allocator_reserve", "gpus": [0], "tokens": tokens, "hidden": hidden, "ffn": ffn, "activations_bytes": activations,
                     "peak_allocated_bytes": allocated, "peak_reserved_bytes": reserved, "fraction": fraction})
        del w, x0, x
    return rows


# The calls a fresh communicator of every rank runs, one kind each, after the second communicator.
KINDS = ("send_recv", "all_reduce", "all_gather")


def nccl_worker(rank, world, p2p_off, port, results):
    """One rank: the device memory NCCL takes once the process has run its
    first all-to-all, then a pairwise exchange, a second communicator's
    all-to-all and each fresh communicator's one kind of call (the GPU's used
    memory less what PyTorch's allocator reserved meanwhile)."""
    from framework import all_to_all_calls, circle_partners, join_group  # the calls and pairing the programs use
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    if p2p_off:
        os.environ["NCCL_P2P_DISABLE"] = "1"
    torch.cuda.set_device(rank)
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    (a @ a).sum().item()
    torch.cuda.synchronize()

    def outside():
        torch.cuda.synchronize()
        free, total = torch.cuda.mem_get_info()
        return total - free - torch.cuda.memory_reserved()

    before = outside()
    dist = join_group(rank, world, port)
    send = torch.randn(world, (16 << 20) // (2 * world), device="cuda", dtype=torch.bfloat16)
    recv = torch.empty_like(send)
    calls = all_to_all_calls(dist, rank, [p for p in circle_partners(world, rank) if p >= 0], send, recv)
    calls["all_to_all_single"]()
    after_single = outside()
    calls["all_to_all_pairwise"]()
    after_pairwise = outside()
    # A second communicator: the ranks in pairs (0-1, 2-3, ...; with 2 ranks
    # the same two again), its first all_to_all_single.
    pairs = [dist.new_group([r, r + 1]) for r in range(0, world - 1, 2)]
    mine = pairs[rank // 2] if rank // 2 < len(pairs) else None
    if mine is not None:
        send2 = torch.randn(2, (16 << 20) // 4, device="cuda", dtype=torch.bfloat16)
        dist.all_to_all_single(torch.empty_like(send2), send2, group=mine)
    after_second = outside()
    # Fresh communicators of every rank, each running one kind of call only
    # (what NCCL connects for each): ring attention's exchange (send to the
    # next rank, receive from the previous, batch_isend_irecv), an
    # all-reduce, an all-gather.
    buf = torch.randn((16 << 20) // 2, device="cuda", dtype=torch.bfloat16)
    after_kind = []
    for kind in KINDS:
        g = dist.new_group(list(range(world)))
        if kind == "send_recv":
            got = torch.empty_like(buf)
            ops = [dist.P2POp(dist.isend, buf, (rank + 1) % world, group=g), dist.P2POp(dist.irecv, got, (rank - 1) % world, group=g)]
            for req in dist.batch_isend_irecv(ops):
                req.wait()
        elif kind == "all_reduce":
            dist.all_reduce(buf, group=g)
        else:
            dist.all_gather_into_tensor(torch.empty(world * buf.numel(), device="cuda", dtype=buf.dtype), buf, group=g)
        after_kind.append(outside() - before)
    dist.barrier()
    dist.destroy_process_group()
    results.put((rank, after_single - before, after_pairwise - before, after_second - before, *after_kind))


def nccl_rows():
    """NCCL's own device memory per rank (`vram_nccl`), 2 ranks and every
    GPU, peer-to-peer and through host memory (NCCL_P2P_DISABLE=1), after
    the first all_to_all_single, after a pairwise exchange, after a second
    communicator's first all_to_all_single (the ranks in pairs), and after
    each fresh communicator of every rank that runs one kind of call (KINDS):
    the median over ranks."""
    from framework import run_ranks
    ngpus = torch.cuda.device_count()
    if ngpus < 2:
        return []
    rows = []
    for world in sorted({2, ngpus}):
        for p2p_off in (False, True):
            got = sorted(run_ranks(nccl_worker, world, (world, p2p_off, 29700 + 2 * world + p2p_off), world, 180))
            transport = "host" if p2p_off else "p2p"
            for i, after in enumerate(("all_to_all_single", "pairwise", "second_communicator", *KINDS), start=1):
                per_rank = [g[i] for g in got]
                b = sorted(per_rank)[len(per_rank) // 2]
                print("nccl", world, "ranks", transport, "after", after, mib(b), "MiB", [mib(x) for x in per_rank], flush=True)
                rows.append({"key": "vram_nccl", "ranks": world, "transport": transport, "after": after, "bytes": b, "rank_bytes": per_rank})
    return rows


def main():
    out = sys.argv[1]
    rows = [context_row(), workspace_row()] + reserve_rows() + nccl_rows()
    env = environment(torch, env={k: v for k, v in os.environ.items() if k.startswith("PYTORCH_CUDA_ALLOC") or k == "CUBLAS_WORKSPACE_CONFIG"})
    write_bench(out, env, rows)


if __name__ == "__main__":
    main()
