#!/usr/bin/env python3
"""A reference program: what video-DiT stacks (sglang, LightX2V) run on one GPU
or, launched by torchrun, on several with Ulysses sequence parallelism, written
as they write it, in plain PyTorch with random weights.

A stack of DiT blocks (norm, QKV, rope, self-attention through PyTorch's default
scaled_dot_product_attention, out projection, cross-attention to text tokens,
GELU FFN, residuals) whose weights live in host memory and are offloaded the
way those stacks do it:
  layerwise  sglang's LayerwiseOffloadManager: blocks copied ahead on a copy
             stream, `prefetch` blocks at a time (0: a blocking copy per block)
  block      LightX2V: two GPU buffers, the next block copied while this one
             computes, both streams synchronised after every block
  none       every block resident on the GPU
from pinned or pageable host memory. Under torchrun (N processes, one per GPU)
each rank holds tokens/N of the sequence: q, k and v go through an all-to-all
to all tokens of heads/N heads before self-attention and the output comes back
through one more (Ulysses), as NCCL's all-to-all (`nccl`) or as rounds of
grouped send/recv with one partner each (`pairwise`, the circle method); the
cross-attention and FFN stay on the rank's tokens; every rank offloads its own
copy of the weights.

Each configuration runs `warmup` times untimed, then `repeat` times timed by
CUDA events on the compute stream (no profiler; across ranks, each run's
slowest rank); with --profile one more run after them is recorded by
torch.profiler (a Chrome trace per rank, gzipped). For each it writes
NAME.json (schema overlapsim.program/v1): the measured makespans, the SDPA
backend PyTorch ran, its peak memory (`memory`: the caching allocator's peak
allocated and reserved bytes, and the GPU's used memory after the runs), each
timed run's host issue time per rank (`host_issue_s`: the host's own pace
from the start event to the end event, where nothing blocks it), the
environment, and the program's twin as an overlapsim workload (`workload:`),
which `overlapsim reference` simulates and compares.

  dit_offload.py --out DIR [--grid single] [--profile]          every configuration of the grid
  dit_offload.py --out DIR --policy layerwise --prefetch 2 ...    one
  dit_offload.py --out DIR --grid single --twins-only             the twins' files only (no GPU)
  dit_offload.py --out DIR --grid memory --repeat 1               peak memory over model widths (one GPU)
  torchrun --nproc-per-node 4 dit_offload.py --out DIR --grid sp    every Ulysses configuration on 4 GPUs
"""
import argparse
import gzip
import json
import os
import shutil
import statistics
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "src", "testcases"))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder for NAME.json (and NAME.trace.json.gz)")
    p.add_argument("--grid", choices=["single", "fp8", "sp", "memory"],
                   help="every configuration: single (one GPU), fp8 (one GPU, fp8 weights), sp (Ulysses, under torchrun) or memory "
                        "(one GPU: peak memory over model widths)")
    p.add_argument("--grid-tokens", help="sp grid: comma-separated token counts (default 16384,65536)")
    p.add_argument("--grid-a2a", help="sp grid: comma-separated all-to-alls (default nccl,pairwise)")
    p.add_argument("--all-to-all", choices=["nccl", "pairwise"], default="nccl", help="Ulysses all-to-all (under torchrun)")
    p.add_argument("--ranks", type=int, help="--twins-only: the Ulysses degree (default: the launcher's world size, else 1)")
    p.add_argument("--policy", choices=["layerwise", "block", "none"], default="layerwise")
    p.add_argument("--prefetch", type=int, default=2, help="layerwise: blocks copied ahead (0: a blocking copy per block)")
    p.add_argument("--host", choices=["pinned", "pageable"], default="pinned")
    p.add_argument("--weights", choices=["bf16", "fp8"], default="bf16",
                   help="fp8: e4m3 weights with a per-tensor scale, each linear's input scaled and cast to fp8, then torch._scaled_mm")
    p.add_argument("--tokens", type=int, default=8192)
    p.add_argument("--hidden", type=int, default=3072)
    p.add_argument("--heads", type=int, default=24)
    p.add_argument("--ffn", type=int, default=8192)
    p.add_argument("--text", type=int, default=512)
    p.add_argument("--blocks", type=int, default=8)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--profile", action="store_true", help="also write a torch.profiler trace of one run (one per rank)")
    p.add_argument("--profile-only", help="with --profile: comma-separated configuration names to profile (default: all)")
    p.add_argument("--profile-settings", choices=["full", "default"], default="full",
                   help="with --profile: full records shapes and CUDA sync events (what import-trace reads best); "
                        "default records as torch.profiler does by default (neither), as most users record")
    p.add_argument("--twins-only", action="store_true", help="write each configuration's twin workload, run nothing")
    p.add_argument("--only", help="comma-separated configuration names: run only these of the grid")
    p.add_argument("--pin-cores", type=int, metavar="N",
                   help="bind each rank (its Python thread, PyTorch's and NCCL's threads) to N physical cores of its own, "
                        "every hardware thread of them; default: the launcher's affinity")
    return p.parse_args()


