"""Issue 25 item 10: a comparison says when strategies came out the same and why, and its plots keep identical
curves visible."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.cluster import default_cluster
from simulator.cluster_sources import load_cluster
from simulator.comparison import SimulationConfig, simulate
from simulator.driver import simulated_driver
from simulator.notes import identical_groups, result_notes

FIXTURES = Path(__file__).parent / "fixtures"


def _row(**kpis: float) -> dict[str, float]:
    base = dict.fromkeys(
        ("pods_placed", "pods_pending", "gpu_allocation_ratio", "vram_waste_ratio", "fragmentation_ratio"), 0.5
    )
    return {**base, "mean_pending_seconds": 10.0, **kpis}


def test_identical_groups_compare_to_six_digits() -> None:
    rows = {"a": _row(), "b": _row(gpu_allocation_ratio=0.5000001), "c": _row(gpu_allocation_ratio=0.6)}
    assert identical_groups(rows) == [["a", "b"]]


def test_the_openb_excerpt_says_why_the_strategies_agree() -> None:
    config = SimulationConfig(
        strategies=("device-plugin", "dra-whole", "gpudra"),
        trace=FIXTURES / "openb_pod_excerpt.csv",
        cluster=FIXTURES / "openb_node_excerpt.csv",
    )
    summary = simulate(config).summary()
    groups = identical_groups(summary["strategies"])
    if groups:  # the excerpt is small: when all agree the note must say so, with the cluster's reason
        assert any("give the same results" in n and "shared" in n for n in summary["notes"]), summary["notes"]
    else:
        assert not any("give the same results" in n for n in summary["notes"])


def test_a_cluster_with_mig_and_no_sharing_names_only_the_missing_share() -> None:
    rows = {"dra-whole": _row(), "gpudra": _row()}
    notes = result_notes(default_cluster(), rows)
    assert len(notes) == 1 and "shared" in notes[0] and "MIG" not in notes[0]
    assert result_notes(default_cluster().with_driver_gates(simulated_driver(consumable_capacity=True)), rows) == [
        "dra-whole and gpudra give the same results."
    ]


def test_a_cluster_without_mig_or_sharing_says_gpudra_placed_whole_gpus(tmp_path: Path) -> None:
    path = tmp_path / "l40s.yaml"
    path.write_text("name: l40s\npools:\n  - {name: l40s, count: 2, gpu: L40S, gpus: 4, cpu: 64, memory: 512Gi}\n")
    spec = load_cluster(path)
    notes = result_notes(spec, {"dra-whole": _row(), "gpudra": _row(gpu_allocation_ratio=0.7)})
    assert len(notes) == 1 and notes[0].startswith("gpudra could only place whole GPUs here"), notes
    assert "MIG-capable" in notes[0] and "shared" in notes[0]
    same = result_notes(spec, {"device-plugin": _row(), "gpudra": _row()})
    assert same[0].startswith("device-plugin and gpudra give the same results: no GPU in the cluster is MIG-capable")


def test_the_report_keeps_identical_curves_visible_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import matplotlib.axes

    from simulator.html_report import write_report

    labels: list[tuple[str, str]] = []
    original = matplotlib.axes.Axes.plot

    def plot(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        labels.append((str(kwargs.get("label")), str(kwargs.get("linestyle", "-"))))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "plot", plot)
    spec = default_cluster()
    result = simulate(SimulationConfig(strategies=("device-plugin", "dra-whole"), cluster=spec))
    result.runs["dra-whole-again"] = result.runs["dra-whole"]  # a second run with the very same curves
    page = (write_report(result, tmp_path / "report")).read_text()
    styles = dict(labels)  # every strategy its own line style: the identical curve shows on top of the other
    assert styles["dra-whole-again (same as dra-whole)"] not in (styles["dra-whole"], styles["device-plugin"])
    assert "Note:</strong> dra-whole and dra-whole-again give the same results" in page
