#!/usr/bin/env python3
"""Prefetch re-planning against measured programs (docs/import-trace.md, "Another prefetch depth").

Each reference program's torch.profiler trace of the layerwise prefetch (validate/reference/<machine>/traces*/,
depth j) is imported with `import-trace --prefetch k --prefetch-cycle 8` for every depth k the machine's
programs were measured at (programs/ and its repeats: validate/programs/dit_offload.py, 8 blocks run twice),
simulated with the machine's calibration (`run`; the other host memory with `run --host-memory`), and its step
time compared with the program's measured one: the median over the sessions of each session's median run.

Folders in OWN_BOX are checked against the box that recorded them instead: their sessions are the folders named there
(each configuration's NAME.json beside its trace), and each trace replayed at its own depth and host memory is also held
to its own timeline (the profiled run's makespan, `profiled_s`) within SELF_TARGET.

Prints the table; fails where a pair not listed in MISSES leaves the issue's 5 % target, naming it, or where
docs/import-trace.md's table ("How well it predicts") no longer holds a row as printed (PRINT_DOC_TABLE=1 prints them).

  python3 tests/cli/prefetch-accuracy.py OVERLAPSIM REPO_ROOT WORK_DIR
"""
import glob
import json
import os
import re
import statistics
import subprocess
import sys

TARGET = 5.0
# A trace replayed as it was recorded against the profiled run's own makespan (no model change between them).
SELF_TARGET = 2.0
# Trace folders measured on their own box, every configuration with its timed runs (NAME.json): machine -> folder ->
# the folders whose NAME.json are its sessions.
OWN_BOX = {
    "h100-sxm": {"traces-default-grid": ["traces-default-grid", "traces-default-grid-run-2"],
                 "traces-default-grid-run-2": ["traces-default-grid", "traces-default-grid-run-2"]},
}
# Pairs that miss the target, by why (docs/import-trace.md, "Another prefetch depth"): each row a label, a test
# of a pair (a dict of the table's fields) and the reason printed for it; the first that holds is named.
MISSES = [
    ("a", lambda r: r["asked"] == "pageable" and r["machine"] == "h100-sxm",
     "pageable copies: the calibration's pageable rate against the programs' boxes (their plain replays: -3.8 %, -10.0 %; "
     "pageable runs spread 7-12 % within a session, 20-25 % against the calibration's: docs/accuracy.md)"),
    ("b", lambda r: (r["trace"].startswith("traces-default/dit-16384") or (r["trace"].startswith("traces-default-grid") and "-16384-" in r["trace"]
                                                                           and (r["j"] == 0 or r["host"] == "pageable")))
     and r["k"] > 0 and r["asked"] == "pinned",
     "no shapes (profiled with the defaults): the kernels keep the time they took where the GPU idled between blocks (a cooler "
     "clock) and cannot be re-modelled; with shapes (traces/) the same pairs are +1.2 to +1.7 %"),
    ("g", lambda r: r["trace"].startswith("traces-default-grid") and "-16384-" in r["trace"] and r["j"] > 0 and r["host"] == "pinned"
     and r["asked"] == "pinned",
     "the profiled run (the 5th busy run, where the H100's power limiter first bites: power-transient/) is 6-10 % slower than the same box's timed runs (every 16,384-token configuration that keeps the GPU busy, "
     "resident and block too): its kernels slow by 20-30 % from the 7th block on (a clock dip the timed runs did not have); "
     "replayed, each trace is within 0.6 % of its own timeline; to depth 0 the kernels also keep the busy GPU's clock, as in (b) "
     "(docs/journal/2026-12-06-default-trace-16384.md)"),
    ("c", lambda r: r["machine"] == "h100-sxm" and r["trace"].endswith("4096-layerwise-pf0-pageable") and r["k"] == 0 and r["asked"] == "pinned",
     "the programs' boxes ran the blocking pinned program at 103.5 and 116.0 ms: +5.6 % is inside their spread; the grid's own box ran it "
     "at 103.7 ms, where the pinned trace re-plans to +0.8 %: the pageable trace's host time between calls (measured while each "
     "pageable copy held the host) is on the blocking program's critical path (not analysed further)"),
    ("d", lambda r: r["machine"] == "h100-sxm" and r["k"] == 2 and r["asked"] == "pinned",
     "the H100 programs' boxes ran depth 2 at 80.6 and 82.3 ms, slower than depth 1 (75.4, 80.6) and 3 (75.6, 76.7) on the same boxes; "
     "the trace's own box ran it at 75.7 ms (its re-plan to 2: 76.6 ms, +1.3 %)"),
    ("e", lambda r: r["j"] > 0 and r["k"] == 0 and r["asked"] == "pinned" and r["trace"].startswith("traces/"),
     "depth 0 puts the host on the critical path after each synchronize, and the profiled copy-bound run's host time between calls "
     "(record_shapes and sync events recorded) is twice the blocking program's: 43 against 20 ms a step (traces-default/: -3.5 %)"),
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
    rows, failed, selfs = [], [], []
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
                        out = os.path.join(work, f"{machine}-{tdir}-{name}-pf{k}.yaml")
                        cmd = [osim, "import-trace", *files, "-t", topo, "--prefetch", str(k), "--prefetch-cycle", "8", "-o", out, "--force"]
                        if steps:
                            cmd += ["--steps", steps]
                        imp = subprocess.run(cmd, capture_output=True, text=True)
                        if imp.returncode != 0:
                            raise SystemExit(f"{' '.join(cmd)}: exit {imp.returncode}\n{imp.stderr}")
                        base = [osim, "run", out, "--calibration", cal] + (["--host-memory", asked_host] if asked_host != host else [])
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
                        own = os.path.join(M, tdir, name + ".json")
                        # Pinned: a pageable trace's copies are re-modelled from the calibration's pageable rate, (a).
                        if tdir in OWN_BOX.get(machine, {}) and k == j and asked_host == host == "pinned" and os.path.exists(own):
                            profiled = json.load(open(own))["profiled_s"] * 1e3
                            selfs.append((tdir + "/" + name, sims[0], profiled, 100 * (sims[0] / profiled - 1), med))
                            if abs(selfs[-1][3]) > SELF_TARGET:
                                failed.append(f"{tdir}/{name} replayed to {sims[0]:.2f} ms against its own timeline's {profiled:.2f} ms")
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
    if selfs:
        print(f"\nreplayed as recorded, against the profiled run's own makespan (within {SELF_TARGET:.0f} %) and the box's timed runs:")
        for name, sim, profiled, e, med in selfs:
            print(f"  {name:<50} {sim:>8.2f} ms   own timeline {profiled:>8.2f} ms {e:>+5.1f}%   timed runs {med:>8.2f} ms {100 * (sim / med - 1):>+5.1f}%")
    for label, _, why in MISSES:
        if label in reasons:
            print(f"miss ({label}): {why}")
    if os.environ.get("PRINT_DOC_TABLE"):
        print("\n".join(doc_table(rows)))
    doc = open(os.path.join(root, "docs/import-trace.md")).read().splitlines()
    stale = [line for line in doc_table(rows) if line.rstrip() not in [d.rstrip() for d in doc]]
    for line in stale:
        print("docs/import-trace.md's table has no row\n  " + line)
    if stale:
        failed.append(f"{len(stale)} rows of docs/import-trace.md's table differ (update them from the lines above)")
    if failed:
        raise SystemExit("outside the target and not listed: " + "; ".join(map(str, failed)))
    print("prefetch-accuracy ok")


if __name__ == "__main__":
    main()
