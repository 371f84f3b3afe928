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
    # GPUs 0-2 have MIG on (their partitions and counter set), 3-7 MIG off: an Ampere GPU with MIG off is its whole
    # GPU alone under DynamicMIG (driver nvlib.go isDynamicMIGCapable)
    assert len(docs) == 8 and ["sharedCounters" in d["spec"] for d in docs] == [True] * 3 + [False] * 5
    assert [[x["name"] for x in d["spec"]["devices"]] for d in docs[3:]] == [[f"gpu-{i}"] for i in range(3, 8)]
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
        (
            ["--catalog", "A100"],
            "'A100' is ambiguous: it may be A100-SXM4-40GB, A100-SXM4-80GB, A100-PCIE-40GB, A100-PCIE-80GB",
        ),
        (["--catalog", "H100"], "it may be H100-SXM5-80GB, H100-PCIE-80GB, H100-NVL-94GB"),
        (["--catalog", "L40S", "--mig-enabled"], "L40S has no MIG"),
        (["--from", A100_FILE, "--mig-enabled"], "--mig-enabled"),
        (["--from", "/nonexistent.json"], "cannot read snapshot"),
        (["--from", A100_FILE, "--k8s-version", "latest"], "Kubernetes version must look like"),
    ],
)
def test_bad_input_exits_2_with_a_message(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["inventory", *args])
    assert result.exit_code == 2
    assert message in result.stderr


def test_a_catalog_name_of_one_model_is_taken_whatever_its_spelling() -> None:
    for name, product in [
        ("A30", "NVIDIA A30"),
        ("a100-pcie-80gb", "NVIDIA A100 80GB PCIe"),
        ("NVIDIA T4", "Tesla T4"),
    ]:
        result = runner.invoke(app, ["inventory", "--catalog", name, "--count", "1", "-o", "json"])
        assert result.exit_code == 0, result.output
        (device,) = json.loads(result.stdout)["items"][0]["spec"]["devices"]
        assert device["attributes"]["productName"] == {"string": product}


@pytest.mark.parametrize(("model", "partitions"), [("A100-SXM4-80GB", 25), ("A30-24GB", 13)])
def test_mig_enabled_catalog_ampere_publishes_partitions_only_under_dynamic_mig(model: str, partitions: int) -> None:
    base = ["inventory", "--catalog", model, "--count", "1", "--mig-mode", "dynamic", "-o", "json"]
    off = json.loads(runner.invoke(app, base).stdout)["items"]
    assert [d["name"] for s in off for d in s["spec"].get("devices") or []] == ["gpu-0"]
    on = json.loads(runner.invoke(app, [*base, "--mig-enabled"]).stdout)["items"]
    names = [d["name"] for s in on for d in s["spec"].get("devices") or []]
    assert len(names) == partitions and "gpu-0" not in names
