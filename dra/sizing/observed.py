"""The observed-usage sizing source: what a recommender measured for a workload, and how a pod names its workload.

`ObservedSizing` and `SizingLookup` are the interface between the recommender (which writes recommendations), the
webhook's recommendation cache (which answers lookups on the admission path) and the policy facts (which expose the
answer to CEL as `gpu.containers[i].sizing` / `gpu.sizing`). `pod_owner` names a pod's workload owner from its own
metadata (ownerReferences and labels) without calling the API server, so the lookup key can be computed at admission.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["ObservedSizing", "SizingLookup", "pod_owner"]


@dataclass(frozen=True, slots=True)
class ObservedSizing:
    """A recommendation derived from observed framebuffer use of one container of one workload owner."""

    vram_bytes: int  # recommended memory per device (observed peak x headroom), what a policy should request
    peak_bytes: int  # the observed peak (or quantile) framebuffer use
    samples: int  # samples behind it
    window_seconds: int  # the window they cover
    updated: str  # RFC 3339 time of the recommendation
    pressure: bool = False  # evidence of memory pressure after a shrink (grow back)
    source_ref: str = ""  # e.g. "GPUSizingRecommendation team-a/deployment-embed"


class SizingLookup(Protocol):
    """Answers the observed sizing of one container of one workload owner, or None when there is none."""

    def observed(self, namespace: str, owner_kind: str, owner_name: str, container: str) -> ObservedSizing | None: ...


# Labels the controllers put on their pods.
_POD_TEMPLATE_HASH = "pod-template-hash"
_JOB_CONTROLLER_UID = ("batch.kubernetes.io/controller-uid", "controller-uid")
_JOB_NAME = ("batch.kubernetes.io/job-name", "job-name")
_LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
_RAY_CLUSTER = "ray.io/cluster"

# A CronJob names its Jobs `<cronjob>-<scheduled time in minutes since the epoch>` (digits only).
_CRONJOB_JOB = re.compile(r"^(?P<cronjob>.+)-(?P<stamp>[0-9]+)$")


def _controller_ref(pod: Mapping[str, Any]) -> tuple[str, str] | None:
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


def _labels(pod: Mapping[str, Any]) -> Mapping[str, str]:
    meta = pod.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    if not isinstance(labels, Mapping):
        return {}
    return {str(k): str(v) for k, v in labels.items() if isinstance(v, str)}


def pod_owner(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    """The workload owner (kind, name) of a pod, from its ownerReferences and labels only (no API calls).

    - ReplicaSet `<deploy>-<hash>` whose suffix equals the pod's `pod-template-hash` label → (`Deployment`, `<deploy>`);
      a ReplicaSet without that match (a bare ReplicaSet) → (`ReplicaSet`, name).
    - StatefulSet, DaemonSet → themselves.
    - Job → (`CronJob`, `<cronjob>`) when the Job's name is `<cronjob>-<digits>` (the CronJob controller names its
      Jobs after the scheduled time in minutes since the epoch); else (`Job`, name). The pod names its Job, never the
      CronJob, so this is a heuristic: a Job created by hand as `train-2` is also read as CronJob `train`. A pod with
      no ownerReferences but with the Job controller's labels (`batch.kubernetes.io/job-name` and
      `batch.kubernetes.io/controller-uid`, or their legacy unprefixed forms) is read as that Job's. A recommendation
      is only found if the recommender keyed it the same way, so a wrong guess costs a miss, never a wrong size.
    - LeaderWorkerSet pods (label `leaderworkerset.sigs.k8s.io/name`) → (`LeaderWorkerSet`, name); their direct owner
      is a StatefulSet the LWS controller made.
    - KubeRay pods (label `ray.io/cluster`) → (`RayCluster`, name). A RayService or RayJob owns the RayCluster, not the
      pod; resolving that needs the API server, so the RayCluster is the key here.
    - Pods without a controller (bare pods) → None.
    """
    labels = _labels(pod)
    lws = labels.get(_LWS_NAME)
    if lws:
        return "LeaderWorkerSet", lws
    ray = labels.get(_RAY_CLUSTER)
    if ray:
        return "RayCluster", ray
    ref = _controller_ref(pod)
    if ref is None:
        # A Job's pod whose ownerReference was stripped still carries the Job controller's labels.
        job = next((labels[k] for k in _JOB_NAME if labels.get(k)), "")
        if job and any(labels.get(k) for k in _JOB_CONTROLLER_UID):
            ref = ("Job", job)
        else:
            return None
    kind, name = ref
    if kind == "ReplicaSet":
        pod_hash = labels.get(_POD_TEMPLATE_HASH)
        if pod_hash and name.endswith("-" + pod_hash) and len(name) > len(pod_hash) + 1:
            return "Deployment", name[: -len(pod_hash) - 1]
        return "ReplicaSet", name
    if kind == "Job":
        match = _CRONJOB_JOB.match(name)
        if match is not None:
            return "CronJob", match.group("cronjob")
        return "Job", name
    return kind, name