def configurations(a, ranks):
    """The configurations to run: the grid's, or the one the options give."""
    base = {k: getattr(a, k) for k in ("tokens", "hidden", "heads", "ffn", "text", "blocks", "steps")}
    if a.weights == "fp8":
        base["weights"] = "fp8"
    base.update(ulysses=ranks, all_to_all=a.all_to_all if ranks > 1 else "none", nccl_p2p_disable=os.environ.get("NCCL_P2P_DISABLE") == "1")
    if a.grid == "sp":
        out = []
        # 16,384 tokens: copy-bound (a block computes ~3 ms on 4 ranks against
        # a ~5 ms copy); 65,536: compute-bound.
        for tokens in [int(t) for t in (a.grid_tokens or "16384,65536").split(",")]:
            for a2a in (a.grid_a2a or "nccl,pairwise").split(","):
                for policy, pf, host in (("layerwise", 0, "pinned"), ("layerwise", 1, "pinned"), ("layerwise", 2, "pinned"),
                                         ("layerwise", 2, "pageable"), ("block", 0, "pinned"), ("none", 0, "pinned")):
                    out.append(dict(base, tokens=tokens, all_to_all=a2a, policy=policy, prefetch=pf, host=host))
        return out
    if a.grid == "memory":
        # Peak memory over model widths and sequence lengths (one GPU): every
        # weight policy, the activations from 8,192 to 32,768 tokens.
        out = []
        for tokens, hidden, heads, ffn in ((8192, 3072, 24, 8192), (32768, 3072, 24, 8192), (16384, 2048, 16, 8192), (16384, 4096, 32, 14336)):
            for policy, pf in (("none", 0), ("layerwise", 2), ("block", 0)):
                out.append(dict(base, tokens=tokens, hidden=hidden, heads=heads, ffn=ffn, policy=policy, prefetch=pf, host="pinned"))
        return out
    if a.grid == "fp8":
        # The single grid's pinned and resident configurations with fp8 weights:
        # half the bytes to copy, GEMMs at the fp8 rate.
        out = []
        for tokens in (4096, 16384):
            for policy, pf in (("layerwise", 0), ("layerwise", 1), ("layerwise", 2), ("block", 0), ("none", 0)):
                out.append(dict(base, weights="fp8", tokens=tokens, policy=policy, prefetch=pf, host="pinned"))
        return out
    if a.grid != "single":
        return [dict(base, policy=a.policy, prefetch=a.prefetch, host=a.host)]
    out = []
    # Copy-bound (4,096 tokens: a block computes ~2 ms, copies ~4.6 ms) and
    # compute-bound (16,384: ~12 ms against the same copy).
    for tokens in (4096, 16384):
        for pf in (0, 1, 2, 3):
            out.append(dict(base, tokens=tokens, policy="layerwise", prefetch=pf, host="pinned"))
        for pf in (0, 2):
            out.append(dict(base, tokens=tokens, policy="layerwise", prefetch=pf, host="pageable"))
        out.append(dict(base, tokens=tokens, policy="block", prefetch=0, host="pinned"))
        out.append(dict(base, tokens=tokens, policy="none", prefetch=0, host="pinned"))
    return out


