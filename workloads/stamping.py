"""The pod a workload's controller creates from one of its pod templates, as the webhook will see it at admission.

`gpudra translate` decides a workload's templates ahead of time; `gpudra serve` decides the pods the controllers
create from them. A policy that reads what a controller adds (KubeRay's `ray.io/node-type`, LeaderWorkerSet's
`leaderworkerset.sigs.k8s.io/name`, JobSet's and the Job controller's labels, the env LWS injects) would decide the
two differently unless the template is decided as that pod. `controller_pod` returns the template's pod with the
labels, annotations, env and controlling ownerReference its controller adds, each from the controller's source:

- Deployment/ReplicaSet/StatefulSet/DaemonSet/ReplicationController (kubernetes pkg/controller: `pod-template-hash`
  in deployment/util, `controller-revision-hash`, `statefulset.kubernetes.io/pod-name` and `apps.kubernetes.io/
  pod-index` in statefulset/stateful_set_utils.go, `pod-template-generation` in daemon/util), and Argo Rollouts
  (`rollouts-pod-template-hash`);
- Job and CronJob (pkg/registry/batch/job/strategy.go `generateSelector`: `batch.kubernetes.io/controller-uid`,
  `batch.kubernetes.io/job-name` and their legacy unprefixed forms; for an Indexed Job, pkg/controller/job/
  indexed_job_utils.go: the `batch.kubernetes.io/job-completion-index` annotation and label, env
  `JOB_COMPLETION_INDEX`);
- KubeRay (ray-operator/controllers/ray/common/pod.go `labelPod`: `ray.io/is-ray-node`, `ray.io/cluster`,
  `ray.io/node-type`, `ray.io/group`, `ray.io/identifier`, `app.kubernetes.io/name: kuberay`,
  `app.kubernetes.io/created-by: kuberay-operator`; the template's labels and the group's `labels` field override
  all but the first three; `BuildPod`: `ray.io/serve` under a RayService, the Ray container's command wrapped
  around the generated `ray start`, and setContainerEnvVars' env). A RayService's and a RayJob's cluster is
  named `<name>-<5 random characters>` (utils.GenerateRayClusterName): the stand-in is `<name>-xxxxx`;
- Kubeflow training-operator v1 (pkg/controller.v1/common/pod.go: `training.kubeflow.org/job-name`,
  `operator-name`, `replica-type` (lower case), `replica-index`, `job-role: master`; pytorch/envvar.go: env
  `PYTHONUNBUFFERED`, and with a Master `MASTER_ADDR`, `MASTER_PORT`, `WORLD_SIZE`, `RANK`), and mpi-operator v2's
  MPIJob (kubeflow.org/v2beta1: `operator-name: mpi-operator`, `job-name`, `job-role`);
- LeaderWorkerSet (pkg/controllers/leaderworkerset_controller.go and pod_controller.go: `leaderworkerset.sigs.k8s.io/
  name`, `template-revision-hash`, `worker-index`, `group-index`, `group-key`, the `size` and `leader-name`
  annotations; pkg/webhooks/pod_webhook.go with pkg/utils/pod/pod_utils.go `AddLWSVariables`: env
  `LWS_LEADER_ADDRESS`, `LWS_GROUP_SIZE`, `LWS_WORKER_INDEX` first in every container) on the StatefulSet pods;
- JobSet (pkg/controllers/jobset_controller.go `labelAndAnnotateObject`: the `jobset.sigs.k8s.io/*` keys as labels
  and annotations) on Indexed Jobs (JobSet's default completionMode), and Kubeflow Trainer v2's runtimes as the
  JobSet a TrainJob makes of them (named after the TrainJob: the stand-in is the runtime's name).

Values a controller draws at random or hashes (UIDs, revision hashes, generated names) get fixed stand-ins: a
policy cannot know them ahead of time either. The first pod of each template stands for the rest (index 0).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dra.errors import QuantityError
from dra.quantity import Quantity

from .templates import PodTemplate, workload_kind

__all__ = ["ControllerStamp", "controller_pod", "controller_stamp", "ray_cluster_name"]

STAND_IN_UID = "00000000-0000-0000-0000-000000000000"


@dataclass(frozen=True)
class ControllerStamp:
    """What a controller adds to the pods of one template: labels the template may override (`labels`), labels it
    may not (`forced`), annotations (forced), env (`env_first`: put first unless the container already names them,
    as LWS does; `env_last`: appended), which containers get the env (None: all; `init_env`: init containers too),
    env upserted into single containers (`container_env`, by index), the first container's new command and args
    (KubeRay's `ray start` wrapper), and the controlling owner."""

    labels: dict[str, str] = field(default_factory=dict)
    forced: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    env_first: tuple[dict[str, Any], ...] = ()
    env_last: tuple[dict[str, Any], ...] = ()
    env_containers: tuple[int, ...] | None = None
    init_env: bool = False
    owner: tuple[str, str, str] | None = None  # apiVersion, kind, name
    command: tuple[list[str], list[str]] | None = None  # the first container's new command and args
    container_env: dict[int, tuple[dict[str, Any], ...]] = field(default_factory=dict)  # more env, by container index
    init_containers: tuple[dict[str, Any], ...] = ()  # appended after the template's own
    containers: tuple[dict[str, Any], ...] = ()  # appended after the template's own (KubeRay's autoscaler)
    init_extra_env: tuple[dict[str, Any], ...] = ()  # appended to every init container (KubeRay's FQ_RAY_IP, RAY_IP)


def _stand_in_hash(value: Any, length: int = 10) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def _name(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping):
        return "workload"
    name = metadata.get("name") or str(metadata.get("generateName") or "").rstrip("-")
    return name if isinstance(name, str) and name else "workload"


def _namespace(obj: Mapping[str, Any]) -> str:
    namespace = _get(obj, "metadata", "namespace")
    return namespace if isinstance(namespace, str) and namespace else "default"


def _get(value: Any, *path: str | int) -> Any:
    for part in path:
        if isinstance(part, int):
            value = value[part] if isinstance(value, list) and part < len(value) else None
        else:
            value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _env(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value}


def _job_stamp(job: str, job_spec: Any) -> ControllerStamp:
    """The Job controller's pod labels (strategy.go generateSelector), and for an Indexed Job the completion index."""
    forced = {
        "batch.kubernetes.io/controller-uid": STAND_IN_UID,
        "batch.kubernetes.io/job-name": job,
        "controller-uid": STAND_IN_UID,
        "job-name": job,
    }
    annotations: dict[str, str] = {}
    env: tuple[dict[str, Any], ...] = ()
    if _get(job_spec, "completionMode") == "Indexed":
        forced["batch.kubernetes.io/job-completion-index"] = "0"
        annotations["batch.kubernetes.io/job-completion-index"] = "0"
        source = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
        env = ({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {"fieldPath": source}}},)
    return ControllerStamp(forced=forced, annotations=annotations, env_last=env, init_env=True,
                           owner=("batch/v1", "Job", job))  # fmt: skip


