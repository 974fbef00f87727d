#!/usr/bin/env python3
"""Prefetch re-planning against measured programs (docs/import-trace.md, "Another prefetch depth").

Each reference program's torch.profiler trace of the layerwise prefetch (validate/reference/<machine>/traces*/,
depth j) is imported as recorded and re-planned to every depth k the machine's programs were measured at
(programs/ and its repeats: validate/programs/dit_offload.py, 8 blocks run twice) by `run --prefetch k
--prefetch-cycle 8` with the machine's calibration (the other host memory with `--host-memory`; its measured
kernels re-clocked, run's default there, asked explicitly with --reclock-measured), and its step
time compared with the program's measured one: the median over the sessions of each session's median run.

Folders in OWN_BOX are checked against the box that recorded them instead (pinned asked): their sessions are the
folders named there (each configuration's NAME.json beside its trace). Each of their traces is also imported as recorded
(no --prefetch: its own depth and host memory, its waits inferred where it has no sync events) and held to the
program's unprofiled step, the median of its own NAME.json's timed runs (RECORDED_TARGET: the issue's 5 % pinned, 10 %
pageable), and to its own timeline (the profiled run's makespan, `profiled_s`) within SELF_TARGET. A pageable
one runs as `run` runs it by default: its pageable copies at the rates its own trace's ran at (settings.copy_rates, the
box's: its CPU stages them), its pinned ones at the calibration's; it is also run at the calibration's pageable rate
(--pageable-rate-from-calibration, the "other copy rate" column): what the box's rate, not the model, adds.

Prints the tables and a summary line per own-box machine; fails where a pair or a trace as recorded not listed in MISSES
leaves its target, naming it, or where docs/import-trace.md's tables ("How well it predicts") no longer hold a row or a
summary line as printed (PRINT_DOC_TABLE=1 prints them).

  python3 tests/cli/prefetch-accuracy.py OVERLAPSIM REPO_ROOT WORK_DIR
"""
import glob
import gzip
import json
import os
import re
import statistics
import subprocess
import sys

TARGET = 5.0
# A trace replayed as it was recorded against the profiled run's own makespan (no model change between them).
SELF_TARGET = 2.0
# A trace imported as recorded against its program's unprofiled step (issue 79's targets), by host memory.
RECORDED_TARGET = {"pinned": 5.0, "pageable": 10.0}
# Trace folders measured on their own box, every configuration with its timed runs (NAME.json): machine -> folder ->
# the folders whose NAME.json are its sessions.
OWN_BOX = {
    "h100-sxm": {"traces-default-grid": ["traces-default-grid", "traces-default-grid-run-2"]},
    "h200": {"traces-default-grid": ["traces-default-grid"]},
}
# Pairs that miss the target, by why (docs/import-trace.md, "Another prefetch depth"): each row a label, a test
# of a pair (a dict of the table's fields) and the reason printed for it; the first that holds is named.
MISSES = [
    ("a", lambda r: r["asked"] == "pageable" and r["machine"] == "h100-sxm" and not r.get("recorded"),
     "pageable copies against the programs' boxes: a pageable trace's at the rate its own box staged them (run's default; "
     "traces/ 7.4-7.6, traces-default/ 7.9-9.8 GB/s), a pinned trace's asked pageable at the calibration's 8.5 GB/s; "
     "pageable runs spread 7-12 % within a session, 20-25 % from box to box: docs/accuracy.md)"),
    ("j", lambda r: not r.get("recorded") and r["machine"] == "h100-sxm" and r["trace"].startswith("traces-default-grid/")
     and r["n"] > 1 and min(abs(r["sims"][r["used"]] / x - 1) for x in (r["lo"], r["hi"])) * 100 <= TARGET,
     "the box's two sessions ran the program this far apart (the blocking 4,096-token program at 106.8 and 113.3 ms, its host on "
     "the critical path): within the target of one of them"),
    ("c", lambda r: r["machine"] == "h100-sxm" and r["trace"].endswith("4096-layerwise-pf0-pageable") and r["k"] == 0 and r["asked"] == "pinned",
     "the programs' boxes ran the blocking pinned program at 103.5 and 116.0 ms: +5.6 % is inside their spread; the pageable trace's "
     "host time between calls (measured while each pageable copy held the host) is on the blocking program's critical path, as in (e)"),
    ("d", lambda r: r["machine"] == "h100-sxm" and r["k"] == 2 and r["asked"] == "pinned",
     "the H100 programs' boxes ran depth 2 at 80.6 and 82.3 ms, slower than depth 1 (75.4, 80.6) and 3 (75.6, 76.7) on the same boxes; "
     "the trace's own box ran it at 75.7 ms (its re-plan to 2: 76.6 ms, +1.3 %)"),
    ("e", lambda r: r["j"] > 0 and r["k"] == 0 and r["asked"] == "pinned" and r["trace"].startswith("traces/"),
     "depth 0 puts the host on the critical path after each synchronize, and the re-plan keeps the trace's host time between calls: "
     "43.0 ms a step in the H100 depth-2 trace (record_shapes and sync events recorded) against 15.5-29.2 ms in the same program's "
     "traces profiled with the defaults (traces-default/: -3.5 %); the host's pace moves 2-3x between profiled runs on one box "
     "(docs/journal/2026-12-07-replan-depth0-host.md)"),
    ("f", lambda r: r["machine"] == "h200x4-nvlink",
     "the 4xH200 trace's box copied at 44-47 GB/s per GPU against the calibration's ~39: its plain replay is +11.5 % against "
     "the program (docs/accuracy.md); depth 0 adds the profiled host time of (e)"),
]


