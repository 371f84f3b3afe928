"""`gpudra simulate`: the stable JSON summary, errors with file:line, and the default run."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from gpudra.cli import app

from .conftest import POD_HEADER, write

KEYS = {
    "pods_total", "pods_placed", "pods_pending", "gpu_allocation_ratio", "vram_waste_ratio", "fragmentation_ratio",
    "unallocated_gpus", "nvlink_satisfied_ratio", "mig_reconfigurations", "drained_node_hours", "mean_pending_seconds",
}  # fmt: skip
RATIOS = ("gpu_allocation_ratio", "vram_waste_ratio", "fragmentation_ratio", "nvlink_satisfied_ratio")


def _check(summary: dict[str, object], strategies: list[str]) -> None:
    assert set(summary) == {"input", "strategies"}
    table = summary["strategies"]
    assert isinstance(table, dict) and list(table) == strategies
    for row in table.values():
        assert KEYS <= set(row)
        for key in RATIOS:
            assert 0.0 <= row[key] <= 1.0


def test_simulate_json_on_openb_files(pod_csv: Path, node_csv: Path) -> None:
    result = CliRunner().invoke(
        app, ["simulate", "--cluster", str(node_csv), "--trace", str(pod_csv), "--strategies",
              "device-plugin,dra-whole,fgd", "--protocol", "replay", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    _check(summary, ["device-plugin", "dra-whole", "fgd"])
    assert summary["input"]["workload"]["pods"] == 4 and summary["input"]["cluster"]["gpus"] == 6
    assert summary["strategies"]["fgd"]["pods_placed"] == 4


def test_simulate_openb_defaults_to_the_fgd_protocol(pod_csv: Path, node_csv: Path) -> None:
    args = ["simulate", "--cluster", str(node_csv), "--trace", str(pod_csv), "--strategies", "fgd", "--json"]
    result = CliRunner().invoke(app, [*args, "--seed", "3"])
    summary = json.loads(result.stdout)
    assert summary["input"]["protocol"] == "fgd"
    # sampled with replacement until the requested GPUs reach the cluster's 6 GPUs
    assert summary["strategies"]["fgd"]["pods_total"] > 4


def test_simulate_reports_bad_trace_line(tmp_path: Path, node_csv: Path) -> None:
    bad = write(tmp_path / "bad.csv", POD_HEADER + "\np0,1,1,1,oops,,LS,Running,0,1,0\n")
    result = CliRunner().invoke(app, ["simulate", "--cluster", str(node_csv), "--trace", str(bad), "--json"])
    assert result.exit_code == 2
    assert f"{bad}:2" in result.stderr and "gpu_milli" in result.stderr


def test_simulate_unknown_strategy() -> None:
    result = CliRunner().invoke(app, ["simulate", "--strategies", "nope"])
    assert result.exit_code == 2 and "unknown strategies" in result.stderr


def test_simulate_default_run() -> None:
    result = CliRunner().invoke(app, ["simulate", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    _check(summary, ["device-plugin", "gpudra"])
    dp, gd = summary["strategies"]["device-plugin"], summary["strategies"]["gpudra"]
    assert summary["input"]["workload"]["kind"] == "generated" and summary["input"]["cluster"]["gpus"] == 80
    assert gd["vram_waste_ratio"] < dp["vram_waste_ratio"]
    assert gd["drained_node_hours"] == 0 and dp["mig_reconfigurations"] > 0


def test_simulate_allocator_mode(pod_csv: Path, node_csv: Path) -> None:
    args = ["simulate", "--cluster", str(node_csv), "--trace", str(pod_csv), "--strategies", "gpudra", "--json"]
    result = CliRunner().invoke(app, [*args, "--protocol", "replay", "--allocator-mode", "upstream"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["input"]["allocator_mode"] == "upstream"
    assert summary["input"]["strategy_details"]["gpudra"]["mode"] == "upstream"
    assert summary["strategies"]["gpudra"]["pods_placed"] == 4
    bad = CliRunner().invoke(app, [*args, "--allocator-mode", "fast"])
    assert bad.exit_code == 2 and "allocator-mode" in bad.stderr
