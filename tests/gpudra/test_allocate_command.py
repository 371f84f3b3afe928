"""`gpudra allocate` end to end through the typer app, on YAML/JSON files written by the test."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from gpudra.cli import app
from tests.dra.allocator._cases import DRIVER, GPU_CLASS, claim, device, exact, rslice

runner = CliRunner()


def files(tmp_path: Path) -> dict[str, Path]:
    a = rslice("s0", [device(f"gpu-{i}", pcie="p0") for i in range(2)], count=2)
    b = rslice("s1", [device(f"gpu-{i}", pcie="p1") for i in range(2, 4)], count=2)
    paths = {
        "s0": tmp_path / "s0.yaml",
        "s1": tmp_path / "s1.json",
        "classes": tmp_path / "classes.yaml",
        "claim": tmp_path / "claim.yaml",
        "big": tmp_path / "big.yaml",
        "old": tmp_path / "old.yaml",
    }
    paths["s0"].write_text(yaml.safe_dump(a))
    paths["s1"].write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [b]}))
    paths["classes"].write_text(yaml.safe_dump_all([GPU_CLASS]))
    paths["claim"].write_text(
        yaml.safe_dump(claim("c", exact("r", count=2), constraints=[{"matchAttribute": f"{DRIVER}/pcie"}]))
    )
    paths["big"].write_text(yaml.safe_dump(claim("c", exact("r", count=5))))
    old = claim(
        "old",
        exact("r"),
        allocation={"devices": {"results": [{"request": "r", "driver": DRIVER, "pool": "node-a", "device": "gpu-0"}]}},
    )
    paths["old"].write_text(yaml.safe_dump(old))
    return paths


def test_allocate_prints_the_allocation_as_json(tmp_path: Path) -> None:
    p = files(tmp_path)
    args = [
        "allocate",
        "--slices",
        str(p["s0"]),
        str(p["s1"]),
        "--classes",
        str(p["classes"]),
        "--claim",
        str(p["claim"]),
    ]
    result = runner.invoke(app, [*args, "--node", "node-a", "--json", "--allocated", str(p["old"])])
    assert result.exit_code == 0, result.output
    allocation = json.loads(result.output)["allocation"]
    assert [r["device"] for r in allocation["devices"]["results"]] == ["gpu-2", "gpu-3"]


def test_allocate_unsatisfiable_exits_1_with_a_reason(tmp_path: Path) -> None:
    p = files(tmp_path)
    args = ["allocate", "--slices", str(p["s0"]), "--slices", str(p["s1"]), "--classes", str(p["classes"])]
    result = runner.invoke(app, [*args, "--claim", str(p["big"]), "--mode", "scored", "--json"])
    assert result.exit_code == 1
    assert "needs 5 device(s), 4 free" in json.loads(result.output)["unsatisfiable"]


def test_allocate_reports_bad_features(tmp_path: Path) -> None:
    p = files(tmp_path)
    args = ["allocate", "--slices", str(p["s0"]), "--classes", str(p["classes"]), "--claim", str(p["claim"])]
    result = runner.invoke(app, [*args, "--features", "DRANoSuchThing", "--json"])
    assert result.exit_code == 2
    assert "unknown feature 'DRANoSuchThing'" in json.loads(result.output)["error"]


def test_every_file_of_a_multi_value_option_is_read(tmp_path: Path) -> None:
    from gpudra.commands.allocate import spread_multi_values

    assert spread_multi_values(["--slices", "a", "b", "--classes", "c", "d", "--json"]) == [
        "--slices", "a", "--slices", "b", "--classes", "c", "--classes", "d", "--json",
    ]  # fmt: skip
    p = files(tmp_path)
    other = tmp_path / "other-class.yaml"
    other.write_text(yaml.safe_dump({**GPU_CLASS, "metadata": {"name": "other.example.com"}}))
    second = tmp_path / "claim2.yaml"
    second.write_text(yaml.safe_dump(claim("d", {"name": "r", "exactly": {"deviceClassName": "other.example.com"}})))
    args = ["allocate", "--slices", str(p["s0"]), str(p["s1"]), "--classes", str(p["classes"]), str(other)]
    result = runner.invoke(app, [*args, "--claim", str(p["claim"]), str(second), "--node", "node-a", "--json"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert len(answer["allocations"]) == 2, "both claims allocated, the second through the second class file"


def test_a_stray_argument_is_refused_not_taken_for_a_slice(tmp_path: Path) -> None:
    p = files(tmp_path)
    args = ["allocate", "--slices", str(p["s0"]), "--node", "node-a", str(p["s1"])]
    result = runner.invoke(app, [*args, "--classes", str(p["classes"]), "--claim", str(p["claim"])])
    assert result.exit_code == 2 and "unexpected extra argument" in result.output.lower(), result.output
