"""Small hand-built clusters and pods for the metric and strategy tests."""

from __future__ import annotations

from simulator.cluster import ClusterSpec, NodeSpec, resolve_gpu
from simulator.driver import simulated_driver
from simulator.workload import SimPod


def node(
    name: str, gpu: str, gpus: int, *, mig: str = "none", cpu: int = 64000, mem: int = 262144, sharing: bool = False
) -> NodeSpec:
    """`sharing`: the node's driver runs ConsumableShares (consumable capacity; off by default, as in the driver)."""
    kind = resolve_gpu(gpu)
    return NodeSpec(
        name, "pool", cpu, mem, gpus, kind, kind.key, mig, driver_gates=simulated_driver(consumable_capacity=sharing)
    )


def cluster(*nodes: NodeSpec) -> ClusterSpec:
    return ClusterSpec(name="test", nodes=list(nodes))


def pod(
    name: str,
    *,
    gpus: int = 1,
    milli: int = 1000,
    vram: int = 4096,
    at: float = 0.0,
    lasts: float | None = None,
    cpu: int = 1000,
    priority: int = 0,
) -> SimPod:
    return SimPod(name, cpu, 1024, gpus, milli if gpus else 0, vram if gpus else 0, at, lasts, priority=priority)
