"""Sweeps (grid, table, report), the HTML report of a run, and clusters from ResourceSlice dumps."""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra.errors import InputError
from dra.gpus import catalog, node_resource_slices, synthetic_node
from simulator.cluster import ClusterSpec
from simulator.cluster_sources import load_cluster
from simulator.comparison import SimulationConfig, simulate
from simulator.html_report import SERIES_COLUMNS, write_report
from simulator.sweep import load_sweep, run_sweep
from simulator.traces import GeneratorConfig

from .conftest import write


def test_sweep_grid_and_outputs(tmp_path: Path, pod_csv: Path, node_csv: Path) -> None:
    config = write(
        tmp_path / "sweep.yaml",
        yaml.safe_dump(
            {
                "clusters": [node_csv.name],
                "traces": [pod_csv.name],
                "strategies": ["device-plugin", "fgd", "gpudra"],
                "modes": ["upstream", "scored"],
                "seeds": [0, 1],
                "protocol": "replay",
                "output": "out",
                "workers": 2,
            }
        ),
    )
    sweep = load_sweep(config)
    assert len(sweep.jobs) == 2 * (1 + 1 + 2)  # seeds x (device-plugin, fgd, gpudra x two modes)
    rows = run_sweep(sweep)
    assert len(rows) == 8 and {r["strategy"] for r in rows} == {"device-plugin", "fgd", "gpudra"}
    out = tmp_path / "out"
    with (out / "results.csv").open() as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == 8 and "gpu_allocation_ratio" in table[0]
    assert json.loads((out / "results.json").read_text()) == rows
    assert (out / "index.html").exists() and (out / "allocation.png").stat().st_size > 0


