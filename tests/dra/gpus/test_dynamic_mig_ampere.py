"""DynamicMIG on Ampere as NVIDIA DRA driver 0.4 and later announce it (nvlib.go `isDynamicMIGCapable`, commit
13882467 "Prevent mig toggle on A100s"): MIG off, the whole GPU only; MIG on, the partitions only; Hopper and
Blackwell, the whole GPU and every partition whatever the MIG mode; 25.12, the whole GPU and every partition."""

from __future__ import annotations

from typing import Any

import pytest

from dra.gpus import NodeGpus, get, node_resource_slices, slice_limit_errors, synthetic_node, to_models
from dra.gpus.slices import supports_mig_mode_toggle
from dra.quantity import Quantity

AMPERE = ["A100-SXM4-80GB", "A100-PCIE-40GB", "A30-24GB"]
TOGGLES = ["H100-SXM5-80GB", "H200-SXM5-141GB", "B200-SXM6-180GB"]


def _node(model: str, mig_on: bool, count: int = 2) -> NodeGpus:
    layouts: dict[int, list[Any]] | None = {i: [] for i in range(count)} if mig_on else None
    return synthetic_node(get(model), "n", count, mig_layouts=layouts)


def _devices(slices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for s in slices for d in s["spec"].get("devices") or []]


def _partitions(model: str) -> int:
    geometry = get(model).mig
    assert geometry is not None
    return len(geometry.placements())


@pytest.mark.parametrize("model", AMPERE)
@pytest.mark.parametrize("version", ["1.34", "1.35"])
def test_ampere_with_mig_off_is_its_whole_gpu_without_counters(model: str, version: str) -> None:
    slices = node_resource_slices(_node(model, mig_on=False), mig_mode="dynamic", k8s_version=version)
    assert [d["name"] for d in _devices(slices)] == ["gpu-0", "gpu-1"]
    assert all(not s["spec"].get("sharedCounters") for s in slices)
    whole = _devices(slices)[0]
    assert "consumesCounters" not in whole
    assert whole["capacity"].keys() == {"memory"}  # the NVML total (partitions.go fullGpuCapacity)
    assert Quantity(whole["capacity"]["memory"]["value"]).as_int() == get(model).memory_bytes
    if version == "1.35":  # a node with a MIG-capable GPU: split layout, the (empty) counter slice first
        assert len(slices) == 3 and slices[0]["spec"].keys() == {"driver", "nodeName", "pool"}
        assert {s["spec"]["pool"]["resourceSliceCount"] for s in slices} == {3}
    else:
        assert len(slices) == 2
    assert slice_limit_errors(slices, version) == []
    if version == "1.35":
        for obj in to_models(slices):
            assert obj.validation_errors() == []


@pytest.mark.parametrize("model", AMPERE)
@pytest.mark.parametrize("version", ["1.34", "1.35"])
def test_ampere_with_mig_on_announces_its_partitions_only(model: str, version: str) -> None:
    slices = node_resource_slices(_node(model, mig_on=True), mig_mode="dynamic", k8s_version=version)
    names = [d["name"] for d in _devices(slices)]
    assert "gpu-0" not in names and "gpu-1" not in names
    assert len(names) == 2 * _partitions(model)
    sets = [c["name"] for s in slices for c in s["spec"].get("sharedCounters") or []]
    assert sets == ["gpu-0-counter-set", "gpu-1-counter-set"]  # partitions still consume the GPU's counter set
    assert all(d["consumesCounters"][0]["counterSet"] in sets for d in _devices(slices))
    assert slice_limit_errors(slices, version) == []


def test_a30_partitions_are_its_own_four_slice_table() -> None:
    slices = node_resource_slices(_node("A30-24GB", mig_on=True, count=1), mig_mode="dynamic", k8s_version="1.35")
    names = sorted(d["name"] for d in _devices(slices))
    assert names == sorted(
        [f"gpu-0-mig-1g6gb-14-{i}" for i in range(4)]
        + [f"gpu-0-mig-1g6gb-me-21-{i}" for i in range(4)]
        + ["gpu-0-mig-2g12gb-5-0", "gpu-0-mig-2g12gb-5-2", "gpu-0-mig-2g12gb-me-6-0", "gpu-0-mig-2g12gb-me-6-2"]
        + ["gpu-0-mig-4g24gb-0-0"]
    )
    (counter_set,) = slices[0]["spec"]["sharedCounters"]
    counters = {k: v["value"] for k, v in counter_set["counters"].items()}
    assert {k for k in counters if k.startswith("memory-slice-")} == {f"memory-slice-{i}" for i in range(4)}
    assert counters["multiprocessors"] == "56" and counters["memory"] == "24000Mi"


