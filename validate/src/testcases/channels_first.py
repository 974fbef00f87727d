#!/usr/bin/env python3
"""The memory-bound kernels a video VAE runs on 5-D channels-first tensors
[1, C, T, H, W], timed through eager PyTorch on GPU 0 at shapes none of the
reference programs uses, as VAE code calls them (the Wan and HunyuanVideo
VAEs): a norm over the channels (`F.normalize(x, dim=1)`: a reduction
across the strided channel dimension, then a broadcast division), scalar and
per-channel scaling, SiLU, a residual add, the causal convolution's input
copies (frames concatenated in front, a constant pad of every side, a pad of
nothing, the last frames cloned), the frame-interleaving `stack` of a
temporal upsampling, nearest 2x upsampling, and two rearranges that are
views for one batch (frames moved into the batch, `b c t h w -> (b t) c h w`;
an attention's output back to channels-first, [T, H*W, C] -> [T, C, H, W]):
their rows time a launch-free view, which the fit leaves out. Each row: the op, its shape
and dtype, the bytes its kernels read and write, and its time (the median of
CUDA-event windows after a warm-up). Writes overlapsim.bench/v1 JSON;
`overlapsim calibrate` fits each way of walking memory's share of the HBM
bandwidth from it. Usage: channels_first.py OUT.json"""
import sys

import torch
import torch.nn.functional as F

from bench_json import environment, window_us, write_bench

# The last three: 58-235 MB in bf16, past the L2 at either width.
SHAPES = ((128, 4, 64, 112), (256, 4, 64, 112), (128, 4, 128, 224), (512, 2, 64, 112), (256, 2, 128, 224),
          (256, 4, 128, 224), (128, 4, 256, 448), (64, 4, 512, 896))


def ops_of(x, es):
    """(name, fn, bytes read and written) of each op on x [1, C, T, H, W]."""
    _, C, T, H, W = x.shape
    n = x.numel() * es
    frame = n // T
    y = torch.randn_like(x)
    gamma = torch.randn(C, 1, 1, 1, device=x.device, dtype=x.dtype)
    front = torch.randn(1, C, 2, H, W, device=x.device, dtype=x.dtype)
    pair = torch.randn(1, 2, C, T, H, W, device=x.device, dtype=x.dtype)
    batch = x.permute(0, 2, 1, 3, 4).reshape(T, C, H, W)
    tokens = torch.randn(T, H * W, C, device=x.device, dtype=x.dtype)
    padded = (T * (H + 2) * (W + 2)) * C * es
    return [("normalize", lambda: F.normalize(x, dim=1), 3 * n),
            ("scale", lambda: x * 2.0, 2 * n),
            ("channel_scale", lambda: x * gamma, 2 * n),
            ("add_scalar", lambda: x + 0.0, 2 * n),
            ("silu", lambda: F.silu(x), 2 * n),
            ("add", lambda: x + y, 3 * n),
            ("cat_frames", lambda: torch.cat([front, x], dim=2), 2 * (n + 2 * frame)),
            ("pad", lambda: F.pad(x, (1, 1, 1, 1, 0, 0)), n + padded),
            ("pad_none", lambda: F.pad(x, (0, 0, 0, 0, 0, 0)), 2 * n),
            ("clone_last", lambda: x[:, :, -2:].clone(), 2 * 2 * frame),
            ("stack_frames", lambda: torch.stack((pair[:, 0], pair[:, 1]), 3), 2 * 2 * n),
            ("frames_to_batch", lambda: x.permute(0, 2, 1, 3, 4).reshape(T, C, H, W), 2 * n),
            ("upsample", lambda: F.interpolate(batch, scale_factor=2.0, mode="nearest-exact"), n + 4 * n),
            ("transpose", lambda: tokens.transpose(1, 2).reshape(T, C, H, W), 2 * n)]


def rows():
    out = []
    for dtype, es, name in ((torch.float32, 4, "fp32"), (torch.bfloat16, 2, "bf16")):
        for C, T, H, W in SHAPES:
            x = torch.randn(1, C, T, H, W, device="cuda", dtype=dtype)
            for op, fn, nbytes in ops_of(x, es):
                us = window_us(torch, fn, calls=20)
                out.append({"key": "framework_channels_first", "gpus": [0], "op": op, "channels": C, "frames": T, "height": H, "width": W,
                            "dtype": name, "bytes": nbytes, "time_us": us, "GBps": nbytes / us * 1e-3, "via": "torch"})
                print("channels-first", op, name, C, T, H, W, round(nbytes / us * 1e-3), "GB/s", flush=True)
            del x
            torch.cuda.empty_cache()
    return out


def main():
    write_bench(sys.argv[1], environment(torch, env={}), rows())


if __name__ == "__main__":
    main()
