"""What the notebooks share: run the overlapsim binary, read a sweep's CSV or a run's metrics.json
into pandas, and the standard plots of a sweep, for any sweep file.

A sweep's CSV (docs/formats/sweep.md) has one row per point: `point`, the swept keys, `status`,
`error`, then the metrics. An empty key is the base's value and `null` a key removed; a point that
could not run (out of GPU memory, say) has status `error` and no metrics. `read_sweep` keeps all
of that apart: `Sweep.ok` holds the points that ran, `Sweep.failed` the others, and every swept key
is a column of its own, so points that differ in any key (CFG-parallel against serial, a resident
or blocking point against a prefetching one) are never drawn as one.

The machine a point ran on is its `topology_name` plus the swept keys that edit the machine
(`topology.<path>`, `calibration`): plots draw one panel a machine and one line per value of every
other swept key but the x axis.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

# The metric columns of a sweep's CSV after `status` and `error`, in the CSV's order.
METRICS = ["topology_name", "ranks", "makespan_ms", "steps", "step_ms", "step_ms_max", "peak_vram_GiB",
           "compute_busy_ms", "comm_ms", "comm_exposed_ms", "copy_ms", "copy_stall_ms", "idle_other_ms",
           "overlap_efficiency", "h2d_GB", "d2h_GB", "p2p_GB", "collective_GB", "copy_bottleneck",
           "collective_bottleneck"]
# Where a rank's time went: they add up to its end (docs/formats/metrics.md).
TIME_PARTS = ["compute_busy_ms", "comm_exposed_ms", "copy_stall_ms", "idle_other_ms"]


def repo_root(start: Path | None = None) -> Path:
    """The repository root: the first folder at or above `start` (the working folder) with configs/."""
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / "configs").is_dir() and (d / "notebooks").is_dir():
            return d
    raise FileNotFoundError(f"no overlapsim repository at or above {here}")


ROOT = repo_root(Path(__file__).parent)


def binary() -> Path:
    """The overlapsim binary: $OVERLAPSIM_BIN, else build/bin/overlapsim (bash setup.sh builds it)."""
    b = Path(os.environ.get("OVERLAPSIM_BIN", ROOT / "build" / "bin" / "overlapsim"))
    if not b.exists():
        raise FileNotFoundError(f"build overlapsim first (bash setup.sh), or set OVERLAPSIM_BIN: {b} not found")
    return b


def overlapsim(*args, ok_codes=(0,)) -> str:
    """Runs the binary from the repository root; raises with its stderr on an exit not in ok_codes."""
    r = subprocess.run([str(binary()), *map(str, args)], cwd=ROOT, capture_output=True, text=True)
    if r.returncode not in ok_codes:
        raise RuntimeError(f"overlapsim {' '.join(map(str, args))} failed ({r.returncode}):\n{r.stderr}")
    return r.stdout


def parameters(sweep: str | Path, csv: str | Path | None = None) -> tuple[Path, Path | None]:
    """The sweep file and CSV a notebook reads: $OVERLAPSIM_SWEEP and $OVERLAPSIM_CSV where set, else
    the notebook's parameters; a relative sweep path is from the repository root. No CSV: the
    notebook runs the sweep itself."""
    sweep = Path(os.environ.get("OVERLAPSIM_SWEEP") or sweep)
    csv = os.environ.get("OVERLAPSIM_CSV") or csv
    return (sweep if sweep.is_absolute() else ROOT / sweep), (Path(csv) if csv else None)


def _scalar(text: str):
    """A swept value as the CSV writes it: a number where it reads as one, `null` as None."""
    if text == "null":
        return None
    try:
        v = float(text)
    except ValueError:
        return text
    return int(v) if v.is_integer() and "." not in text and "e" not in text.lower() else v


def _text(v) -> str:
    """A swept value as the sweep file writes it: 3 not 3.0, `-` where the point has none."""
    if isinstance(v, float):
        return "-" if v != v else (str(int(v)) if v.is_integer() else f"{v:g}")
    return str(v)


def _lookup(doc, dotted: str):
    """The value at a dotted key of a YAML document (list items by index or `name:`), or KeyError."""
    node = doc
    for part in dotted.split("."):
        if isinstance(node, dict):
            node = node[part]
        elif isinstance(node, list):
            named = [x for x in node if isinstance(x, dict) and x.get("name") == part]
            node = named[0] if named else node[int(part)]
        else:
            raise KeyError(dotted)
    return node


def base_values(sweep_file: Path, keys: list[str]) -> dict:
    """What an empty swept value means: each key's value in the sweep's base after its `set:`, where
    the base has the key (a key it lacks, or a topology edit, stays unknown: "base")."""
    import yaml  # python3-yaml; only needed to name the base's values

    sweep = yaml.safe_load(sweep_file.read_text())
    base_ref = sweep.get("workload") or sweep.get("schedule")
    base = yaml.safe_load((sweep_file.parent / base_ref).read_text()) if base_ref else {}
    fixed = sweep.get("set") or {}
    out = {}
    for k in keys:
        if k in fixed:
            out[k] = fixed[k]
            continue
        try:
            out[k] = _lookup(base, k)
        except (KeyError, IndexError, ValueError, TypeError):
            out[k] = "base"
    return out


@dataclass
class Sweep:
    """A sweep's points: `rows` all of them, `ok` those that ran, `failed` those that did not; `keys`
    the swept keys in the CSV's order, `machine_keys` those among them that pick the machine."""

    rows: pd.DataFrame
    keys: list[str]
    name: str = ""
    summary: str = ""
    machine_keys: list[str] = field(default_factory=list)

    @property
    def ok(self) -> pd.DataFrame:
        return self.rows[self.rows.status == "ok"]

    @property
    def failed(self) -> pd.DataFrame:
        return self.rows[self.rows.status != "ok"]

    def config_keys(self, exclude=()) -> list[str]:
        """The swept keys that vary among the points that ran, bar the machine's and `exclude`."""
        ok = self.ok
        return [k for k in self.keys
                if k not in self.machine_keys and k not in exclude and ok[k].astype(str).nunique() > 1]

    def label(self, row, keys) -> str:
        """`key=value, ...` for the keys given; the machine's name alone where there are none."""
        return ", ".join(f"{k}={_text(row[k])}" for k in keys) or str(row["machine"])

    def one(self, machine: str | None = None, **where):
        """The one point that ran with these swept values (keys with dots given as `where` dict
        entries: `sw.one("dgx-h100", **{"parallelism.ulysses": 4})`); raises unless exactly one."""
        ok = self.ok
        sel = ok.machine == machine if machine is not None else pd.Series(True, index=ok.index)
        for k, v in where.items():
            sel &= ok[k].isna() if v is None else ok[k] == v
        found = ok[sel]
        if len(found) != 1:
            raise LookupError(f"{len(found)} points of {self.name} on {machine} with {where}")
        return found.iloc[0]

    def best(self) -> pd.DataFrame:
        """Per machine, the point of least step time."""
        ok = self.ok
        return ok.loc[ok.groupby("machine", sort=False).step_ms.idxmin()]


