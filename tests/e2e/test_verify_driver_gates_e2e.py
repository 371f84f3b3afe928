"""Issue 42 item 4: `--verify-scheduler` gives the real cluster the slices `--driver-gates` makes, as the model gets
them. Two L40S GPUs and four pods asking for 10 GiB each: with ConsumableShares the real kube-scheduler binds all four
as shares (two to a GPU); without it, gpudra's policies ask for whole GPUs and two pods wait."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpudra.cli import app
from simulator.workload import legacy_pod
from tests.controlplane import binaries

pytestmark = [pytest.mark.e2e]

CLUSTER = {"name": "shares", "pools": [{"name": "l40s", "count": 1, "gpu": "L40S", "gpus": 2, "cpu": 32,
                                        "memory": "128Gi"}]}  # fmt: skip


def _inputs(tmp_path: Path) -> list[str]:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump(CLUSTER))
    trace = tmp_path / "pods.jsonl"
    pods = [legacy_pod(f"share-{i}", 1000, 1024, 1, "inference", vram_mib=10 * 1024) for i in range(4)]
    lines = [{"pod": pod, "arrival": i, "duration": None} for i, pod in enumerate(pods)]
    trace.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return ["--cluster", str(cluster), "--trace", str(trace)]


def _verified(tmp_path: Path, *gates: str) -> dict[str, Any]:
    binaries.require("components")  # the test skips (or fails under GPUDRA_REQUIRE_BINARIES), naming what is missing
    args = ["simulate", *_inputs(tmp_path), "--strategies", "gpudra", "--verify-scheduler", "--sample", "4", "--json"]
    args += ["--k8s-bin", str(binaries.bin_dir()), *gates]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert isinstance(summary, dict)
    return summary


def test_the_gates_reach_the_real_cluster(tmp_path: Path) -> None:
    summary = _verified(tmp_path, "--driver-gates", "ConsumableShares")
    found = summary["verification"]
    assert found["driver"] == {"gates": ["ConsumableShares"], "devices": 2, "shareable_devices": 2,
                               "model_shareable_gpus": 2}, found  # fmt: skip
    assert summary["input"]["cluster"]["shareable_gpus"] == 2
    assert found["bound"] == 4 and found["gpu_pods_still_pending"] == 0, found
    assert found["feasibility_agreement"] == 1.0, found["disagreements"]


def test_without_the_gates_the_real_cluster_has_nothing_to_share(tmp_path: Path) -> None:
    found = _verified(tmp_path)["verification"]
    assert found["driver"]["gates"] == [] and found["driver"]["shareable_devices"] == 0
    assert found["bound"] == 2 and found["gpu_pods_still_pending"] == 2, found
    # both cut at the last arrival (3 s): the two waiting pods arrived at 2 and 3 s
    assert found["pending_cutoff_seconds"] == 3.0
    assert found["pending_by_gpus"] == found["model_pending_by_gpus"] == {"1": 0.25}, found
