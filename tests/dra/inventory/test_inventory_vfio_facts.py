"""The VFIO facts (sysfs PCI vendor/device/resource, PCI ID name, /dev/iommu) through capture, snapshot and back."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from dra.gpus import VfioFacts, get, node_resource_slices, synthetic_node
from dra.inventory import InventoryError, capture, node_from_snapshot, snapshot_from_node
from dra.inventory.nvml import pci_device_name
from tests.dra.inventory.nvml_double import FakeNvml

# An A100-SXM4-40GB's sysfs `resource` in the form /sys/bus/pci/devices/<bus>/resource writes it (BAR0 16 MiB
# 32-bit, BAR1 64 GiB and BAR3 32 MiB 64-bit prefetchable, the rest empty; typical values, not read here).
A100_RESOURCE = [
    "0x00000000e2000000 0x00000000e2ffffff 0x0000000000040200",
    "0x0000000000000000 0x0000000000000000 0x0000000000000000",
    "0x0000038000000000 0x0000038fffffffff 0x000000000014220c",
    "0x0000000000000000 0x0000000000000000 0x0000000000000000",
    "0x0000039ffe000000 0x0000039fffffffff 0x000000000014220c",
    "0x0000000000000000 0x0000000000000000 0x0000000000000000",
    "0x0000000000000000 0x0000000000000000 0x0000000000000000",
]
# The lines of a pci.ids the capture reads (the 10de section, as the database writes it).
PCI_IDS = (
    "# test database\n"
    "10de  NVIDIA Corporation\n"
    "\t20b0  GA100 [A100 SXM4 40GB]\n"
    "\t\t10de 134f  A100-SXM4-40GB\n"
    "\t2330  GH100 [H100 SXM5 80GB]\n"
    "10df  Emulex Corporation\n"
    "\t20b0  Not an NVIDIA device\n"
    "C 03  Display controller\n"
    "\t02  3D controller\n"
)


def _line(text: str) -> tuple[int, int, int]:
    start, end, flags = (int(v, 16) for v in text.split(" "))
    return start, end, flags


def _recorded(with_pci: bool = True) -> dict[str, Any]:
    snap = snapshot_from_node(synthetic_node(get("A100-SXM4-40GB"), "a100-0", 2))
    snap["source"] = "nvml"
    if with_pci:
        for g in snap["gpus"]:
            g["sysfsPci"] = {
                "vendor": "0x10de",
                "device": "0x20b0",
                "resource": list(A100_RESOURCE),
                "deviceName": "GA100 [A100 SXM4 40GB]",
                "devIommu": True,
            }
    return snap


def _dev(tmp_path: Path, iommu: bool) -> Path:
    dev = tmp_path / "dev"
    dev.mkdir(exist_ok=True)
    if iommu:
        (dev / "iommu").write_text("")
    return dev


def _pci_ids(tmp_path: Path) -> Path:
    path = tmp_path / "pci.ids"
    path.write_text(PCI_IDS)
    return path


def test_capture_reads_the_sysfs_pci_files_the_pci_database_and_dev_iommu(sysfs: Any, tmp_path: Path) -> None:
    recorded = _recorded()
    got = capture(
        FakeNvml(recorded),
        sysfs=sysfs(recorded),
        node_name="a100-0",
        dev=_dev(tmp_path, iommu=True),
        pci_ids=[tmp_path / "absent.ids", _pci_ids(tmp_path)],
    )
    assert got == recorded


def test_without_sysfs_pci_files_nothing_is_recorded(sysfs: Any, tmp_path: Path) -> None:
    recorded = _recorded(with_pci=False)
    got = capture(FakeNvml(recorded), sysfs=sysfs(recorded), node_name="a100-0", dev=_dev(tmp_path, iommu=True))
    assert all("sysfsPci" not in g for g in got["gpus"])
    assert all(g.vfio is None for g in node_from_snapshot(got).gpus)


def test_no_pci_database_records_no_name_and_no_dev_iommu_records_false(sysfs: Any, tmp_path: Path) -> None:
    recorded = _recorded()
    got = capture(
        FakeNvml(recorded),
        sysfs=sysfs(recorded),
        node_name="a100-0",
        dev=_dev(tmp_path, iommu=False),
        pci_ids=[tmp_path / "absent.ids"],
    )
    pci = got["gpus"][0]["sysfsPci"]
    assert pci["deviceName"] is None and pci["devIommu"] is False
    facts = node_from_snapshot(got).gpus[0].vfio
    assert facts is not None and facts.missing() == ["device_name"]


def test_pci_device_name_is_nvpci_s() -> None:
    assert pci_device_name(0x10DE, 0x20B0, [Path("/nonexistent")]) is None


def test_pci_device_name_from_a_database(tmp_path: Path) -> None:
    path = _pci_ids(tmp_path)
    assert pci_device_name(0x10DE, 0x2330, [path]) == "GH100 [H100 SXM5 80GB]"
    assert pci_device_name(0x10DF, 0x20B0, [path]) == "Not an NVIDIA device"
    assert pci_device_name(0x10DE, 0x1234, [path]) == "UNKNOWN_DEVICE"  # listed vendor, unlisted device


def test_snapshot_interprets_the_facts_as_nvpci_does() -> None:
    node = node_from_snapshot(_recorded())
    facts = node.gpus[0].vfio
    assert facts == VfioFacts(
        vendor_id=0x10DE,
        device_id=0x20B0,
        device_name="GA100 [A100 SXM4 40GB]",
        numa_node=0,
        resources=tuple(_line(line) for line in A100_RESOURCE),
        iommu_fd=True,
    )
    # 64-bit windows: 64 GiB + 32 MiB, rounded up to the next power of two.
    assert facts.addressable_memory_bytes == 128 * 2**30


def test_snapshot_round_trip_keeps_the_facts_and_the_slices() -> None:
    node = node_from_snapshot(_recorded())
    again = node_from_snapshot(snapshot_from_node(node, source="nvml"))
    assert [g.vfio for g in again.gpus] == [g.vfio for g in node.gpus]
    assert node_resource_slices(again, passthrough=True, driver_release="0.4") == node_resource_slices(
        node, passthrough=True, driver_release="0.4"
    )


def test_round_trip_of_partial_facts_keeps_what_is_missing() -> None:
    node = node_from_snapshot(_recorded())
    assert node.gpus[0].vfio is not None
    partial = dataclasses.replace(node.gpus[0].vfio, device_name=None, iommu_fd=None)
    node = dataclasses.replace(node, gpus=(dataclasses.replace(node.gpus[0], vfio=partial), *node.gpus[1:]))
    again = node_from_snapshot(snapshot_from_node(node))
    assert again.gpus[0].vfio == partial
    assert partial.missing() == ["device_name", "iommu_fd"]


def test_a_malformed_resource_line_is_named() -> None:
    snap = copy.deepcopy(_recorded())
    snap["gpus"][1]["sysfsPci"]["resource"][2] = "0x0 0x1"
    with pytest.raises(InventoryError, match=r"GPU 1 .*resource line 2"):
        node_from_snapshot(snap)


def test_nvpci_skips_empty_lines_and_stops_after_six_bars() -> None:
    bar = (0x1000, 0x1FFF, 0x14220C)  # 4 KiB, 64-bit
    empty = (0, 0, 0)
    assert VfioFacts(resources=(empty, bar)).addressable_memory_bytes == 4096
    assert VfioFacts(resources=(bar,) * 5 + ((0x10000, 0x1FFFF, 0x40200), bar)).addressable_memory_bytes == 32768
    assert VfioFacts(resources=(bar,) * 8).addressable_memory_bytes == 32768  # lines 6 and 7 are not BARs
    assert VfioFacts(resources=(empty,) * 3).addressable_memory_bytes == 0