def read_sweep(csv: Path, sweep_file: Path | None = None, summary: str = "") -> Sweep:
    """A sweep's CSV as a Sweep. With the sweep file, an empty swept value becomes the base's value
    (docs/formats/sweep.md: "empty = the base's value"); without it, "base"."""
    raw = pd.read_csv(csv, dtype=str, keep_default_na=False)
    cols = list(raw.columns)
    if cols[:1] != ["point"] or "status" not in cols:
        raise ValueError(f"{csv}: not an overlapsim sweep CSV (no point/status columns)")
    keys = cols[1:cols.index("status")]
    df = raw.copy()
    df["point"] = df.point.astype(int)
    base = base_values(sweep_file, keys) if sweep_file is not None else {k: "base" for k in keys}
    for k in keys:
        df[k] = [(_scalar(v) if v != "" else base[k]) for v in raw[k]]
        df[k] = df[k].map(lambda v: "null" if v is None else v)
        vals = df[k].tolist()
        if all(isinstance(v, (int, float)) for v in vals):
            df[k] = pd.to_numeric(df[k])
    for m in METRICS:
        if m in df and m not in ("topology_name", "copy_bottleneck", "collective_bottleneck"):
            df[m] = pd.to_numeric(df[m].replace("", float("nan")))
    machine_keys = [k for k in keys if k == "topology" or k.startswith("topology.") or k == "calibration"]
    edits = [k for k in machine_keys if k != "topology"]
    df["machine"] = [" ".join([str(r["topology_name"]) or "?"] + [f"{k}={r[k]}" for k in edits if r[k] != "base"])
                     for _, r in df.iterrows()]
    name = sweep_file.stem if sweep_file is not None else Path(csv).stem
    return Sweep(rows=df, keys=keys, name=name, summary=summary, machine_keys=machine_keys)


def run_sweep(sweep_file: Path, out_csv: Path) -> Sweep:
    """Runs `overlapsim sweep` and reads what it wrote, its summary kept beside. A sweep some of
    whose points failed exits 1 with their errors in its rows: the rows are read all the same."""
    summary = overlapsim("sweep", sweep_file, "-o", out_csv, "--no-progress", "--force", ok_codes=(0, 1))
    return read_sweep(out_csv, sweep_file, summary)