def _apps(obj: Mapping[str, Any], pod: PodTemplate) -> ControllerStamp:
    kind, name = str(obj.get("kind")), _name(obj)
    digest = _stand_in_hash(pod.template)
    if kind == "Deployment":
        return ControllerStamp(
            forced={"pod-template-hash": digest}, owner=("apps/v1", "ReplicaSet", f"{name}-{digest}")
        )
    if kind == "StatefulSet":
        return _stateful_set(name, digest)
    if kind == "DaemonSet":
        forced = {"controller-revision-hash": digest, "pod-template-generation": "1"}
        return ControllerStamp(forced=forced, owner=("apps/v1", "DaemonSet", name))
    if kind == "Rollout":  # Argo Rollouts: DefaultRolloutUniqueLabelKey (pkg/apis/rollouts/v1alpha1/types.go)
        owner = ("apps/v1", "ReplicaSet", f"{name}-{digest}")
        return ControllerStamp(forced={"rollouts-pod-template-hash": digest}, owner=owner)
    if kind == "ReplicationController":
        return ControllerStamp(owner=("v1", "ReplicationController", name))
    return ControllerStamp(owner=("apps/v1", kind, name))


def _stateful_set(name: str, digest: str) -> ControllerStamp:
    forced = {
        "controller-revision-hash": f"{name}-{digest}",
        "statefulset.kubernetes.io/pod-name": f"{name}-0",
        "apps.kubernetes.io/pod-index": "0",
    }
    return ControllerStamp(forced=forced, owner=("apps/v1", "StatefulSet", name))


