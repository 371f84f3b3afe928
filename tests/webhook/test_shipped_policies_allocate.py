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
from webhook.policy import load_policies, shipped_policies_dir

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


def _claim(pod: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    decision = POLICIES.evaluate(pod, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "llm"}})
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


def test_every_shipped_policy_has_a_multi_gpu_case_here() -> None:
    policies = {_claim(pod)[0] for pod in MULTI_GPU_PODS}
    claim_policies = {p.name for p in POLICIES.policies if p.claim is not None}
    assert claim_policies <= policies, f"no multi-GPU pod here reaches {sorted(claim_policies - policies)}"


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