def load(sweep: str | Path, csv: str | Path | None, out_dir: str | Path) -> Sweep:
    """The notebooks' entry: the sweep and CSV of `parameters()`; without a CSV, the sweep is run
    into `out_dir`."""
    sweep, csv = parameters(sweep, csv)
    if csv is not None:
        return read_sweep(csv, sweep if sweep.exists() else None)
    return run_sweep(sweep, Path(out_dir) / f"{sweep.stem}.csv")


def summary_points(summary: str) -> dict[str, dict]:
    """Per topology, the best point and the Pareto front's points as the sweep's summary states them
    ("on NAME (N points):", "best: point N, ...", "Pareto front ...", then a line a point)."""
    out, topo, in_front = {}, None, False
    for line in summary.splitlines():
        t = line.strip()
        if line.startswith("on ") and line.rstrip().endswith(":"):
            topo, in_front = line[3:].split(" (")[0], False
            out[topo] = {"best": None, "pareto": []}
        elif topo is None:
            continue
        elif t.startswith("best: point "):
            out[topo]["best"] = int(t.split("best: point ")[1].split(",")[0])
        elif t.startswith("Pareto front"):
            in_front = True
        elif in_front and " point " in t and t.split(" point ")[1].split(":")[0].isdigit():
            out[topo]["pareto"].append(int(t.split(" point ")[1].split(":")[0]))
        else:
            in_front = False
    return out


def points_table(sw: Sweep, points: pd.DataFrame | None = None) -> pd.DataFrame:
    """The points given (default: those that ran) with what differs among them and their figures."""
    pts = sw.ok if points is None else points
    keys = sw.config_keys()
    return pd.DataFrame({"point": pts.point, "machine": pts.machine,
                         "config": [sw.label(r, keys) for _, r in pts.iterrows()],
                         "step_s": pts.step_ms / 1e3, "peak_vram_GiB": pts.peak_vram_GiB}).set_index("point")


def check(sw: Sweep) -> None:
    """What holds for every sweep: each point's figures are consistent with one another, no two points
    share every swept key, and the best point per machine is the summary's."""
    ok = sw.ok
    assert len(ok), f"no point of {sw.name} ran:\n{sw.failed[['point', 'error']].to_string()}"
    assert not ok.duplicated(subset=["machine", *sw.keys]).any(), "two points share every swept key"
    assert (ok.step_ms > 0).all() and (ok.step_ms <= ok.step_ms_max * (1 + 1e-9)).all(), "step time: mean above max"
    assert (ok.step_ms * ok.steps <= ok.makespan_ms * (1 + 1e-6)).all(), "steps outlast the makespan"
    assert (ok.compute_busy_ms <= ok.makespan_ms * (1 + 1e-6)).all(), "compute busier than the makespan"
    assert (ok.comm_exposed_ms <= ok.comm_ms * (1 + 1e-6) + 1e-3).all(), "more communication exposed than run"
    assert (ok.peak_vram_GiB > 0).all() and (ok.overlap_efficiency <= 1 + 1e-6).all()
    assert (sw.failed.error != "").all(), "a failed point without its error"
    if sw.summary and not [k for k in sw.machine_keys if k != "topology"]:
        # The summary groups by topology: where nothing else picks the machine, its best point and
        # Pareto front are this module's.
        stated = summary_points(sw.summary)
        for m, g in ok.groupby("machine"):
            s = stated[m]
            assert g[g.point == s["best"]].step_ms.iloc[0] == g.step_ms.min(), (m, s["best"])
            assert sorted(pareto(g).point) == sorted(s["pareto"]), (m, list(pareto(g).point), s["pareto"])


def _axes(n, width=5.5, height=4.0):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, n, figsize=(width * n, height), squeeze=False)
    return fig, list(axes[0])


