"""Every shipped policy's multi-GPU claim allocates on slices exactly as the NVIDIA DRA driver publishes them.

The slices come from `dra.gpus.node_resource_slices` with its defaults (driver 25.12's attribute set, no gpudra
attribute) and with driver 25.8's; the claims from the shipped policies as the webhook would build them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from dra.allocator import Allocator, FeatureSet, Unsatisfiable
from dra.gpus import (
    DRIVER_RELEASES,
    NVLINK_GROUP_ATTRIBUTE,
    device_classes,
    get,
    node_resource_slices,
    synthetic_node,
)
from policyengine import load_policies, shipped_policies_dir

POLICIES = load_policies(shipped_policies_dir())
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"


def _pod(
    name: str,
    gpus: int,
    *,
    args: list[str] | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "llm"}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    container: dict[str, Any] = {"name": "main", "image": "img", "resources": {"limits": {"nvidia.com/gpu": gpus}}}
    if args:
        container["args"] = args
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [container]}}


MULTI_GPU_PODS = [
    _pod("vllm-tp2", 2, args=["--tensor-parallel-size", "2"]),
    _pod("vllm-tp4", 4, args=["--tensor-parallel-size=4"]),
    _pod("vllm-tp8", 8, args=["-tp", "8"]),
    _pod("vllm-tp4-pcie", 4, args=["-tp=4"], annotations={"gpudra.io/topology": "pcie"}),
    _pod("vllm-tp2-custom", 2, args=["-tp=2"], annotations={"gpudra.io/topology": "example.com/fabric"}),
    _pod("ray-worker", 4, labels={"ray.io/node-type": "worker"}),
    _pod("plain-2", 2),
    _pod("annotated-2", 2, annotations={"gpudra.io/vram": "20Gi"}),
]

NODES = {
    "hgx-h100-8": synthetic_node(get("H100-SXM5-80GB"), "hgx", 8),
    "h100-nvl-8": synthetic_node(get("H100-NVL-94GB"), "nvl", 8),
    "l40s-8": synthetic_node(get("L40S"), "pcie", 8),
}


def _claim(pod: Mapping[str, Any], namespace_labels: Mapping[str, str] | None = None) -> tuple[str, dict[str, Any]]:
    meta: dict[str, Any] = {"name": "llm", "labels": dict(namespace_labels)} if namespace_labels else {"name": "llm"}
    decision = POLICIES.evaluate(pod, {"apiVersion": "v1", "kind": "Namespace", "metadata": meta})
    assert decision.allowed and decision.claim is not None, (pod["metadata"]["name"], decision.message)
    assert decision.policy is not None
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": pod["metadata"]["name"], "namespace": "llm", "uid": "uid-" + pod["metadata"]["name"]},
        "spec": copy.deepcopy(dict(decision.claim)),
    }
    return decision.policy, claim


def _allocate(slices: list[dict[str, Any]], claim: dict[str, Any], node: str) -> list[dict[str, Any]]:
    allocator = Allocator(slices=slices, classes=device_classes(), allocated=[], features=FeatureSet.latest())
    (result,) = allocator.allocate([claim], node={"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
    return list(result["devices"]["results"])


def _attributes(slices: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["name"]: d["attributes"] for s in slices for d in s["spec"].get("devices", [])}


def test_every_multi_gpu_container_gets_the_topology_preference() -> None:
    """The device plugin's preferred allocation keeps any container's GPUs close, so every multi-GPU pod here (a
    known server or not, sized or not) is multi-gpu's, whose alternatives prefer a shared topology attribute."""
    decided = {pod["metadata"]["name"]: _claim(pod) for pod in MULTI_GPU_PODS}
    assert {policy for policy, _ in decided.values()} == {"multi-gpu"}
    for name, (_, claim) in decided.items():
        assert claim["spec"]["devices"]["constraints"], name


