"""KubeRay (ray.io/v1): RayCluster, RayService, RayJob, RayCronJob, what the operator stamps on their pods, and the
`num-gpus` Ray still needs when a group's GPUs move to a claim.

Template paths from `raycluster_types.go` and its siblings; the stamp follows ray-operator/controllers/ray/common/
pod.go (cited in `_ray`). A pod names its RayCluster by `ray.io/cluster`: that is its owner.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from dra.errors import QuantityError
from dra.quantity import Quantity

from .._fields import env as _env
from .._fields import get, name_of, namespace_of
from ..kind import ApiResource, ControllerStamp, PodTemplate, TemplatePath, TranslationEffects, WorkloadKind, dotted
from .core import job_stamp

__all__ = ["KINDS", "ORDER", "ray_cluster_name"]

ORDER = 10


def _check_label(value: str) -> str:
    """KubeRay utils.CheckLabel: the last 63 characters, a leading punctuation mark replaced by `r`."""
    value = value[-63:]
    return "r" + value[1:] if value and not value[0].isalnum() else value


def ray_cluster_name(obj: Mapping[str, Any]) -> str:
    """The RayCluster a KubeRay object's pods belong to: a RayCluster's own name, else `<name>-xxxxx`."""
    name = name_of(obj)
    return name if obj.get("kind") == "RayCluster" else f"{name}-xxxxx"


def _ray(obj: Mapping[str, Any], pod: PodTemplate) -> ControllerStamp:
    """common/pod.go `labelPod` (`ray.io/is-ray-node`, `ray.io/cluster`, `ray.io/node-type`, `ray.io/group`,
    `ray.io/identifier`, `app.kubernetes.io/name: kuberay`, `app.kubernetes.io/created-by: kuberay-operator`; the
    template's labels and the group's `labels` field override all but the first three) and `BuildPod` (`ray.io/serve`
    under a RayService, the Ray container's command wrapped around the generated `ray start`, setContainerEnvVars'
    env). A RayService's or RayJob's cluster is `<name>-<5 random characters>`: the stand-in is `<name>-xxxxx`."""
    if pod.role == "submitter":  # RayJob's submitter runs as a batch Job named after the RayJob
        return job_stamp(name_of(obj), {})
    cluster = ray_cluster_name(obj)
    head = pod.path[-2] == "headGroupSpec"
    node_type = "head" if head else "worker"
    group_spec = get(obj, *pod.path[:-1])
    group = "headgroup" if head else str(get(group_spec, "groupName") or pod.role)
    labels = {
        "ray.io/is-ray-node": "yes",
        "ray.io/identifier": _check_label(f"{cluster}-{node_type}"),
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    group_labels = get(group_spec, "labels")
    forced = {"ray.io/cluster": cluster, "ray.io/node-type": node_type, "ray.io/group": group}
    if isinstance(group_labels, Mapping):  # mergeLabels: the group's labels field wins over the template's
        forced = {**{str(k): str(v) for k, v in group_labels.items()}, **forced}
    if obj.get("kind") == "RayService":
        forced["ray.io/serve"] = "false" if head else "true"
    namespace = namespace_of(obj)
    head_service = f"{cluster}-head-svc.{namespace}.svc.cluster.local"
    container = get(pod.template, "spec", "containers", 0)
    # In-tree autoscaling (utils.IsAutoscalingEnabled): the head runs Ray with no-monitor and gets the autoscaler
    # sidecar (pod.go DefaultHeadPodTemplate, BuildAutoscalerContainer: the Ray image, 500m / 512Mi).
    autoscaling = head and get(obj, *pod.path[:-2], "enableInTreeAutoscaling") is True
    start = _ray_start(group_spec, container, head, head_service, autoscaling)
    sidecars: tuple[dict[str, Any], ...] = ()
    if autoscaling:
        fixed = {"cpu": "500m", "memory": "512Mi"}
        sidecars = ({
            "name": "autoscaler",
            "image": get(container, "image"),
            "command": ["/bin/bash", "-c", "--"],
            "args": ["ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) "
                     "--cluster-namespace $(RAY_CLUSTER_NAMESPACE)"],
            "resources": {"limits": dict(fixed), "requests": dict(fixed)},
        },)  # fmt: skip
    env = _ray_env(container, cluster, head, head_service, start, obj.get("kind") == "RayService")
    # initTemplateAnnotations / configureGCSFaultTolerance: the RayCluster's ray.io/overwrite-container-cmd is copied
    # to its pods, and the head says whether GCS fault tolerance is on (utils.IsGCSFaultToleranceEnabled).
    own = get(obj, "metadata", "annotations") if obj.get("kind") == "RayCluster" else None
    own = own if isinstance(own, Mapping) else {}
    stamped: dict[str, str] = {}
    if str(own.get("ray.io/overwrite-container-cmd")).lower() == "true":
        stamped["ray.io/overwrite-container-cmd"] = "true"
    ft = str(own.get("ray.io/ft-enabled")).lower() == "true" or isinstance(
        get(obj, *pod.path[:-2], "gcsFaultToleranceOptions"), Mapping)  # fmt: skip
    if head:
        stamped["ray.io/ft-enabled"] = "true" if ft else "false"
    current = get(container, "env")
    named = {e.get("name") for e in current if isinstance(e, Mapping)} if isinstance(current, list) else set()
    # A worker's GCS reconnect timeout under GCS FT (DefaultWorkerRayGcsReconnectTimeoutS).
    reconnect = "RAY_GCS_RPC_SERVER_RECONNECT_TIMEOUT_S"
    if ft and not head and reconnect not in named:
        env = (_env(reconnect, "600"), *env)
    written = get(pod.template, "metadata", "annotations")
    annotations = {**(written if isinstance(written, Mapping) else {}), **stamped}
    overwrite = str(annotations.get("ray.io/overwrite-container-cmd")).lower()
    # DefaultWorkerPodTemplate appends the wait-gcs-ready init container (ENABLE_INIT_CONTAINER_INJECTION, on by
    # default) with the Ray container's env and fixed resources; BuildPod gives every init container FQ_RAY_IP and
    # RAY_IP (setInitContainerEnvVars; empty on the head).
    fqdn = "" if head else head_service
    init: tuple[dict[str, Any], ...] = ()
    if not head and isinstance(container, Mapping):
        fixed = {"cpu": "200m", "memory": "256Mi"}
        wait = {"name": "wait-gcs-ready", "image": container.get("image"), "command": ["/bin/bash", "-c", "--"],
                "args": [f"ray health-check --address {head_service}:6379 (every 5 s until it answers)"],
                "resources": {"limits": dict(fixed), "requests": dict(fixed)}}  # fmt: skip
        for key in ("env", "volumeMounts", "securityContext"):
            if container.get(key) is not None:
                wait[key] = container[key]
        init = (wait,)
    return ControllerStamp(labels=labels, forced=forced, annotations=stamped, env_last=env, env_containers=(0,),
                           command=None if overwrite == "true" else _ray_command(container, start),
                           init_containers=init,
                           containers=sidecars,
                           init_extra_env=(_env("FQ_RAY_IP", fqdn), _env("RAY_IP", fqdn.split(".")[0])),
                           owner=("ray.io/v1", "RayCluster", cluster))  # fmt: skip


def _whole(value: Any) -> int | None:
    """A quantity's Value() as Kubernetes rounds it (up to a whole number), None when unreadable or zero."""
    try:
        number = Quantity.coerce(value).value
    except (QuantityError, ValueError, OverflowError, TypeError):
        return None
    whole = math.ceil(number)
    return whole or None


