"""The live NVML path, run against a double of the pynvml functions (no GPU where these tests run).

`FakeNvml` (conftest.py) answers pynvml's calls from a recorded snapshot, so capture -> snapshot must give back
exactly that record; the real GPU path is left for a machine with a GPU (scripts/capture_inventory.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pynvml
import pytest

import dra.inventory.nvml as nvml_module
from dra.inventory import NvmlUnavailable, capture, node_from_snapshot
from tests.dra.inventory.nvml_double import CATALOG_SNAPSHOTS, SNAPSHOTS, FakeNvml


def _load(name: str) -> dict[str, Any]:
    return json.loads((SNAPSHOTS / name).read_text())


@pytest.mark.parametrize("name", sorted(CATALOG_SNAPSHOTS))
def test_capture_reads_back_exactly_the_recorded_values(name: str, sysfs: Any) -> None:
    recorded = _load(name)
    fake = FakeNvml(recorded)
    got = capture(fake, sysfs=sysfs(recorded), node_name=recorded["node"])
    assert got["source"] == "nvml"
    assert {**got, "source": recorded["source"]} == recorded
    assert not fake.initialised  # nvmlShutdown was called


def test_capture_only_queries(sysfs: Any) -> None:
    recorded = _load("dgx-a100-8-mig.json")
    fake = FakeNvml(recorded)
    capture(fake, sysfs=sysfs(recorded), node_name="x")
    allowed = re.compile(r"^nvml(Init|Shutdown|System(Get)\w+|Device(Get)\w+|GpuInstanceGetInfo)$")
    assert fake.calls and all(allowed.match(c) for c in fake.calls), sorted(set(fake.calls))
    assert "nvmlDeviceGetP2PStatus" in fake.calls and "nvmlDeviceGetGpuInstancePossiblePlacements" in fake.calls


def test_module_source_calls_no_mutating_nvml_function() -> None:
    source = Path(nvml_module.__file__).read_text()
    called = set(re.findall(r"nvml\w+", source))
    mutating = {c for c in called if re.search(r"Set|Create|Destroy|Reset|Clear|Modify|Register", c)}
    assert mutating == set()


def test_library_not_found_is_a_clear_error() -> None:
    fake = FakeNvml(_load("l40s-4.json"), init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    with pytest.raises(NvmlUnavailable, match="NVML could not start: NVML Shared Library Not Found"):
        capture(fake)


def test_real_pynvml_without_a_driver_raises_nvml_unavailable() -> None:
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:  # a machine with a driver: the live path is checked by scripts/capture_inventory.py there
        pynvml.nvmlShutdown()
        pytest.skip("an NVIDIA driver is present on this machine")
    with pytest.raises(NvmlUnavailable, match="is the NVIDIA driver installed"):
        capture()


def test_no_gpu_is_a_clear_error() -> None:
    fake = FakeNvml({**_load("l40s-4.json"), "gpus": []})
    with pytest.raises(NvmlUnavailable, match="no GPU"):
        capture(fake)
    assert not fake.initialised


def test_mig_instance_without_permission_keeps_its_uuid_and_drops_its_placement(sysfs: Any) -> None:
    recorded = _load("dgx-a100-8-mig.json")
    for inst in recorded["gpus"][0]["migInstances"]:
        inst["placement"] = None
        inst["profileId"] = None
    got = capture(FakeNvml(recorded), sysfs=sysfs(recorded), node_name="x")
    assert [i["placement"] for i in got["gpus"][0]["migInstances"]] == [None, None]
    node = node_from_snapshot(got)
    assert node.gpus[0].mig_enabled and node.gpus[0].mig_instances == ()
    assert len(node.gpus[1].mig_instances) == 7


def test_p2p_is_asked_with_the_nvlink_index_as_an_int(sysfs: Any) -> None:
    recorded = _load("h100-nvl-4.json")
    got = capture(FakeNvml(recorded), sysfs=sysfs(recorded), node_name="x")
    assert got["p2pNvlink"]["0-1"] == 0 and got["p2pNvlink"]["0-2"] == 5
    assert isinstance(pynvml.NVML_P2P_CAPS_INDEX_READ, tuple)  # the quirk the capture avoids


def test_short_bus_id() -> None:
    assert nvml_module._short_bus_id("00000000:1B:00.0") == "0000:1b:00.0"
    assert nvml_module._short_bus_id("0001:c1:00.0") == "0001:c1:00.0"


def test_old_driver_profile_info_v1_has_no_names_and_the_catalog_supplies_them(sysfs: Any) -> None:
    recorded = _load("dgx-a100-8-mig.json")
    got = capture(FakeNvml(recorded, old_driver=True), sysfs=sysfs(recorded), node_name="x")
    assert {p["name"] for p in got["gpus"][0]["migProfiles"]} == {""}
    assert [p["id"] for p in got["gpus"][0]["migProfiles"]] == [p["id"] for p in recorded["gpus"][0]["migProfiles"]]
    node = node_from_snapshot(got)
    assert node.gpus[0].mig is not None
    assert [p.name for p in node.gpus[0].mig.profiles] == [
        p.name for p in node_from_snapshot(recorded).gpus[0].mig.profiles
    ]
