"""`gpudra cel eval`: environments, --var, --device/--driver, --json output and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudra.cli import app
from gpudra.commands.cel import evaluate
from gpudra.render.cel import cel_literal

DEVICE = """\
name: gpu-0
attributes:
  productName: {string: NVIDIA H100 80GB HBM3}
  cudaComputeCapability: {version: 9.0.0}
  resource.kubernetes.io/pcieRoot: {string: pci0000:00}
capacity:
  memory: {value: 80Gi}
"""


@pytest.fixture
def device_file(tmp_path: Path) -> Path:
    path = tmp_path / "device.yaml"
    path.write_text(DEVICE)
    return path


def test_json_result_with_device(device_file: Path) -> None:
    out = evaluate('device.capacity["gpu.nvidia.com"].memory', device=device_file, as_json=True)
    assert out.code == 0
    assert json.loads(out.stdout) == {"result": "80Gi"}


def test_driver_sets_the_bare_name_domain(device_file: Path) -> None:
    out = evaluate('"example.com" in device.attributes', device=device_file, driver="example.com", as_json=True)
    assert json.loads(out.stdout) == {"result": True}


def test_semver_canonical_in_json(device_file: Path) -> None:
    out = evaluate('device.attributes["gpu.nvidia.com"].cudaComputeCapability', device=device_file, as_json=True)
    assert json.loads(out.stdout) == {"result": "9.0.0"}


def test_vars_use_admission_env() -> None:
    out = evaluate("object.spec.replicas * 2", variables=['object={"spec": {"replicas": 3}}'], as_json=True)
    assert json.loads(out.stdout) == {"result": 6}


def test_error_json_exit_2() -> None:
    out = evaluate("object.missing", variables=["object={}"], as_json=True)
    assert out.code == 2
    assert json.loads(out.stdout) == {"error": "no such key: missing"}


def test_compile_error_plain_goes_to_stderr() -> None:
    out = evaluate("1 +")
    assert out.code == 2 and not out.stdout and "Syntax error" in out.stderr


def test_bad_var_and_bad_device(tmp_path: Path) -> None:
    assert evaluate("1", variables=["nope"]).stderr == "error: --var expects NAME=JSON, got 'nope'\n"
    bad = tmp_path / "d.yaml"
    bad.write_text("- a\n- b\n")
    assert f"{bad}:1: expected a Kubernetes object (a mapping)" in evaluate("true", device=bad).stderr
    two = tmp_path / "two.yaml"
    two.write_text("name: a\n---\nname: b\n")
    assert "expected one device, found 2 documents" in evaluate("true", device=two).stderr
    assert evaluate("true", device=tmp_path / "missing.yaml").code == 2


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        ("1u", "1u"),
        ("2.0", "2.0"),
        ("'a\"b'", '"a\\"b"'),
        ("[dyn(1), dyn(null), dyn(true)]", "[1, null, true]"),
        ("{'k': duration('90s')}", '{"k": duration("90s")}'),
        ("quantity('1.5Gi')", 'quantity("1536Mi")'),
        ("optional.of(1)", "optional.of(1)"),
        ("type(1)", "int"),
    ],
)
def test_plain_rendering(expr: str, text: str) -> None:
    out = evaluate(expr)
    assert out.code == 0
    assert out.stdout == text + "\n"


def test_render_bytes_and_timestamp() -> None:
    assert cel_literal(b"ab") == 'b"ab"'
    assert evaluate("timestamp('2024-01-02T03:04:05Z')").stdout == 'timestamp("2024-01-02T03:04:05Z")\n'


def test_cli_wiring(device_file: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(app, ["cel", "eval", "device.driver", "--device", str(device_file), "--json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout) == {"result": "gpu.nvidia.com"}
    bad = runner.invoke(app, ["cel", "eval", "1/0", "--json"])
    assert bad.exit_code == 2 and json.loads(bad.stdout) == {"error": "division by zero"}
    var = runner.invoke(app, ["cel", "eval", "x + 1", "--var", "x=41"])
    assert var.exit_code == 0 and var.stdout.strip() == "42"