_MIG_RESOURCE = re.compile(r"nvidia\.com/mig-\d+g\.\d+gb$")


def _ray_gpu_key(key: str) -> bool:
    """KubeRay's utils.IsGPUResourceKey (ray-operator/controllers/ray/utils/resources.go): a name ending in `gpu`, or
    an NVIDIA MIG resource `nvidia.com/mig-<g>g.<gb>gb`."""
    return key.endswith("gpu") or _MIG_RESOURCE.search(key) is not None


def _ray_start(group: Any, container: Any, head: bool, head_service: str, autoscaling: bool = False) -> str:
    """The `ray start` command KubeRay generates (common/pod.go: updateRayStartParamsResources,
    setMissingRayStartParams, generateRayStartCommand, addWellKnownAcceleratorResources, convertParamMap); custom
    accelerators and the group's non-standard resources are left out."""
    raw = get(group, "rayStartParams")
    params = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}
    resources = get(group, "resources")
    for name, value in resources.items() if isinstance(resources, Mapping) else ():
        key, number = str(name).lower(), _whole(value)
        field = {"cpu": "num-cpus", "memory": "memory"}.get(key) or ("num-gpus" if _ray_gpu_key(key) else None)
        if field is not None and number is not None:
            params[field] = str(number)
    if autoscaling:
        params["no-monitor"] = "true"
    if head:
        params.setdefault("dashboard-host", "0.0.0.0")
    else:
        params.setdefault("address", f"{head_service}:6379")
    params.setdefault("metrics-export-port", "8080")
    params["block"] = "true"
    params.setdefault("dashboard-agent-listen-port", "52365")
    limits = get(container, "resources", "limits")
    requests = get(container, "resources", "requests")
    limits = limits if isinstance(limits, Mapping) else {}
    requests = requests if isinstance(requests, Mapping) else {}
    if "num-cpus" not in params:
        cpus = _whole(limits.get("cpu")) or _whole(requests.get("cpu"))
        if cpus is not None:
            params["num-cpus"] = str(cpus)
    if "memory" not in params and _whole(limits.get("memory")) is not None:
        params["memory"] = str(_whole(limits.get("memory")))
    for key in sorted(limits):
        gpus = _whole(limits[key]) if _ray_gpu_key(str(key)) else None
        if "num-gpus" not in params and gpus is not None:
            params["num-gpus"] = str(gpus)
    flags = ""
    for key in sorted(params):
        value = params[key]
        if value.lower() in ("true", "false") and key not in ("log-color", "include-dashboard", "include-log-monitor"):
            flags += f" --{key} " if value.lower() == "true" else ""
        else:
            flags += f" --{key}={value} "
    return ("ray start --head " if head else "ray start ") + flags