def shape_of(c):
    """A model width other than the grids' default, and fp8 weights, as a name suffix."""
    width = "" if (c["hidden"], c["ffn"]) == (3072, 8192) else f"-h{c['hidden']}-f{c['ffn']}"
    return width + ("-fp8" if c.get("weights") == "fp8" else "")


def group_of(c):
    if c.get("ulysses", 1) == 1:
        return f"dit-{c['tokens']}{shape_of(c)}"
    return f"dit-sp{c['ulysses']}-{c['tokens']}" + ("-p2poff" if c["nccl_p2p_disable"] else "")


def name_of(c):
    policy = f"layerwise-pf{c['prefetch']}" if c["policy"] == "layerwise" else c["policy"]
    host = "" if c["policy"] == "none" else "-" + c["host"]
    if c.get("ulysses", 1) == 1:
        return f"dit-{c['tokens']}{shape_of(c)}-{policy}{host}"
    p2p = "-p2poff" if c["nccl_p2p_disable"] else ""
    return f"dit-sp{c['ulysses']}-{c['tokens']}-{c['all_to_all']}-{policy}{host}{p2p}"


def twin(c, backend):
    """The program as an overlapsim workload (docs/formats/workload.md): the
    same blocks, shapes, steps, offload policy and host memory."""
    w = {"name": name_of(c),
         "model": {"preset": "custom", "blocks": c["blocks"], "hidden": c["hidden"], "ffn": c["ffn"], "heads": c["heads"],
                   "head_dim": c["hidden"] // c["heads"], "text_tokens": c["text"]},
         "tokens": c["tokens"], "steps": c["steps"], "cfg": "none", "parallelism": {"ulysses": c.get("ulysses", 1)}, "runtime": {"framework": "pytorch"}}
    if c.get("ulysses", 1) > 1:
        w["parallelism"]["all_to_all"] = c["all_to_all"]
        w["runtime"]["nccl_p2p_disable"] = c["nccl_p2p_disable"]
    if c["policy"] == "layerwise":
        w["offload"] = {"policy": "layerwise", "prefetch_size": c["prefetch"], "host_memory": c["host"]}
    elif c["policy"] == "block":
        w["offload"] = {"policy": "block", "host_memory": c["host"]}
    if backend:
        w["compute"] = {"attention_backend": backend}
    if c.get("weights") == "fp8":
        w["model"]["dtype"] = "fp8"
        w.setdefault("compute", {})["fp8_input_quant"] = "scale_then_cast"
    return w


class Dit:
    """The blocks' weights (host copies) and the forward pass."""

    ACT_SCALE = 8.0  # fp8 weights: the static scale of every linear's input

    def __init__(self, torch, c, host, dist=None):
        self.t, self.c, self.dist = torch, c, dist
        self.U = c.get("ulysses", 1)
        self.rank = dist.get_rank() if dist else 0
        from framework import circle_partners  # the pairing framework.py's microbenchmark times
        self.partners = circle_partners(self.U, self.rank) if self.U > 1 else []
        h, f = c["hidden"], c["ffn"]
        # One flat tensor per block: qkv, out, cross q, cross kv, cross out, ffn up, ffn down.
        self.parts = [("qkv", 3 * h, h), ("out", h, h), ("cq", h, h), ("ckv", 2 * h, h), ("cout", h, h), ("up", f, h), ("down", h, f)]
        self.numel = sum(o * i for _, o, i in self.parts)
        # fp8: e4m3 weights (randn, scale 0.02: the bf16 weights' size), activations divided by
        # ACT_SCALE into e4m3's range.
        self.fp8 = c.get("weights") == "fp8"
        self.dtype = torch.float8_e4m3fn if self.fp8 else torch.bfloat16
        if self.fp8:
            self.w_scale = torch.tensor(0.02, device="cuda", dtype=torch.float32)
            self.act_scale = torch.tensor(self.ACT_SCALE, device="cuda", dtype=torch.float32)
        self.host = []
        for b in range(c["blocks"]):
            r = torch.randn(self.numel, device="cuda", dtype=torch.bfloat16)
            w = (r.to(self.dtype) if self.fp8 else r * 0.02).cpu()
            self.host.append(w.pin_memory() if host == "pinned" else w)
        torch.cuda.synchronize()

    def views(self, flat):
        out, at = {}, 0
        for name, o, i in self.parts:
            out[name] = flat[at:at + o * i].view(o, i)
            at += o * i
        return out

    def linear(self, x, w):
        """F.linear, or with fp8 weights as fp8 stacks with a static activation scale run it: the input
        scaled and cast (two kernels), then torch._scaled_mm to bf16."""
        if not self.fp8:
            return self.t.nn.functional.linear(x, w)
        xq = (x * (1.0 / self.ACT_SCALE)).to(self.dtype)
        return self.t._scaled_mm(xq, w.t(), scale_a=self.act_scale, scale_b=self.w_scale, out_dtype=self.t.bfloat16)

    def all_to_all(self, recv, send):
        """recv[j] = rank j's send[me], for [U, ...] tensors."""
        if self.c["all_to_all"] == "nccl":
            self.dist.all_to_all_single(recv, send)
            return
        recv[self.rank].copy_(send[self.rank])
        for p in self.partners:
            if p >= 0:
                ops = [self.dist.P2POp(self.dist.isend, send[p], p), self.dist.P2POp(self.dist.irecv, recv[p], p)]
                for req in self.dist.batch_isend_irecv(ops):
                    req.wait()

    def to_heads(self, t):
        """Ulysses: [S/U, h] (this rank's tokens) -> [S, h/U] (all tokens of its heads)."""
        Sl, h, U = t.shape[0], t.shape[1], self.U
        send = t.view(Sl, U, h // U).transpose(0, 1).contiguous()
        recv = self.t.empty_like(send)
        self.all_to_all(recv, send)
        return recv.view(U * Sl, h // U)

    def to_tokens(self, t):
        """Ulysses: [S, h/U] -> [S/U, h]."""
        U = self.U
        send = t.contiguous().view(U, t.shape[0] // U, t.shape[1])
        recv = self.t.empty_like(send)
        self.all_to_all(recv, send)
        return recv.transpose(0, 1).reshape(t.shape[0] // U, t.shape[1] * U)

    def block(self, x, text, w):
        F, c = self.t.nn.functional, self.c
        S, h, H = x.shape[0], c["hidden"], c["heads"]  # S: this rank's tokens
        d = h // H
        y = F.layer_norm(x, (h,))
        q, k, v = self.linear(y, w["qkv"]).split(h, dim=-1)
        q, k = q * 0.5, k * 0.5  # rope's elementwise traffic
        if self.U == 1:
            a = F.scaled_dot_product_attention(q.view(1, S, H, d).transpose(1, 2), k.view(1, S, H, d).transpose(1, 2), v.view(1, S, H, d).transpose(1, 2))
            a = a.transpose(1, 2).reshape(S, h)
        else:
            q, k, v = self.to_heads(q), self.to_heads(k), self.to_heads(v)
            Sa, Ha = q.shape[0], H // self.U
            a = F.scaled_dot_product_attention(q.view(1, Sa, Ha, d).transpose(1, 2), k.view(1, Sa, Ha, d).transpose(1, 2),
                                               v.view(1, Sa, Ha, d).transpose(1, 2))
            a = self.to_tokens(a.transpose(1, 2).reshape(Sa, h // self.U))
        x = x + self.linear(a, w["out"])
        y = F.layer_norm(x, (h,))
        cq = self.linear(y, w["cq"])
        ck, cv = self.linear(text, w["ckv"]).split(h, dim=-1)
        T = text.shape[0]
        ca = F.scaled_dot_product_attention(cq.view(1, S, H, d).transpose(1, 2), ck.view(1, T, H, d).transpose(1, 2), cv.view(1, T, H, d).transpose(1, 2))
        x = x + self.linear(ca.transpose(1, 2).reshape(S, h), w["cout"])
        y = F.layer_norm(x, (h,))
        return x + self.linear(F.gelu(self.linear(y, w["up"]), approximate="tanh"), w["down"])


def run_once(torch, dit, c, x0, text, step=None):
    """One run of the program; returns its makespan (s) from CUDA events on the
    compute stream, and each rank's host issue time (s): from the start event's
    record to the end event's, the host's own pace where nothing blocks it.
    `step`: a torch.profiler.record_function range around the timed region (a profiled run's step)."""
    compute = torch.cuda.current_stream()
    copy = dit.copy_stream
    L, total = c["blocks"], c["blocks"] * c["steps"]
    torch.cuda.synchronize()
    if dit.dist:
        dit.dist.barrier()  # every rank starts together (the simulation starts them at 0)
        torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if step is not None:
        step.__enter__()
    start.record(compute)
    issue_from = time.perf_counter()
    x = x0
    if c["policy"] == "none":
        for g in range(total):
            x = dit.block(x, text, dit.views(dit.resident[g % L]))
    elif c["policy"] == "layerwise" and c["prefetch"] == 0:  # the blocking .to() per block
        for g in range(total):
            flat = dit.host[g % L].to("cuda", non_blocking=False)
            x = dit.block(x, text, dit.views(flat))
            del flat
    elif c["policy"] == "layerwise":
        P, on_gpu, fetched = c["prefetch"], {}, set()

        def prefetch(g):
            if g in fetched:  # on the GPU or on its way already (the next step's first blocks)
                return
            fetched.add(g)
            with torch.cuda.stream(copy):
                flat = torch.empty(dit.numel, device="cuda", dtype=dit.dtype)
                flat.copy_(dit.host[g % L], non_blocking=True)
                ev = torch.cuda.Event()
                ev.record(copy)
            on_gpu[g] = (flat, ev)

        for j in range(min(P, total)):
            prefetch(j)
        for g in range(total):
            if g % L % P == 0:
                copy.wait_stream(compute)  # copy_stream.wait_stream(compute), as sglang does
                for j in range(g + P, min(g + 2 * P, total)):
                    prefetch(j)
            flat, ev = on_gpu.pop(g)
            compute.wait_event(ev)
            flat.record_stream(compute)
            x = dit.block(x, text, dit.views(flat))
            del flat
    else:  # block: two buffers, the next block's copy beside this one's compute
        bufs = dit.buffers
        with torch.cuda.stream(copy):
            bufs[0].copy_(dit.host[0], non_blocking=True)
        copy.synchronize()
        for g in range(total):
            if g + 1 < total:
                with torch.cuda.stream(copy):
                    bufs[(g + 1) % 2].copy_(dit.host[(g + 1) % L], non_blocking=True)
            x = dit.block(x, text, dit.views(bufs[g % 2]))
            compute.synchronize()
            copy.synchronize()
    end.record(compute)
    issued = time.perf_counter() - issue_from
    if step is not None:
        step.__exit__(None, None, None)
    torch.cuda.synchronize()
    assert torch.isfinite(x).all()
    seconds = start.elapsed_time(end) * 1e-3
    if not dit.dist:
        return seconds, [issued]
    # The run's makespan: its slowest rank's; every rank's issue time.
    t = torch.tensor([seconds], device="cuda", dtype=torch.float64)
    dit.dist.all_reduce(t, op=dit.dist.ReduceOp.MAX)
    issue = [torch.zeros(1, device="cuda", dtype=torch.float64) for _ in range(dit.dist.get_world_size())]
    dit.dist.all_gather(issue, torch.tensor([issued], device="cuda", dtype=torch.float64))
    return t.item(), [i.item() for i in issue]


def profile_run(torch, dit, c, x0, text, out_dir, name, rank, settings="full"):
    """One run under torch.profiler, its trace written gzipped as NAME[.rankN].trace.json.gz; returns its makespan (s).
    settings: full (shapes and CUDA sync events) or default (torch.profiler's defaults: neither)."""
    from torch.profiler import ProfilerActivity, profile
    # full: shapes (GEMM m, n, k) and the CUDA synchronisation events (which
    # stream waits on which event record), what `overlapsim import-trace` reads best.
    extra = {}
    if settings == "full":
        extra["record_shapes"] = True
        try:
            extra["experimental_config"] = torch._C._profiler._ExperimentalConfig(enable_cuda_sync_events=True)
        except (AttributeError, TypeError):
            pass
    # The timed region is the range "step 0": `overlapsim import-trace --steps '^step \d+$'` times it.
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], **extra) as prof:
        seconds, _ = run_once(torch, dit, c, x0, text, step=torch.profiler.record_function("step 0"))
    write_trace(prof, os.path.join(out_dir, name + (f".rank{rank}" if dit.U > 1 else "") + ".trace.json"))
    return seconds


def write_trace(prof, raw):
    """A profiler's Chrome trace, gzipped as RAW.gz."""
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as src, gzip.open(raw + ".gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.remove(raw)


def memory_record(torch, allocated_before):
    """The runs' peak memory (program results' `memory`): the allocator's peak allocated and reserved bytes since its
    statistics were reset, and the GPU's memory in use now."""
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    return {"peak_allocated_bytes": torch.cuda.max_memory_allocated(), "peak_reserved_bytes": torch.cuda.max_memory_reserved(),
            "allocated_before_bytes": allocated_before, "reserved_bytes": torch.cuda.memory_reserved(), "device_used_bytes": total - free,
            "device_total_bytes": total}


def measure(torch, c, dit, args, out_dir, backend, environment):
    h = c["hidden"]
    x0 = torch.randn(c["tokens"] // dit.U, h, device="cuda", dtype=torch.bfloat16)
    text = torch.randn(c["text"], h, device="cuda", dtype=torch.bfloat16)
    dit.copy_stream = torch.cuda.Stream()
    dit.resident = [w.to("cuda") for w in dit.host] if c["policy"] == "none" else []
    dit.buffers = [torch.empty(dit.numel, device="cuda", dtype=dit.dtype) for _ in range(2)] if c["policy"] == "block" else []
    # Peak memory from here: the inputs, the resident weights or buffers and
    # everything the runs allocate (torch.cuda's allocator statistics).
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    allocated_before = torch.cuda.memory_allocated()
    for _ in range(args.warmup):
        run_once(torch, dit, c, x0, text)
    name = name_of(c)
    rank = dit.rank
    profiled = args.profile and (not args.profile_only or name in args.profile_only.split(","))
    # The timed runs back to back, the profiled one after them: the profiler's
    # start, teardown and trace export leave the GPU idle long enough to cool,
    # so a run after it would start rested whatever came before.
    makespans, issue = [], []
    for _ in range(args.repeat):
        seconds, issued = run_once(torch, dit, c, x0, text)
        makespans.append(seconds)
        issue.append(issued)
    profiled_s = profile_run(torch, dit, c, x0, text, out_dir, name, rank, args.profile_settings) if profiled else None
    memory = memory_record(torch, allocated_before)
    # The median run, and how many ran before it back to back (the GPU's
    # sustained-load state at its start: `overlapsim run --runs-before`).
    med = statistics.median(makespans)
    order = sorted(range(len(makespans)), key=lambda i: makespans[i])
    runs_before = args.warmup + order[len(order) // 2]
    doc = {"schema": "overlapsim.program/v1", "name": name, "group": group_of(c), "program": "validate/programs/dit_offload.py", "config": c,
           "warmup": args.warmup, "makespans_s": makespans, "median_s": med, "runs_before": runs_before, "sdpa_backend": backend,
           "workload": twin(c, backend), "memory": memory, "host_issue_s": issue, "environment": environment}
    if profiled_s is not None:  # the profiled run's own makespan (CUDA events, under the profiler)
        doc["profiled_s"] = profiled_s
        doc["profile_settings"] = args.profile_settings
    if rank:
        dit.resident, dit.buffers = [], []
        return
    write_json(os.path.join(out_dir, name + ".json"), doc)
    print(f"{name}: {med * 1e3:.2f} ms (runs {', '.join(f'{m * 1e3:.2f}' for m in makespans)}; host issue {max(issue[order[len(order) // 2]]) * 1e3:.2f} ms)", flush=True)
    dit.resident, dit.buffers = [], []


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def physical_cores():
    """The CPUs this process may run on, grouped by physical core (SMT siblings together), in core order."""
    cores = {}
    for cpu in sorted(os.sched_getaffinity(0)):
        top = f"/sys/devices/system/cpu/cpu{cpu}/topology/"
        try:
            key = tuple(int(open(top + f).read()) for f in ("physical_package_id", "core_id"))
        except OSError:
            key = (0, cpu)
        cores.setdefault(key, []).append(cpu)
    return [cores[k] for k in sorted(cores)]


def pin_rank(n):
    """Bind this rank to n physical cores of its own (before torch starts any thread, so all inherit it)."""
    local = int(os.environ.get("LOCAL_RANK", "0"))
    cores = physical_cores()
    mine = cores[local * n:(local + 1) * n]
    if len(mine) < n:
        sys.exit(f"dit_offload.py: --pin-cores {n}: rank {local} needs cores {local * n}-{(local + 1) * n - 1}, "
                 f"this process may run on {len(cores)} physical cores; give fewer")
    cpus = sorted(c for core in mine for c in core)
    os.sched_setaffinity(0, cpus)
    return cpus


def main():
    args = parse_args()
    affinity = pin_rank(args.pin_cores) if args.pin_cores else None
    os.makedirs(args.out, exist_ok=True)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    configs = configurations(args, args.ranks if args.twins_only and args.ranks else world)
    if args.only:
        configs = [c for c in configs if name_of(c) in args.only.split(",")]
    if args.twins_only:
        for c in configs:
            write_json(os.path.join(args.out, name_of(c) + ".workload.json"), twin(c, None))
        return
    if args.grid == "sp" and world < 2:
        sys.exit("dit_offload.py: --grid sp runs under torchrun on 2 or more GPUs (torchrun --nproc-per-node N ...)")
    import torch
    from attention import backend_run
    dist = None
    if world > 1:
        import torch.distributed as dist
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        dist.init_process_group("nccl", device_id=torch.device("cuda", local))
        if args.heads % world or args.tokens % world:
            sys.exit(f"dit_offload.py: {world} ranks must divide the heads and the tokens")
    quiet = dist is not None and dist.get_rank() > 0
    # The backend PyTorch's SDPA picks for the blocks' own calls: [1, S, H, d]
    # projections viewed as [1, H, S, d], self- and cross-attention.
    d = args.hidden // args.heads
    q = torch.randn(1, 4096, args.heads, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    kv = torch.randn(1, args.text, args.heads, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    backend, kernel = backend_run(q, q, q)
    cross_backend, _ = backend_run(q, kv, kv)
    del q, kv  # not in the configurations' memory
    if cross_backend != backend and not quiet:
        print(f"note: cross-attention runs {cross_backend}, self-attention {backend}; the twin takes {backend}", flush=True)
    environment = {"torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": str(torch.backends.cudnn.version()),
                   "gpu": torch.cuda.get_device_name(0), "sdpa_kernel": kernel, "sdpa_cross_backend": cross_backend, "hostname": os.uname().nodename}
    if affinity:
        environment["cpu_affinity"] = affinity
    if world > 1:
        environment.update(ranks=world, nccl=str(torch.cuda.nccl.version()),
                           nccl_env={k: v for k, v in os.environ.items() if k.startswith("NCCL_")})
    if not quiet:
        print(f"PyTorch {torch.__version__} on {environment['gpu']} x{world}: SDPA runs {backend}", flush=True)
    dits = {}
    for c in configs:
        key = (c["hidden"], c["ffn"], c["blocks"], c["host"], c.get("weights", "bf16"))
        if key not in dits:  # the host weights, made once per model and host memory
            dits.clear()
            torch.cuda.empty_cache()
            dits[key] = Dit(torch, c, c["host"], dist)
        dits[key].c = c
        t0 = time.time()
        measure(torch, c, dits[key], args, args.out, backend, environment)
        torch.cuda.empty_cache()
        if not quiet:
            print(f"  ({time.time() - t0:.1f} s)", flush=True)
    if dist:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
