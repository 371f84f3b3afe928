"""Issue 25 item 2: a multi-GPU claim carries the per-device memory its sizing found, so the allocator keeps a
tensor-parallel 70B model off GPUs too small for its share (examples/pod-vllm-tp4.yaml: 56.2 GB per device)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dra.allocator import Allocator, Unsatisfiable
from dra.gpus import device_classes, get, node_resource_slices, synthetic_node
from policyengine import load_policies, shipped_policies_dir

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _claim() -> dict[str, Any]:
    pod = yaml.safe_load((EXAMPLES / "pod-vllm-tp4.yaml").read_text())
    # a namespace without caps (team-a's gpudra.io/max-vram would bound each device at the other end too)
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
    decision = load_policies(shipped_policies_dir()).evaluate(pod, namespace)
    assert decision.allowed and decision.policy == "multi-gpu" and decision.claim is not None, decision.message
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "tp4", "namespace": "team-a"}, "spec": decision.claim}  # fmt: skip


def _allocate(model: str) -> Any:
    node = synthetic_node(get(model), "node-0", 8)
    slices = node_resource_slices(node, mig_mode="none")  # type: ignore[arg-type]
    allocator = Allocator(slices=slices, classes=device_classes())
    return allocator.allocate([_claim()], node={"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-0"}})


def test_every_alternative_selects_the_memory_explain_reports() -> None:
    requests = _claim()["spec"]["devices"]["requests"]
    for alternative in requests[0]["firstAvailable"]:
        expressions = [s["cel"]["expression"] for s in alternative.get("selectors", [])]
        assert "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('53634Mi')) >= 0" in expressions


def test_a_70b_tp4_claim_is_unsatisfiable_on_24_gb_gpus() -> None:
    with pytest.raises(Unsatisfiable):
        _allocate("L4")


def test_a_70b_tp4_claim_allocates_on_h100s() -> None:
    results = _allocate("H100-SXM5-80GB")[0]["devices"]["results"]
    assert len(results) == 4
