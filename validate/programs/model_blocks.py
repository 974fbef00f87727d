#!/usr/bin/env python3
"""Reference programs of the block presets other than Wan, on one GPU with the
weights resident: a few blocks of each model written as its reference code
writes them in eager PyTorch, with random weights:
  flux.1-dev  Black Forest Labs' flux/modules/layers.py: double-stream blocks
              (image and text streams, adaLN modulation, joint attention with
              q/k RMS norms and rope, GELU MLPs) and single-stream blocks (one
              fused linear in: qkv and the MLP; one out over their concatenation)
  llama3-8b   Hugging Face's LlamaDecoderLayer in prefill: RMS norms, q/k/v
              projections with grouped-query heads repeated for SDPA, rope,
              causal attention, the out projection, a SwiGLU MLP
Each configuration runs `warmup` times untimed, then `repeat` times timed by
CUDA events, with each timed run's host issue time (`host_issue_s`, as
dit_offload.py); its peak memory comes from PyTorch's allocator statistics. For
each it writes NAME.json (schema overlapsim.program/v1) with the twin as an
overlapsim workload (the preset with its block counts and tokens, and none
of its models outside the blocks: the program has no text encoder, VAE or
embeddings), which `overlapsim reference` simulates.

  model_blocks.py --out DIR [--profile]     every configuration (and a trace of one run each)
  model_blocks.py --out DIR --twins-only    the twins' files only (no GPU)"""
import argparse
import os
import statistics
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "src", "testcases"))
sys.path.insert(0, here)

# (name, model, tokens, blocks): Flux at 1024x1024 (4,096 image tokens) and 2,048x1,024; Llama-3-8B prefill.
CONFIGS = [("flux-4096", "flux.1-dev", 4096, {"double_blocks": 2, "single_blocks": 4}),
           ("flux-8192", "flux.1-dev", 8192, {"double_blocks": 2, "single_blocks": 4}),
           ("llama3-8b-4096", "llama3-8b", 4096, {"layers": 4}),
           ("llama3-8b-16384", "llama3-8b", 16384, {"layers": 4})]
FLUX = dict(hidden=3072, ffn=12288, heads=24, text=512)
LLAMA = dict(hidden=4096, ffn=14336, heads=32, kv_heads=8)


def twin(name, model, tokens, dims, steps):
    return {"name": name, "model": {"preset": model, "dims": dims, "outside": []}, "tokens": tokens, "steps": steps, "cfg": "none",
            "memory": {"outside": "none"}, "runtime": {"framework": "pytorch"}}


class Flux:
    def __init__(self, torch, dims):
        self.t, self.F = torch, torch.nn.functional
        h, f = FLUX["hidden"], FLUX["ffn"]
        mk = lambda o, i: torch.randn(o, i, device="cuda", dtype=torch.bfloat16) * 0.02
        stream = lambda: {"mod": mk(6 * h, h), "qkv": mk(3 * h, h), "proj": mk(h, h), "up": mk(f, h), "down": mk(h, f)}
        self.double = [{"img": stream(), "txt": stream()} for _ in range(dims["double_blocks"])]
        self.single = [{"mod": mk(3 * h, h), "linear1": mk(3 * h + f, h), "linear2": mk(h, h + f)} for _ in range(dims["single_blocks"])]

    def attention(self, q, k, v):
        F, H = self.F, FLUX["heads"]
        S, h = q.shape
        d = h // H
        q, k, v = (x.view(S, H, d) for x in (q, k, v))
        q, k = F.rms_norm(q, (d,)), F.rms_norm(k, (d,))  # QKNorm
        q, k = q * 0.5 + q.roll(1, -1) * 0.5, k * 0.5 + k.roll(1, -1) * 0.5  # rope's elementwise traffic
        a = F.scaled_dot_product_attention(q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None])
        return a[0].transpose(0, 1).reshape(S, h)

    def forward(self, img, txt, vec):
        F, h = self.F, FLUX["hidden"]
        for b in self.double:
            mi = F.linear(F.silu(vec), b["img"]["mod"]).chunk(6, -1)
            mt = F.linear(F.silu(vec), b["txt"]["mod"]).chunk(6, -1)
            ni = F.layer_norm(img, (h,)) * (1 + mi[1]) + mi[0]
            nt = F.layer_norm(txt, (h,)) * (1 + mt[1]) + mt[0]
            qi, ki, vi = F.linear(ni, b["img"]["qkv"]).split(h, -1)
            qt, kt, vt = F.linear(nt, b["txt"]["qkv"]).split(h, -1)
            a = self.attention(self.t.cat([qt, qi]), self.t.cat([kt, ki]), self.t.cat([vt, vi]))
            at, ai = a[: txt.shape[0]], a[txt.shape[0]:]
            img = img + mi[2] * F.linear(ai, b["img"]["proj"])
            img = img + mi[5] * F.linear(F.gelu(F.linear(F.layer_norm(img, (h,)) * (1 + mi[4]) + mi[3], b["img"]["up"]), approximate="tanh"), b["img"]["down"])
            txt = txt + mt[2] * F.linear(at, b["txt"]["proj"])
            txt = txt + mt[5] * F.linear(F.gelu(F.linear(F.layer_norm(txt, (h,)) * (1 + mt[4]) + mt[3], b["txt"]["up"]), approximate="tanh"), b["txt"]["down"])
        x = self.t.cat([txt, img])
        for b in self.single:
            m = F.linear(F.silu(vec), b["mod"]).chunk(3, -1)
            n = F.layer_norm(x, (h,)) * (1 + m[1]) + m[0]
            qkv, mlp = F.linear(n, b["linear1"]).split([3 * h, FLUX["ffn"]], -1)
            q, k, v = qkv.split(h, -1)
            a = self.attention(q, k, v)
            x = x + m[2] * F.linear(self.t.cat([a, F.gelu(mlp, approximate="tanh")], -1), b["linear2"])
        return x

    def inputs(self, tokens):
        t, h = self.t, FLUX["hidden"]
        mk = lambda *s: t.randn(*s, device="cuda", dtype=t.bfloat16)
        return (mk(tokens, h), mk(FLUX["text"], h), mk(1, h))