@pytest.mark.parametrize("model", TOGGLES)
@pytest.mark.parametrize("mig_on", [False, True])
def test_hopper_and_blackwell_announce_whole_gpu_and_partitions_whatever_the_mig_mode(model: str, mig_on: bool) -> None:
    slices = node_resource_slices(_node(model, mig_on), mig_mode="dynamic", k8s_version="1.35")
    names = [d["name"] for d in _devices(slices)]
    assert "gpu-0" in names and "gpu-1" in names
    assert len(names) == 2 * (1 + _partitions(model))
    whole = next(d for d in _devices(slices) if d["name"] == "gpu-0")
    assert whole["consumesCounters"][0]["counterSet"] == "gpu-0-counter-set"


@pytest.mark.parametrize("model", AMPERE)
@pytest.mark.parametrize("mig_on", [False, True])
def test_release_25_12_announced_whole_gpu_and_partitions_on_ampere(model: str, mig_on: bool) -> None:
    slices = node_resource_slices(_node(model, mig_on), mig_mode="dynamic", driver_release="25.12")
    names = [d["name"] for d in _devices(slices)]
    assert "gpu-0" in names and len(names) == 2 * (1 + _partitions(model))


def test_static_and_none_modes_do_not_change_on_ampere() -> None:
    for mig_on in (False, True):
        node = _node("A100-SXM4-80GB", mig_on)
        assert [d["name"] for d in _devices(node_resource_slices(node, mig_mode="none"))] == ["gpu-0", "gpu-1"]
    assert _devices(node_resource_slices(_node("A100-SXM4-80GB", True), mig_mode="static")) == []


def test_a_node_without_a_mig_capable_gpu_keeps_the_combined_layout() -> None:
    """driver.go `NewDriver`: DynamicMIG on a node with no MIG-capable GPU keeps the combined layout on 1.35."""
    slices = node_resource_slices(synthetic_node(get("L40S"), "l", 2), mig_mode="dynamic", k8s_version="1.35")
    assert [len(s["spec"]["devices"]) for s in slices] == [1, 1]


def test_only_hopper_and_newer_toggle_mig_mode_without_a_reset() -> None:
    by_model = {m: supports_mig_mode_toggle(_node(m, False).gpus[0]) for m in [*AMPERE, *TOGGLES]}
    assert by_model == {**dict.fromkeys(AMPERE, False), **dict.fromkeys(TOGGLES, True)}


def test_a30_profiles_measure_compute_in_its_own_four_slices() -> None:
    a30, a100 = get("A30-24GB").mig, get("A100-SXM4-80GB").mig
    assert a30 is not None and a100 is not None
    assert [p.compute_milli for p in a30.profiles] == [250, 250, 500, 500, 1000]
    assert a100.profile("3g.40gb").compute_milli == 428 and a100.profile("7g.80gb").compute_milli == 1000


def test_an_a30_snapshot_reads_back_as_the_catalog_node() -> None:
    from dra.inventory import node_from_snapshot, snapshot_from_node

    node = _node("A30-24GB", mig_on=True)
    snapshot = snapshot_from_node(node)
    records = snapshot["gpus"][0]["migProfiles"]
    assert [(r["id"], r["profileIndex"]) for r in records] == [(14, 0), (5, 1), (0, 3), (21, 7), (6, 8)]
    read = node_from_snapshot(snapshot)
    geometry, catalog = read.gpus[0].mig, node.gpus[0].mig
    assert geometry is not None and catalog is not None
    assert sorted(geometry.profiles, key=lambda p: p.gi_profile_id) == sorted(
        catalog.profiles, key=lambda p: p.gi_profile_id
    )
    assert (geometry.compute_slices, geometry.memory_slices) == (4, 4)
    for mode in ("none", "static", "dynamic"):
        assert node_resource_slices(read, mig_mode=mode) == node_resource_slices(node, mig_mode=mode)
