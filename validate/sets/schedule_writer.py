"""Writes a one-rank schedule (overlapsim.schedule YAML) for the generated
validation sets (validate/sets/handoff/, validate/sets/span/): deterministic, stdlib only."""
import os


def write_schedule(out, name, topology, streams, ops):
    """out/name/schedule.yaml: rank 0 runs `ops` (flow-style YAML maps, one per
    line) on `streams`; `topology` is a path, written relative to the file."""
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    topo = os.path.relpath(topology, d)
    lines = [f"name: {name}", f"topology: {topo}", "ranks: 1", "settings: {device_max_connections: 8, nccl_p2p_disable: false}", "streams:"]
    lines += [f"  - {{name: {s}, priority: 0}}" for s in streams]
    lines += ["groups:", "  []", "programs:", "  - rank: 0", "    ops:"]
    lines += [f"      - {op}" for op in ops]
    with open(os.path.join(d, "schedule.yaml"), "w") as f:
        f.write("\n".join(lines) + "\n")