@pytest.mark.parametrize("release", DRIVER_RELEASES)
@pytest.mark.parametrize("node_key", sorted(NODES))
@pytest.mark.parametrize("pod", MULTI_GPU_PODS, ids=lambda p: p["metadata"]["name"])
def test_multi_gpu_claims_allocate_on_driver_exact_slices(pod: dict[str, Any], node_key: str, release: str) -> None:
    node = NODES[node_key]
    slices = node_resource_slices(node, mig_mode="none", driver_release=release)
    assert not any(NVLINK_GROUP_ATTRIBUTE in a for a in _attributes(slices).values())
    _, claim = _claim(pod)
    results = _allocate(slices, claim, node.node_name)
    wanted = pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]
    assert len(results) == wanted and len({r["device"] for r in results}) == wanted


@pytest.mark.parametrize(
    "pod",
    [p for p in MULTI_GPU_PODS if p["metadata"]["name"].startswith(("vllm-tp2", "vllm-tp4", "ray"))],
    ids=lambda p: p["metadata"]["name"],
)
def test_up_to_four_gpus_stay_under_one_pcie_root_when_the_driver_publishes_it(pod: dict[str, Any]) -> None:
    node = NODES["l40s-8"]
    slices = node_resource_slices(node, mig_mode="none")
    _, claim = _claim(pod)
    if "example.com/fabric" in str(claim):
        pytest.skip("a custom attribute nobody publishes: any GPUs")
    attrs = _attributes(slices)
    results = _allocate(slices, claim, node.node_name)
    assert len({attrs[r["device"]][PCIE_ROOT]["string"] for r in results}) == 1
    assert {r["request"].split("/")[1] for r in results} == {"same-pcieroot"}


def test_nvlink_groups_are_preferred_where_gpudra_publishes_them() -> None:
    node = NODES["h100-nvl-8"]  # NVLink bridges join pairs; PCIe roots hold four GPUs
    slices = node_resource_slices(node, mig_mode="none", gpudra_attributes=True)
    attrs = _attributes(slices)
    _, claim = _claim(MULTI_GPU_PODS[0])
    results = _allocate(slices, claim, node.node_name)
    assert {r["request"] for r in results} == {"main/same-nvlinkgroup"}
    assert len({attrs[r["device"]][NVLINK_GROUP_ATTRIBUTE]["string"] for r in results}) == 1


def test_the_old_nvlink_only_claim_is_unsatisfiable_on_driver_slices() -> None:
    """The claim the policy used to build (issue 11): a bare matchAttribute on gpudra's attribute."""
    node = NODES["hgx-h100-8"]
    old = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "old", "namespace": "llm", "uid": "uid-old"},
        "spec": {
            "devices": {
                "requests": [{"name": "main", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}],
                "constraints": [{"requests": ["main"], "matchAttribute": NVLINK_GROUP_ATTRIBUTE}],
            }
        },
    }
    with pytest.raises(Unsatisfiable):
        _allocate(node_resource_slices(node, mig_mode="none"), old, node.node_name)
    assert len(_allocate(node_resource_slices(node, mig_mode="none", gpudra_attributes=True), old, "hgx")) == 2


# -- gpudra.io/max-vram: a claim a shipped policy builds holds no device above the cap over the pod's devices --
MIXED_H100 = synthetic_node(get("H100-SXM5-80GB"), "mixed", 2, mig_layouts={0: [("1g.10gb", 0), ("1g.10gb", 1)]})
CAPPED_NODES = {
    "mixed-h100": MIXED_H100,  # GPU 0: two MIG 1g.10gb (9984Mi each); GPU 1: a whole 80 GB GPU
    "hgx-h100-8": NODES["hgx-h100-8"],
    "hgx-h200-8": synthetic_node(get("H200-SXM5-141GB"), "h200", 8),
    "t4-4": synthetic_node(get("T4"), "t4", 4),  # 15 GiB GPUs
}


def _device_memory(slices: list[dict[str, Any]]) -> dict[str, str]:
    return {d["name"]: d["capacity"]["memory"]["value"] for s in slices for d in s["spec"].get("devices", [])}


def _pod_devices(pod: Mapping[str, Any]) -> int:
    return sum(int(n) for c in pod["spec"]["containers"] for n in c["resources"]["limits"].values())


