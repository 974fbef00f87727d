#!/usr/bin/env python3
"""The host-span set: copies both ways at once on one GPU, from host memory the
CPU's cache holds or not, to check the model's cached share end to end
(docs/execution-model.md, "Copies"). Writes
validate/sets/span/<case>/schedule.yaml (deterministic; stdlib only).
Usage: validate/sets/span/generate.py [OUTDIR] [--topology FILE]

Every case runs on rank 0 of the topology (default: configs/topologies/
dgx-h100.yaml, an H100 SXM): N pinned copies on an `up` stream (H2D) and
N on a `down` stream (D2H), issued together, no waits.
  both-4m           4 MiB copies, each direction its one 4 MiB buffer
                    again and again (host_span left out: the CPU's cache)
  both-4m-1g        the same, each direction walking 1 GiB (host_span: 1 GiB)
  both-16m          16 MiB copies, one buffer each
  both-16m-1g       16 MiB copies walking 1 GiB
  h2d-4m-1g         the H2D copies of both-4m-1g alone (the control: one way,
                    the span costs nothing)
  offload-both      a layerwise offload both ways, 20 layers: layer i+1's
                    256 MiB of weights H2D (walking 2 GiB) while layer i
                    computes (a 1.5 ms kernel on every SM), then its 64 MiB of
                    activations D2H (walking 1 GiB) beside the next prefetch
  offload-h2d       the same without the D2H copies (the control)
"""
import os
import sys

sys.dont_write_bytecode = True  # nothing written beside the sources
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from schedule_writer import write_schedule  # noqa: E402

MIB = 1 << 20
GIB = 1 << 30


def write(out, topology, name, ops, streams=("up", "down")):
    write_schedule(out, name, topology, streams, ops)


def copy(i, kind, stream, nbytes, span):
    s = f", host_span: {span}" if span else ""
    return f"{{op: memcpy, name: {kind}{i}, kind: {kind}, bytes: {nbytes}, stream: {stream}, host: pinned{s}, async: true}}"


def offload(n, with_d2h):
    """Layer i's weights arrive on `up` (event w{i}), it computes on `compute`
    after them (event c{i}), its activations leave on `down` after that."""
    ops = []
    for i in range(n):
        ops.append(copy(i, "h2d", "up", 256 * MIB, 2 * GIB))
        ops.append(f"{{op: event_record, event: w{i}, stream: up}}")
    for i in range(n):
        ops.append(f"{{op: stream_wait_event, stream: compute, event: w{i}}}")
        ops.append(f"{{op: kernel, name: layer{i}, stream: compute, duration: 1.5 ms}}")
        if with_d2h:
            ops.append(f"{{op: event_record, event: c{i}, stream: compute}}")
            ops.append(f"{{op: stream_wait_event, stream: down, event: c{i}}}")
            ops.append(copy(i, "d2h", "down", 64 * MIB, GIB))
    return ops


def main():
    args = sys.argv[1:]
    here = os.path.dirname(os.path.abspath(__file__))
    topology = os.path.join(here, "..", "..", "..", "configs", "topologies", "dgx-h100.yaml")
    if "--topology" in args:
        i = args.index("--topology")
        topology = os.path.abspath(args[i + 1])
        del args[i:i + 2]
    out = args[0] if args else here
    for name, nbytes, n, span, dirs in (("both-4m", 4 * MIB, 100, 0, "both"), ("both-4m-1g", 4 * MIB, 100, GIB, "both"),
                                        ("both-16m", 16 * MIB, 25, 0, "both"), ("both-16m-1g", 16 * MIB, 25, GIB, "both"),
                                        ("h2d-4m-1g", 4 * MIB, 100, GIB, "h2d")):
        ops = [copy(i, "h2d", "up", nbytes, span) for i in range(n)]
        if dirs == "both":
            ops += [copy(i, "d2h", "down", nbytes, span) for i in range(n)]
        write(out, topology, name, ops)
    for name, with_d2h in (("offload-both", True), ("offload-h2d", False)):
        write(out, topology, name, offload(20, with_d2h), streams=("up", "down", "compute"))


if __name__ == "__main__":
    main()
