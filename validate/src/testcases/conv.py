#!/usr/bin/env python3
"""Convolutions as PyTorch runs them on GPU 0 (cuDNN), at the shapes of the
video and image VAE decoders: 3x3x3 convolutions over a few frames (a causal
decoder's pass: the frames it outputs plus the two it keeps), 3x3 2-D
convolutions (an upsampling conv per frame, an image decoder) and 1x1x1
shortcuts, for 96 to 512 channels at a 720p latent's size and up to 8x it,
and Wan's widths at a 480p video's levels. Then the Wan 2.1 decoder's own
convolutions (`decoder conv3d`, `decoder conv2d`) as its vae.py calls them:
the shapes recorded from request_pipeline.py's VaeDecoder decoding a 480x832
and a 1280x720 video (F.pad's output convolved unpadded, each pass's frames,
the upsampling convs over the frames as a batch), each on an input with the
strides the decoder gave it, timed alone without the bias (its add is a
kernel of its own); these rows carry `h_in`, `w_in` and `input_stride`, and
(not calibration inputs) the call's median time inside the decoder with its
bias, `in_decoder_us`, at 480x832, and on a rested GPU, `burst_us`.

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

With --workspace, no times: the memory each call takes beyond its input,
weight and output (`workspace_bytes`: the caching allocator's peak during the
call above what was allocated before it, less the output), at the same shapes
and the decoder's own calls, in both dtypes and layouts (`conv_workspace`
rows). cuDNN takes its workspace, and the channels-last copies a
channels-first call converts through, from PyTorch's allocator, so they count
toward a decode's peak allocated memory; `overlapsim calibrate` fits that
memory per element width from these rows.
Usage: conv.py OUT.json [--workspace]"""
import os
import sys
import time

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


_wake = []


def burst_us(fn, rest_s=0.15, target_us=2000.0, bursts=3):
    """The call on a rested GPU with its clock up, as the bench's GEMM table
    takes `burst_time_us`: after `rest_s` idle (the sustained-load clock
    recovers), ~2 ms of GEMMs wake the clock from idle (a kernel straight
    after idle runs up to 2x slow), then ~2 ms of calls timed with CUDA
    events; the median of `bursts` (us a call). Beside time_us's
    back-to-back windows it shows how much of a row's time is the clock
    under load."""
    if not _wake:
        _wake.append(torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16))
    once = window_us(torch, fn, calls=1, windows=1)

    def rest_and_wake():
        time.sleep(rest_s)
        for _ in range(10):  # 10 x 137 GFLOP: ~2 ms on an H100
            torch.mm(_wake[0], _wake[0])

    return window_us(torch, fn, calls=max(1, int(target_us / max(1.0, once))), windows=bursts, before=rest_and_wake)


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