def listed(r):
    """Why the pair misses, where MISSES says."""
    for label, test, why in MISSES:
        if test(r):
            return label
    return None


def manifest(folder, key):
    """A top-level or SECTION.KEY scalar of FOLDER/manifest.yaml, or a list of scalars ([a, b])."""
    sec, _, k = key.rpartition(".")
    cur = None
    for line in open(os.path.join(folder, "manifest.yaml")):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line.startswith(" "):
            cur = line.split(":")[0]
            if not sec and cur == k:
                return line.split(":", 1)[1].strip().strip("'")
            continue
        if sec and cur == sec and line.startswith("  " + k + ":"):
            v = line.split(":", 1)[1].strip()
            if v.startswith("["):
                return [x.strip() for x in v.strip("[]").split(",") if x.strip()]
            return v.strip("'")
    return None


def step_ms(text):
    m = re.search(r"^  makespan .* steps, step time mean ([0-9.]+) ms", text, re.M)
    if not m:
        raise SystemExit("no step time in:\n" + text)
    return float(m.group(1))


def pageable_rate_gbs(files, kind="Pageable"):
    """The rate the trace's host-to-device copies from pageable (or pinned) memory ran at: their bytes over their time (GB/s)."""
    nbytes = us = 0
    for f in files:
        for e in json.load(gzip.open(f))["traceEvents"]:
            if e.get("cat") == "gpu_memcpy" and "HtoD" in e["name"] and kind in e["name"]:
                nbytes += e["args"]["bytes"]
                us += e["dur"]
    return nbytes / us / 1e3


def cal_rate(cal, key):
    """CAL's KEY bandwidth (GB/s)."""
    m = re.search(rf"^  {key}: ([0-9.]+) GB/s$", open(cal).read(), re.M)
    if not m:
        raise SystemExit(f"{cal}: no {key} line")
    return float(m.group(1))


def with_rate(cal, key, gbs, out):
    """CAL with its KEY bandwidth (pageable_bandwidth: pageable H2D; copy_engine_bandwidth: pinned H2D) set to GBS, written to OUT."""
    text = open(cal).read()
    new, n = re.subn(rf"^(  {key}:) .*$", rf"\1 {gbs:.4f} GB/s", text, flags=re.M)
    if n != 1:
        raise SystemExit(f"{cal}: no {key} line")
    with open(out, "w") as f:
        f.write(new)
    return out


