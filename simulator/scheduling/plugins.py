"""The profile's plugins on one node state: the filters that read the Pod, and the node-local scores.

NodeResourcesFit's score (pkg/scheduler/framework/plugins/noderesources/fit.go, resource_allocation.go): requested
= what the node's pods request + what the pod requests, per configured resource, the pod's missing CPU/memory
requests counted as 100m / 200Mi (pkg/scheduler/util/pod_resources.go: DefaultMilliCPURequest,
DefaultMemoryRequest); BalancedAllocation (balanced_allocation.go) uses the requests as they are and is skipped
for a pod that requests nothing. CPU is in millicores and memory in MiB: the integer ratios are those of bytes.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..state import NodeState
from ..workload import SimPod
from .filters import (
    intolerable_prefer_no_schedule,
    matches_node_affinity,
    preferred_affinity_score,
    tolerates_hard_taints,
)
from .profile import AFFINITY, BALANCED, FIT, TAINTS, Profile
from .scores import balanced_allocation, least_allocated, most_allocated, requested_to_capacity_ratio

__all__ = ["DEFAULT_CPU_MILLI", "DEFAULT_MEMORY_MIB", "base_scores", "passes_pod_filters", "pod_raw"]

DEFAULT_CPU_MILLI = 100  # pkg/scheduler/util/pod_resources.go DefaultMilliCPURequest
DEFAULT_MEMORY_MIB = 200  # DefaultMemoryRequest, 200 * 1024 * 1024 bytes


def passes_pod_filters(profile: Profile, node: NodeState, pod: SimPod) -> bool:
    """NodeUnschedulable and TaintToleration (the node's taints, its unschedulable mark among them), NodeAffinity
    (nodeSelector, required terms, and the trace's GPU model list as a selector on the model label)."""
    spec = node.spec
    if (
        pod.gpu_models
        and spec.model_label not in pod.gpu_models
        and (spec.gpu is None or spec.gpu.key not in pod.gpu_models)
    ):
        return False
    if spec.taints and ("TaintToleration" in profile.filters or "NodeUnschedulable" in profile.filters):
        if not tolerates_hard_taints(pod.pod, spec.taints):
            return False
    if pod.pod is not None and AFFINITY in profile.filters:
        return matches_node_affinity(pod.pod, spec.name, dict(spec.labels))
    return True


def pod_raw(profile: Profile, node: NodeState, pod: SimPod) -> tuple[int, int]:
    """(intolerable PreferNoSchedule taints, matched preferred affinity weight) before normalisation."""
    spec = node.spec
    taints = intolerable_prefer_no_schedule(pod.pod, spec.taints) if spec.taints and profile.weight(TAINTS) else 0
    affinity = 0
    if pod.pod is not None and profile.weight(AFFINITY):
        affinity = preferred_affinity_score(pod.pod, spec.name, dict(spec.labels))
    return taints, affinity


def _amounts(
    node: NodeState, names: tuple[str, ...], pod_cpu: int, pod_mem: int
) -> tuple[list[int], list[int], list[int]]:
    used = {"cpu": node.spec.cpu_milli - node.free_cpu, "memory": node.spec.memory_mib - node.free_mem}
    cap = {"cpu": node.spec.cpu_milli, "memory": node.spec.memory_mib}
    pod = {"cpu": pod_cpu, "memory": pod_mem}
    allocated = [used.get(n, 0) for n in names]
    return [a + pod.get(n, 0) for a, n in zip(allocated, names, strict=True)], allocated, [cap.get(n, 0) for n in names]


def base_scores(profile: Profile, node: NodeState, pod: SimPod) -> Mapping[str, int]:
    """The weighted scores that need no normalisation: NodeResourcesFit and NodeResourcesBalancedAllocation."""
    out: dict[str, int] = {}
    weight = profile.weight(FIT)
    if weight:
        fit = profile.fit
        names = tuple(n for n, _ in fit.resources)
        weights = [w for _, w in fit.resources]
        cpu = pod.cpu_milli or DEFAULT_CPU_MILLI
        mem = pod.memory_mib or DEFAULT_MEMORY_MIB
        requested, _, allocatable = _amounts(node, names, cpu, mem)
        if fit.type == "MostAllocated":
            score = most_allocated(requested, allocatable, weights)
        elif fit.type == "RequestedToCapacityRatio":
            score = requested_to_capacity_ratio(requested, allocatable, weights, fit.shape)
        else:
            score = least_allocated(requested, allocatable, weights)
        out[FIT] = weight * score
    weight = profile.weight(BALANCED)
    if weight and (pod.cpu_milli or pod.memory_mib):  # PreScore: a pod requesting nothing skips the plugin
        names = tuple(n for n, _ in profile.balanced_resources)
        requested, allocated, allocatable = _amounts(node, names, pod.cpu_milli, pod.memory_mib)
        out[BALANCED] = weight * balanced_allocation(requested, allocated, allocatable)
    return out