def _ray_command(container: Any, start: str) -> tuple[list[str], list[str]] | None:
    """BuildPod: unless the container's command and args already run `ray start`, they become
    `/bin/bash -c -- "<theirs> && ulimit -n ...; ray start ..."` (GetContainerCommand, convertCmdToString)."""
    parts = [get(container, "command"), get(container, "args")]
    cmd = "".join(f" {v} " for part in parts if isinstance(part, list) for v in part)
    if "ray start" in cmd:
        return None
    generated = f"ulimit -n ${{RAY_START_ULIMIT_OPEN_FILES:-65536}}; {start}"
    return ["/bin/bash", "-c", "--"], [f"{cmd} && {generated}" if cmd else generated]


def _ray_env(container: Any, cluster: str, head: bool, head_service: str, start: str, service: bool
             ) -> tuple[dict[str, Any], ...]:  # fmt: skip
    """common/pod.go setContainerEnvVars, on the Ray container (the ones added only when absent are skipped when the
    container names them)."""
    current = get(container, "env")
    names = {e.get("name") for e in current if isinstance(e, Mapping)} if isinstance(current, list) else set()

    def field_ref(name: str, path: str) -> dict[str, Any]:
        return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}

    env: list[dict[str, Any]] = []
    if not head:
        env += [_env("FQ_RAY_IP", head_service), _env("RAY_IP", head_service.split(".")[0])]
    env += [
        field_ref("RAY_CLUSTER_NAME", "metadata.labels['ray.io/cluster']"),
        field_ref("RAY_CLUSTER_NAMESPACE", "metadata.namespace"),
        field_ref("RAY_CLOUD_INSTANCE_ID", "metadata.name"),
        field_ref("RAY_NODE_TYPE_NAME", "metadata.labels['ray.io/group']"),
        _env("KUBERAY_GEN_RAY_START_CMD", start),
    ]
    optional = [_env("RAY_PORT", "6379")]
    if service:
        optional += [
            _env("RAY_TIMEOUT_MS_TASK_WAIT_FOR_DEATH_INFO", "0"),
            _env("RAY_GCS_SERVER_REQUEST_TIMEOUT_SECONDS", "5"),
            _env("RAY_SERVE_KV_TIMEOUT_S", "5"),
        ]
    optional += [_env("RAY_ADDRESS", "127.0.0.1:6379" if head else f"{head_service}:6379"),
                 _env("RAY_USAGE_STATS_KUBERAY_IN_USE", "1")]  # fmt: skip
    env += [e for e in optional if e["name"] not in names]
    if head:
        env.append(_env("RAY_USAGE_STATS_EXTRA_TAGS", f"kuberay_crd={'RayService' if service else 'RayCluster'}"))
    return tuple(env)


def _ray_count(resources: Any, part: str, accepts: Callable[[str], bool]) -> tuple[str, int] | None:
    """The first GPU key (sorted) `accepts` with a non-zero count in `resources[part]`, rounded up as Kubernetes'
    Value() and Ray's _round_up_k8s_quantity do; None when there is none or it is unreadable."""
    found = resources.get(part) if isinstance(resources, dict) else None
    values: dict[str, Any] = found if isinstance(found, dict) else {}
    for key in sorted(values):
        if accepts(str(key)):
            try:
                count = math.ceil(Quantity.coerce(values[key]).value)
            except (QuantityError, ValueError, OverflowError, TypeError):
                return None
            if count > 0:
                return str(key), count
    return None


