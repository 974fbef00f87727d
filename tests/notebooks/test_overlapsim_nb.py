"""notebooks/overlapsim_nb.py on three sweeps run with the real binary (OVERLAPSIM_BIN): the shipped
one, 8 GPUs on PCIe with failed points, and CFG-parallel with resident and blocking points."""

import sys
import tempfile
import unittest
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "notebooks"))
import overlapsim_nb as nb  # noqa: E402

OUT = Path(tempfile.mkdtemp(prefix="overlapsim-nb-test-"))


def run(sweep: str) -> nb.Sweep:
    return nb.run_sweep(nb.ROOT / sweep, OUT / (Path(sweep).stem + ".csv"))


def lines(fig):
    """(panel title, line label) of every line a figure draws."""
    return [(ax.get_title(), ln.get_label()) for ax in fig.axes for ln in ax.get_lines()]


class Shipped(unittest.TestCase):
    sw = run("configs/sweeps/prefetch-sp-pcie-vs-nvlink.yaml")

    def test_keys_and_points(self):
        sw = self.sw
        self.assertEqual(sw.keys, ["topology", "parallelism.ulysses", "offload.prefetch_size", "offload.policy"])
        self.assertEqual((len(sw.ok), len(sw.failed)), (26, 0))
        # The grid's points take the base's policy; the block points have no prefetch size (null).
        self.assertEqual(sw.ok["offload.policy"].value_counts().to_dict(), {"layerwise": 24, "block": 2})
        self.assertTrue(sw.ok[sw.ok["offload.policy"] == "block"]["offload.prefetch_size"].isna().all())
        nb.check(sw)

    def test_plot_a_line_per_sp_degree_and_block_as_level(self):
        got = lines(nb.plot_against(sw := self.sw, "offload.prefetch_size"))
        for topo in ("aces-4xh100-pcie", "dgx-h100"):
            ls = sorted(label for t, label in got if t == topo)
            self.assertEqual(ls, sorted([f"parallelism.ulysses={u}, offload.policy=layerwise" for u in (1, 2, 4)]
                                        + ["parallelism.ulysses=4, offload.policy=block (no offload.prefetch_size)"]))
        best = sw.best().set_index("machine").point.to_dict()
        self.assertEqual(best, {"aces-4xh100-pcie": 24, "dgx-h100": 23})
        plt.close("all")


class EightGpuPcie(unittest.TestCase):
    sw = run("tests/notebooks/sweep-8gpu-pcie.yaml")

    def test_failed_points_apart(self):
        sw = self.sw
        self.assertEqual(sorted(sw.failed.point), [15, 16])
        self.assertTrue(sw.failed.error.str.contains("runs out of GPU memory").all())
        self.assertEqual(len(sw.ok), 16)
        nb.check(sw)

    def test_topology_edit_is_another_machine(self):
        sw = self.sw
        self.assertEqual(sw.machine_keys, ["topology.nodes.gpu{i}.memory"])
        self.assertEqual(sorted(sw.ok.machine.unique()),
                         ["rtx4090x8-pcie", "rtx4090x8-pcie topology.nodes.gpu{i}.memory=48 GiB"])
        fig = nb.plot_against(sw, "parallelism.ulysses")
        self.assertEqual(len(fig.axes), 2)
        # A line per policy and prefetch size, none of them two points at one SP degree.
        got = [label for t, label in lines(fig) if t == "rtx4090x8-pcie"]
        self.assertEqual(len(got), 5)
        self.assertEqual(sw.one("rtx4090x8-pcie", **{"parallelism.ulysses": 8, "offload.policy": "block"}).point, 4)
        nb.plot_time_parts(sw); nb.plot_pareto(sw)
        plt.close("all")


class CfgResident(unittest.TestCase):
    sw = run("tests/notebooks/sweep-cfg-resident.yaml")

    def test_cfg_parallel_not_merged(self):
        sw = self.sw
        self.assertEqual(len(sw.ok), 17)
        nb.check(sw)
        fig = nb.plot_against(sw, "offload.prefetch_size")
        got = lines(fig)
        # 4 layerwise lines (cfg x SP) and a level for each of 9 resident or blocking points.
        self.assertEqual(len(got), 13)
        self.assertEqual(len(set(got)), 13)
        # Past ten colours no line is drawn as another is (colour, dash and marker).
        looks = [(ln.get_color(), ln.get_linestyle(), ln.get_marker()) for ax in fig.axes for ln in ax.get_lines()]
        self.assertEqual(len(set(looks)), 13)
        par = sw.one(**{"cfg": "parallel", "parallelism.ulysses": 2, "offload.policy": "none"})
        ser = sw.one(**{"cfg": "serial", "parallelism.ulysses": 2, "offload.policy": "none"})
        self.assertEqual((par.ranks, ser.ranks), (4, 2))  # CFG-parallel doubles the ranks
        self.assertLess(par.step_ms, ser.step_ms)
        # Resident points never stall on a copy; blocking ones do.
        res = sw.ok[sw.ok["offload.policy"] == "none"]
        blk = sw.ok[sw.ok["offload.policy"] == "blocking"]
        self.assertTrue((res.copy_stall_ms == 0).all() and (blk.copy_stall_ms > 0).all())
        plt.close("all")

    def test_csv_alone_and_bad_csv(self):
        sw = nb.read_sweep(OUT / "sweep-cfg-resident.csv")  # no sweep file: empty values read "base"
        self.assertEqual(set(sw.ok["offload.policy"]), {"none", "blocking", "base"})
        bad = OUT / "not-a-sweep.csv"
        bad.write_text("a,b\n1,2\n")
        with self.assertRaises(ValueError):
            nb.read_sweep(bad)


class Metrics(unittest.TestCase):
    def test_read_metrics(self):
        nb.overlapsim("run", "configs/schedules/prefetch-overlap-2gpu.yaml", "--out", OUT / "run", "--force")
        m = nb.read_metrics(OUT / "run")
        self.assertEqual(list(m["per_rank"]["rank"]), [0, 1])
        self.assertTrue((m["per_rank"].end_s <= m["run"].makespan_s.iloc[0] + 1e-12).all())
        self.assertGreater(len(m["links"]), 0)


if __name__ == "__main__":
    unittest.main(verbosity=1)
