"""The built-in kinds (core, apps/v1, batch/v1): their templates, kube-controller-manager's stamps, the owner rules.

Labels and owners from kubernetes pkg/controller and pkg/registry/batch/job (cited per stamp); `job_stamp` and
`stateful_set_stamp` serve the operators that make Jobs and StatefulSets.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._fields import STAND_IN_UID, get, name_of, stand_in_hash
from ..kind import ApiResource, ControllerStamp, PodTemplate, TemplatePath, WorkloadKind

__all__ = ["KINDS", "ORDER", "job_stamp", "stateful_set_stamp"]

ORDER = 0  # listed first wherever gpudra names the kinds it knows

_APPS = ("apps", "extensions")
_SPEC_TEMPLATE = (TemplatePath("spec.template"),)


def job_stamp(job: str, job_spec: Any) -> ControllerStamp:
    """The Job controller's pod labels (pkg/registry/batch/job/strategy.go generateSelector: `batch.kubernetes.io/
    controller-uid`, `batch.kubernetes.io/job-name` and their legacy unprefixed forms), and for an Indexed Job
    (pkg/controller/job/indexed_job_utils.go) the completion index annotation, label and `JOB_COMPLETION_INDEX`."""
    forced = {
        "batch.kubernetes.io/controller-uid": STAND_IN_UID,
        "batch.kubernetes.io/job-name": job,
        "controller-uid": STAND_IN_UID,
        "job-name": job,
    }
    annotations: dict[str, str] = {}
    env: tuple[dict[str, Any], ...] = ()
    if get(job_spec, "completionMode") == "Indexed":
        forced["batch.kubernetes.io/job-completion-index"] = "0"
        annotations["batch.kubernetes.io/job-completion-index"] = "0"
        source = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
        env = ({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {"fieldPath": source}}},)
    return ControllerStamp(forced=forced, annotations=annotations, env_last=env, init_env=True,
                           owner=("batch/v1", "Job", job))  # fmt: skip


def stateful_set_stamp(name: str, digest: str) -> ControllerStamp:
    """The StatefulSet controller's labels on its first pod (ordinal 0) and its owner reference
    (statefulset/stateful_set_utils.go: `controller-revision-hash`, `statefulset.kubernetes.io/pod-name`,
    `apps.kubernetes.io/pod-index`)."""
    forced = {
        "controller-revision-hash": f"{name}-{digest}",
        "statefulset.kubernetes.io/pod-name": f"{name}-0",
        "apps.kubernetes.io/pod-index": "0",
    }
    return ControllerStamp(forced=forced, owner=("apps/v1", "StatefulSet", name))


def _deployment(obj: Mapping[str, Any], pod: PodTemplate) -> ControllerStamp:
    """deployment/util: `pod-template-hash`, on the pods of the ReplicaSet `<deployment>-<hash>`."""
    name, digest = name_of(obj), stand_in_hash(pod.template)
    return ControllerStamp(forced={"pod-template-hash": digest}, owner=("apps/v1", "ReplicaSet", f"{name}-{digest}"))


def _stateful_set(obj: Mapping[str, Any], pod: PodTemplate) -> ControllerStamp:
    return stateful_set_stamp(name_of(obj), stand_in_hash(pod.template))


def _daemon_set(obj: Mapping[str, Any], pod: PodTemplate) -> ControllerStamp:
    """daemon/util: `controller-revision-hash` and `pod-template-generation`."""
    forced = {"controller-revision-hash": stand_in_hash(pod.template), "pod-template-generation": "1"}
    return ControllerStamp(forced=forced, owner=("apps/v1", "DaemonSet", name_of(obj)))


def _replica_set(obj: Mapping[str, Any], pod: PodTemplate) -> ControllerStamp:
    return ControllerStamp(owner=("apps/v1", "ReplicaSet", name_of(obj)))


def _replication_controller(obj: Mapping[str, Any], pod: PodTemplate) -> ControllerStamp:
    return ControllerStamp(owner=("v1", "ReplicationController", name_of(obj)))


def _job(obj: Mapping[str, Any], pod: PodTemplate) -> ControllerStamp:
    return job_stamp(name_of(obj), get(obj, "spec"))


def _cron_job(obj: Mapping[str, Any], pod: PodTemplate) -> ControllerStamp:
    # The CronJob controller names a Job `<cronjob>-<scheduled minutes since the epoch>` (cronjob/utils.go).
    return job_stamp(f"{name_of(obj)}-29000000", get(obj, "spec", "jobTemplate", "spec"))


def _deployment_of(replica_set: str, labels: Mapping[str, str]) -> tuple[str, str]:
    """A ReplicaSet `<deploy>-<hash>` whose suffix is the pod's `pod-template-hash` label is a Deployment's; one
    without that match is a bare ReplicaSet."""
    pod_hash = labels.get("pod-template-hash")
    if pod_hash and replica_set.endswith("-" + pod_hash) and len(replica_set) > len(pod_hash) + 1:
        return "Deployment", replica_set[: -len(pod_hash) - 1]
    return "ReplicaSet", replica_set


# A CronJob names its Jobs `<cronjob>-<scheduled time in minutes since the epoch>` (digits only).
_CRONJOB_JOB = re.compile(r"^(?P<cronjob>.+)-(?P<stamp>[0-9]+)$")


def _cron_job_of(job: str, labels: Mapping[str, str]) -> tuple[str, str]:
    """A Job `<cronjob>-<digits>` is read as its CronJob's: the pod names its Job, never the CronJob, so this is a
    heuristic (a Job made by hand as `train-2` is read as CronJob `train`); a recommendation is only found if the
    recommender keyed it the same way, so a wrong guess costs a miss, never a wrong size."""
    match = _CRONJOB_JOB.match(job)
    return ("CronJob", match.group("cronjob")) if match is not None else ("Job", job)


_JOB_NAME = ("batch.kubernetes.io/job-name", "job-name")
_JOB_CONTROLLER_UID = ("batch.kubernetes.io/controller-uid", "controller-uid")


def _job_named_by_labels(labels: Mapping[str, str]) -> str | None:
    """A Job's pod whose ownerReference was stripped still carries the Job controller's labels (the job name and
    the controller uid, prefixed or in their legacy unprefixed forms)."""
    job = next((labels[k] for k in _JOB_NAME if labels.get(k)), "")
    return job if job and any(labels.get(k) for k in _JOB_CONTROLLER_UID) else None


KINDS: tuple[WorkloadKind, ...] = (
    WorkloadKind("Pod", ("",), (TemplatePath(""),), resource=ApiResource("v1", "pods")),
    WorkloadKind("PodTemplate", ("",), (TemplatePath("template"),)),
    WorkloadKind("ReplicationController", ("",), _SPEC_TEMPLATE, stamp=_replication_controller),
    WorkloadKind(
        "Deployment",
        _APPS,
        _SPEC_TEMPLATE,
        stamp=_deployment,
        resource=ApiResource("apps/v1", "deployments"),
        # `<name>-<pod-template-hash>-<5 chars>` (a hash of 6-10 lower-case letters and digits)
        pod_name=re.compile(r"^(?P<owner>.+)-(?P<hash>[a-z0-9]{6,10})-(?P<suffix>[a-z0-9]{5})$"),
    ),
    WorkloadKind(
        "StatefulSet",
        ("apps",),
        _SPEC_TEMPLATE,
        stamp=_stateful_set,
        resource=ApiResource("apps/v1", "statefulsets"),
        pod_name=re.compile(r"^(?P<owner>.+)-(?P<ordinal>[0-9]+)$"),
    ),
    WorkloadKind("DaemonSet", _APPS, _SPEC_TEMPLATE, stamp=_daemon_set, resource=ApiResource("apps/v1", "daemonsets")),
    WorkloadKind(
        "ReplicaSet",
        _APPS,
        _SPEC_TEMPLATE,
        stamp=_replica_set,
        resource=ApiResource("apps/v1", "replicasets"),
        owner=_deployment_of,
    ),
    WorkloadKind(
        "Job",
        ("batch",),
        _SPEC_TEMPLATE,
        stamp=_job,
        resource=ApiResource("batch/v1", "jobs"),
        owner=_cron_job_of,
        label_owner=_job_named_by_labels,
        pod_name=re.compile(r"^(?P<owner>.+)-(?P<suffix>[a-z0-9]{5})$"),
    ),
    WorkloadKind(
        "CronJob",
        ("batch",),
        (TemplatePath("spec.jobTemplate.spec.template"),),
        stamp=_cron_job,
        resource=ApiResource("batch/v1", "cronjobs"),
    ),
)
