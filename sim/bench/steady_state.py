#!/usr/bin/env python3
"""Where a run's forwards start to repeat: reads records.json (`overlapsim run --out DIR --records`)
and, for each rank asked for, compares every forward (the ops from one `step N ...` marker to the
next) with the forward after it. A forward repeats when the next one has the same op kinds and
every time of every op (issue, return, start, end) lies one constant later, to the picosecond.

Prints per rank: the forwards, the first from which every later pair repeats (none: the last pair
still differs), the period, and per pair `=` (repeats) or how many distinct shifts its times show.
A measurement of what a steady-state replay would skip (issue 82; docs/performance.md).

  python3 sim/bench/steady_state.py OUT/records.json [--ranks N]
"""
import argparse
import json


def ps(ns):
    return round(ns * 1000)


def forwards(ops):
    return [i for i, o in enumerate(ops) if o[1] == "marker" and o[2].startswith("step ")]


def compare(ops, a, b, c):
    """'=' where forward [b, c) is forward [a, b) one constant later, else a short reason."""
    n = b - a
    if c - b != n:
        return "len"
    shifts = set()
    for i in range(a, b):
        o, p = ops[i], ops[i + n]
        if o[1] != p[1]:
            return "kind"
        for col in (3, 4, 5, 6):
            shifts.add(ps(p[col]) - ps(o[col]))
    return "=" if len(shifts) == 1 else str(len(shifts))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records")
    ap.add_argument("--ranks", type=int, default=1, help="how many of the recorded ranks (default 1)")
    args = ap.parse_args()
    with open(args.records) as f:
        doc = json.load(f)
    for rank in doc["ranks"][: args.ranks]:
        ops = rank["ops"]
        marks = forwards(ops)
        pairs = [compare(ops, a, b, c) for a, b, c in zip(marks, marks[1:], marks[2:])]
        first = None
        if pairs and pairs[-1] == "=":
            first = len(pairs) - 1
            while first > 0 and pairs[first - 1] == "=":
                first -= 1
        period = ps(ops[marks[first + 1]][5]) - ps(ops[marks[first]][5]) if first is not None else None
        print(f"{doc['name']} rank {rank['rank']}: {len(marks)} forwards, {len(ops)} ops; "
              f"repeating from forward {first if first is not None else 'none'}"
              f"{f', period {period} ps' if period is not None else ''}; pairs: {' '.join(pairs)}")


if __name__ == "__main__":
    main()
