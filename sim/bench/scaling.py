#!/usr/bin/env python3
"""How a run's cost grows with the GPUs it simulates and the steps it runs: the scaling exponents
of docs/performance.md (issue 82 item 5).

Runs `overlapsim run` on the SP 128 cluster workload (Ulysses 8 x ring R on the 1,024-GPU
InfiniBand cluster) over ring degrees (8 to 128 GPUs) at two step counts, and over step counts at
a fixed degree; each point's CPU time (user + system of the child, the best of --repeats runs:
wall time on a shared machine moves by tens of percent, CPU time less) and peak RSS. Prints the
tables and the least-squares slopes of log(a step's CPU time) against log(GPUs) and of log(CPU
time) against log(steps): 1.0 is linear.

  python3 sim/bench/scaling.py [--binary build/bin/overlapsim] [--repeats 3]
"""
import argparse
import math
import os
import subprocess
import sys
import time

WORKLOAD = "configs/workloads/wan22-720p-cluster-sp128.yaml"


def run_once(binary, sets):
    """CPU seconds, wall seconds and peak RSS (MB) of one run."""
    cmd = [binary, "run", WORKLOAD] + [a for s in sets for a in ("--set", s)]
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.execv(binary, cmd)
    _, status, usage = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"scaling.py: {' '.join(cmd)} failed (exit {os.waitstatus_to_exitcode(status)})")
    return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024


def point(binary, sets, repeats):
    runs = [run_once(binary, sets) for _ in range(repeats)]
    best = min(runs)
    return {"cpu_s": best[0], "wall_s": best[1], "rss_mb": max(r[2] for r in runs)}


def slope(xs, ys):
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default="build/bin/overlapsim")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=40, help="the longer run of the GPU sweep (the shorter: 2 steps)")
    ap.add_argument("--ring", type=int, default=4, help="ring degree of the step sweep (GPUs = 8 x ring)")
    a = ap.parse_args()

    print(f"{WORKLOAD}, best CPU time of {a.repeats} runs")
    lo, hi = 2, a.steps
    print(f"\nby GPUs: a step's CPU time from runs of {lo} and {hi} steps, the rest set-up (reading the "
          f"cluster's topology, building routes)\n| GPUs | CPU s, {lo} steps | CPU s, {hi} steps | a step, ms | set-up, s | peak MB |\n"
          "| --- | --- | --- | --- | --- | --- |")
    gpus, per_step = [], []
    for ring in (1, 2, 4, 8, 16):
        p, q = (point(a.binary, [f"parallelism.ring={ring}", f"steps={n}"], a.repeats) for n in (lo, hi))
        step = (q["cpu_s"] - p["cpu_s"]) / (hi - lo)
        gpus.append(8 * ring)
        per_step.append(step)
        print(f"| {8 * ring} | {p['cpu_s']:.2f} | {q['cpu_s']:.2f} | {step * 1e3:.0f} | {p['cpu_s'] - lo * step:.2f} | "
              f"{max(p['rss_mb'], q['rss_mb']):.0f} |", flush=True)

    print(f"\nby steps ({8 * a.ring} GPUs)\n| steps | CPU s | wall s | peak MB |\n| --- | --- | --- | --- |")
    steps, cpu = [], []
    for n in (5, 10, 20, 40, 80):
        p = point(a.binary, [f"parallelism.ring={a.ring}", f"steps={n}"], a.repeats)
        steps.append(n)
        cpu.append(p["cpu_s"])
        print(f"| {n} | {p['cpu_s']:.2f} | {p['wall_s']:.2f} | {p['rss_mb']:.0f} |", flush=True)
    ms = sum(steps) / len(steps)
    line = sum((x - ms) * y for x, y in zip(steps, cpu)) / sum((x - ms) ** 2 for x in steps)
    # A step at few GPUs can cost less than the runs' spread: the slope is over the steps measured above it.
    fit = [(g, t) for g, t in zip(gpus, per_step) if t > 0.002]
    print(f"\na step's CPU time grows as GPUs^{slope(*zip(*fit)):.2f} ({fit[0][0]} to {fit[-1][0]} GPUs); "
          f"at {8 * a.ring} GPUs a step costs {line * 1e3:.0f} ms (least squares over {steps[0]}-{steps[-1]} steps), "
          f"the whole run grows as steps^{slope(steps, cpu):.2f} there")

if __name__ == "__main__":
    main()