def _job(obj: Mapping[str, Any], pod: PodTemplate) -> ControllerStamp:
    if obj.get("kind") == "CronJob":
        # The CronJob controller names a Job `<cronjob>-<scheduled minutes since the epoch>` (cronjob/utils.go).
        return _job_stamp(f"{_name(obj)}-29000000", _get(obj, "spec", "jobTemplate", "spec"))
    return _job_stamp(_name(obj), _get(obj, "spec"))


def _check_label(value: str) -> str:
    """KubeRay utils.CheckLabel: the last 63 characters, a leading punctuation mark replaced by `r`."""
    value = value[-63:]
    return "r" + value[1:] if value and not value[0].isalnum() else value


def ray_cluster_name(obj: Mapping[str, Any]) -> str:
    """The RayCluster a KubeRay object's pods belong to: a RayCluster's own name, else `<name>-xxxxx`."""
    name = _name(obj)
    return name if obj.get("kind") == "RayCluster" else f"{name}-xxxxx"


def _ray(obj: Mapping[str, Any], pod: PodTemplate) -> ControllerStamp:
    if pod.role == "submitter":  # RayJob's submitter runs as a batch Job named after the RayJob
        return _job_stamp(_name(obj), {})
    cluster = ray_cluster_name(obj)
    head = pod.path[-2] == "headGroupSpec"
    node_type = "head" if head else "worker"
    group_spec = _get(obj, *pod.path[:-1])
    group = "headgroup" if head else str(_get(group_spec, "groupName") or pod.role)
    labels = {
        "ray.io/is-ray-node": "yes",
        "ray.io/identifier": _check_label(f"{cluster}-{node_type}"),
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    group_labels = _get(group_spec, "labels")
    forced = {"ray.io/cluster": cluster, "ray.io/node-type": node_type, "ray.io/group": group}
    if isinstance(group_labels, Mapping):  # mergeLabels: the group's labels field wins over the template's
        forced = {**{str(k): str(v) for k, v in group_labels.items()}, **forced}
    if obj.get("kind") == "RayService":
        forced["ray.io/serve"] = "false" if head else "true"
    namespace = _namespace(obj)
    head_service = f"{cluster}-head-svc.{namespace}.svc.cluster.local"
    container = _get(pod.template, "spec", "containers", 0)
    # In-tree autoscaling (utils.IsAutoscalingEnabled): the head runs Ray with no-monitor and gets the autoscaler
    # sidecar (pod.go DefaultHeadPodTemplate, BuildAutoscalerContainer: the Ray image, 500m / 512Mi).
    autoscaling = head and _get(obj, *pod.path[:-2], "enableInTreeAutoscaling") is True
    start = _ray_start(group_spec, container, head, head_service, autoscaling)
    sidecars: tuple[dict[str, Any], ...] = ()
    if autoscaling:
        fixed = {"cpu": "500m", "memory": "512Mi"}
        sidecars = ({
            "name": "autoscaler",
            "image": _get(container, "image"),
            "command": ["/bin/bash", "-c", "--"],
            "args": ["ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) "
                     "--cluster-namespace $(RAY_CLUSTER_NAMESPACE)"],
            "resources": {"limits": dict(fixed), "requests": dict(fixed)},
        },)  # fmt: skip
    env = _ray_env(container, cluster, head, head_service, start, obj.get("kind") == "RayService")
    # initTemplateAnnotations / configureGCSFaultTolerance: the RayCluster's ray.io/overwrite-container-cmd is copied
    # to its pods, and the head says whether GCS fault tolerance is on (utils.IsGCSFaultToleranceEnabled).
    own = _get(obj, "metadata", "annotations") if obj.get("kind") == "RayCluster" else None
    own = own if isinstance(own, Mapping) else {}
    stamped: dict[str, str] = {}
    if str(own.get("ray.io/overwrite-container-cmd")).lower() == "true":
        stamped["ray.io/overwrite-container-cmd"] = "true"
    ft = str(own.get("ray.io/ft-enabled")).lower() == "true" or isinstance(
        _get(obj, *pod.path[:-2], "gcsFaultToleranceOptions"), Mapping)  # fmt: skip
    if head:
        stamped["ray.io/ft-enabled"] = "true" if ft else "false"
    current = _get(container, "env")
    named = {e.get("name") for e in current if isinstance(e, Mapping)} if isinstance(current, list) else set()
    # A worker's GCS reconnect timeout under GCS FT (DefaultWorkerRayGcsReconnectTimeoutS).
    reconnect = "RAY_GCS_RPC_SERVER_RECONNECT_TIMEOUT_S"
    if ft and not head and reconnect not in named:
        env = (_env(reconnect, "600"), *env)
    written = _get(pod.template, "metadata", "annotations")
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


def _ray_gpu_key(key: str) -> bool:
    """KubeRay utils.IsGPUResourceKey (ray-operator/controllers/ray/utils/resources.go)."""
    return key.endswith("gpu") or re.search(r"nvidia\.com/mig-\d+g\.\d+gb$", key) is not None


def _ray_start(group: Any, container: Any, head: bool, head_service: str, autoscaling: bool = False) -> str:
    """The `ray start` command KubeRay generates (common/pod.go: updateRayStartParamsResources,
    setMissingRayStartParams, generateRayStartCommand, addWellKnownAcceleratorResources, convertParamMap); custom
    accelerators and the group's non-standard resources are left out."""
    raw = _get(group, "rayStartParams")
    params = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}
    resources = _get(group, "resources")
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
    limits = _get(container, "resources", "limits")
    requests = _get(container, "resources", "requests")
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
    parts = [_get(container, "command"), _get(container, "args")]
    cmd = "".join(f" {v} " for part in parts if isinstance(part, list) for v in part)
    if "ray start" in cmd:
        return None
    generated = f"ulimit -n ${{RAY_START_ULIMIT_OPEN_FILES:-65536}}; {start}"
    return ["/bin/bash", "-c", "--"], [f"{cmd} && {generated}" if cmd else generated]


