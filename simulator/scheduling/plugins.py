"""The profile's plugins on one node state: the filters that read the Pod, and the node-local scores.

NodeResourcesFit's score (pkg/scheduler/framework/plugins/noderesources/fit.go, resource_allocation.go): requested
= what the node's pods request + what the pod requests, per configured resource, the pod's missing CPU/memory
requests counted as 100m / 200Mi (pkg/scheduler/util/pod_resources.go: DefaultMilliCPURequest,
DefaultMemoryRequest); BalancedAllocation (balanced_allocation.go) uses the requests as they are and is skipped
for a pod that requests nothing. CPU is in millicores and memory in MiB: the integer ratios are those of bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..state import NodeState
from ..workload import SimPod
from .filters import (
    intolerable_prefer_no_schedule,
    matches_node_affinity,
    preferred_affinity_score,
    tolerates_hard_taints,
)
from .profile import AFFINITY, BALANCED, DEFAULT_RESOURCES, FIT, TAINTS, Profile
from .scores import balanced_allocation, least_allocated, most_allocated, requested_to_capacity_ratio

__all__ = [
    "DEFAULT_CPU_MILLI",
    "DEFAULT_MEMORY_MIB",
    "LocalParts",
    "LocalScorer",
    "base_scores",
    "cpu_memory_parts",
    "cpu_memory_scorer",
    "fast_path",
    "passes_pod_filters",
    "pod_raw",
]

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


def _share(requested: int, capacity: int, most: bool) -> int:
    """One resource's LeastAllocated / MostAllocated score (least_allocated.go, most_allocated.go)."""
    if most:
        return min(requested, capacity) * 100 // capacity
    return 0 if requested > capacity else (capacity - requested) * 100 // capacity


LocalScorer = Callable[[int, int, int, int, int, int], dict[str, int]]
LocalParts = Callable[[int, int, int, int, int, int], tuple[int | None, int | None]]


def cpu_memory_parts(profile: Profile) -> LocalParts:
    """The weighted NodeResourcesFit and BalancedAllocation scores (None where the plugin does not score) for the
    usual resources (cpu and memory, LeastAllocated or MostAllocated) as a function of (allocatable CPU, memory,
    free CPU, memory, the pod's CPU, memory): the integer arithmetic of `scores.least_allocated` /
    `most_allocated` and `scores.balanced_allocation`, unrolled for two resources (the engine's hot path)."""
    fit_weight, balanced_weight = profile.weight(FIT), profile.weight(BALANCED)
    (_, w_cpu), (_, w_mem) = profile.fit.resources
    most = profile.fit.type == "MostAllocated"

    def parts(
        cap_cpu: int, cap_mem: int, free_cpu: int, free_mem: int, cpu: int, mem: int
    ) -> tuple[int | None, int | None]:
        used_cpu, used_mem = cap_cpu - free_cpu, cap_mem - free_mem
        fit = balanced = None
        if fit_weight:
            score = total = 0
            # `_share` written out (least_allocated.go / most_allocated.go per resource)
            if cap_cpu:
                req = used_cpu + (cpu or DEFAULT_CPU_MILLI)
                if most:
                    score += (req if req < cap_cpu else cap_cpu) * 100 // cap_cpu * w_cpu
                elif req <= cap_cpu:
                    score += (cap_cpu - req) * 100 // cap_cpu * w_cpu
                total += w_cpu
            if cap_mem:
                req = used_mem + (mem or DEFAULT_MEMORY_MIB)
                if most:
                    score += (req if req < cap_mem else cap_mem) * 100 // cap_mem * w_mem
                elif req <= cap_mem:
                    score += (cap_mem - req) * 100 // cap_mem * w_mem
                total += w_mem
            fit = fit_weight * (score // total if total else 0)
        if balanced_weight and (cpu or mem):
            if cap_cpu and cap_mem:
                # math.Min(1, requested/allocatable) per resource, written out: this runs per class and pod shape
                f_cpu, f_mem = (used_cpu + cpu) / cap_cpu, (used_mem + mem) / cap_mem
                f_cpu, f_mem = (1.0 if f_cpu > 1.0 else f_cpu), (1.0 if f_mem > 1.0 else f_mem)
                with_pod = int((1 - abs(f_cpu - f_mem) / 2) * 100)
                f_cpu, f_mem = used_cpu / cap_cpu, used_mem / cap_mem
                f_cpu, f_mem = (1.0 if f_cpu > 1.0 else f_cpu), (1.0 if f_mem > 1.0 else f_mem)
                without = int((1 - abs(f_cpu - f_mem) / 2) * 100)
                diff = 50 + with_pod - without
                balanced = balanced_weight * (50 + (diff // 2 if diff >= 0 else -(-diff // 2)))  # Go's int64 `/`
            else:
                balanced = balanced_weight * 75  # one resource or none: both balances are 100, 50 + (50 + 0) / 2
        return fit, balanced

    return parts


def cpu_memory_scorer(profile: Profile) -> LocalScorer:
    """`base_scores` for the usual resources, by plugin name (`cpu_memory_parts`)."""
    parts = cpu_memory_parts(profile)

    def scores(cap_cpu: int, cap_mem: int, free_cpu: int, free_mem: int, cpu: int, mem: int) -> dict[str, int]:
        fit, balanced = parts(cap_cpu, cap_mem, free_cpu, free_mem, cpu, mem)
        out: dict[str, int] = {}
        if fit is not None:
            out[FIT] = fit
        if balanced is not None:
            out[BALANCED] = balanced
        return out

    return scores


def _cpu_memory_scores(profile: Profile, node: NodeState, pod: SimPod) -> dict[str, int]:
    spec = node.spec
    return cpu_memory_scorer(profile)(
        spec.cpu_milli, spec.memory_mib, node.free_cpu, node.free_mem, pod.cpu_milli, pod.memory_mib
    )


def fast_path(profile: Profile) -> bool:
    """Whether `cpu_memory_scorer` computes this profile's node-local scores."""
    return (
        profile.fit.resources == DEFAULT_RESOURCES
        and profile.fit.type != "RequestedToCapacityRatio"
        and profile.balanced_resources == DEFAULT_RESOURCES
    )


def base_scores(profile: Profile, node: NodeState, pod: SimPod) -> Mapping[str, int]:
    """The weighted scores that need no normalisation: NodeResourcesFit and NodeResourcesBalancedAllocation."""
    if fast_path(profile):
        return _cpu_memory_scores(profile, node, pod)
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
