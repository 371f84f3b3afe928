"""One node class through a profile's filters and node-local scores, for one pod (`ClassFit`, or None)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..state import ClusterState, Part
from ..workload import SimPod
from .candidates import ClassFit
from .plugins import base_scores, passes_pod_filters, pod_raw
from .profile import FIT, Profile

__all__ = ["Devices", "class_fit"]

Devices = tuple[tuple[Part, ...], tuple[str, ...], int]  # parts, device names, DynamicResources raw score


def class_fit(
    profile: Profile,
    state: ClusterState,
    cid: int,
    pod: SimPod,
    devices: Callable[[], Devices | None],
    local_scores: Callable[[], Mapping[str, int]] | None = None,
) -> ClassFit | None:
    """NodeResourcesFit's filter (on the class signature's free CPU and memory), the filters that read the Pod,
    then `devices` (DynamicResources: the pod's devices and prioritized-list score), then the scores."""
    sig = state.sigs[cid]
    if FIT in profile.filters and (sig[1] < pod.cpu_milli or sig[2] < pod.memory_mib):
        return None
    node = state.representative(cid)
    if not passes_pod_filters(profile, node, pod):
        return None
    found = devices()
    if found is None:
        return None
    parts, names, dra = found
    scores = local_scores() if local_scores is not None else base_scores(profile, node, pod)
    taints, affinity = pod_raw(profile, node, pod)
    return ClassFit(parts, names, sum(scores.values()), (dra, taints, affinity), tuple(scores.items()))
