"""The gpudra strategy's placement of a policy claim agrees with `dra.allocator` on the same node shapes."""

from __future__ import annotations

from typing import Any

from dra.allocator import FeatureSet, allocate
from dra.gpus import catalog, device_classes, node_resource_slices, synthetic_node
from policyengine import load_policies
from simulator.cluster import ClusterSpec, NodeSpec, mig_profile, resolve_gpu
from simulator.driver import simulated_driver
from simulator.engine import run
from simulator.kpis import summarize
from simulator.strategies import make_strategy
from simulator.workload import SimPod, legacy_pod

VRAM = 3072


def _claim() -> dict[str, Any]:
    decision = load_policies().evaluate(legacy_pod("emb", 2000, 8192, 1, "embedding", vram_mib=VRAM))
    assert decision.claim is not None
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "default"}, "spec": dict(decision.claim)}  # fmt: skip


def _allocated(model: str, mig: str, *, shareable: bool) -> dict[str, Any]:
    node = synthetic_node(catalog.get(model), "node-a", 2)
    slices = node_resource_slices(node, mig_mode="dynamic" if mig == "dynamic" else "static")
    for item in slices:
        for device in item["spec"].get("devices") or []:
            if shareable and "-mig-" not in device["name"]:
                device["allowMultipleAllocations"] = True
    (result,) = allocate([_claim()], node="node-a", slices=slices, classes=device_classes(),
                         mode="upstream", features=FeatureSet.latest())  # fmt: skip
    (entry,) = result["devices"]["results"]
    return dict(entry)


def _simulated(model: str, mig: str, *, sharing: bool) -> dict[str, Any]:
    gpu = resolve_gpu(model)
    spec = ClusterSpec(
        "one",
        [
            NodeSpec(
                "node-a", "p", 64000, 262144, 2, gpu, gpu.key, mig, (), simulated_driver(consumable_capacity=sharing)
            )
        ],
    )
    pod = SimPod("emb", 2000, 8192, 1, 200, VRAM, workload_class="embedding")
    rec = run(spec, [pod], make_strategy("gpudra", mode="upstream"))
    return summarize(rec) | {"held_vram": rec.samples[-1].vram_held}


def test_dynamic_mig_takes_the_smallest_profile_on_the_fly() -> None:
    entry = _allocated("H100-SXM5-80GB", "dynamic", shareable=False)
    assert entry["request"] == "main/mig-1g-10gb" and "-mig-1g10gb-" in entry["device"]
    sim = _simulated("H100-SXM5-80GB", "dynamic", sharing=False)
    assert sim["on_the_fly_partitions"] == 1
    assert sim["held_vram"] == mig_profile(resolve_gpu("H100-SXM5-80GB"), "1g.10gb").memory_mib


def test_shareable_gpu_gets_a_memory_share() -> None:
    entry = _allocated("L40S", "none", shareable=True)
    assert entry["request"] == "main/shared" and entry["consumedCapacity"] == {"memory": "3Gi"}
    sim = _simulated("L40S", "none", sharing=True)
    assert sim["held_vram"] == VRAM and sim["on_the_fly_partitions"] == 0


def test_without_multiple_allocations_the_claim_takes_a_whole_gpu() -> None:
    entry = _allocated("L40S", "none", shareable=False)
    assert entry["request"] == "main/whole"
    sim = _simulated("L40S", "none", sharing=False)
    assert sim["held_vram"] == resolve_gpu("L40S").memory_mib