def _ray_env(container: Any, cluster: str, head: bool, head_service: str, start: str, service: bool
             ) -> tuple[dict[str, Any], ...]:  # fmt: skip
    """common/pod.go setContainerEnvVars, on the Ray container (the ones added only when absent are skipped when the
    container names them)."""
    current = _get(container, "env")
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


_KUBEFLOW_OPERATOR = {
    "PyTorchJob": "pytorchjob-controller",
    "TFJob": "tfjob-controller",
    "MPIJob": "mpijob-controller",
    "XGBoostJob": "xgboostjob-controller",
    "PaddleJob": "paddlejob-controller",
    "JAXJob": "jaxjob-controller",
}


def _kubeflow(obj: Mapping[str, Any], pod: PodTemplate) -> ControllerStamp:
    kind, name = str(obj.get("kind")), _name(obj)
    replica = pod.role.lower()
    if kind == "MPIJob" and obj.get("apiVersion") == "kubeflow.org/v2beta1":
        # kubeflow/mpi-operator v2 (pkg/controller/mpi_job_controller.go defaultLabels): operator-name mpi-operator,
        # the job name and its role; workers also get their replica index.
        forced = {
            "training.kubeflow.org/operator-name": "mpi-operator",
            "training.kubeflow.org/job-name": name,
            "training.kubeflow.org/job-role": replica,
        }
        if replica == "worker":
            forced["training.kubeflow.org/replica-index"] = "0"
        return ControllerStamp(forced=forced, owner=("kubeflow.org/v2beta1", kind, name))
    forced = {
        "training.kubeflow.org/job-name": name,
        "training.kubeflow.org/operator-name": _KUBEFLOW_OPERATOR[kind],
        "training.kubeflow.org/replica-type": replica,
        "training.kubeflow.org/replica-index": "0",
    }
    if replica in ("master", "chief", "launcher"):
        forced["training.kubeflow.org/job-role"] = "master"
    env: tuple[dict[str, Any], ...] = ()
    if kind == "PyTorchJob":
        env = (_env("PYTHONUNBUFFERED", "0"),)
        specs = _get(obj, "spec", "pytorchReplicaSpecs")
        if isinstance(specs, Mapping) and "Master" in specs:
            world = sum(r if isinstance(r := _get(s, "replicas"), int) else 1 for s in specs.values())
            rank = 1 if replica == "worker" else 0
            env += (
                _env("MASTER_PORT", "23456"),
                _env("MASTER_ADDR", f"{name}-master-0"),
                _env("WORLD_SIZE", str(world)),
                _env("RANK", str(rank)),
            )
    return ControllerStamp(forced=forced, env_last=env, owner=("kubeflow.org/v1", kind, name))