def decoder_calls(captures=((480, 832, torch.float32), (480, 832, torch.bfloat16), (720, 1280, torch.bfloat16)), frames=9):
    """The Wan 2.1 decoder's convolutions: (op, input shape, input strides,
    weight shape, padding) of each distinct call while VaeDecoder decodes
    `frames` frames (three latent frames: the first pass, and the passes
    after it) at each resolution and dtype, recorded by wrapping F.conv3d and
    F.conv2d; and each call's time inside the decoder (CUDA events around
    it, its bias add included), by dtype."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "programs"))
    from request_pipeline import VaeDecoder
    seen, calls, timed = set(), [], {}
    real = {"conv3d": F.conv3d, "conv2d": F.conv2d}

    def recorder(op, dname):
        def call(x, w, b=None, stride=1, padding=0, *args, **kw):
            pad = padding if isinstance(padding, int) else tuple(padding)
            key = (op, tuple(x.shape), tuple(x.stride()), tuple(w.shape), pad)
            if key not in seen:
                seen.add(key)
                calls.append(key)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            y = real[op](x, w, b, stride, padding, *args, **kw)
            end.record()
            timed.setdefault((key, dname), []).append((start, end))
            return y
        return call

    for h, w, dtype in captures:
        dname = "fp32" if dtype == torch.float32 else "bf16"
        dec = VaeDecoder(torch, {"vae_dtype": dname, "vae": "resident"})
        latent = torch.randn(1, VaeDecoder.Z, (frames - 1) // 4 + 1, h // 8, w // 8, device="cuda", dtype=dtype)
        with torch.no_grad():
            dec(latent)  # a warm-up: cuDNN's plans made
        F.conv3d, F.conv2d = recorder("conv3d", dname), recorder("conv2d", dname)
        try:
            with torch.no_grad():
                dec(latent)
        finally:
            F.conv3d, F.conv2d = real["conv3d"], real["conv2d"]
        torch.cuda.synchronize()
        del dec, latent
        torch.cuda.empty_cache()
    in_decoder = {k: (sorted(s.elapsed_time(e) * 1e3 for s, e in v), len(v)) for k, v in timed.items()}
    return calls, {k: (t[len(t) // 2], n) for k, (t, n) in in_decoder.items()}


def decoder_rows():
    rows = []
    calls, in_decoder = decoder_calls()
    for key in calls:
        op, xs, x_stride, ws, pad = key
        cout, cin = ws[0], ws[1]
        if op == "conv3d":
            k = tuple(ws[2:])
            _, _, t_in, h_in, w_in = xs
            p = (pad,) * 3 if isinstance(pad, int) else pad
            t, h, w = (t_in + 2 * p[0] - k[0] + 1, h_in + 2 * p[1] - k[1] + 1, w_in + 2 * p[2] - k[2] + 1)
        else:
            k = (1,) + tuple(ws[2:])
            t_in, _, h_in, w_in = xs  # the frames as the batch
            p = (pad,) * 2 if isinstance(pad, int) else pad
            t, h, w = t_in, h_in + 2 * p[0] - k[1] + 1, w_in + 2 * p[1] - k[2] + 1
        flops = 2.0 * t * h * w * cout * cin * k[0] * k[1] * k[2]
        for dtype, dname in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
            # The input with the strides the decoder gave it.
            x = torch.empty_strided(xs, x_stride, device="cuda", dtype=dtype).normal_()
            wt = torch.randn(*ws, device="cuda", dtype=dtype)
            fn = (lambda: F.conv3d(x, wt, padding=pad)) if op == "conv3d" else (lambda: F.conv2d(x, wt, padding=pad))
            try:
                us = time_us(fn)
            except RuntimeError as e:  # out of memory or no kernel for the shape
                print(f"decoder {op} {list(xs)} {list(ws)} {dname}: {e}", flush=True)
                continue
            row = {"key": "conv", "gpus": [0], "op": "decoder " + op, "cin": cin, "cout": cout, "kernel": list(k), "frames": t, "frames_in": t_in,
                   "h": h, "w": w, "h_in": h_in, "w_in": w_in, "input_stride": list(x_stride), "input_contiguous": x.is_contiguous(),
                   "dtype": dname, "layout": "ncdhw", "time_us": us, "TFLOPs": flops / us * 1e-6,
                   "in_bytes": x.numel() * x.element_size(), "out_bytes": t * cout * h * w * x.element_size(), "via": f"torch.nn.functional.{op}"}
            row["burst_us"] = burst_us(fn)  # not a calibration input: the same call on a rested GPU
            if (key, dname) in in_decoder:  # not a calibration input: how the call ran inside the decoder, bias included
                row["in_decoder_us"], row["in_decoder_calls"] = in_decoder[(key, dname)]
            rows.append(row)
            print(f"conv decoder {op} {list(xs)} stride {list(x_stride)} {list(ws)} {dname}: {us:.1f} us {flops / us * 1e-6:.0f} TFLOP/s"
                  f"{'' if 'in_decoder_us' not in row else ', in the decoder %.1f us' % row['in_decoder_us']}", flush=True)
            del x, wt
        torch.cuda.empty_cache()
    return rows


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


def workspace_bytes(fn):
    """The bytes the caching allocator held at its peak during `fn()` beyond
    what was allocated before the call and the output it returned (after a
    warm-up call that makes cuDNN's plan)."""
    fn()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    y = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    out = y.untyped_storage().nbytes()
    del y
    return peak - before - out


def workspace_rows():
    """`conv_workspace` rows: conv_rows' shapes in both layouts and the
    decoder's own calls (their inputs with the decoder's strides), each dtype."""
    rows = []

    def add(row, fn, x, wt, y_bytes):
        try:
            ws = workspace_bytes(fn)
        except RuntimeError as e:  # out of memory or no kernel for the shape
            print(f"conv_workspace {row['op']} {row['cin']}->{row['cout']} {row['dtype']} {row['layout']}: {e}", flush=True)
            return
        row.update({"key": "conv_workspace", "gpus": [0], "in_bytes": x.untyped_storage().nbytes(), "weight_bytes": wt.numel() * wt.element_size(),
                    "out_bytes": y_bytes, "workspace_bytes": ws})
        rows.append(row)
        print(f"conv_workspace {row['op']} {row['cin']}->{row['cout']} k{row['kernel']} {row['frames']}x{row['h']}x{row['w']} {row['dtype']} "
              f"{row['layout']}: {ws / 2**20:.1f} MiB beyond in {row['in_bytes'] / 2**20:.1f} out {y_bytes / 2**20:.1f} MiB", flush=True)

    for name, cin, cout, k, t, h, w, dims in shapes():
        t_in = t + k[0] - 1
        for dtype, dname in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
            es = torch.tensor([], dtype=dtype).element_size()
            if dims == 3:
                x = torch.randn(1, cin, t_in, h, w, device="cuda", dtype=dtype)
                wt = torch.randn(cout, cin, *k, device="cuda", dtype=dtype)
                pad, last = (0, k[1] // 2, k[2] // 2), torch.channels_last_3d
                conv = lambda xx, ww: F.conv3d(xx, ww, padding=pad)
            else:
                x = torch.randn(t_in, cin, h, w, device="cuda", dtype=dtype)
                wt = torch.randn(cout, cin, k[1], k[2], device="cuda", dtype=dtype)
                pad, last = (k[1] // 2, k[2] // 2), torch.channels_last
                conv = lambda xx, ww: F.conv2d(xx, ww, padding=pad)
            for layout in ("ncdhw", "ndhwc"):
                xx, ww = (x, wt) if layout == "ncdhw" else (x.to(memory_format=last), wt.to(memory_format=last))
                row = {"op": name, "cin": cin, "cout": cout, "kernel": list(k), "frames": t, "frames_in": t_in, "h": h, "w": w,
                       "dtype": dname, "layout": layout}
                add(row, lambda: conv(xx, ww), xx, ww, t * cout * h * w * es)
                del xx, ww
            del x, wt
        torch.cuda.empty_cache()
    calls, _ = decoder_calls(captures=((480, 832, torch.float32),))
    for op, xs, x_stride, ws, pad in calls:
        cout, cin = ws[0], ws[1]
        if op == "conv3d":
            k, (_, _, t_in, h_in, w_in) = tuple(ws[2:]), xs
            p = (pad,) * 3 if isinstance(pad, int) else pad
            t, h, w = t_in + 2 * p[0] - k[0] + 1, h_in + 2 * p[1] - k[1] + 1, w_in + 2 * p[2] - k[2] + 1
        else:
            k, (t_in, _, h_in, w_in) = (1,) + tuple(ws[2:]), xs
            p = (pad,) * 2 if isinstance(pad, int) else pad
            t, h, w = t_in, h_in + 2 * p[0] - k[1] + 1, w_in + 2 * p[1] - k[2] + 1
        for dtype, dname in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
            es = torch.tensor([], dtype=dtype).element_size()
            x = torch.empty_strided(xs, x_stride, device="cuda", dtype=dtype).normal_()
            wt = torch.randn(*ws, device="cuda", dtype=dtype)
            fn = (lambda: F.conv3d(x, wt, padding=pad)) if op == "conv3d" else (lambda: F.conv2d(x, wt, padding=pad))
            row = {"op": "decoder " + op, "cin": cin, "cout": cout, "kernel": list(k), "frames": t, "frames_in": t_in, "h": h, "w": w,
                   "h_in": h_in, "w_in": w_in, "input_stride": list(x_stride), "input_contiguous": x.is_contiguous(), "dtype": dname, "layout": "ncdhw"}
            add(row, fn, x, wt, t * cout * h * w * es)
            del x, wt
        torch.cuda.empty_cache()
    return rows


def main():
    out = sys.argv[1]
    env = {"cudnn": torch.backends.cudnn.version(), "allow_tf32": torch.backends.cudnn.allow_tf32, "cudnn_benchmark": torch.backends.cudnn.benchmark}
    if "--workspace" in sys.argv[2:]:
        write_bench(out, environment(torch, env=env), workspace_rows())
    else:
        write_bench(out, environment(torch, env=env), conv_rows() + decoder_rows())


if __name__ == "__main__":
    main()
