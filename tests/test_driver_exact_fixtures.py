"""Every NVIDIA ResourceSlice committed as test data or an example carries only what some release of the NVIDIA
DRA driver publishes for its device type (`dra.gpus.driver_shape`), so no test passes on an attribute that a real
cluster would not have. gpudra's own attributes are allowed only in files that say they opt in to them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dra.gpus import DRIVER, DRIVER_RELEASES, GPUDRA_ATTRIBUTES, driver_shape

ROOT = Path(__file__).resolve().parents[1]
OPT_IN_MARK = "gpudra-attributes: opt-in"  # a file holding gpudra's attributes must say so in a comment


def _allowed(kind: str) -> frozenset[str]:
    sets: set[str] = set()
    for release in DRIVER_RELEASES:
        shape = driver_shape(release)
        sets |= {"gpu": shape.gpu_attributes(), "mig": shape.mig_attributes(), "vfio": shape.vfio_attributes()}.get(
            kind, frozenset()
        )
    return frozenset(sets)


def _slice_files() -> list[Path]:
    found = []
    for base in ("tests", "examples", "manifests"):
        for path in sorted((ROOT / base).rglob("*.yaml")):
            text = path.read_text(encoding="utf-8", errors="replace")
            if "ResourceSlice" in text and DRIVER in text:
                found.append(path)
    return found


def _devices(path: Path) -> list[dict[str, Any]]:
    out = []
    for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
        items = doc.get("items", [doc]) if isinstance(doc, dict) else []
        for item in items:
            if isinstance(item, dict) and item.get("kind") == "ResourceSlice":
                spec = item.get("spec") or {}
                if spec.get("driver") == DRIVER:
                    out.extend(spec.get("devices") or [])
    return out


def test_there_are_slice_files_to_check() -> None:
    assert len(_slice_files()) >= 3


@pytest.mark.parametrize("path", _slice_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_committed_nvidia_slices_carry_only_driver_attributes(path: Path) -> None:
    opted_in = OPT_IN_MARK in path.read_text(encoding="utf-8")
    for device in _devices(path):
        attributes = set(device.get("attributes") or {})
        kind = ((device.get("attributes") or {}).get("type") or {}).get("string", "")
        extra = attributes - _allowed(kind) - (set(GPUDRA_ATTRIBUTES) if opted_in else set())
        assert not extra, f"{path.name}: device {device.get('name')} ({kind}) carries {sorted(extra)}"
        assert opted_in or "allowMultipleAllocations" not in device, f"{path.name}: {device.get('name')} is shareable"
