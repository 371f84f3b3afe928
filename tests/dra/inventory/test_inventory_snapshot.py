"""Snapshots: the committed files are what the catalog builds, and their interpretation into slices."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pynvml
import pytest

from dra.errors import InputError
from dra.gpus import NVLINK_GROUP_ATTRIBUTE, node_resource_slices
from dra.inventory import InventoryError, capture, load_snapshot, node_from_snapshot, save_snapshot
from dra.inventory.snapshot import ARCHITECTURES, BRANDS, _cuda_version, _pcie_root
from tests.dra.inventory.nvml_double import CATALOG_SNAPSHOTS, SNAPSHOTS, FakeNvml, build_catalog_snapshot


@pytest.mark.parametrize("name", sorted(CATALOG_SNAPSHOTS))
def test_committed_snapshot_is_exactly_what_the_catalog_builds(name: str) -> None:
    assert load_snapshot(SNAPSHOTS / name) == build_catalog_snapshot(name), (
        f"{name} is stale: rewrite it with `python tests/dra/inventory/nvml_double.py`"
    )


def test_every_snapshot_file_is_documented() -> None:
    readme = (SNAPSHOTS / "README.md").read_text()
    for path in SNAPSHOTS.glob("*.json"):
        assert f"`{path.name}`" in readme
        assert json.loads(path.read_text())["source"] in ("catalog", "nvml")


@pytest.mark.parametrize("name", sorted(CATALOG_SNAPSHOTS))
def test_live_and_file_paths_give_the_same_slices(name: str, sysfs: Any) -> None:
    recorded = load_snapshot(SNAPSHOTS / name)
    live = capture(FakeNvml(recorded), sysfs=sysfs(recorded), node_name=recorded["node"])
    for mode in ("none", "static", "dynamic"):
        from_live = node_resource_slices(node_from_snapshot(live), mig_mode=mode)  # type: ignore[arg-type]
        from_file = node_resource_slices(node_from_snapshot(recorded), mig_mode=mode)  # type: ignore[arg-type]
        assert from_live == from_file


def _groups(name: str) -> list[str | None]:
    node = node_from_snapshot(load_snapshot(SNAPSHOTS / name))
    devices = node_resource_slices(node, mig_mode="none", gpudra_attributes=True)[0]["spec"]["devices"]
    return [d["attributes"].get(NVLINK_GROUP_ATTRIBUTE, {}).get("string") for d in devices]


def test_nvlink_groups_are_derived_from_the_recorded_links() -> None:
    assert _groups("hgx-h100-8.json") == ["nvswitch-0"] * 8
    assert _groups("h100-nvl-4.json") == ["pair-0", "pair-0", "pair-1", "pair-1"]
    assert _groups("dgx1-v100-8.json") == ["mesh-0"] * 8
    assert _groups("l40s-4.json") == [None] * 4


def test_nvswitch_pairs_need_p2p_nvlink_ok() -> None:
    snap = load_snapshot(SNAPSHOTS / "hgx-h100-8.json")
    for j in range(8):
        if j != 7:
            snap["p2pNvlink"][f"{j}-7"] = snap["p2pNvlink"][f"7-{j}"] = 5
    node = node_from_snapshot(snap)
    assert node.topology.groups() == [list(range(7))]
    assert node.topology.link_count(0, 1) == 18


def test_direct_links_are_counted_per_peer() -> None:
    node = node_from_snapshot(load_snapshot(SNAPSHOTS / "dgx1-v100-8.json"))
    assert node.topology.link_count(0, 3) == 2 and node.topology.link_count(0, 1) == 1
    assert node.topology.link_count(0, 5) == 0


def test_interpretation_of_raw_values() -> None:
    node = node_from_snapshot(load_snapshot(SNAPSHOTS / "dgx-a100-8-mig.json"), node_name="renamed")
    assert node.node_name == "renamed"
    gpu = node.gpus[2]
    assert gpu.pci_bus_id == "0000:20:00.0" and gpu.pcie_root == "pci0000:00" and gpu.numa_node == 0
    assert gpu.architecture == "Ampere" and gpu.brand == "Nvidia" and gpu.compute_capability == "8.0"
    assert gpu.mig_enabled and [(m.profile, m.start) for m in gpu.mig_instances] == [
        ("4g.40gb", 0),
        ("2g.20gb", 4),
        ("1g.10gb", 6),
    ]
    assert not node.gpus[5].mig_enabled and node.gpus[5].mig_capable
    assert node.cuda_driver_version == "13.0"


def test_enum_maps_agree_with_pynvml() -> None:
    assert ARCHITECTURES[pynvml.NVML_DEVICE_ARCH_AMPERE] == "Ampere"
    assert ARCHITECTURES[pynvml.NVML_DEVICE_ARCH_ADA] == "Ada Lovelace"
    assert ARCHITECTURES[pynvml.NVML_DEVICE_ARCH_HOPPER] == "Hopper"
    assert ARCHITECTURES[pynvml.NVML_DEVICE_ARCH_BLACKWELL] == "Blackwell"
    assert ARCHITECTURES[pynvml.NVML_DEVICE_ARCH_VOLTA] == "Volta"
    assert BRANDS[pynvml.NVML_BRAND_NVIDIA] == "Nvidia" and BRANDS[pynvml.NVML_BRAND_TESLA] == "Tesla"
    assert BRANDS[pynvml.NVML_BRAND_GEFORCE_RTX] == "GeForceRTX"


def test_small_parsers() -> None:
    assert _cuda_version(12080) == "12.8" and _cuda_version(13000) == "13.0"
    assert _pcie_root("../../../devices/pci0000:15/0000:15:01.0/0000:18:00.0") == "pci0000:15"
    assert _pcie_root("../../../devices/platform/foo") is None and _pcie_root(None) is None


def test_mig_profiles_come_from_nvml_not_the_catalog() -> None:
    snap = load_snapshot(SNAPSHOTS / "dgx-a100-8-mig.json")
    for profile in snap["gpus"][4]["migProfiles"]:
        if profile["id"] == 9:
            profile["multiprocessorCount"] = 40
    node = node_from_snapshot(snap)
    assert node.gpus[4].mig is not None and node.gpus[4].mig.profile("3g.40gb").multiprocessors == 40
    assert node.gpus[3].mig is not None and node.gpus[3].mig.profile("3g.40gb").multiprocessors == 42


def test_load_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": \n')
    with pytest.raises(InputError, match=r"bad.json:2: not JSON"):
        load_snapshot(bad)
    bad.write_text('{"schema": "something/else", "gpus": []}')
    with pytest.raises(InputError, match="schema must be 'gpudra.io/inventory-snapshot/v1'"):
        load_snapshot(bad)
    with pytest.raises(InputError, match="cannot read snapshot"):
        load_snapshot(tmp_path / "missing.json")


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    snap = build_catalog_snapshot("l40s-4.json")
    save_snapshot(snap, tmp_path / "s.json")
    assert load_snapshot(tmp_path / "s.json") == snap


def test_malformed_gpu_record_and_missing_node_name() -> None:
    snap = build_catalog_snapshot("l40s-4.json")
    del snap["gpus"][1]["uuid"]
    with pytest.raises(InventoryError, match="malformed"):
        node_from_snapshot(snap)
    snap = build_catalog_snapshot("l40s-4.json")
    snap["node"] = ""
    with pytest.raises(InventoryError, match="no node name"):
        node_from_snapshot(snap)


def test_addressing_mode_round_trips_from_the_snapshot() -> None:
    snapshot = copy.deepcopy(load_snapshot(SNAPSHOTS / "hgx-h100-8.json"))
    for record in snapshot["gpus"]:
        record["addressingMode"] = 2  # NVML_DEVICE_ADDRESSING_MODE_ATS, as a coherent-memory system answers
    node = node_from_snapshot(snapshot)
    assert {g.addressing_mode for g in node.gpus} == {"ATS"}
    devices = [d for s in node_resource_slices(node, mig_mode="none") for d in s["spec"]["devices"]]
    assert {d["attributes"]["addressingMode"]["string"] for d in devices} == {"ATS"}
    snapshot["gpus"][0]["addressingMode"] = 7
    with pytest.raises(InventoryError, match="addressingMode 7"):
        node_from_snapshot(snapshot)
