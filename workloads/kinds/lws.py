"""LeaderWorkerSet (leaderworkerset.x-k8s.io/v1): its leader and worker templates and its controller's stamp.

Template paths from `leaderworkerset_types.go`; the stamp is cited in `_lws`. A pod's direct owner is a StatefulSet
the controller made (a worker's chain runs through the leader pod), so its `name` label names the owner.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._fields import env as _env
from .._fields import get, name_of, namespace_of, stand_in_hash
from ..kind import ApiResource, ControllerStamp, PodTemplate, TemplatePath, WorkloadKind
from .core import stateful_set_stamp

__all__ = ["KINDS", "ORDER"]

ORDER = 30


def _lws(obj: Mapping[str, Any], pod: PodTemplate) -> ControllerStamp:
    """pkg/controllers/leaderworkerset_controller.go and pod_controller.go (`leaderworkerset.sigs.k8s.io/name`,
    `template-revision-hash`, `worker-index`, `group-index`, `group-key`, the `size` and `leader-name` annotations);
    pkg/webhooks/pod_webhook.go with pkg/utils/pod/pod_utils.go `AddLWSVariables` (env `LWS_LEADER_ADDRESS`,
    `LWS_GROUP_SIZE`, `LWS_WORKER_INDEX` first in every container), on the pods of the StatefulSets it makes."""
    name = name_of(obj)
    size = get(obj, "spec", "leaderWorkerTemplate", "size")
    size_text = str(size if isinstance(size, int) else 1)
    revision = stand_in_hash(get(obj, "spec", "leaderWorkerTemplate"))
    group_key = stand_in_hash([name, 0], 40)
    leader = pod.role == "leader"
    forced = {
        "leaderworkerset.sigs.k8s.io/name": name,
        "leaderworkerset.sigs.k8s.io/template-revision-hash": revision,
        "leaderworkerset.sigs.k8s.io/group-index": "0",
        "leaderworkerset.sigs.k8s.io/group-key": group_key,
        "leaderworkerset.sigs.k8s.io/worker-index": "0" if leader else "1",
    }
    annotations = {"leaderworkerset.sigs.k8s.io/size": size_text}
    exclusive = get(obj, "metadata", "annotations", "leaderworkerset.sigs.k8s.io/exclusive-topology")
    if isinstance(exclusive, str) and exclusive:  # copied to the pods by both StatefulSets' templates
        annotations["leaderworkerset.sigs.k8s.io/exclusive-topology"] = exclusive
    statefulset = name if leader else f"{name}-0"
    if not leader:
        annotations["leaderworkerset.sigs.k8s.io/leader-name"] = f"{name}-0"
    forced.update(stateful_set_stamp(statefulset, revision).forced)
    forced["statefulset.kubernetes.io/pod-name"] = f"{name}-0" if leader else f"{name}-0-1"
    forced["apps.kubernetes.io/pod-index"] = "0" if leader else "1"
    namespace = namespace_of(obj)
    env = (
        _env("LWS_LEADER_ADDRESS", f"{name}-0.{name}.{namespace}"),
        _env("LWS_GROUP_SIZE", size_text),
        _env("LWS_WORKER_INDEX", "0" if leader else "1"),
    )
    return ControllerStamp(forced=forced, annotations=annotations, env_first=env, init_env=True,
                           owner=("apps/v1", "StatefulSet", statefulset))  # fmt: skip


KINDS: tuple[WorkloadKind, ...] = (
    WorkloadKind(
        "LeaderWorkerSet",
        ("leaderworkerset.x-k8s.io",),
        (
            TemplatePath("spec.leaderWorkerTemplate.leaderTemplate", role="leader"),
            TemplatePath("spec.leaderWorkerTemplate.workerTemplate", role="worker"),
        ),
        stamp=_lws,
        resource=ApiResource("leaderworkerset.x-k8s.io/v1", "leaderworkersets"),
        pod_label="leaderworkerset.sigs.k8s.io/name",
    ),
)
