#!/usr/bin/env python3
"""A reference request: prompt to decoded frames on one GPU, as video pipelines
(Wan in sglang, LightX2V, diffusers) run it, in plain PyTorch with random
weights, timed end to end and by stage.

Stages, in order:
  encode  a text encoder shaped as umT5-XXL (Wan's): `encoder_layers` blocks of
          self-attention (d_model 4096, 64 heads of 64) and a gated-GELU FFN
          (10,240), on the prompt's `text` tokens
  dit     the DiT stack of dit_offload.py (its blocks, offload policies and host
          memory), `steps` steps over the latent's tokens
  decode  the Wan 2.1 VAE decoder with its shapes (z 16, base 96, channel
          multipliers 1, 2, 4, 4, two residual blocks per level plus one,
          single-head attention in the middle block, spatial upsampling at
          every level, temporal upsampling at the first two) and the code
          paths of Wan's vae.py (F.normalize norms, cat + F.pad before each
          causal convolution, its two-frame cache cloned), one latent frame
          at a time
Each stage has a placement: resident (its weights on the GPU throughout),
offloaded (weights in pinned host memory, copied in before the stage runs and
dropped after it, as diffusers' model CPU offload moves them) or, for the DiT,
the layerwise/block policies of dit_offload.py.

The latent follows the video: `frames` frames of `height` x `width` pixels give
1 + (frames - 1) / 4 latent frames of height/8 x width/8; the DiT sees them
in 1x2x2 patches: tokens = latent frames x height/16 x width/16.

Each configuration runs `warmup` times untimed, then `repeat` times timed; a
run is timed by CUDA events between the stages on the compute stream, and by
the host's wall clock from the request's start to its frames back on the
host (what users report as seconds per video). It writes NAME.json (schema
overlapsim.request/v1): every run's end-to-end and per-stage seconds, each
stage's peak allocated memory, the configuration, the environment and the
request's twin as an overlapsim workload (`workload:`).

  request_pipeline.py --out DIR [--grid single]            every configuration of the grid
  request_pipeline.py --out DIR --encoder offloaded ...    one
  request_pipeline.py --twin RESULT.json                   a result's twin (YAML, stdout; no GPU)
  request_pipeline.py --grid single --list                 the grid's configuration names (no GPU)
"""
import argparse
import json
import os
import statistics
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "src", "testcases"))

