"""`gpudra inventory` publishes exactly what the chosen NVIDIA driver release publishes; gpudra adds only on request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from dra.gpus import NVLINK_GROUP_ATTRIBUTE, driver_shape
from gpudra.cli import app
from tests.dra.inventory.nvml_double import SNAPSHOTS

runner = CliRunner()
HGX = str(SNAPSHOTS / "hgx-h100-8.json")


def _devices(args: list[str]) -> list[dict[str, Any]]:
    result = runner.invoke(app, ["inventory", "--from", HGX, "-o", "json", *args])
    assert result.exit_code == 0, result.output
    return [d for s in json.loads(result.stdout)["items"] for d in s["spec"].get("devices", [])]


def test_default_is_driver_25_12_exactly() -> None:
    allowed = driver_shape("25.12").gpu_attributes()
    devices = _devices([])
    assert devices and all(set(d["attributes"]) <= allowed for d in devices)
    assert all("resource.kubernetes.io/pciBusID" in d["attributes"] for d in devices)
    assert not any(NVLINK_GROUP_ATTRIBUTE in d["attributes"] for d in devices)


def test_gpudra_attributes_add_the_nvlink_group_and_nothing_else() -> None:
    plain, opted = _devices([]), _devices(["--gpudra-attributes"])
    for a, b in zip(plain, opted, strict=True):
        assert set(b["attributes"]) - set(a["attributes"]) == {NVLINK_GROUP_ATTRIBUTE}
        assert b["attributes"][NVLINK_GROUP_ATTRIBUTE] == {"string": "nvswitch-0"}


def test_driver_release_25_8_shape_and_bad_release() -> None:
    devices = _devices(["--driver-release", "25.8"])
    assert all(
        "pcieBusID" in d["attributes"] and "resource.kubernetes.io/pciBusID" not in d["attributes"] for d in devices
    )
    result = runner.invoke(app, ["inventory", "--from", HGX, "--driver-release", "26.1"])
    assert result.exit_code == 2 and "must be one of 25.8, 25.12" in result.stderr and "Traceback" not in result.output


MIG_PARTED = """version: v1
mig-configs:
  all-balanced:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
"""


def test_a_mig_parted_layout_is_published_as_the_static_mig_devices(tmp_path: Path) -> None:
    config = tmp_path / "mig-parted.yaml"
    config.write_text(MIG_PARTED)
    args = ["inventory", "--catalog", "A100-SXM4-80GB", "--count", "2", "-o", "json", "--mig-config", str(config)]
    result = runner.invoke(app, [*args, "--mig-config-name", "all-balanced"])
    assert result.exit_code == 0, result.output
    names = sorted(d["name"] for s in json.loads(result.stdout)["items"] for d in s["spec"]["devices"])
    per_gpu = ["mig-1g10gb-19-0", "mig-1g10gb-19-1", "mig-2g20gb-14-2", "mig-3g40gb-9-4"]
    assert names == sorted(f"gpu-{g}-{n}" for g in (0, 1) for n in per_gpu)
    unknown = runner.invoke(app, [*args, "--mig-config-name", "all-7g"])
    assert unknown.exit_code == 2 and "no mig-config 'all-7g' (configs: all-balanced)" in unknown.stderr
    half = runner.invoke(app, args)
    assert half.exit_code == 2 and "needs both the file and the config name" in half.stderr
