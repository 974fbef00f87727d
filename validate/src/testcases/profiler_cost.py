"""framework.py's `profiler_cost` testcase: the host time per call bare and
under torch.profiler, and what the profiler records per call
(`overhead_profiler` rows; reported, not fitted)."""
import json
import tempfile

import torch
import torch.nn.functional as F

from host_timing import host_us_per_call


def profiler_recorded_per_call(op, kwargs, calls=20):
    """What torch.profiler records per call of `op` in one setting, by the
    trace's event category (`cpu_op`: ATen ops and other annotations,
    `cuda_runtime`/`cuda_driver`: CUDA API calls, `kernel`, `gpu_memcpy`, ...),
    less what a profile of nothing but the closing synchronize records: the
    events per call and their summed duration per call (us)."""
    from torch.profiler import ProfilerActivity, profile

    def counts(n):
        op()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], **kwargs) as prof:
            for _ in range(n):
                op()
            torch.cuda.synchronize()
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            prof.export_chrome_trace(f.name)
            with open(f.name) as exported:
                events = json.load(exported).get("traceEvents", [])
        out = {}
        for e in events:
            if e.get("ph") == "X":
                n, us = out.get(e.get("cat", ""), (0, 0.0))
                out[e.get("cat", "")] = (n + 1, us + float(e.get("dur", 0)))
        return out

    empty, full = counts(0), counts(calls)
    per = {}
    for cat in sorted(set(full) | set(empty)):
        (n, us), (n0, us0) = full.get(cat, (0, 0.0)), empty.get(cat, (0, 0.0))
        if n != n0:
            per[cat] = {"events": (n - n0) / calls, "us": (us - us0) / calls}
    return per


def profiler_cost_rows(calls=400, rounds=3):
    """The host time per call bare and under torch.profiler, as users record
    traces (`overhead_profiler`: each op's host_us in each setting; reported,
    not fitted): `bare`, `default` (CPU and CUDA activities, nothing else),
    `shapes` (record_shapes), `sync` (CUDA sync events) and `shapes_sync`
    (both, what import-trace reads best), with what the profiler records per call in that setting
    (`recorded`: events by trace category). An imported trace's host time
    between calls holds the profiler's own cost; re-planning a trace to a
    depth whose host is on the critical path needs it per recorded event
    (docs/import-trace.md, miss (e)). `rounds` passes over every setting, its
    order rotated each pass (the host's pace drifts within a process); calls
    back to back behind GEMMs that keep the GPU busy, as framework_op_rows."""
    from torch.profiler import ProfilerActivity, profile
    big = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    xs = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
    h = 3072
    x = torch.randn(4096, h, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(h, h, device="cuda", dtype=torch.bfloat16)
    q = torch.randn(1, 2, 64, 64, device="cuda", dtype=torch.bfloat16)
    flat = torch.randn(1 << 20, device="cuda", dtype=torch.bfloat16)
    side, compute = torch.cuda.Stream(), torch.cuda.current_stream()
    ev = torch.cuda.Event()
    ev.record(side)
    pinned = torch.empty(2048, dtype=torch.bfloat16, pin_memory=True)
    small = torch.empty(2048, device="cuda", dtype=torch.bfloat16)
    ops = {"linear_small": lambda: F.linear(xs, xs), "add_small": lambda: xs + xs, "sdpa_small": lambda: F.scaled_dot_product_attention(q, q, q),
           "linear_4096": lambda: F.linear(x, w), "layer_norm_4096": lambda: F.layer_norm(x, (h,)), "view": lambda: flat.view(1024, 1024),
           "event_record": lambda: torch.cuda.Event().record(side), "wait_event": lambda: compute.wait_event(ev),
           "copy_pinned": lambda: small.copy_(pinned, non_blocking=True)}

    def mixed():  # a layerwise prefetch's pattern: a wait, ops, a record (sync events' cost beside the ops)
        compute.wait_event(ev)
        F.linear(xs, xs)
        flat.view(1024, 1024)
        torch.cuda.Event().record(side)
    ops["wait_linear_view_record"] = mixed
    settings = {"bare": None, "default": {}, "shapes": {"record_shapes": True}, "sync": {}, "shapes_sync": {"record_shapes": True}}
    for name in ("sync", "shapes_sync"):
        try:
            settings[name]["experimental_config"] = torch._C._profiler._ExperimentalConfig(enable_cuda_sync_events=True)
        except (AttributeError, TypeError):
            settings[name]["sync_events"] = False
    kwargs = {s: {k: v for k, v in extra.items() if k != "sync_events"} for s, extra in settings.items() if extra is not None}
    recorded = {(s, name): profiler_recorded_per_call(op, kwargs[s]) for s in kwargs for name, op in ops.items()}
    rows = []
    names = list(settings)
    for r in range(rounds):
        for setting in names[r % len(names):] + names[:r % len(names)]:
            extra = settings[setting]
            for name, op in ops.items():
                # ~0.1 ms of GPU work a 4,096-token linear: 100 calls stay under the launch queue.
                n = 100 if name.endswith("_4096") else calls
                if extra is None:
                    us = host_us_per_call(op, n, 20, big)
                else:
                    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], **kwargs[setting]):
                        us = host_us_per_call(op, n, 20, big)
                row = {"key": "overhead_profiler", "op": name, "setting": setting, "round": r, "host_us": us, "calls": n,
                       "sync_events": setting in ("sync", "shapes_sync") and extra.get("sync_events", True), "framework": "pytorch " + torch.__version__}
                if extra is not None:
                    row["recorded"] = recorded[(setting, name)]
                rows.append(row)
                print("profiler", r, setting, name, round(us, 2), "us", row.get("recorded", ""), flush=True)
    return rows
