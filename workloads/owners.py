"""Which workload a pod belongs to, read from the pod alone (no API server), by the kinds' owner rules.

`pod_owner(pod)` reads the pod's labels and ownerReferences, as the webhook must at admission to find a sizing
recommendation, and as the recommender keys the ones it writes; `owner_of_pod_name(name)` reads a pod's name alone,
as the simulator must for a DCGM series that names only its pod. The rules are the records' (`workloads.kind`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .registry import KINDS, kind_named

__all__ = ["controller_ref", "pod_labels", "pod_owner", "owner_of_pod_name"]


def controller_ref(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    """The (kind, name) of the pod's controlling ownerReference (the one with controller: true, else the first)."""
    meta = pod.get("metadata")
    if not isinstance(meta, Mapping):
        return None
    refs = meta.get("ownerReferences")
    if not isinstance(refs, list):
        return None
    candidates: list[tuple[str, str]] = []
    for ref in refs:
        if not isinstance(ref, Mapping):
            continue
        kind, name = ref.get("kind"), ref.get("name")
        if not isinstance(kind, str) or not isinstance(name, str) or not kind or not name:
            continue
        if ref.get("controller") is True:
            return kind, name
        candidates.append((kind, name))
    return candidates[0] if candidates else None


def pod_labels(pod: Mapping[str, Any]) -> Mapping[str, str]:
    """The pod's labels with string values (none when it has no labels map)."""
    meta = pod.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    if not isinstance(labels, Mapping):
        return {}
    return {str(k): str(v) for k, v in labels.items() if isinstance(v, str)}


def pod_owner(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    """The workload owner (kind, name) of a pod, from its ownerReferences and labels only; None for a bare pod.

    A label a controller puts on every pod naming its workload wins (a kind's `pod_label`: the direct owner may be
    an object the operator made in between). Else the controlling ownerReference, or for a pod without one the
    labels a controller left (a kind's `label_owner`); its kind's `owner` rule then names the workload the
    controller stands for (a ReplicaSet its Deployment's, a Job its CronJob's), and any other kind is the owner.
    """
    labels = pod_labels(pod)
    for known in KINDS:
        name = labels.get(known.pod_label) if known.pod_label else None
        if name:
            return known.kind, name
    ref = controller_ref(pod)
    if ref is None:
        ref = next(
            ((k.kind, name) for k in KINDS if k.label_owner is not None and (name := k.label_owner(labels))), None
        )
        if ref is None:
            return None
    kind, name = ref
    controller = kind_named(kind)
    return controller.owner(name, labels) if controller is not None and controller.owner is not None else (kind, name)


def owner_of_pod_name(pod: str) -> tuple[str, str]:
    """(kind, name) of the workload a pod name stands for by its controller's naming (the first kind whose
    `pod_name` pattern matches, in the kinds' order); (`Pod`, the name) when none does."""
    for known in KINDS:
        match = known.pod_name.match(pod) if known.pod_name is not None else None
        if match is not None:
            return known.kind, match.group("owner")
    return "Pod", pod