def _lws(obj: Mapping[str, Any], pod: PodTemplate) -> ControllerStamp:
    name = _name(obj)
    size = _get(obj, "spec", "leaderWorkerTemplate", "size")
    size_text = str(size if isinstance(size, int) else 1)
    revision = _stand_in_hash(_get(obj, "spec", "leaderWorkerTemplate"))
    group_key = _stand_in_hash([name, 0], 40)
    leader = pod.role == "leader"
    forced = {
        "leaderworkerset.sigs.k8s.io/name": name,
        "leaderworkerset.sigs.k8s.io/template-revision-hash": revision,
        "leaderworkerset.sigs.k8s.io/group-index": "0",
        "leaderworkerset.sigs.k8s.io/group-key": group_key,
        "leaderworkerset.sigs.k8s.io/worker-index": "0" if leader else "1",
    }
    annotations = {"leaderworkerset.sigs.k8s.io/size": size_text}
    exclusive = _get(obj, "metadata", "annotations", "leaderworkerset.sigs.k8s.io/exclusive-topology")
    if isinstance(exclusive, str) and exclusive:  # copied to the pods by both StatefulSets' templates
        annotations["leaderworkerset.sigs.k8s.io/exclusive-topology"] = exclusive
    statefulset = name if leader else f"{name}-0"
    if not leader:
        annotations["leaderworkerset.sigs.k8s.io/leader-name"] = f"{name}-0"
    forced.update(_stateful_set(statefulset, revision).forced)
    forced["statefulset.kubernetes.io/pod-name"] = f"{name}-0" if leader else f"{name}-0-1"
    forced["apps.kubernetes.io/pod-index"] = "0" if leader else "1"
    namespace = _namespace(obj)
    env = (
        _env("LWS_LEADER_ADDRESS", f"{name}-0.{name}.{namespace}"),
        _env("LWS_GROUP_SIZE", size_text),
        _env("LWS_WORKER_INDEX", "0" if leader else "1"),
    )
    return ControllerStamp(forced=forced, annotations=annotations, env_first=env, init_env=True,
                           owner=("apps/v1", "StatefulSet", statefulset))  # fmt: skip


_EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"
_NODE_SELECTOR = "alpha.jobset.sigs.k8s.io/node-selector"


def _jobset_stamp(
    jobset: str, namespace: str, jobset_spec: Any, pod: PodTemplate, replicated_index: int, jobset_annotations: Any
) -> ControllerStamp:
    replicated = _get(jobset_spec, "replicatedJobs")
    jobs = replicated if isinstance(replicated, list) else []
    rjob = jobs[replicated_index] if replicated_index < len(jobs) else {}
    rjob_name = str(_get(rjob, "name") or pod.role)
    replicas = _get(rjob, "replicas")
    replicas_text = str(replicas if isinstance(replicas, int) else 1)
    total = sum(r if isinstance(r := _get(j, "replicas"), int) else 1 for j in jobs) or 1
    global_index = sum(r if isinstance(r := _get(j, "replicas"), int) else 1 for j in jobs[:replicated_index])
    group = str(_get(rjob, "groupName") or "default")
    job = f"{jobset}-{rjob_name}-0"
    keys = {
        "jobset.sigs.k8s.io/jobset-name": jobset,
        "jobset.sigs.k8s.io/jobset-uid": STAND_IN_UID,
        "jobset.sigs.k8s.io/replicatedjob-name": rjob_name,
        "jobset.sigs.k8s.io/restart-attempt": "0",
        "jobset.sigs.k8s.io/replicatedjob-replicas": replicas_text,
        "jobset.sigs.k8s.io/global-replicas": str(total),
        "jobset.sigs.k8s.io/job-index": "0",
        "jobset.sigs.k8s.io/job-key": hashlib.sha1(f"{namespace}/{job}".encode()).hexdigest(),  # jobHashKey
        "jobset.sigs.k8s.io/job-global-index": str(global_index),
        "jobset.sigs.k8s.io/group-name": group,
        "jobset.sigs.k8s.io/group-replicas": replicas_text,
        "jobset.sigs.k8s.io/job-group-index": "0",
    }
    coordinator = _get(jobset_spec, "coordinator")
    if isinstance(coordinator, Mapping):  # CoordinatorEndpoint: <jobset>-<replicatedJob>-<job>-<pod>.<subdomain>
        subdomain = _get(jobset_spec, "network", "subdomain") or jobset
        endpoint = (f"{jobset}-{coordinator.get('replicatedJob')}-{coordinator.get('jobIndex', 0)}-"
                    f"{coordinator.get('podIndex', 0)}.{subdomain}")  # fmt: skip
        keys["jobset.sigs.k8s.io/coordinator"] = endpoint
    # Exclusive placement: the JobSet's (then the replicated Job template's) exclusive-topology annotation, and its
    # node-selector strategy flag, reach the pods as annotations only.
    placement: dict[str, str] = {}
    for source in (jobset_annotations, _get(rjob, "template", "metadata", "annotations")):
        if isinstance(source, Mapping) and isinstance(source.get(_EXCLUSIVE), str):
            placement[_EXCLUSIVE] = source[_EXCLUSIVE]
            if isinstance(source.get(_NODE_SELECTOR), str):
                placement[_NODE_SELECTOR] = source[_NODE_SELECTOR]
    job_spec = dict(_get(rjob, "template", "spec") or {})
    job_spec.setdefault("completionMode", "Indexed")  # JobSet's webhook defaults it (jobset_webhook.go)
    batch = _job_stamp(job, job_spec)
    return ControllerStamp(
        forced={**keys, **batch.forced},
        annotations={**keys, **placement, **batch.annotations},
        env_last=batch.env_last,
        init_env=True,
        owner=batch.owner,
    )


