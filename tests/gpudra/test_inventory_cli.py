"""`gpudra inventory`: output formats, sources, and the no-GPU exit."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from dra.gpus import get, node_resource_slices, synthetic_node
from dra.inventory import load_snapshot, node_from_snapshot
from gpudra.cli import app
from tests.dra.inventory.nvml_double import SNAPSHOTS, FakeNvml

runner = CliRunner()
A100_FILE = str(SNAPSHOTS / "dgx-a100-8-mig.json")


def test_without_a_gpu_it_says_so_and_exits_3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml({}, init_error=12))  # NVML_ERROR_LIBRARY_NOT_FOUND
    result = runner.invoke(app, ["inventory"])
    assert result.exit_code == 3
    assert "no GPU inventory on this machine" in result.stderr and "Library Not Found" in result.stderr
    assert "Traceback" not in result.output and result.stdout == ""
    result = runner.invoke(app, ["inventory", "--capture", "x.json"])
    assert result.exit_code == 3


def test_from_file_json_is_a_list_of_the_slices() -> None:
    result = runner.invoke(app, ["inventory", "--from", A100_FILE, "-o", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["kind"] == "List" and doc["apiVersion"] == "v1"
    expected = node_resource_slices(node_from_snapshot(load_snapshot(A100_FILE)), mig_mode="static")
    assert doc["items"] == expected


def test_from_file_yaml_dynamic_134_and_node_override() -> None:
    args = ["inventory", "--from", A100_FILE, "--mig-mode", "dynamic", "--k8s-version", "1.34", "--node", "n7"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    docs = list(yaml.load_all(result.stdout, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    assert len(docs) == 8 and all("sharedCounters" in d["spec"] for d in docs)
    assert {d["spec"]["pool"]["name"] for d in docs} == {"n7"}
    assert {d["spec"]["nodeName"] for d in docs} == {"n7"}


def test_catalog_node() -> None:
    result = runner.invoke(app, ["inventory", "--catalog", "L4", "--count", "2", "--node", "l4-node", "-o", "json"])
    assert result.exit_code == 0, result.output
    items = json.loads(result.stdout)["items"]
    assert items == node_resource_slices(node_from_snapshot_of(get("L4"), "l4-node", 2))


def node_from_snapshot_of(model: Any, node: str, count: int) -> Any:
    from dra.inventory import snapshot_from_node

    return node_from_snapshot(snapshot_from_node(synthetic_node(model, node, count)))


def test_capture_writes_the_snapshot(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    recorded = load_snapshot(SNAPSHOTS / "h100-nvl-4.json")
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(recorded))
    out = tmp_path / "cap.json"
    result = runner.invoke(app, ["inventory", "--capture", str(out), "--node", "nvl-0"])
    assert result.exit_code == 0, result.output
    assert "wrote" in result.stderr and "4 GPU(s)" in result.stderr
    captured = load_snapshot(out)
    assert captured["source"] == "nvml" and len(captured["gpus"]) == 4
    live = runner.invoke(app, ["inventory", "--node", "nvl-0", "-o", "json"])
    assert live.exit_code == 0, live.output
    assert json.loads(live.stdout)["items"] == node_resource_slices(node_from_snapshot(captured))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mig-mode", "sometimes"], "--mig-mode must be dynamic, static or none"),
        (["-o", "xml"], "-o must be yaml or json"),
        (["--catalog", "RTX 9090"], "unknown GPU model 'RTX 9090'"),
        (["--from", "/nonexistent.json"], "cannot read snapshot"),
        (["--from", A100_FILE, "--k8s-version", "latest"], "Kubernetes version must look like"),
    ],
)
def test_bad_input_exits_1_with_a_message(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["inventory", *args])
    assert result.exit_code == 1
    assert message in result.stderr