def recorded(osim, work, machine, M, tdir, topo, cal):
    """Each trace of an own-box folder imported as recorded and replayed, against its own NAME.json."""
    out = []
    for t in sorted(glob.glob(os.path.join(M, tdir, "*layerwise-pf*.trace.json.gz"))):
        name = os.path.basename(t).replace(".trace.json.gz", "")
        result = json.load(open(os.path.join(M, tdir, name + ".json")))
        timed = (result.get("median_s") or statistics.median(result["makespans_s"])) * 1e3
        profiled = result["profiled_s"] * 1e3
        host = "pageable" if name.endswith("pageable") else "pinned"
        sched = os.path.join(work, f"{machine}-{tdir}-{name}-recorded.yaml")
        imp = subprocess.run([osim, "import-trace", t, "-t", topo, "-o", sched, "--force"], capture_output=True, text=True)
        if imp.returncode != 0:
            raise SystemExit(f"import-trace {t}: exit {imp.returncode}\n{imp.stderr}")
        # As `run` runs it by default: a pageable trace's pageable copies at its own measured rates.
        text = simulate([osim, "run", sched, "--calibration", cal])
        sim = step_ms(text)
        r = dict(recorded=True, machine=machine, trace=tdir + "/" + name, j=int(re.search(r"-pf(\d)-", name).group(1)), host=host,
                 asked=host, sim=sim, timed=timed, profiled=profiled, err=100 * (sim / timed - 1), self_err=100 * (sim / profiled - 1),
                 n=len(result["makespans_s"]), rate=None, rate_sim=None, rate_err=None)
        r["k"] = r["j"]
        if host == "pageable":
            m = re.search(r"^copy rates: pageable copies at the rates the trace's ran at \(h2d_pageable ([0-9.]+) GB/s", text, re.M)
            if not m:
                raise SystemExit(f"run {sched}: no line on its pageable copies' rate:\n{text}")
            r["own_rate"] = float(m.group(1))
            r["rate"] = cal_rate(cal, "pageable_bandwidth")
            r["rate_sim"] = step_ms(simulate([osim, "run", sched, "--calibration", cal, "--pageable-rate-from-calibration"]))
            r["rate_err"] = 100 * (r["rate_sim"] / timed - 1)
        elif abs(r["self_err"]) > SELF_TARGET:
            # Off its own timeline: run again at the rate its own pinned copies ran at (what the box's copies add).
            r["rate"] = pageable_rate_gbs([t], "Pinned")
            own = with_rate(cal, "copy_engine_bandwidth", r["rate"], os.path.join(work, f"{machine}-{tdir}-{name}-own-rate.yaml"))
            r["rate_sim"] = step_ms(simulate([osim, "run", sched, "--calibration", own]))
            r["rate_err"] = 100 * (r["rate_sim"] / profiled - 1)
        out.append(r)
    return out


def simulate(cmd):
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {res.returncode}\n{res.stderr}")
    return res.stdout


def summary_line(label, errs, target):
    """Within target / total, median and worst absolute error."""
    a = [abs(e) for e in errs]
    if not a:
        return f"{label}: none"
    worst = max(errs, key=abs)
    return (f"{label}: {sum(x <= target for x in a)} of {len(a)} within {target:.0f} %, median {statistics.median(a):.1f} %, "
            f"worst " + f"{worst:+.1f} %".replace("-", "−"))


def recorded_table(recs):
    """The traces as recorded as docs/import-trace.md shows them."""
    names = {"h100-sxm": "H100", "h200": "H200"}
    out = []
    for r in recs:
        folder, name = r["trace"].split("/")
        t = name.replace("dit-", "").replace("layerwise-", "").replace("-pf", " pf").replace("-pinned", " pinned").replace("-pageable", " pageable")
        label = listed(r) if abs(r["err"]) > RECORDED_TARGET[r["host"]] else None
        e = f"{r['err']:+.1f} %" + (f" ({label})" if label else "") + (f" at {r['own_rate']:.2f} GB/s" if r["host"] == "pageable" else "")
        rate = (f"{r['rate_err']:+.1f} % at the calibration's {r['rate']:.2f} GB/s" if r["host"] == "pageable"
                else f"{r['rate_err']:+.1f} % of its timeline at {r['rate']:.2f} GB/s pinned") if r["rate"] else ""
        out.append((f"| {names[r['machine']]} {t} ({folder}/) | {r['sim']:.1f} | {r['self_err']:+.1f} % of {r['profiled']:.1f} | "
                    f"{e} of {r['timed']:.1f} | {rate} |").replace("-", "−").replace("(traces−default−grid/)", "(traces-default-grid/)"))
    return out