def _jobset(obj: Mapping[str, Any], pod: PodTemplate) -> ControllerStamp:
    index = pod.path[2] if len(pod.path) > 2 and isinstance(pod.path[2], int) else 0
    return _jobset_stamp(
        _name(obj), _namespace(obj), _get(obj, "spec"), pod, index, _get(obj, "metadata", "annotations")
    )


def _training_runtime(obj: Mapping[str, Any], pod: PodTemplate) -> ControllerStamp:
    """A TrainJob's pods: the JobSet made of the runtime's template (pkg/runtime/framework/plugins/jobset), with the
    torch plugin's env on the trainer's `node` container (pkg/runtime/framework/plugins/torch)."""
    index = pod.path[4] if len(pod.path) > 4 and isinstance(pod.path[4], int) else 0
    template = _get(obj, "spec", "template")
    stamp = _jobset_stamp(
        _name(obj), _namespace(obj), _get(template, "spec"), pod, index, _get(template, "metadata", "annotations")
    )
    template_labels = _get(obj, *pod.path[:-2], "metadata", "labels")  # the replicated Job's template
    ancestor = template_labels.get("trainer.kubeflow.org/trainjob-ancestor-step") if isinstance(
        template_labels, Mapping) else None  # fmt: skip
    if ancestor != "trainer" or _get(obj, "spec", "mlPolicy", "torch") is None:
        return stamp
    # torch.go: PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK (the completion index), PET_MASTER_ADDR and
    # PET_MASTER_PORT (constants.ContainerTrainerPort) upserted into the trainer's `node` container only.
    nodes = _get(obj, "spec", "mlPolicy", "numNodes")
    rank = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    torch_env = (
        _env("PET_NNODES", str(nodes if isinstance(nodes, int) else 1)),
        _env("PET_NPROC_PER_NODE", "auto"),
        {"name": "PET_NODE_RANK", "valueFrom": {"fieldRef": {"fieldPath": rank}}},
        _env("PET_MASTER_ADDR", f"{_name(obj)}-node-0-0.{_name(obj)}"),
        _env("PET_MASTER_PORT", "29500"),
    )
    containers = _get(pod.template, "spec", "containers")
    nodes_at = [
        i for i, c in enumerate(containers if isinstance(containers, list) else []) if _get(c, "name") == "node"
    ]
    return ControllerStamp(
        forced=stamp.forced,
        annotations=stamp.annotations,
        env_last=stamp.env_last,
        init_env=True,
        owner=stamp.owner,
        container_env=dict.fromkeys(nodes_at, torch_env),
    )


_STAMPS: dict[str, Callable[[Mapping[str, Any], PodTemplate], ControllerStamp]] = {
    **dict.fromkeys(
        ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "ReplicationController", "Rollout"), _apps
    ),
    **dict.fromkeys(("Job", "CronJob"), _job),
    **dict.fromkeys(("RayCluster", "RayService", "RayJob", "RayCronJob"), _ray),
    **dict.fromkeys(_KUBEFLOW_OPERATOR, _kubeflow),
    "LeaderWorkerSet": _lws,
    "JobSet": _jobset,
    **dict.fromkeys(("TrainingRuntime", "ClusterTrainingRuntime"), _training_runtime),
}


