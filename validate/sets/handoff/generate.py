#!/usr/bin/env python3
"""The hand-off set: schedules where the engines hand over to each other
hundreds of times, to check the model's hand-offs end to end
(docs/execution-model.md, "Hand-offs"). Writes validate/sets/handoff/<case>/schedule.yaml[.gz]
(deterministic; stdlib only). Usage: validate/sets/handoff/generate.py [OUTDIR]

Every case runs on one GPU (rank 0 of the h200x4-nvlink topology): N rounds of
a spinning kernel of 20 us (`duration`: every SM on %globaltimer) and a pinned
copy of 256 KiB, so a round is ~28 us of work and each hand-off (~6 us one
way, ~3 us the other) shows.
  same-stream     kernel, H2D copy, kernel, ... on one stream (the stream's
                  last op on the other engine: a hand-off every op)
  two-streams     kernel on `compute`, an event, the copy stream waits, H2D
                  copy on `copy`, an event, compute waits: ping-pong through
                  events (each op waits on one still running when issued)
  two-streams-d2h the same with D2H copies
  side-by-side    the kernels on `compute` and the copies on `copy`, no
                  waits: they overlap, no hand-off (the control)
"""
import os
import sys

sys.dont_write_bytecode = True  # nothing written beside the sources
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from schedule_writer import write_schedule  # noqa: E402

N = 200
KERNEL = "20 us"
BYTES = 262144


def write(out, name, streams, ops):
    topology = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "configs", "topologies", "h200x4-nvlink.yaml")
    write_schedule(out, name, topology, streams, ops)


def kernel(i, stream):
    return f"{{op: kernel, name: k{i}, stream: {stream}, duration: {KERNEL}}}"


def copy(i, stream, kind="h2d"):
    return f"{{op: memcpy, name: c{i}, kind: {kind}, bytes: {BYTES}, stream: {stream}, host: pinned, async: true}}"


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    same = []
    for i in range(N):
        same += [kernel(i, "compute"), copy(i, "compute")]
    write(out, "same-stream", ["compute"], same)
    for name, kind in (("two-streams", "h2d"), ("two-streams-d2h", "d2h")):
        ops = []
        for i in range(N):
            ops += [kernel(i, "compute"), f"{{op: event_record, event: k{i}, stream: compute}}",
                    f"{{op: stream_wait_event, stream: copy, event: k{i}}}", copy(i, "copy", kind),
                    f"{{op: event_record, event: c{i}, stream: copy}}", f"{{op: stream_wait_event, stream: compute, event: c{i}}}"]
        write(out, name, ["compute", "copy"], ops)
    side = [kernel(i, "compute") for i in range(N)] + [copy(i, "copy") for i in range(N)]
    write(out, "side-by-side", ["compute", "copy"], side)


if __name__ == "__main__":
    main()
