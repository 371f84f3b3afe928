"""Fixtures for the inventory tests: a fake /sys tree (the NVML test double is `nvml_double.FakeNvml`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def sysfs(tmp_path: Path) -> Any:
    """A fake /sys tree writer: `sysfs(snapshot)` creates the bus/pci/devices links and numa_node files (and the
    vendor/device/resource files of a GPU recorded with `sysfsPci`)."""

    def make(snapshot: dict[str, Any]) -> Path:
        root = tmp_path / "sys"
        for g in snapshot["gpus"]:
            domain, _, rest = g["pciBusId"].lower().partition(":")
            short = f"{int(domain, 16):04x}:{rest}"
            target = g.get("sysfsDeviceLink")
            if target is None:
                continue
            device_dir = root / "bus" / "pci" / "devices"
            device_dir.mkdir(parents=True, exist_ok=True)
            real = (device_dir / target).resolve()
            real.mkdir(parents=True, exist_ok=True)
            (real / "numa_node").write_text(f"{g['sysfsNumaNode']}\n")
            pci = g.get("sysfsPci")
            if pci is not None:
                (real / "vendor").write_text(f"{pci['vendor']}\n")
                (real / "device").write_text(f"{pci['device']}\n")
                (real / "resource").write_text("".join(f"{line}\n" for line in pci["resource"]))
            (device_dir / short).symlink_to(target)
        return root

    return make