def _num_gpus(obj: Mapping[str, Any], template: PodTemplate, rewritten: Mapping[str, Any]) -> TranslationEffects:
    """Keep Ray's count of GPUs when a Ray container's GPU resources move to a claim.

    Without `num-gpus` in rayStartParams, two readers count a group's GPUs from the Ray container (containers[0]):
    KubeRay starts Ray with `--num-gpus` from its limits, the first key in sorted order that `IsGPUResourceKey`
    accepts (a name ending in `gpu`, or `nvidia.com/mig-<g>g.<gb>gb`) with a non-zero value (ray-operator/controllers/
    ray/common/pod.go generateRayStartCommand, addWellKnownAcceleratorResources); and the Ray autoscaler plans the
    group from its limits, then its requests, the first key ending in `gpu` (python/ray/autoscaler/_private/kuberay/
    autoscaling_config.py _get_num_gpus). A group's `resources` field with a GPU key overrides both
    (updateRayStartParamsResources). Translation removes those resources, so Ray and its autoscaler would count no
    GPU: the group's rayStartParams gets `num-gpus` with the count they read (KubeRay's where both do)."""
    if template.role == "submitter" or len(template.path) < 2:
        return TranslationEffects()
    group_path = template.path[:-1]
    group: Any = obj
    for part in group_path:
        group = group[part]
    params = group.get("rayStartParams") if isinstance(group, dict) else None
    resources = group.get("resources") if isinstance(group, dict) else None
    if isinstance(params, dict) and "num-gpus" in params:
        return TranslationEffects()
    if isinstance(resources, dict) and any(_ray_gpu_key(str(k).lower()) for k in resources):
        return TranslationEffects()
    containers = template.template["spec"].get("containers") or []
    after = rewritten["spec"].get("containers") or []
    if not containers or not after or not isinstance(containers[0], dict):
        return TranslationEffects()
    before, now = containers[0].get("resources"), after[0].get("resources")

    def autoscaler_key(key: str) -> bool:
        return key.endswith("gpu")

    readers = (("limits", _ray_gpu_key), ("limits", autoscaler_key), ("requests", autoscaler_key))
    for part, accepts in readers:
        found = _ray_count(before, part, accepts)
        if found is None:
            continue
        if _ray_count(now, part, accepts) is not None:  # what this reader counts is still there
            return TranslationEffects()
        count = found[1]
        break
    else:
        return TranslationEffects()
    where = dotted((*group_path, "rayStartParams"))
    note = (f"{where}: set num-gpus: \"{count}\" (KubeRay's --num-gpus and the Ray autoscaler count a group's GPUs "
            "from the Ray container's GPU resources, which moved to the DRA claim)")  # fmt: skip
    if isinstance(params, dict):
        return TranslationEffects((((*group_path, "rayStartParams", "num-gpus"), str(count)),), (note,))
    return TranslationEffects((((*group_path, "rayStartParams"), {"num-gpus": str(count)}),), (note,))


def _ray_cluster(prefix: str) -> tuple[TemplatePath, ...]:
    return (
        TemplatePath(f"{prefix}.headGroupSpec.template", role="head"),
        TemplatePath(f"{prefix}.workerGroupSpecs[*].template", role_key="groupName"),
    )


_RAY = ("ray.io",)

KINDS: tuple[WorkloadKind, ...] = (
    WorkloadKind(
        "RayCluster",
        _RAY,
        _ray_cluster("spec"),
        stamp=_ray,
        effects=_num_gpus,
        resource=ApiResource("ray.io/v1", "rayclusters"),
        pod_label="ray.io/cluster",
    ),
    WorkloadKind(
        "RayService",
        _RAY,
        _ray_cluster("spec.rayClusterConfig"),
        stamp=_ray,
        effects=_num_gpus,
        resource=ApiResource("ray.io/v1", "rayservices"),
    ),
    WorkloadKind(
        "RayJob",
        _RAY,
        (*_ray_cluster("spec.rayClusterSpec"), TemplatePath("spec.submitterPodTemplate", role="submitter")),
        stamp=_ray,
        effects=_num_gpus,
        resource=ApiResource("ray.io/v1", "rayjobs"),
    ),
    WorkloadKind(
        "RayCronJob",
        _RAY,
        (
            *_ray_cluster("spec.jobTemplate.rayClusterSpec"),
            TemplatePath("spec.jobTemplate.submitterPodTemplate", role="submitter"),
        ),
        stamp=_ray,
        effects=_num_gpus,
    ),
)
