"""Writes a one-rank schedule (overlapsim.schedule YAML) for the generated
validation sets (validate/sets/handoff/, validate/sets/span/): deterministic, stdlib only."""
import gzip
import os

# Past this size a schedule is written gzipped (overlapsim and its GPU runner
# read schedule.yaml.gz as they are), to keep the tracked tree small.
GZIP_OVER_BYTES = 64 * 1024


def write_schedule(out, name, topology, streams, ops):
    """out/name/schedule.yaml (schedule.yaml.gz past GZIP_OVER_BYTES, with no
    name or time in its header): rank 0 runs `ops` (flow-style YAML maps, one
    per line) on `streams`; `topology` is a path, written relative to the file."""
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    topo = os.path.relpath(topology, d)
    lines = [f"name: {name}", f"topology: {topo}", "ranks: 1", "settings: {device_max_connections: 8, nccl_p2p_disable: false}", "streams:"]
    lines += [f"  - {{name: {s}, priority: 0}}" for s in streams]
    lines += ["groups:", "  []", "programs:", "  - rank: 0", "    ops:"]
    lines += [f"      - {op}" for op in ops]
    text = ("\n".join(lines) + "\n").encode()
    if len(text) > GZIP_OVER_BYTES:
        with open(os.path.join(d, "schedule.yaml.gz"), "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as f:
            f.write(text)
    else:
        with open(os.path.join(d, "schedule.yaml"), "wb") as f:
            f.write(text)
