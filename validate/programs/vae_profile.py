#!/usr/bin/env python3
"""Where a VAE decode's time goes: request_pipeline.py's Wan 2.1 VAE decoder
(random weights) decoding one clip under torch.profiler, its GPU kernels summed
by kind (convolution, GEMM, attention, normalisation and activation, copies
and concatenation, other) and its convolutions by input shape with their
achieved TFLOP/s. What the simulator's VAE stage has to account for; not a
calibration input.

  vae_profile.py --out DIR [--frames 17 --height 480 --width 832] [--dtype fp32,bf16]

Writes DIR/vae-profile-HxWxF-DTYPE.json (schema overlapsim.vae-profile/v1)."""
import argparse
import json
import os
import re
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import request_pipeline as rp  # noqa: E402

KINDS = (("convolution", r"conv|implicit|xmma_fprop|fprop|wgrad|dgrad|winograd|cudnn"), ("gemm", r"gemm|cutlass|cublas|sm90_xmma"),
         ("attention", r"fmha|flash|attention|sdpa"), ("norm_activation", r"norm|silu|sigmoid|rsqrt|mul|div|clamp|add|pow|mean|reduce"),
         ("copy_cat", r"copy|cat|clone|pad|stack|transpose|permute|contiguous|upsample|nearest|fill|memcpy|memset"))


def kind_of(name):
    low = name.lower()
    for kind, pat in KINDS:
        if re.search(pat, low):
            return kind
    return "other"


def conv_flops(shapes):
    """2 x output voxels x c_out x c_in x kernel volume, from (input, weight) shapes:
    the 3-D convolutions run unpadded on F.pad's output, the 2-D ones keep their size."""
    x, w = shapes[0], shapes[1]
    if len(w) == 5:
        vox = (x[2] - w[2] + 1) * (x[3] - w[3] + 1) * (x[4] - w[4] + 1)
        kvol = w[2] * w[3] * w[4]
    else:
        vox = x[2] * x[3]
        kvol = w[2] * w[3]
    return 2.0 * x[0] * vox * w[0] * w[1] * kvol


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--frames", type=int, default=17)
    p.add_argument("--height", type=int, default=480)
    p.add_argument("--width", type=int, default=832)
    p.add_argument("--dtype", default="fp32,bf16")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    import torch
    from torch.profiler import ProfilerActivity, profile
    env = {"torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": str(torch.backends.cudnn.version()), "gpu": torch.cuda.get_device_name(0),
           "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32, "cudnn_benchmark": torch.backends.cudnn.benchmark}
    for dt in a.dtype.split(","):
        c = {"vae_dtype": dt, "vae": "resident", "frames": a.frames, "height": a.height, "width": a.width}
        T, h, w = rp.latent_shape(c)
        dec = rp.VaeDecoder(torch, c)
        lat = torch.randn(1, 16, T, h, w, device="cuda")
        for _ in range(2):
            dec(lat)
        torch.cuda.synchronize()
        ev0, ev1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ev0.record()
        dec(lat)
        ev1.record()
        torch.cuda.synchronize()
        alone_ms = ev0.elapsed_time(ev1)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
            dec(lat)
            torch.cuda.synchronize()
        kinds, kernels = {}, {}
        for e in prof.key_averages():
            if e.device_type != torch.autograd.DeviceType.CUDA:
                continue
            us = e.self_device_time_total
            kinds[kind_of(e.key)] = kinds.get(kind_of(e.key), 0.0) + us
            kernels[e.key] = {"us": us, "calls": e.count, "kind": kind_of(e.key)}
        convs = []
        for e in prof.key_averages(group_by_input_shape=True):
            if e.key in ("aten::conv3d", "aten::conv2d") and e.input_shapes and len(e.input_shapes) >= 2:
                fl = conv_flops(e.input_shapes) * e.count
                us = e.device_time_total
                convs.append({"op": e.key, "input": e.input_shapes[0], "weight": e.input_shapes[1], "calls": e.count, "us": us,
                              "tflops": fl / (us * 1e-6) / 1e12 if us > 0 else None})
        convs.sort(key=lambda r: -r["us"])
        total = sum(kinds.values())
        doc = {"schema": "overlapsim.vae-profile/v1", "program": "validate/programs/vae_profile.py", "decoder": "request_pipeline.py VaeDecoder (the Wan 2.1 VAE decoder's shapes and code paths)",
               "config": c, "latent": {"frames": T, "height": h, "width": w}, "decode_ms_events": alone_ms, "kernel_ms_total": total * 1e-3,
               "by_kind_ms": {k: v * 1e-3 for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])},
               "convolutions": convs, "kernels": dict(sorted(kernels.items(), key=lambda kv: -kv[1]["us"])[:40]), "environment": env}
        name = f"vae-profile-{a.height}x{a.width}x{a.frames}-{dt}"
        with open(os.path.join(a.out, name + ".json"), "w") as f:
            json.dump(doc, f, indent=1)
        print(f"{name}: decode {alone_ms:.1f} ms (events), kernels {total * 1e-3:.1f} ms: " +
              ", ".join(f"{k} {v * 1e-3:.1f}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])), flush=True)
        for r in convs[:12]:
            print(f"  {r['op']} {r['input']} w {r['weight']} x{r['calls']}: {r['us'] * 1e-3:.2f} ms, {r['tflops'] or 0:.1f} TFLOP/s", flush=True)
        del dec
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
