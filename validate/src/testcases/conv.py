#!/usr/bin/env python3
"""Convolutions as PyTorch runs them on GPU 0 (cuDNN), at the shapes of the
video and image VAE decoders: 3x3x3 convolutions over a few frames (a causal
decoder's pass: the frames it outputs plus the two it keeps), 3x3 2-D
convolutions (an upsampling conv per frame, an image decoder) and 1x1x1
shortcuts, for 96 to 512 channels at a 720p latent's size and up to 8x it,
and Wan's widths at a 480p video's levels.

Each shape runs in fp32 (TF32 tensor cores: PyTorch's default for cuDNN
convolutions) and bf16, with the input contiguous as the decoders hold it
(`ncdhw`) and in channels-last (`ndhwc`): the first includes the layout
conversions cuDNN runs around a tensor-core kernel, the second does not.
cudnn.benchmark stays off (the decoders' default), so cuDNN's heuristics pick
the kernel as they do in a pipeline. Each time is the median of CUDA-event
windows of the call back to back after a warm-up (`conv`: per shape, dtype
and layout). `overlapsim calibrate` fits the convolutions' implicit-GEMM
efficiency (m: output positions, n: output channels, k: input channels x
kernel) and the layout conversion's traffic from these rows.
Usage: conv.py OUT.json"""
import sys

import torch
import torch.nn.functional as F

from bench_json import environment, window_us, write_bench


def time_us(fn, window_us_target=20000.0):
    """The median of CUDA-event windows of ~20 ms of `fn` back to back (us a call)."""
    once = window_us(torch, fn, calls=1, windows=1)
    return window_us(torch, fn, calls=max(2, int(window_us_target / max(1.0, once))), windows=3)


CHANNELS = (96, 128, 192, 256, 384, 512)
SIZES = ((90, 160), (180, 320), (360, 640))  # a 720p latent and its 2x and 4x
SIZES_480P = ((60, 104), (120, 208), (240, 416), (480, 832))  # a 480x832 latent's levels


def shapes():
    """(name, cin, cout, kernel, frames out, h, w, dims) in the decoders' orders."""
    for c in CHANNELS:
        for h, w in SIZES:
            for t in (1, 4):
                yield "conv3d", c, c, (3, 3, 3), t, h, w, 3
        for h, w in SIZES:
            yield "conv2d", c, c, (1, 3, 3), 1, h, w, 2
            yield "conv2d half", c, c // 2, (1, 3, 3), 1, 2 * h, 2 * w, 2  # Wan's upsampling conv
        yield "shortcut", c, c // 2, (1, 1, 1), 4, SIZES[1][0], SIZES[1][1], 3
    for c in (96, 128):  # the last level at full resolution
        yield "conv3d", c, c, (3, 3, 3), 1, 720, 1280, 3
    for c in (96, 192, 384):  # Wan's widths at a 480p video's levels
        for h, w in SIZES_480P:
            for t in (1, 4):
                yield "conv3d", c, c, (3, 3, 3), t, h, w, 3


def conv_rows():
    rows = []
    for name, cin, cout, k, t, h, w, dims in shapes():
        t_in = t + k[0] - 1
        for dtype, dname in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
            if dims == 3:
                x = torch.randn(1, cin, t_in, h, w, device="cuda", dtype=dtype)
                wt = torch.randn(cout, cin, *k, device="cuda", dtype=dtype)
                pad = (0, k[1] // 2, k[2] // 2)
                layouts = (("ncdhw", x, wt), ("ndhwc", x.to(memory_format=torch.channels_last_3d), wt.to(memory_format=torch.channels_last_3d)))
                fn = lambda xx, ww: F.conv3d(xx, ww, padding=pad)
            else:
                x = torch.randn(t_in, cin, h, w, device="cuda", dtype=dtype)
                wt = torch.randn(cout, cin, k[1], k[2], device="cuda", dtype=dtype)
                pad = (k[1] // 2, k[2] // 2)
                layouts = (("ncdhw", x, wt), ("ndhwc", x.to(memory_format=torch.channels_last), wt.to(memory_format=torch.channels_last)))
                fn = lambda xx, ww: F.conv2d(xx, ww, padding=pad)
            flops = 2.0 * t * h * w * cout * cin * k[0] * k[1] * k[2]
            for layout, xx, ww in layouts:
                try:
                    us = time_us(lambda: fn(xx, ww))
                except RuntimeError as e:  # out of memory or no kernel for the shape
                    print(f"conv {name} {cin}->{cout} {t}x{h}x{w} {dname} {layout}: {e}", flush=True)
                    continue
                rows.append({"key": "conv", "gpus": [0], "op": name, "cin": cin, "cout": cout, "kernel": list(k), "frames": t, "frames_in": t_in,
                             "h": h, "w": w, "dtype": dname, "layout": layout, "time_us": us, "TFLOPs": flops / us * 1e-6,
                             "in_bytes": x.numel() * x.element_size(), "out_bytes": t * cout * h * w * x.element_size(), "via": f"torch.nn.functional.{name[:6]}"})
                print(f"conv {name} {cin}->{cout} k{k} {t}x{h}x{w} {dname} {layout}: {us:.1f} us {flops / us * 1e-6:.0f} TFLOP/s", flush=True)
            del x, wt, layouts
        torch.cuda.empty_cache()
    return rows


def main():
    out = sys.argv[1]
    env = {"cudnn": torch.backends.cudnn.version(), "allow_tf32": torch.backends.cudnn.allow_tf32, "cudnn_benchmark": torch.backends.cudnn.benchmark}
    write_bench(out, environment(torch, env=env), conv_rows())


if __name__ == "__main__":
    main()
