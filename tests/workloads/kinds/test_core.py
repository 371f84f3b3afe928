"""`workloads.kinds.core`: the built-in kinds' templates, kube-controller-manager's stamps and the owner rules.

Each expectation names the kubernetes source it comes from (pkg/controller/..., pkg/registry/batch/job/strategy.go).
"""

from __future__ import annotations

from typing import Any

from tests.workloads.builders import Template, gpu_template, make_workload, pod_of
from workloads import kind_named, pod_owner
from workloads.kinds import core

EXAMPLES = {
    "PodTemplate": ("v1", lambda t: {"template": t()}),
    "ReplicationController": ("v1", lambda t: {"spec": {"replicas": 1, "template": t()}}),
    "Deployment": ("apps/v1", lambda t: {"spec": {"replicas": 2, "template": t()}}),
    "StatefulSet": ("apps/v1", lambda t: {"spec": {"replicas": 1, "serviceName": "wl", "template": t()}}),
    "DaemonSet": ("apps/v1", lambda t: {"spec": {"template": t()}}),
    "ReplicaSet": ("apps/v1", lambda t: {"spec": {"replicas": 1, "template": t()}}),
    "Job": ("batch/v1", lambda t: {"spec": {"completionMode": "Indexed", "completions": 2, "template": t()}}),
    "CronJob": ("batch/v1", lambda t: _cron_job(t)),
}


def _cron_job(t: Template) -> dict[str, Any]:
    return {"spec": {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": t()}}}}


def test_every_kind_of_the_module_has_an_example() -> None:
    assert {k.kind for k in core.KINDS if k.paths} == {"Pod", *EXAMPLES}


def test_apps_controllers_stamp_their_hash_labels_and_owners() -> None:
    # deployment/util (pod-template-hash), statefulset/stateful_set_utils.go, daemon/util
    deployment = pod_of(make_workload("Deployment", gpu_template(1)))["metadata"]
    digest = deployment["labels"]["pod-template-hash"]
    assert deployment["ownerReferences"][0]["kind"] == "ReplicaSet"
    assert deployment["ownerReferences"][0]["name"] == f"wl-{digest}"
    assert pod_owner({"metadata": deployment}) == ("Deployment", "wl")
    stateful = pod_of(make_workload("StatefulSet", gpu_template(1)))["metadata"]["labels"]
    assert stateful["statefulset.kubernetes.io/pod-name"] == "wl-0" and stateful["apps.kubernetes.io/pod-index"] == "0"
    assert stateful["controller-revision-hash"].startswith("wl-")
    daemon = pod_of(make_workload("DaemonSet", gpu_template(1)))["metadata"]["labels"]
    assert daemon["pod-template-generation"] == "1"
    owner = pod_of(make_workload("ReplicationController", gpu_template(1)))["metadata"]["ownerReferences"][0]
    assert (owner["apiVersion"], owner["kind"], owner["name"]) == ("v1", "ReplicationController", "wl")


def test_jobs_and_cron_jobs_carry_the_job_controllers_labels() -> None:
    # pkg/registry/batch/job/strategy.go generateSelector; pkg/controller/job/indexed_job_utils.go for Indexed Jobs
    job = pod_of(make_workload("Job", gpu_template(1)))
    labels = job["metadata"]["labels"]
    assert labels["batch.kubernetes.io/job-name"] == "wl" == labels["job-name"]
    assert labels["batch.kubernetes.io/job-completion-index"] == "0"
    assert job["spec"]["containers"][0]["env"][-1]["name"] == "JOB_COMPLETION_INDEX"
    assert pod_owner(job) == ("Job", "wl")
    # cronjob/utils.go: a CronJob's Job is `<cronjob>-<scheduled minutes since the epoch>`; not Indexed here
    cron = pod_of(make_workload("CronJob", gpu_template(1)))
    assert cron["metadata"]["labels"]["job-name"] == "wl-29000000"
    assert "batch.kubernetes.io/job-completion-index" not in cron["metadata"]["labels"]
    assert pod_owner(cron) == ("CronJob", "wl")


def test_owner_rules_of_the_controllers_in_between() -> None:
    replica_set, job = kind_named("ReplicaSet"), kind_named("Job")
    assert replica_set is not None and replica_set.owner is not None
    assert replica_set.owner("embed-7d9f8c6b5", {"pod-template-hash": "7d9f8c6b5"}) == ("Deployment", "embed")
    assert replica_set.owner("7d9f8c6b5", {"pod-template-hash": "7d9f8c6b5"}) == ("ReplicaSet", "7d9f8c6b5")
    assert job is not None and job.owner is not None and job.label_owner is not None
    assert job.owner("nightly-28934400", {}) == ("CronJob", "nightly") and job.owner("train", {}) == ("Job", "train")
    assert job.label_owner({"batch.kubernetes.io/job-name": "t", "controller-uid": "u"}) == "t"
    assert job.label_owner({"batch.kubernetes.io/job-name": "t"}) is None


def test_the_owner_kinds_are_read_by_their_api_resource() -> None:
    served = {k.kind: (k.resource.api_version, k.resource.plural) for k in core.KINDS if k.resource is not None}
    assert served == {
        "Pod": ("v1", "pods"),
        "Deployment": ("apps/v1", "deployments"),
        "StatefulSet": ("apps/v1", "statefulsets"),
        "DaemonSet": ("apps/v1", "daemonsets"),
        "ReplicaSet": ("apps/v1", "replicasets"),
        "Job": ("batch/v1", "jobs"),
        "CronJob": ("batch/v1", "cronjobs"),
    }


def test_init_containers_get_the_job_controllers_env_too() -> None:
    template = gpu_template(1)
    template["spec"]["initContainers"] = [{"name": "fetch", "image": "busybox"}]
    init = pod_of(make_workload("Job", template))["spec"]["initContainers"][0]
    assert [e["name"] for e in init["env"]] == ["JOB_COMPLETION_INDEX"]