def controller_stamp(obj: Mapping[str, Any], template: PodTemplate) -> ControllerStamp | None:
    """What the controller of `obj` (a kind `workloads.templates` knows) adds to the pods of `template`; None for
    a Pod, a PodTemplate or a kind without a controller modelled here."""
    known = workload_kind(obj)
    stamp = _STAMPS.get(known.kind) if known is not None and template.path else None
    return stamp(obj, template) if stamp is not None else None


def _with_env(
    container: Any, stamp: ControllerStamp, upsert: tuple[dict[str, Any], ...] = (), chosen: bool = True
) -> Any:
    """The container with the stamp's env (when `chosen`) and `upsert` (replacing variables of the same name, as
    Kubeflow Trainer's apply.UpsertEnvVars does)."""
    if not isinstance(container, Mapping) or not (chosen or upsert):
        return container
    env = container.get("env")
    current = list(env) if isinstance(env, list) else []
    names = {e.get("name") for e in current if isinstance(e, Mapping)}
    first = [e for e in stamp.env_first if e["name"] not in names] if chosen else []
    rest = [e for e in current if not (isinstance(e, Mapping) and e.get("name") in {f["name"] for f in first})]
    result = [*first, *rest, *(stamp.env_last if chosen else ())]
    for variable in upsert:
        at = next(
            (i for i, e in enumerate(result) if isinstance(e, Mapping) and e.get("name") == variable["name"]), None
        )
        if at is None:
            result.append(variable)
        else:
            result[at] = variable
    return {**container, "env": result}


def _appended_env(container: Any, env: tuple[dict[str, Any], ...]) -> Any:
    if not env or not isinstance(container, Mapping):
        return container
    current = container.get("env")
    return {**container, "env": [*(current if isinstance(current, list) else []), *env]}


def controller_pod(obj: Mapping[str, Any], template: PodTemplate, pod: Mapping[str, Any]) -> dict[str, Any]:
    """`pod` (the template as a pod) as `obj`'s controller creates it: a new mapping sharing what it leaves alone.
    `pod` itself is returned for a Pod and a kind whose controller adds nothing modelled here."""
    stamp = controller_stamp(obj, template)
    if stamp is None:
        return dict(pod)
    metadata = dict(pod.get("metadata") or {})
    own = metadata.get("labels")
    metadata["labels"] = {**stamp.labels, **(own if isinstance(own, Mapping) else {}), **stamp.forced}
    if stamp.annotations:
        notes = metadata.get("annotations")
        metadata["annotations"] = {**(notes if isinstance(notes, Mapping) else {}), **stamp.annotations}
    if stamp.owner is not None:
        api_version, kind, name = stamp.owner
        metadata["ownerReferences"] = [{"apiVersion": api_version, "kind": kind, "name": name, "uid": STAND_IN_UID,
                                        "controller": True, "blockOwnerDeletion": True}]  # fmt: skip
    spec = dict(pod.get("spec") or {})
    if stamp.env_first or stamp.env_last or stamp.container_env:
        containers = spec.get("containers")
        if isinstance(containers, list):
            chosen = range(len(containers)) if stamp.env_containers is None else stamp.env_containers
            spec["containers"] = [
                _with_env(c, stamp, stamp.container_env.get(i, ()), i in chosen) for i, c in enumerate(containers)
            ]
    if stamp.containers and isinstance(spec.get("containers"), list):
        spec["containers"] = [*spec["containers"], *stamp.containers]
    if stamp.command is not None and isinstance(spec.get("containers"), list) and spec["containers"]:
        first = spec["containers"][0]
        if isinstance(first, Mapping):
            command, args = stamp.command
            spec["containers"] = [{**first, "command": command, "args": args}, *spec["containers"][1:]]
    init = spec.get("initContainers")
    if stamp.init_env and isinstance(init, list):
        spec["initContainers"] = init = [_with_env(c, stamp) for c in init]
    if stamp.init_containers or stamp.init_extra_env:
        init = [*(init if isinstance(init, list) else []), *stamp.init_containers]
        spec["initContainers"] = [_appended_env(c, stamp.init_extra_env) for c in init]
    return {**pod, "metadata": metadata, "spec": spec}