def _mig_pod(name: str, profile: str, count: int) -> dict[str, Any]:
    pod = _pod(name, 1)
    pod["spec"]["containers"][0]["resources"]["limits"] = {f"nvidia.com/mig-{profile}": count}
    return pod


@pytest.mark.parametrize("release", DRIVER_RELEASES)
@pytest.mark.parametrize(
    ("pod", "max_vram", "node_key", "fits"),
    [
        # An unannotated pod: before, whole-gpu's claim took the 80 GB GPU under any cap.
        (_pod("plain-1", 1), "10Gi", "mixed-h100", None),
        (_pod("plain-1", 1), "16Gi", "hgx-h100-8", None),
        (_pod("plain-1", 1), "16Gi", "t4-4", "15Gi"),
        (_pod("plain-1", 1), "80Gi", "hgx-h100-8", "81559Mi"),
        (_pod("plain-2", 2), "80Gi", "hgx-h100-8", None),  # 2 x 80 GB > 80Gi
        (_pod("plain-2", 2), "160Gi", "hgx-h100-8", "81559Mi"),
        # Legacy MIG: 1g.10gb (9984Mi) fits 10Gi once, not twice.
        (_mig_pod("mig-1", "1g.10gb", 1), "10Gi", "mixed-h100", "9984Mi"),
        (_mig_pod("mig-2", "1g.10gb", 2), "10Gi", "mixed-h100", None),
        (_mig_pod("mig-2", "1g.10gb", 2), "20Gi", "mixed-h100", "9984Mi"),
        # right-size: the MIG alternative fits, the whole alternative (>= 8Gi) no longer takes an 80 GB GPU.
        (_pod("sized-8", 1, annotations={"gpudra.io/vram": "8Gi"}), "10Gi", "mixed-h100", "9984Mi"),
        (_pod("sized-8", 1, annotations={"gpudra.io/vram": "8Gi"}), "10Gi", "hgx-h100-8", None),
        # multi-gpu: tensor parallelism over GPUs of at most the cap over the pod's devices.
        (_pod("vllm-tp2", 2, args=["-tp", "2"]), "160Gi", "hgx-h100-8", "81559Mi"),
        (_pod("vllm-tp2", 2, args=["-tp", "2"]), "160Gi", "hgx-h200-8", None),
        (_pod("vllm-tp4", 4, args=["-tp=4"]), "64Gi", "t4-4", "15Gi"),
        (_pod("ray-worker", 4, labels={"ray.io/node-type": "worker"}), "64Gi", "hgx-h100-8", None),
    ],
    ids=lambda v: v["metadata"]["name"] if isinstance(v, dict) else str(v),
)
def test_a_max_vram_namespace_allocates_only_devices_that_fit_the_cap(
    pod: dict[str, Any], max_vram: str, node_key: str, fits: str | None, release: str
) -> None:
    node = CAPPED_NODES[node_key]
    slices = node_resource_slices(node, mig_mode="static", driver_release=release)
    _, claim = _claim(pod, {"gpudra.io/max-vram": max_vram})
    if fits is None:
        with pytest.raises(Unsatisfiable):
            _allocate(slices, claim, node.node_name)
        return
    results = _allocate(slices, claim, node.node_name)
    memory = _device_memory(slices)
    assert {memory[r["device"]] for r in results} == {fits}
    assert len(results) == _pod_devices(pod)


def test_without_the_cap_the_same_nodes_hand_out_the_large_gpu() -> None:
    """The nodes above can serve these pods: what keeps the capped claims off the 80 GB GPU is the bound."""
    cases = [
        (_pod("plain-1", 1), "hgx-h100-8"),
        (_pod("plain-1", 1), "mixed-h100"),
        (_pod("sized-8", 1, annotations={"gpudra.io/vram": "8Gi"}), "hgx-h100-8"),
    ]
    for pod, node_key in cases:
        _, claim = _claim(pod)
        node = CAPPED_NODES[node_key]
        slices = node_resource_slices(node, mig_mode="static")
        (result,) = _allocate(slices, claim, node.node_name)
        assert _device_memory(slices)[result["device"]] == "81559Mi"