# The traces imported as recorded in this run (each once, whatever a previous run left in the work folder).
IMPORTED = set()


def doc_table(rows):
    """The table's rows as docs/import-trace.md shows them: per trace and host memory asked, each depth's error of the
    measured ms (ᵣ: kernels re-modelled; (x): the miss's cause)."""
    names = {"h100-sxm": "H100", "h200": "H200", "h200x4-nvlink": "4×H200"}
    cells = {}
    for r in rows:
        e = f"{r['errs'][r['used']]:+.1f}".replace("-", "−")
        label = listed(r) if abs(r["errs"][r["used"]]) > TARGET else None
        cell = f"{e} %" + (" ᵣ" if r["used"] else "") + (f" ({label})" if label else "") + f" of {r['med']:.1f}"
        cells.setdefault((r["machine"], r["trace"], r["asked"]), {})[r["k"]] = cell
    out = []
    for (machine, trace, asked), d in cells.items():
        folder, name = trace.split("/")
        t = name.replace("dit-", "").replace("layerwise-", "").replace("sp4-16384-nccl", "sp4 16384")
        t = t.replace("-pf", " pf").replace("-pinned", " pinned").replace("-pageable", " pageable")
        out.append(f"| {names[machine]} {t} ({folder}/) | {asked} | " + " | ".join(d.get(k, "") for k in range(4)) + " |")
    return out