import dit_offload  # noqa: E402  (the DiT stack and its offload loop)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", help="folder for NAME.json")
    p.add_argument("--twin", help="print this result's twin workload as YAML and stop (no GPU)")
    p.add_argument("--grid", choices=["single"], help="every configuration of the single-GPU grid")
    p.add_argument("--only", help="comma-separated configuration names: run only these of the grid")
    p.add_argument("--list", action="store_true", help="print the grid's configuration names and stop (no GPU)")
    p.add_argument("--encoder", choices=["resident", "offloaded"], default="resident")
    p.add_argument("--encoder-layers", type=int, default=24)
    p.add_argument("--text", type=int, default=512, help="prompt tokens (umT5: padded to 512)")
    p.add_argument("--policy", choices=["layerwise", "block", "none"], default="none", help="the DiT's weights (dit_offload.py)")
    p.add_argument("--prefetch", type=int, default=2)
    p.add_argument("--blocks", type=int, default=30, help="DiT blocks (Wan 2.2 TI2V-5B: 30)")
    p.add_argument("--hidden", type=int, default=3072)
    p.add_argument("--heads", type=int, default=24)
    p.add_argument("--ffn", type=int, default=14336)
    p.add_argument("--steps", type=int, default=4, help="denoising steps (a distilled model: 4)")
    p.add_argument("--vae", choices=["resident", "offloaded"], default="resident")
    p.add_argument("--vae-dtype", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--frames", type=int, default=17)
    p.add_argument("--height", type=int, default=480)
    p.add_argument("--width", type=int, default=832)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    if not a.twin and not a.out and not a.list:
        p.error("give --out DIR (or --twin RESULT.json)")
    return a


def latent_shape(c):
    if (c["frames"] - 1) % 4 or c["height"] % 16 or c["width"] % 16:
        sys.exit("request_pipeline.py: frames must be 1 + 4k and height, width multiples of 16")
    return 1 + (c["frames"] - 1) // 4, c["height"] // 8, c["width"] // 8


def configurations(a):
    base = {k: getattr(a, k) for k in ("encoder", "encoder_layers", "text", "policy", "prefetch", "blocks", "hidden", "heads", "ffn", "steps", "vae",
                                       "vae_dtype", "frames", "height", "width")}
    if a.grid != "single":
        return [base]
    out = []
    # Resident, then each stage offloaded in turn, then everything offloaded; the
    # VAE in fp32 (Wan's default) and bf16; a longer clip where decode dominates.
    for enc, pol, vae, dt, frames in (("resident", "none", "resident", "fp32", 17), ("offloaded", "none", "resident", "fp32", 17),
                                      ("resident", "layerwise", "resident", "fp32", 17), ("resident", "none", "offloaded", "fp32", 17),
                                      ("offloaded", "layerwise", "offloaded", "fp32", 17), ("resident", "none", "resident", "bf16", 17),
                                      ("resident", "none", "resident", "fp32", 33), ("offloaded", "block", "offloaded", "fp32", 33)):
        out.append(dict(base, encoder=enc, policy=pol, vae=vae, vae_dtype=dt, frames=frames))
    return out


def twin(c):
    """The request as an overlapsim workload (docs/formats/workload.md): the
    DiT's blocks, shapes, steps and offload as dit_offload.py's twin, the
    video, and the two stages with their placement (offloaded: pinned host
    weights copied in and dropped after, as Weights does); the encoder's
    weights as Encoder holds them (`params`: its blocks, no vocabulary
    table: the prompt comes in embedded)."""
    w = {"name": name_of(c),
         "model": {"preset": "custom", "blocks": c["blocks"], "hidden": c["hidden"], "ffn": c["ffn"], "heads": c["heads"],
                   "head_dim": c["hidden"] // c["heads"], "text_tokens": c["text"]},
         "video": {"width": c["width"], "height": c["height"], "frames": c["frames"]},
         "steps": c["steps"], "cfg": "none", "parallelism": {"ulysses": 1}, "runtime": {"framework": "pytorch"}}
    if c["policy"] == "layerwise":
        w["offload"] = {"policy": "layerwise", "prefetch_size": c["prefetch"], "host_memory": "pinned"}
    elif c["policy"] == "block":
        w["offload"] = {"policy": "block", "host_memory": "pinned"}

    def placed(stage, place):
        stage["place"] = place
        if place == "offloaded":
            stage.update({"host": "pinned", "copy_back": False})
        return stage

    D, F = Encoder.D, Encoder.FFN
    encoder_params = c["encoder_layers"] * (4 * D * D + 3 * F * D)  # qkv, o, wi0, wi1, wo
    w["stages"] = [placed({"name": "encode", "preset": "umt5-xxl", "tokens": c["text"], "layers": c["encoder_layers"], "prompts": 1,
                           "params": encoder_params}, c["encoder"]),
                   placed({"name": "decode", "preset": "wan2.1-vae", "dtype": c["vae_dtype"]}, c["vae"])]
    return w


def twin_yaml(w, indent=""):
    """`w` as block YAML of flow mappings (no PyYAML needed)."""
    def flow(v):
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k}: {flow(x)}" for k, x in v.items()) + "}"
        if isinstance(v, bool):
            return "true" if v else "false"
        return str(v)
    lines = []
    for k, v in w.items():
        if isinstance(v, list):
            lines.append(f"{k}:")
            lines += [f"  - {flow(x)}" for x in v]
        else:
            lines.append(f"{k}: {flow(v)}")
    return "\n".join(lines) + "\n"


def name_of(c):
    dit = f"layerwise-pf{c['prefetch']}" if c["policy"] == "layerwise" else ("dit-block" if c["policy"] == "block" else "dit-resident")
    return f"request-{c['height']}x{c['width']}x{c['frames']}-enc-{c['encoder']}-{dit}-vae-{c['vae']}-{c['vae_dtype']}"