class Llama:
    def __init__(self, torch, dims):
        self.t, self.F = torch, torch.nn.functional
        h, f, kv = LLAMA["hidden"], LLAMA["ffn"], LLAMA["kv_heads"] * (LLAMA["hidden"] // LLAMA["heads"])
        mk = lambda o, i: torch.randn(o, i, device="cuda", dtype=torch.bfloat16) * 0.02
        self.layers = [{"q": mk(h, h), "k": mk(kv, h), "v": mk(kv, h), "o": mk(h, h), "gate": mk(f, h), "up": mk(f, h), "down": mk(h, f)}
                       for _ in range(dims["layers"])]

    def forward(self, x):
        F, H, KV = self.F, LLAMA["heads"], LLAMA["kv_heads"]
        T, h = x.shape
        d = h // H
        for w in self.layers:
            r = x
            y = F.rms_norm(x, (h,))
            q, k, v = F.linear(y, w["q"]).view(T, H, d), F.linear(y, w["k"]).view(T, KV, d), F.linear(y, w["v"]).view(T, KV, d)
            q, k = q * 0.5 + q.roll(1, -1) * 0.5, k * 0.5 + k.roll(1, -1) * 0.5  # rope's elementwise traffic
            k, v = k.repeat_interleave(H // KV, dim=1), v.repeat_interleave(H // KV, dim=1)  # repeat_kv
            a = F.scaled_dot_product_attention(q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None], is_causal=True)
            x = r + F.linear(a[0].transpose(0, 1).reshape(T, h), w["o"])
            r = x
            y = F.rms_norm(x, (h,))
            x = r + F.linear(F.silu(F.linear(y, w["gate"])) * F.linear(y, w["up"]), w["down"])
        return x

    def inputs(self, tokens):
        return (self.t.randn(tokens, LLAMA["hidden"], device="cuda", dtype=self.t.bfloat16),)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=2, help="forwards per run")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--twins-only", action="store_true")
    p.add_argument("--profile", action="store_true", help="also write a torch.profiler trace of one run per configuration (NAME.trace.json.gz)")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    from dit_offload import memory_record, write_json, write_trace
    if a.twins_only:
        for name, model, tokens, dims in CONFIGS:
            write_json(os.path.join(a.out, name + ".workload.json"), twin(name, model, tokens, dims, a.steps))
        return
    import torch
    from bench_json import environment
    env = environment(torch, cudnn=str(torch.backends.cudnn.version()), hostname=os.uname().nodename)
    for name, model, tokens, dims in CONFIGS:
        torch.cuda.empty_cache()
        net = Flux(torch, dims) if model.startswith("flux") else Llama(torch, dims)
        inputs = net.inputs(tokens)
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()

        def run():
            """The run's makespan (s, CUDA events) and its host issue time (s:
            from the start event's record to the end event's, as dit_offload.py)."""
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            issue_from = time.perf_counter()
            with torch.no_grad():
                for _ in range(a.steps):
                    out = net.forward(*inputs)
            end.record()
            issued = time.perf_counter() - issue_from
            torch.cuda.synchronize()
            assert torch.isfinite(out).all()
            return start.elapsed_time(end) * 1e-3, issued

        for _ in range(a.warmup):
            run()
        timed = [run() for _ in range(a.repeat)]
        makespans = [m for m, _ in timed]
        if a.profile:  # one more run, recorded (after the timed ones: the memory figures include it)
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
                run()
            write_trace(prof, os.path.join(a.out, name + ".trace.json"))
        memory = memory_record(torch, before)
        med = statistics.median(makespans)
        order = sorted(range(len(makespans)), key=lambda i: makespans[i])
        doc = {"schema": "overlapsim.program/v1", "name": name, "group": model, "program": "validate/programs/model_blocks.py", "config": {"model": model, "tokens": tokens, **dims},
               "warmup": a.warmup, "makespans_s": makespans, "median_s": med, "runs_before": a.warmup + order[len(order) // 2],
               "workload": twin(name, model, tokens, dims, a.steps), "memory": memory, "host_issue_s": [[i] for _, i in timed], "environment": env}
        write_json(os.path.join(a.out, name + ".json"), doc)
        print(f"{name}: {med * 1e3:.2f} ms (runs {', '.join(f'{m * 1e3:.2f}' for m in makespans)}), peak allocated {memory['peak_allocated_bytes'] / 2**30:.2f} GiB", flush=True)
        del net, inputs


if __name__ == "__main__":
    main()
