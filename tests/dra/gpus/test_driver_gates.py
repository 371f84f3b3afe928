"""Issue 26: NVIDIA DRA driver 0.5's alpha gates as its kubelet plugin publishes them (ConsumableShares,
FabricManagerPartitioning), refused where the driver refuses them, and what gpudra's policies do with them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dra.allocator import Allocator
from dra.gpus import (
    DEFAULT_DRIVER_RELEASE,
    device_classes,
    get,
    node_resource_slices,
    parse_driver_gates,
    synthetic_node,
)
from dra.model import ResourceSlice
from policyengine import load_policies, shipped_policies_dir

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-0"}}


def _slices(model: str, count: int, gates: str, **options: Any) -> list[dict[str, Any]]:
    node = synthetic_node(get(model), "node-0", count)
    return node_resource_slices(node, mig_mode="none", driver_gates=parse_driver_gates(gates, "0.5", **options))


def _devices(slices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for s in slices for d in s["spec"]["devices"]]


def test_the_default_inventory_is_driver_0_5() -> None:
    assert DEFAULT_DRIVER_RELEASE == "0.5"


def test_consumable_shares_publishes_multiple_allocations_and_a_memory_request_policy() -> None:
    slices = _slices("L40S", 4, "ConsumableShares")
    for device in _devices(slices):
        assert device["allowMultipleAllocations"] is True
        memory = device["capacity"]["memory"]
        assert memory["requestPolicy"] == {
            "default": memory["value"],
            "validRange": {"min": "1Mi", "max": memory["value"], "step": "1Mi"},
        }
    for s in slices:  # the API server's own validation holds
        ResourceSlice.from_k8s(s)


@pytest.mark.parametrize(("mode", "default"), [("unlimited", "0"), ("3", "0")])
def test_other_share_modes(mode: str, default: str) -> None:
    device = _devices(_slices("L40S", 1, "ConsumableShares", consumable_shares=mode))[0]
    assert device["capacity"]["memory"]["requestPolicy"]["default"] == default
    assert ("shares" in device["capacity"]) == mode.isdigit()
    if mode.isdigit():
        assert device["capacity"]["shares"]["value"] == mode


def test_without_the_gate_nothing_is_shareable() -> None:
    device = _devices(_slices("L40S", 1, ""))[0]
    assert "allowMultipleAllocations" not in device and "requestPolicy" not in device["capacity"]["memory"]


def test_fabric_manager_partitions_on_an_8_gpu_nvswitch_baseboard() -> None:
    devices = _devices(_slices("H100-SXM5-80GB", 8, "FabricManagerPartitioning"))
    by_module = {d["attributes"]["gpuModuleID"]["int"]: d["attributes"] for d in devices}
    assert sorted(by_module) == list(range(1, 9))
    assert {a["partition8"]["int"] for a in by_module.values()} == {0}
    assert [by_module[m]["partition4"]["int"] for m in range(1, 9)] == [1, 1, 1, 1, 2, 2, 2, 2]
    assert [by_module[m]["partition2"]["int"] for m in range(1, 9)] == [3, 3, 4, 4, 5, 5, 6, 6]
    assert [by_module[m]["partition1"]["int"] for m in range(1, 9)] == list(range(7, 15))


def test_no_partitions_without_an_nvswitch_fabric() -> None:
    devices = _devices(_slices("L40S", 4, "FabricManagerPartitioning"))
    assert not any(k.startswith("partition") or k == "gpuModuleID" for d in devices for k in d["attributes"])


@pytest.mark.parametrize(
    ("gates", "release", "message"),
    [
        ("Bogus", "0.5", "unknown NVIDIA DRA driver feature gate"),
        ("ConsumableShares", "0.4", "not in NVIDIA DRA driver 0.4"),
        ("FabricManagerPartitioning", "25.12", "not in NVIDIA DRA driver 25.12"),
        ("ConsumableShares,MPSSupport", "0.5", "MPS sharing is not supported"),
        ("DynamicMIG,PassthroughSupport", "0.5", "mutually exclusive"),
        ("DeviceMetadata", "0.5", "requires PassthroughSupport"),
    ],
)
def test_combinations_the_driver_refuses_are_refused(gates: str, release: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_driver_gates(gates, release)


def test_a_bad_consumable_shares_value_is_refused() -> None:
    with pytest.raises(ValueError, match="memory, unlimited or a positive integer"):
        parse_driver_gates("ConsumableShares", "0.5", consumable_shares="half")


def _claim(example: str) -> dict[str, Any]:
    pod = yaml.safe_load((EXAMPLES / example).read_text())
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": pod["metadata"]["namespace"]}}
    decision = load_policies(shipped_policies_dir()).evaluate(pod, namespace)
    assert decision.allowed and decision.claim is not None, decision.message
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": pod["metadata"]["namespace"]}, "spec": decision.claim}  # fmt: skip


def test_a_small_right_sized_pod_allocates_as_a_share() -> None:
    allocator = Allocator(slices=_slices("L40S", 4, "ConsumableShares"), classes=device_classes())
    result = allocator.allocate([_claim("pod-legacy-vram.yaml")], node=NODE)[0]["devices"]["results"][0]
    assert result["request"].endswith("/shared") and result["consumedCapacity"] == {"memory": "8Gi"}


def test_the_tp4_example_lands_in_one_fabric_manager_partition() -> None:
    slices = _slices("H100-SXM5-80GB", 8, "FabricManagerPartitioning")
    attributes = {d["name"]: d["attributes"] for d in _devices(slices)}
    results = Allocator(slices=slices, classes=device_classes()).allocate([_claim("pod-vllm-tp4.yaml")], node=NODE)
    chosen = results[0]["devices"]["results"]
    assert len(chosen) == 4 and all(r["request"].endswith("/same-partition4") for r in chosen)
    assert len({attributes[r["device"]]["partition4"]["int"] for r in chosen}) == 1