class Weights:
    """A stage's weights: on the GPU (resident), or in pinned host memory and
    copied in before the stage runs (offloaded)."""

    def __init__(self, torch, shapes, dtype, placement):
        self.t, self.placement = torch, placement
        self.host = {}
        self.gpu = {}
        for name, shape in shapes.items():
            w = torch.randn(*shape, device="cuda", dtype=torch.float32).mul_(0.02).to(dtype)
            if placement == "resident":
                self.gpu[name] = w
            else:
                self.host[name] = w.cpu().pin_memory()
        torch.cuda.synchronize()

    def bytes(self):
        return sum(w.numel() * w.element_size() for w in (self.gpu or self.host).values())

    def load(self):
        """The stage's weights on the GPU: moved in now if offloaded (on the compute stream, as .to('cuda') does)."""
        if self.placement == "resident":
            return self.gpu
        return {k: v.to("cuda", non_blocking=True) for k, v in self.host.items()}


class Encoder:
    """umT5-XXL-shaped: pre-norm blocks of self-attention and a gated-GELU FFN."""
    D, HEADS, FFN = 4096, 64, 10240

    def __init__(self, torch, c):
        self.t, self.c = torch, c
        D, F = self.D, self.FFN
        shapes = {}
        for i in range(c["encoder_layers"]):
            shapes.update({f"{i}.qkv": (3 * D, D), f"{i}.o": (D, D), f"{i}.wi0": (F, D), f"{i}.wi1": (F, D), f"{i}.wo": (D, F)})
        self.w = Weights(torch, shapes, torch.bfloat16, c["encoder"])

    def __call__(self, tokens):
        t, F = self.t, self.t.nn.functional
        w = self.w.load()
        x, S, D, H = tokens, tokens.shape[0], self.D, self.HEADS
        for i in range(self.c["encoder_layers"]):
            y = F.rms_norm(x, (D,))
            q, k, v = F.linear(y, w[f"{i}.qkv"]).split(D, dim=-1)
            a = F.scaled_dot_product_attention(*(z.view(1, S, H, D // H).transpose(1, 2) for z in (q, k, v)))
            x = x + F.linear(a.transpose(1, 2).reshape(S, D), w[f"{i}.o"])
            y = F.rms_norm(x, (D,))
            x = x + F.linear(F.gelu(F.linear(y, w[f"{i}.wi0"]), approximate="tanh") * F.linear(y, w[f"{i}.wi1"]), w[f"{i}.wo"])
        del w
        return F.rms_norm(x, (D,))


class VaeDecoder:
    """The Wan 2.1 VAE decoder as Wan's vae.py runs it, with its shapes (z 16,
    base 96, channel multipliers 1, 2, 4, 4, two residual blocks per level
    plus one, single-head attention in the middle block, spatial upsampling
    at every level, temporal upsampling at the first two) and its code paths:
    RMS norms over the channels (`F.normalize(x, dim=1) * scale * gamma + 0.`),
    SiLU, causal convolutions that put the cached frames in front (`cat`), pad
    with `F.pad` and convolve unpadded, each keeping a clone of its input's
    last two frames; the attention block's 1x1 convolutions and transposes;
    Resample's time convolution (not on the first latent frame), frame
    interleaving `stack`, frames moved into the batch, nearest-exact 2x
    upsampling (in fp32) and a 3x3 convolution halving the channels. One
    latent frame at a time, the frames concatenated as they come."""
    Z, BASE, MULT, RES = 16, 96, (1, 2, 4, 4), 2
    TEMPORAL = (True, True, False)  # the Wan VAE's temperal_downsample [False, True, True], reversed
    CACHE_T = 2

    def __init__(self, torch, c):
        self.t, self.c = torch, c
        dtype = torch.float32 if c["vae_dtype"] == "fp32" else torch.bfloat16
        self.dtype = dtype
        dims = [self.BASE * m for m in (self.MULT[-1],) + tuple(reversed(self.MULT))]  # 384 384 384 192 96
        shapes, plan = {}, []

        def conv3(name, cin, cout, k=(3, 3, 3)):
            shapes[name] = (cout, cin) + k
            shapes[name + ".b"] = (cout,)

        def norm(name, ch, images=False):
            shapes[name] = (ch, 1, 1) if images else (ch, 1, 1, 1)

        def res(name, cin, cout):
            norm(name + ".n1", cin)
            conv3(name + ".c1", cin, cout)
            norm(name + ".n2", cout)
            conv3(name + ".c2", cout, cout)
            if cin != cout:
                conv3(name + ".sc", cin, cout, (1, 1, 1))
            plan.append(("res", name, cin, cout))

        conv3("post", self.Z, self.Z, (1, 1, 1))  # WanVAE's conv2 over the whole latent
        conv3("in", self.Z, dims[0])
        res("mid0", dims[0], dims[0])
        norm("mid.norm", dims[0], images=True)
        shapes["mid.qkv"], shapes["mid.qkv.b"] = (3 * dims[0], dims[0], 1, 1), (3 * dims[0],)
        shapes["mid.proj"], shapes["mid.proj.b"] = (dims[0], dims[0], 1, 1), (dims[0],)
        plan.append(("attn", "mid", dims[0], dims[0]))
        res("mid1", dims[0], dims[0])
        for i, (cin, cout) in enumerate(zip(dims[:-1], dims[1:])):
            if i in (1, 2, 3):
                cin //= 2
            for j in range(self.RES + 1):
                res(f"up{i}.{j}", cin, cout)
                cin = cout
            if i != len(self.MULT) - 1:
                if self.TEMPORAL[i]:
                    conv3(f"up{i}.time", cout, 2 * cout, (3, 1, 1))
                shapes[f"up{i}.conv"] = (cout // 2, cout, 3, 3)
                shapes[f"up{i}.conv.b"] = (cout // 2,)
                plan.append(("up", f"up{i}", cout, self.TEMPORAL[i]))
        norm("head.norm", dims[-1])
        conv3("head", dims[-1], 3)
        self.plan = plan
        self.w = Weights(torch, shapes, dtype, c["vae"])

    def causal(self, w, name, x, cache_x=None):
        """CausalConv3d.forward: the cached frames in front, F.pad (zeros for the
        frames the cache does not cover, and the spatial padding), an unpadded convolution."""
        k = w[name]
        padding = [k.shape[4] // 2, k.shape[4] // 2, k.shape[3] // 2, k.shape[3] // 2, k.shape[2] - 1, 0]
        if cache_x is not None and padding[4] > 0:
            x = self.t.cat([cache_x, x], dim=2)
            padding[4] -= cache_x.shape[2]
        x = self.t.nn.functional.pad(x, padding)
        return self.t.nn.functional.conv3d(x, k, w[name + ".b"])

    def cached(self, w, name, x, feat):
        """A causal convolution in the decoder's cache loop: its input's last two
        frames kept for the next pass (the previous pass's last frame in front when this one has one)."""
        cache_x = x[:, :, -self.CACHE_T:].clone()
        prev = feat.get(name)
        if cache_x.shape[2] < 2 and prev is not None:
            cache_x = self.t.cat([prev[:, :, -1:], cache_x], dim=2)
        out = self.causal(w, name, x, prev)
        feat[name] = cache_x
        return out

    def norm(self, w, name, x):
        return self.t.nn.functional.normalize(x, dim=1) * (x.shape[1] ** 0.5) * w[name] + 0.0

    def res(self, w, name, x, feat, cin, cout):
        F = self.t.nn.functional
        h = self.causal(w, name + ".sc", x) if cin != cout else x
        y = self.cached(w, name + ".c1", F.silu(self.norm(w, name + ".n1", x)), feat)
        y = self.cached(w, name + ".c2", F.silu(self.norm(w, name + ".n2", y)), feat)
        return y + h

    def attention(self, w, x):
        F = self.t.nn.functional
        identity = x
        b, c, t, h, w_ = x.shape
        x = x.permute(0, 2, 1, 3, 4).reshape(b * t, c, h, w_)
        x = self.norm(w, "mid.norm", x)
        q, k, v = F.conv2d(x, w["mid.qkv"], w["mid.qkv.b"]).reshape(b * t, 1, c * 3, -1).permute(0, 1, 3, 2).contiguous().chunk(3, dim=-1)
        x = F.scaled_dot_product_attention(q, k, v)
        x = x.squeeze(1).permute(0, 2, 1).reshape(b * t, c, h, w_)
        x = F.conv2d(x, w["mid.proj"], w["mid.proj.b"])
        return x.view(b, t, c, h, w_).permute(0, 2, 1, 3, 4) + identity

    def resample(self, w, name, x, feat, temporal):
        t, F = self.t, self.t.nn.functional
        b, c, T, h, w_ = x.shape
        if temporal:
            prev = feat.get(name)
            if prev is None:  # the first latent frame: no time convolution
                feat[name] = "Rep"
            else:
                cache_x = x[:, :, -self.CACHE_T:].clone()
                if cache_x.shape[2] < 2:
                    cache_x = t.cat([t.zeros_like(cache_x) if isinstance(prev, str) else prev[:, :, -1:], cache_x], dim=2)
                x = self.causal(w, name + ".time", x, None if isinstance(prev, str) else prev)
                feat[name] = cache_x
                x = x.reshape(b, 2, c, T, h, w_)
                x = t.stack((x[:, 0], x[:, 1]), 3).reshape(b, c, T * 2, h, w_)
        T = x.shape[2]
        x = x.permute(0, 2, 1, 3, 4).reshape(b * T, c, h, w_)
        x = F.interpolate(x.float(), scale_factor=2.0, mode="nearest-exact").type_as(x)
        x = F.conv2d(x, w[name + ".conv"], w[name + ".conv.b"], padding=1)
        return x.view(b, T, c // 2, 2 * h, 2 * w_).permute(0, 2, 1, 3, 4)

    def decode_frame(self, w, z, feat):
        F = self.t.nn.functional
        x = self.cached(w, "in", z, feat)
        for kind, name, a, b in self.plan:
            if kind == "res":
                x = self.res(w, name, x, feat, a, b)
            elif kind == "attn":
                x = self.attention(w, x)
            else:
                x = self.resample(w, name, x, feat, b)
        return self.cached(w, "head", F.silu(self.norm(w, "head.norm", x)), feat)

    def __call__(self, latent):
        w = self.w.load()
        feat, out = {}, None
        x = self.causal(w, "post", latent.to(self.dtype))
        for i in range(x.shape[2]):
            y = self.decode_frame(w, x[:, :, i:i + 1], feat)
            out = y if out is None else self.t.cat([out, y], dim=2)
        del w, feat
        return out


def run_once(torch, c, enc, dit, dec, prompt, stage_marks):
    """One request; returns (wall seconds to frames on the host, per-stage seconds by CUDA events)."""
    compute = torch.cuda.current_stream()
    torch.cuda.synchronize()
    ev = {k: torch.cuda.Event(enable_timing=True) for k in ("start", "encode", "dit", "decode")}
    peaks = {}
    wall0 = time.perf_counter()
    ev["start"].record(compute)
    text = enc(prompt)
    ev["encode"].record(compute)
    stage_marks(peaks, "encode")
    ctx = torch.nn.functional.linear(text, dit.text_proj)  # umT5 4096 -> the DiT's width
    T, h, w = latent_shape(c)
    dc = dict(dit.base_c)
    x0 = torch.randn(T * (h // 2) * (w // 2), c["hidden"], device="cuda", dtype=torch.bfloat16)
    x, _ = dit_offload_run(torch, dit, dc, x0, ctx)
    ev["dit"].record(compute)
    stage_marks(peaks, "dit")
    # Unpatchify: tokens back to a [1, 16, T, h, w] latent (a linear to 16 * 4 values per token).
    lat = torch.nn.functional.linear(x, dit.out_proj).view(T, h // 2, w // 2, 16, 2, 2).permute(3, 0, 1, 4, 2, 5).reshape(1, 16, T, h, w)
    video = dec(lat)
    ev["decode"].record(compute)
    frames = video.clamp(-1, 1).add(1).mul(127.5).to(torch.uint8).cpu()  # frames to the host, as pipelines return them
    wall = time.perf_counter() - wall0
    stage_marks(peaks, "decode")
    assert frames.shape[2] == c["frames"], (frames.shape, c["frames"])
    st = {"encode": ev["start"].elapsed_time(ev["encode"]) * 1e-3, "dit": ev["encode"].elapsed_time(ev["dit"]) * 1e-3,
          "decode": ev["dit"].elapsed_time(ev["decode"]) * 1e-3}
    return wall, st, peaks


def dit_offload_run(torch, dit, c, x0, text):
    """dit_offload.py's run loop over this request's DiT, returning the last activations (not only the time)."""
    captured = {}
    orig = dit.block

    def block(x, text_, w):
        y = orig(x, text_, w)
        captured["x"] = y
        return y

    dit.block = block
    try:
        dit_offload.run_once(torch, dit, c, x0, text)
    finally:
        dit.block = orig
    return captured["x"], None


def main():
    args = parse_args()
    if args.twin:
        with open(args.twin) as f:
            sys.stdout.write(twin_yaml(twin(json.load(f)["config"])))
        return
    configs = configurations(args)
    if args.list:
        print("\n".join(name_of(c) for c in configs))
        return
    os.makedirs(args.out, exist_ok=True)
    if args.only:
        configs = [c for c in configs if name_of(c) in args.only.split(",")]
    import torch
    environment = {"torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": str(torch.backends.cudnn.version()),
                   "gpu": torch.cuda.get_device_name(0), "hostname": os.uname().nodename,
                   "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32, "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32}
    print(f"PyTorch {torch.__version__} on {environment['gpu']}", flush=True)
    for c in configs:
        t0 = time.time()
        torch.cuda.empty_cache()
        name = name_of(c)
        T, h, w = latent_shape(c)
        dc = {"tokens": T * (h // 2) * (w // 2), "hidden": c["hidden"], "heads": c["heads"], "ffn": c["ffn"], "text": c["text"], "blocks": c["blocks"],
              "steps": c["steps"], "policy": c["policy"], "prefetch": c["prefetch"], "host": "pinned", "ulysses": 1, "all_to_all": "none",
              "nccl_p2p_disable": False}
        enc = Encoder(torch, c)
        dit = dit_offload.Dit(torch, dc, "pinned")
        dit.base_c = dc
        dit.copy_stream = torch.cuda.Stream()
        dit.resident = [x.to("cuda") for x in dit.host] if dc["policy"] == "none" else []
        dit.buffers = [torch.empty(dit.numel, device="cuda", dtype=dit.dtype) for _ in range(2)] if dc["policy"] == "block" else []
        dit.text_proj = torch.randn(c["hidden"], Encoder.D, device="cuda", dtype=torch.bfloat16) * 0.02
        dit.out_proj = torch.randn(16 * 4, c["hidden"], device="cuda", dtype=torch.bfloat16) * 0.02
        dec = VaeDecoder(torch, c)
        prompt = torch.randn(c["text"], Encoder.D, device="cuda", dtype=torch.bfloat16)
        torch.cuda.synchronize()
        base_alloc = torch.cuda.memory_allocated()

        def stage_marks(peaks, stage):
            torch.cuda.synchronize()
            peaks[stage] = torch.cuda.max_memory_allocated()
            torch.cuda.reset_peak_memory_stats()

        for _ in range(args.warmup):
            torch.cuda.reset_peak_memory_stats()
            run_once(torch, c, enc, dit, dec, prompt, stage_marks)
        runs = []
        for _ in range(args.repeat):
            torch.cuda.reset_peak_memory_stats()
            wall, st, peaks = run_once(torch, c, enc, dit, dec, prompt, stage_marks)
            runs.append({"wall_s": wall, "stages_s": st, "peak_allocated_bytes": peaks})
        walls = [r["wall_s"] for r in runs]
        med = statistics.median(walls)
        # The runs went back to back: the median one had the warm-up and the
        # timed runs before it in its sustained-load state (`overlapsim run --runs-before`).
        runs_before = args.warmup + sorted(range(len(walls)), key=lambda i: walls[i])[len(walls) // 2]
        doc = {"schema": "overlapsim.request/v1", "name": name, "program": "validate/programs/request_pipeline.py", "config": c,
               "latent": {"frames": T, "height": h, "width": w}, "dit_tokens": dc["tokens"],
               "weights_bytes": {"encode": enc.w.bytes(), "dit": dit.numel * 2 * c["blocks"], "decode": dec.w.bytes()},
               "allocated_before_bytes": base_alloc, "warmup": args.warmup, "runs_before": runs_before, "runs": runs, "median_wall_s": med,
               "median_stages_s": {k: statistics.median(r["stages_s"][k] for r in runs) for k in ("encode", "dit", "decode")},
               "environment": environment, "workload": twin(c)}
        dit_offload.write_json(os.path.join(args.out, name + ".json"), doc)
        ms = doc["median_stages_s"]
        print(f"{name}: {med:.3f} s wall (encode {ms['encode'] * 1e3:.1f} ms, dit {ms['dit'] * 1e3:.1f} ms, decode {ms['decode'] * 1e3:.1f} ms)"
              f"  ({time.time() - t0:.1f} s)", flush=True)
        del enc, dit, dec
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