def plot_against(sw: Sweep, x: str, y: str = "step_ms", scale: float = 1e-3, ylabel: str = "step time (s)"):
    """`y` against the swept key `x`, a panel per machine, a line per value of every other swept key.
    A line whose points have no value of `x` (a resident, block or blocking point where `x` is the
    prefetch size) is drawn as a dashed level across the panel."""
    ok = sw.ok
    others = sw.config_keys(exclude=(x,))
    machines = list(dict.fromkeys(ok.machine))
    fig, axes = _axes(len(machines))
    numeric = pd.api.types.is_numeric_dtype(pd.to_numeric(ok[x].replace(["null", "base"], float("nan")), errors="coerce")) \
        and pd.to_numeric(ok[x], errors="coerce").notna().any()
    for ax, m in zip(axes, machines):
        g = ok[ok.machine == m]
        xs = pd.to_numeric(g[x], errors="coerce") if numeric else g[x].astype(str)
        for i, (label, s) in enumerate(g.assign(_x=xs, _line=[sw.label(r, others) for _, r in g.iterrows()])
                                       .groupby("_line", sort=False)):
            assert not s._x.duplicated().any() or s._x.isna().all(), f"{m}, {label}: two points at one {x}"
            on = s[s._x.notna()] if numeric else s
            # Ten colours, then the same colours with another marker and dash: no two lines alike.
            color, marker, dash = f"C{i % 10}", "osD^v"[i // 10 % 5], ["--", ":", "-."][i // 10 % 3]
            if len(on):
                ax.plot(on._x, on[y] * scale, marker=marker, color=color, label=label or m)
            for _, r in s[s._x.isna()].iterrows() if numeric else ():
                ax.axhline(r[y] * scale, ls=dash, lw=1, color=color, label=f"{label or m} (no {x})")
        if numeric:
            ax.set_xticks(sorted(pd.to_numeric(g[x], errors="coerce").dropna().unique()))
        ax.set_title(m); ax.set_xlabel(x); ax.set_ylabel(ylabel); ax.grid(alpha=0.3)
        # Below the x label at any panel height: the gap in points (6 pt x 6.5), not a share of the axes.
        ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, 0), borderaxespad=6.5)
    fig.tight_layout()
    return fig


def plot_time_parts(sw: Sweep, points: pd.DataFrame | None = None, scale: float = 1e-3):
    """Where each rank's time went (mean over ranks), one stacked bar a point, a panel per machine."""
    pts = sw.ok if points is None else points
    machines = list(dict.fromkeys(pts.machine))
    keys = sw.config_keys()
    per_panel = max(len(pts[pts.machine == m]) for m in machines)
    fig, axes = _axes(len(machines), width=7, height=1.2 + 0.28 * per_panel)
    for ax, m in zip(axes, machines):
        g = pts[pts.machine == m]
        bars = g.assign(label=[sw.label(r, keys) for _, r in g.iterrows()]).set_index("label")[TIME_PARTS] * scale
        bars.plot.barh(stacked=True, ax=ax, legend=False)
        ax.invert_yaxis(); ax.set_title(m); ax.set_xlabel("s per rank"); ax.set_ylabel("")
        ax.tick_params(axis="y", labelsize=7); ax.grid(alpha=0.3, axis="x")
    axes[0].legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.6 / (1 + 0.25 * per_panel)), ncol=4)
    fig.tight_layout()
    return fig


def pareto(points: pd.DataFrame) -> pd.DataFrame:
    """The points no other beats on both peak VRAM and step time, by rising VRAM."""
    front, best = [], float("inf")
    for _, r in points.sort_values(["peak_vram_GiB", "step_ms"]).iterrows():
        if r.step_ms < best:
            front.append(r)
            best = r.step_ms
    return pd.DataFrame(front)


def plot_pareto(sw: Sweep, scale: float = 1e-3):
    """Peak VRAM against step time, a panel per machine, each point marked with its number, the
    Pareto front joined."""
    ok = sw.ok
    machines = list(dict.fromkeys(ok.machine))
    fig, axes = _axes(len(machines), height=4.5)
    for ax, m in zip(axes, machines):
        g = ok[ok.machine == m]
        ax.scatter(g.peak_vram_GiB, g.step_ms * scale, s=18)
        f = pareto(g)
        ax.plot(f.peak_vram_GiB, f.step_ms * scale, "k--", lw=0.8, label="Pareto front")
        for _, r in g.iterrows():
            ax.annotate(str(r.point), (r.peak_vram_GiB, r.step_ms * scale), textcoords="offset points",
                        xytext=(3, 2), fontsize=7)
        ax.set_title(m); ax.set_xlabel("peak VRAM (GiB)"); ax.set_ylabel("step time (s)"); ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def read_metrics(path: Path) -> dict:
    """A run's metrics.json (docs/formats/metrics.md; a run folder or the file) as DataFrames:
    `per_rank`, `steps`, `links`, and `run` (the top-level scalars as a one-row frame)."""
    p = Path(path)
    m = json.loads((p / "metrics.json" if p.is_dir() else p).read_text())
    if m.get("schema") != "overlapsim.metrics/v1":
        raise ValueError(f"{p}: schema {m.get('schema')!r}, not overlapsim.metrics/v1")
    run = {k: v for k, v in m.items() if not isinstance(v, (list, dict))}
    run.update({f"step_time_{k}_s": v for k, v in m.get("step_time_s", {}).items()})
    per_rank = pd.DataFrame([{k: v for k, v in r.items() if not isinstance(v, dict)} for r in m.get("per_rank", [])])
    return {"run": pd.DataFrame([run]), "per_rank": per_rank, "steps": pd.DataFrame(m.get("steps", [])),
            "links": pd.DataFrame(m.get("links", []))}