def test_sweep_rejects_unknown_keys(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown keys"):
        load_sweep(write(tmp_path / "s.yaml", "stratgies: [fgd]\n"))


def test_report_files(tmp_path: Path) -> None:
    result = simulate(
        SimulationConfig(strategies=["device-plugin", "gpudra"], generator=GeneratorConfig(pods=120, seed=2))
    )
    index = write_report(result, tmp_path / "r")
    assert "gpudra simulation report" in index.read_text()
    for name in ("allocation.png", "vram_waste.png", "fragmentation.png", "pending.png"):
        assert (tmp_path / "r" / name).stat().st_size > 1000
    with (tmp_path / "r" / "series-gpudra.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert tuple(rows[0]) == SERIES_COLUMNS and len(rows) == len(result.runs["gpudra"].samples)
    assert json.loads((tmp_path / "r" / "summary.json").read_text()) == result.summary()


def test_cluster_from_resource_slices(tmp_path: Path) -> None:
    a100 = catalog.get("A100-SXM4-80GB")
    static = synthetic_node(a100, "node-a", 2, mig_layouts={0: [("3g.40gb", 0), ("3g.40gb", 4)],
                                                            1: [("3g.40gb", 0), ("3g.40gb", 4)]})  # fmt: skip
    dynamic = synthetic_node(catalog.get("H100-SXM5-80GB"), "node-b", 4)
    plain = synthetic_node(catalog.get("L40S"), "node-c", 2)
    slices = [
        *node_resource_slices(static, mig_mode="static"),
        *node_resource_slices(dynamic, mig_mode="dynamic"),
        *node_resource_slices(plain, mig_mode="static"),
    ]
    path = write(tmp_path / "slices.yaml", yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": slices}))
    spec = load_cluster(path)
    by_name = {n.name: n for n in spec.nodes}
    assert set(by_name) == {"node-a", "node-b", "node-c"}
    assert by_name["node-a"].mig == "static" and [pl.profile.name for pl in by_name["node-a"].layout] == ["3g.40gb"] * 2
    assert by_name["node-a"].gpu_count == 2
    assert by_name["node-b"].mig == "dynamic" and by_name["node-b"].gpu_count == 4
    assert by_name["node-c"].mig == "none" and by_name["node-c"].gpu_count == 2


def _real_cluster_slices() -> list[dict[str, Any]]:
    a100 = catalog.get("A100-PCIE-80GB")
    static = synthetic_node(a100, "node-a", 4, mig_layouts={i: [("3g.40gb", 0), ("2g.20gb", 4), ("1g.10gb", 6)]
                                                            for i in range(4)})  # fmt: skip
    return [
        *node_resource_slices(static, mig_mode="static"),
        *node_resource_slices(synthetic_node(catalog.get("H100-SXM5-80GB"), "node-b", 8), mig_mode="dynamic"),
        *node_resource_slices(synthetic_node(catalog.get("L40S"), "node-c", 4), mig_mode="none"),
    ]


def _renumbered(slices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same slices with the devices' minor numbers shifted, as another node's driver may number them."""
    text = json.dumps(slices)
    for minor in range(7, -1, -1):
        text = text.replace(f'"gpu-{minor}', f'"gpu-{minor + 10}')
    out: list[dict[str, Any]] = json.loads(text)
    return out


@pytest.mark.parametrize("renumber", [False, True])
def test_a_cluster_from_real_slices_allocates_on_the_slices_it_published(tmp_path: Path, renumber: bool) -> None:
    slices = _real_cluster_slices()
    if renumber:
        slices = _renumbered(slices)
    path = write(tmp_path / "slices.yaml", yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": slices}))
    spec = load_cluster(path)
    assert all(node.slices and node.slices_digest for node in spec.nodes)
    by_name = {n.name: n for n in spec.nodes}
    assert by_name["node-a"].slices[0]["spec"]["devices"][0]["name"].startswith("gpu-1" if renumber else "gpu-0")
    # The same nodes with generated slices: the placements must not change, only where the devices come from.
    generated = ClusterSpec(
        name=spec.name, nodes=[replace(n, slices=(), slices_digest="") for n in spec.nodes], source=spec.source
    )
    workload = GeneratorConfig(pods=150, seed=3)
    real = simulate(SimulationConfig(spec, None, strategies=["gpudra"], generator=workload)).summary()["strategies"][
        "gpudra"
    ]
    synthetic = simulate(SimulationConfig(generated, None, strategies=["gpudra"], generator=workload)).summary()[
        "strategies"
    ]["gpudra"]
    assert real == synthetic and real["pods_placed"] > 0


def test_a_node_whose_gpus_differ_keeps_generated_slices(tmp_path: Path) -> None:
    a100 = catalog.get("A100-PCIE-80GB")
    mixed = synthetic_node(a100, "node-m", 2, mig_layouts={0: [("7g.80gb", 0)], 1: [("3g.40gb", 0), ("3g.40gb", 4)]})
    path = write(
        tmp_path / "mixed.yaml",
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": node_resource_slices(mixed, mig_mode="static")}),
    )
    spec = load_cluster(path)
    (node,) = spec.nodes
    assert node.slices == () and any("mixed MIG layouts" in reason for reason in spec.skipped)


def test_sweep_command(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from gpudra.cli import app

    config = write(
        tmp_path / "s.yaml",
        "strategies: [fgd]\nseeds: [0]\ntraces: [" + str(write(tmp_path / "p.csv", _POD_ROWS)) + "]\n"
        "clusters: ["
        + str(write(tmp_path / "n.csv", "sn,cpu_milli,memory_mib,gpu,model\nn,8000,65536,2,T4\n"))
        + "]\nworkers: 1\noutput: res\n",
    )
    result = CliRunner().invoke(app, ["sweep", str(config)])
    assert result.exit_code == 0, result.output
    assert "1 runs" in result.stdout and (tmp_path / "res" / "results.csv").exists()
    bad = CliRunner().invoke(app, ["sweep", str(write(tmp_path / "b.yaml", "backend: mpi\n"))])
    assert bad.exit_code == 2 and "backend" in bad.stderr


_POD_ROWS = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1000,1024,1,500\nb,1000,1024,1,1000\n"


def test_cluster_from_inventory_snapshots(tmp_path: Path) -> None:
    from dra.inventory.snapshot import save_snapshot, snapshot_from_node

    for name, model in (("n1", "H100-SXM5-80GB"), ("n2", "L40S")):
        save_snapshot(snapshot_from_node(synthetic_node(catalog.get(model), name, 4)), tmp_path / f"{name}.json")
    one = load_cluster(tmp_path / "n1.json")
    assert [(n.name, n.gpu_count) for n in one.nodes] == [("n1", 4)]
    both = load_cluster(tmp_path)
    assert {n.name: n.gpu.key for n in both.nodes if n.gpu} == {"n1": "H100-SXM5-80GB", "n2": "L40S"}
    assert both.total_gpus == 8


def test_an_fgd_protocol_sweep_has_a_column_per_kpi_and_load(tmp_path: Path, pod_csv: Path, node_csv: Path) -> None:
    config = write(
        tmp_path / "sweep.yaml",
        yaml.safe_dump(
            {
                "clusters": [node_csv.name],
                "traces": [pod_csv.name],
                "strategies": ["fgd", "gpudra"],
                "node_scores": ["least-allocated", "fragmentation"],
                "seeds": [42],
                "protocol": "fgd",
                "output": "out",
                "workers": 1,
            }  # fmt: skip
        ),
    )
    rows = run_sweep(load_sweep(config))
    assert [(r["strategy"], r["node_score"]) for r in rows] == [
        ("fgd", ""), ("gpudra", "least-allocated"), ("gpudra", "fragmentation"),
    ]  # fmt: skip
    for row in rows:
        for load in (80, 100, 130):
            assert {f"gpu_allocation_pct_at_{load}", f"fragmentation_ratio_at_{load}", f"failed_pods_at_{load}"} <= set(
                row
            )
        assert "at_load" not in row
    with pytest.raises(InputError, match="node_scores: unknown 'tight'"):
        load_sweep(write(tmp_path / "bad.yaml", "node_scores: [tight]\n"))


def test_an_fgd_protocol_report_has_the_kpis_at_each_load(tmp_path: Path, pod_csv: Path, node_csv: Path) -> None:
    result = simulate(SimulationConfig(node_csv, pod_csv, strategies=["fgd", "gpudra"], protocol="fgd", seed=42))
    page = write_report(result, tmp_path / "r").read_text()
    assert "At arrived demand (FGD protocol)" in page and "GPU allocation % @100%" in page
    with (tmp_path / "r" / "series-fgd.csv").open() as handle:
        assert {row["vram_waste_ratio"] for row in csv.DictReader(handle)} == {""}  # not modelled