def main():
    osim, root, work = sys.argv[1:4]
    work = os.path.join(work, "prefetch-accuracy")
    os.makedirs(work, exist_ok=True)
    rows, failed, recs = [], [], []
    for machine in ("h100-sxm", "h200", "h200x4-nvlink"):
        M = os.path.join(root, "validate/reference", machine)
        topo = os.path.normpath(os.path.join(M, manifest(M, "topology")))
        cal = os.path.normpath(os.path.join(M, manifest(M, "calibration.file")))
        programs = [manifest(M, "programs.runs")] + (manifest(M, "programs.repeats") or [])
        for tdir in ("traces", "traces-default", *OWN_BOX.get(machine, {})):
            if not os.path.isdir(os.path.join(M, tdir)):
                continue
            sessions = OWN_BOX.get(machine, {}).get(tdir, programs)
            steps = manifest(M, tdir.replace("-", "_") + ".steps") if tdir == "traces" else None
            names = sorted({re.sub(r"(\.rank\d+)?\.trace\.json\.gz$", "", os.path.basename(f))
                            for f in glob.glob(os.path.join(M, tdir, "*layerwise-pf*.trace.json.gz"))})
            for name in names:
                j = int(re.search(r"-pf(\d)-", name).group(1))
                host = "pageable" if name.endswith("pageable") else "pinned"
                files = sorted(glob.glob(os.path.join(M, tdir, name + "*.trace.json.gz")))
                for k in range(4):
                    # The issue's re-planning target is pinned; (a) holds every pageable one of the programs' boxes.
                    for asked_host in ("pinned",) if tdir in OWN_BOX.get(machine, {}) else ("pinned", "pageable"):
                        program = re.sub(r"-pf\d-(pinned|pageable)$", f"-pf{k}-{asked_host}", name)
                        measured = []
                        for s in sessions:
                            f = os.path.join(M, s, program + ".json")
                            if os.path.exists(f):
                                r = json.load(open(f))
                                measured.append(r.get("median_s") or statistics.median(r["makespans_s"]))
                        if not measured:
                            continue
                        # Imported as recorded once; `run --prefetch` re-plans it and --reclock-measured (its default
                        # there, asked explicitly) gives its measured kernels the clock of the plan asked.
                        out = os.path.join(work, f"{machine}-{tdir}-{name}-recorded-all.yaml")
                        if out not in IMPORTED:
                            IMPORTED.add(out)
                            cmd = [osim, "import-trace", *files, "-t", topo, "-o", out, "--force"] + (["--steps", steps] if steps else [])
                            imp = subprocess.run(cmd, capture_output=True, text=True)
                            if imp.returncode != 0:
                                raise SystemExit(f"{' '.join(cmd)}: exit {imp.returncode}\n{imp.stderr}")
                        base = [osim, "run", out, "--calibration", cal, "--prefetch", str(k), "--prefetch-cycle", "8", "--reclock-measured"]
                        base += ["--host-memory", asked_host] if asked_host != host else []
                        sims = []
                        for extra in ([], ["--remodel-kernels"]):
                            res = subprocess.run(base + extra, capture_output=True, text=True)
                            if res.returncode != 0:
                                raise SystemExit(f"{' '.join(base + extra)}: exit {res.returncode}\n{res.stderr}")
                            sims.append(step_ms(res.stdout))
                        med = statistics.median(measured) * 1e3
                        errs = [100 * (x / med - 1) for x in sims]
                        # Measured kernels where the GPU keeps its load; re-modelled where the plan changes whether
                        # it idles between blocks (depth 0 or pageable copies against depth 1 or more, pinned): the
                        # measured time carries the clock the trace's GPU ran at.
                        used = 1 if (j == 0 or host == "pageable") != (k == 0 or asked_host == "pageable") else 0
                        key = (machine, tdir, name, k, asked_host)
                        rows.append(dict(machine=machine, trace=tdir + "/" + name, j=j, k=k, host=host, asked=asked_host, sims=sims, errs=errs,
                                         used=used, med=med, lo=min(measured) * 1e3, hi=max(measured) * 1e3, n=len(measured), key=key))
                        if abs(errs[used]) > TARGET and not listed(rows[-1]):
                            failed.append(key)
            if tdir in OWN_BOX.get(machine, {}):
                for r in recorded(osim, work, machine, M, tdir, topo, cal):
                    recs.append(r)
                    if abs(r["err"]) > RECORDED_TARGET[r["host"]] and not listed(r):
                        failed.append(f"{r['trace']} as recorded: {r['sim']:.2f} ms against its timed runs' {r['timed']:.2f} ms")
                    # Pageable too: its pageable copies at its own box's rate (run's default). A pinned one may be off by
                    # its box's pinned rate: within the target at that rate.
                    if abs(r["self_err"]) > SELF_TARGET and not (r["host"] == "pinned" and r["rate_err"] is not None and abs(r["rate_err"]) <= SELF_TARGET):
                        failed.append(f"{r['trace']} replayed to {r['sim']:.2f} ms against its own timeline's {r['profiled']:.2f} ms")
    print(f"{'machine':<14} {'trace':<48} {'j->k':>5} {'host':>17} {'measured: median, sessions, range':>36}   "
          f"{'measured kernels':>18}   {'re-modelled':>18}")
    hits, reasons = 0, set()
    for r in rows:
        hostcol = r["host"] if r["asked"] == r["host"] else f"{r['host']}->{r['asked']}"
        e = r["errs"][r["used"]]
        label = listed(r)
        mark = "" if abs(e) <= TARGET else (f"  miss ({label})" if label else "  MISS")
        if abs(e) > TARGET and label:
            reasons.add(label)
        hits += abs(e) <= TARGET
        cols = [f"{x:>8.2f} ms {y:>+6.1f}%{'*' if i == r['used'] else ' '}" for i, (x, y) in enumerate(zip(r["sims"], r["errs"]))]
        print(f"{r['machine']:<14} {r['trace']:<48} {r['j']:>2}->{r['k']} {hostcol:>17} {r['med']:>8.2f} ms {r['n']:>2} "
              f"{r['lo']:>8.2f}-{r['hi']:>8.2f} ms   {cols[0]}   {cols[1]}{mark}")
    print("* the prediction: measured kernels; re-modelled (run --remodel-kernels) where the plan changes whether the GPU idles "
          "between blocks (depth 0 or pageable against depth 1 or more, pinned)")
    for label, sel in (("same host memory", lambda r: r["host"] == r["asked"]), ("pinned asked", lambda r: r["asked"] == "pinned"),
                       ("all", lambda r: True)):
        rs = [r for r in rows if sel(r)]
        print(f"{label}: {sum(abs(r['errs'][r['used']]) <= TARGET for r in rs)} of {len(rs)} pairs within {TARGET:.0f} %")
    if recs:
        print(f"\nimported as recorded (no --prefetch), against the program's unprofiled step (its NAME.json's timed median: within "
              f"{RECORDED_TARGET['pinned']:.0f} % pinned, {RECORDED_TARGET['pageable']:.0f} % pageable) and the profiled run's own "
              f"makespan (within {SELF_TARGET:.0f} %); pageable: its pageable copies at the rate its own trace's ran (run's default), "
              f"and again at the calibration's (--pageable-rate-from-calibration):")
        print(f"  {'machine':<9} {'trace':<50} {'replayed':>11} {'own timeline':>21} {'timed runs (n)':>27} {'other copy rate':>26}")
    for r in recs:
        label = listed(r)
        miss = abs(r["err"]) > RECORDED_TARGET[r["host"]]
        if miss and label:
            reasons.add(label)
        mark = "" if not miss else (f"  miss ({label})" if label else "  MISS")
        rate = f"{r['rate_sim']:>8.2f} ms {r['rate_err']:>+5.1f}% ({r['rate']:.2f} GB/s)" if r["rate"] else ""
        own = f" at {r['own_rate']:.2f} GB/s" if r["host"] == "pageable" else ""
        print(f"  {r['machine']:<9} {r['trace']:<50} {r['sim']:>8.2f} ms {r['profiled']:>8.2f} ms {r['self_err']:>+5.1f}%   "
              f"{r['timed']:>8.2f} ms ({r['n']:>2}) {r['err']:>+5.1f}%{own}   {rate}{mark}")
    summaries = []
    for machine, folders in OWN_BOX.items():
        name = {"h100-sxm": "H100", "h200": "H200"}[machine]
        rr = [r for r in recs if r["machine"] == machine]
        for host in ("pinned", "pageable"):
            summaries.append(summary_line(f"{name} as recorded, {host}", [r["err"] for r in rr if r["host"] == host], RECORDED_TARGET[host]))
        own = [r for r in rows if r["machine"] == machine and r["trace"].split("/")[0] in folders]
        summaries.append(summary_line(f"{name} re-planned depth j to k, pinned traces", [r["errs"][r["used"]] for r in own if r["host"] == "pinned"], TARGET))
        summaries.append(summary_line(f"{name} re-planned depth j to k, pageable traces asked pinned",
                                      [r["errs"][r["used"]] for r in own if r["host"] == "pageable"], TARGET))
    if summaries:
        print("\nper machine, its own box's timed runs (errors absolute):")
        for line in summaries:
            print("  " + line)
    for label, _, why in MISSES:
        if label in reasons:
            print(f"miss ({label}): {why}")
    shown = doc_table(rows) + recorded_table(recs) + [f"- {line}" for line in summaries]
    if os.environ.get("PRINT_DOC_TABLE"):
        print("\n".join(shown))
    doc = open(os.path.join(root, "docs/import-trace.md")).read().splitlines()
    stale = [line for line in shown if line.rstrip() not in [d.rstrip() for d in doc]]
    for line in stale:
        print("docs/import-trace.md has no line\n  " + line)
    if stale:
        failed.append(f"{len(stale)} lines of docs/import-trace.md's tables differ (update them from the lines above)")
    if failed:
        raise SystemExit("outside the target and not listed: " + "; ".join(map(str, failed)))
    print("prefetch-accuracy ok")


if __name__ == "__main__":
    main()
