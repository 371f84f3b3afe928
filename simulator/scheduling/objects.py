"""The simulator's state of a real cluster: v1 Nodes, resource.k8s.io/v1 ResourceSlices, bound Pods and their claims.

A Node's allocatable CPU and memory, labels, taints (spec.unschedulable as the node.kubernetes.io/unschedulable
NoSchedule taint, as NodeUnschedulable reads it); its GPUs as `simulator.cluster_sources.cluster_from_slices`
reads the NVIDIA driver's slices (kept as published). A Pod's requests as kube-scheduler's resource helper sums
them (k8s.io/component-helpers/resource: containers summed, init containers' maximum, pod overhead added).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dra.errors import InputError, QuantityError
from dra.quantity import Quantity

from ..cluster import ClusterSpec, NodeSpec
from ..cluster_sources import cluster_from_slices
from ..state import ClusterState
from ..workload import SimPod
from .devices import Placer

__all__ = ["apply_binding", "pod_requests", "sim_pod", "state_from_objects"]

UNSCHEDULABLE_TAINT = ("node.kubernetes.io/unschedulable", "", "NoSchedule")


def _quantity(value: Any, where: str) -> Quantity:
    try:
        return Quantity.parse(str(value))
    except QuantityError as exc:
        raise InputError(f"{where}: {exc}") from None


def _milli(value: Any, where: str) -> int:
    return int(_quantity(value, where).value * 1000)


def _mib(value: Any, where: str) -> int:
    return int(_quantity(value, where).value // 2**20)


def _resources(container: Mapping[str, Any], where: str) -> tuple[int, int]:
    resources = container.get("resources") or {}
    requests = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}  # requests default to limits
    cpu = _milli(requests["cpu"], f"{where}.cpu") if "cpu" in requests else 0
    memory = _mib(requests["memory"], f"{where}.memory") if "memory" in requests else 0
    return cpu, memory


def pod_requests(pod: Mapping[str, Any]) -> tuple[int, int]:
    """(CPU millicores, memory MiB) the scheduler counts for `pod`."""
    spec = pod.get("spec") or {}
    name = (pod.get("metadata") or {}).get("name", "?")
    cpu = memory = 0
    for i, container in enumerate(spec.get("containers") or ()):
        c, m = _resources(container, f"pod {name}: containers[{i}]")
        cpu, memory = cpu + c, memory + m
    for i, container in enumerate(spec.get("initContainers") or ()):
        c, m = _resources(container, f"pod {name}: initContainers[{i}]")
        if container.get("restartPolicy") == "Always":  # a sidecar runs beside the containers
            cpu, memory = cpu + c, memory + m
        else:
            cpu, memory = max(cpu, c), max(memory, m)
    overhead = spec.get("overhead") or {}
    if "cpu" in overhead:
        cpu += _milli(overhead["cpu"], f"pod {name}: overhead.cpu")
    if "memory" in overhead:
        memory += _mib(overhead["memory"], f"pod {name}: overhead.memory")
    return cpu, memory


def sim_pod(pod: Mapping[str, Any], *, arrival: float = 0.0) -> SimPod:
    """`pod` as the simulator's pod: its requests and priority, the object kept for its node constraints."""
    meta = pod.get("metadata") or {}
    cpu, memory = pod_requests(pod)
    priority = int((pod.get("spec") or {}).get("priority") or 0)
    return SimPod(
        name=str(meta.get("name", "")), cpu_milli=cpu, memory_mib=memory, num_gpu=0, gpu_milli=0, vram_mib=0,
        arrival=arrival, namespace=str(meta.get("namespace") or "default"), priority=priority, pod=dict(pod),
    )  # fmt: skip


def _node_spec(node: Mapping[str, Any], gpu_nodes: Mapping[str, NodeSpec]) -> NodeSpec:
    meta = node.get("metadata") or {}
    name = str(meta.get("name", ""))
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    where = f"node {name}: status.allocatable"
    cpu = _milli(allocatable.get("cpu", 0), where + ".cpu")
    memory = _mib(allocatable.get("memory", 0), where + ".memory")
    labels = tuple(sorted((str(k), str(v)) for k, v in (meta.get("labels") or {}).items()))
    spec = node.get("spec") or {}
    taints = [
        (str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", ""))) for t in spec.get("taints") or ()
    ]
    if spec.get("unschedulable") and UNSCHEDULABLE_TAINT not in taints:
        taints.append(UNSCHEDULABLE_TAINT)
    base = gpu_nodes.get(name) or NodeSpec(name, "cluster", cpu, memory)
    return dataclasses.replace(
        base, pool="cluster", cpu_milli=cpu, memory_mib=memory, labels=labels, taints=tuple(taints)
    )


def state_from_objects(
    nodes: Sequence[Mapping[str, Any]],
    slices: Sequence[Mapping[str, Any]],
    bound: Iterable[tuple[Mapping[str, Any], Sequence[Mapping[str, Any]]]] = (),
    *,
    placer: Placer | None = None,
) -> ClusterState:
    """The state of a cluster: `nodes` in the given order, `bound` pods (spec.nodeName set) with their allocated
    claims applied to the nodes they are on."""
    gpu_nodes = (
        {n.name: n for n in cluster_from_slices([dict(s) for s in slices], source="cluster").nodes} if slices else {}
    )
    spec = ClusterSpec(name="cluster", nodes=[_node_spec(n, gpu_nodes) for n in nodes], source="cluster objects")
    state = ClusterState(spec)
    placer = placer or Placer("upstream")
    for pod, claims in bound:
        apply_binding(state, pod, claims, placer=placer)
    return state


def apply_binding(
    state: ClusterState,
    pod: Mapping[str, Any],
    claims: Sequence[Mapping[str, Any]],
    *,
    placer: Placer | None = None,
    now: float = 0.0,
) -> None:
    """Record `pod` on its node (spec.nodeName) with the devices of its claims' allocations."""
    name = (pod.get("spec") or {}).get("nodeName")
    index = next((n.index for n in state.nodes if n.spec.name == name), None)
    pod_name = (pod.get("metadata") or {}).get("name", "?")
    if index is None:
        raise InputError(f"pod {pod_name}: spec.nodeName {name!r} is not a node of the cluster")
    node = state.nodes[index]
    results = [
        r
        for claim in claims
        for r in ((((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or ())
    ]
    parts: tuple[Any, ...] = ()
    if results:
        if node.spec.gpu is None:
            raise InputError(f"pod {pod_name}: its claims hold devices, but node {name} publishes no GPU slices")
        try:
            parts = (placer or Placer("upstream")).device_parts(node.spec, list(results))
        except KeyError as exc:
            raise InputError(f"pod {pod_name}: allocated device {exc.args[0]} is not in node {name}'s slices") from None
    position = {real: canonical for canonical, real in enumerate(node.canon)}
    canonical = tuple(dataclasses.replace(p, gpu=position[p.gpu]) for p in parts)
    state.apply(sim_pod(pod), index, canonical, now)
