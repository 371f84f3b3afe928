"""JobSet (jobset.x-k8s.io): replicated Jobs' pod templates and the JobSet controller's keys on their pods.

`ReplicatedJob.template` is a batch/v1 JobTemplateSpec; the stamp (`jobset_stamp`, cited there) is the JobSet's keys
over the Job controller's labels, and serves Kubeflow Trainer's runtimes, which embed a JobSet template.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from .._fields import STAND_IN_UID, get, name_of, namespace_of
from ..kind import ControllerStamp, PodTemplate, TemplatePath, WorkloadKind
from .core import job_stamp

__all__ = ["JOBSET_TEMPLATES", "KINDS", "ORDER", "jobset_stamp"]

ORDER = 40

JOBSET_TEMPLATES = "spec.replicatedJobs[*].template.spec.template"

_EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"
_NODE_SELECTOR = "alpha.jobset.sigs.k8s.io/node-selector"


def jobset_stamp(
    jobset: str, namespace: str, jobset_spec: Any, pod: PodTemplate, replicated_index: int, jobset_annotations: Any
) -> ControllerStamp:
    """pkg/controllers/jobset_controller.go `labelAndAnnotateObject`: the `jobset.sigs.k8s.io/*` keys as labels and
    annotations, on Indexed Jobs (JobSet's default completionMode) stamped by the Job controller."""
    replicated = get(jobset_spec, "replicatedJobs")
    jobs = replicated if isinstance(replicated, list) else []
    rjob = jobs[replicated_index] if replicated_index < len(jobs) else {}
    rjob_name = str(get(rjob, "name") or pod.role)
    replicas = get(rjob, "replicas")
    replicas_text = str(replicas if isinstance(replicas, int) else 1)
    total = sum(r if isinstance(r := get(j, "replicas"), int) else 1 for j in jobs) or 1
    global_index = sum(r if isinstance(r := get(j, "replicas"), int) else 1 for j in jobs[:replicated_index])
    group = str(get(rjob, "groupName") or "default")
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
    coordinator = get(jobset_spec, "coordinator")
    if isinstance(coordinator, Mapping):  # CoordinatorEndpoint: <jobset>-<replicatedJob>-<job>-<pod>.<subdomain>
        subdomain = get(jobset_spec, "network", "subdomain") or jobset
        endpoint = (f"{jobset}-{coordinator.get('replicatedJob')}-{coordinator.get('jobIndex', 0)}-"
                    f"{coordinator.get('podIndex', 0)}.{subdomain}")  # fmt: skip
        keys["jobset.sigs.k8s.io/coordinator"] = endpoint
    # Exclusive placement: the JobSet's (then the replicated Job template's) exclusive-topology annotation, and its
    # node-selector strategy flag, reach the pods as annotations only.
    placement: dict[str, str] = {}
    for source in (jobset_annotations, get(rjob, "template", "metadata", "annotations")):
        if isinstance(source, Mapping) and isinstance(source.get(_EXCLUSIVE), str):
            placement[_EXCLUSIVE] = source[_EXCLUSIVE]
            if isinstance(source.get(_NODE_SELECTOR), str):
                placement[_NODE_SELECTOR] = source[_NODE_SELECTOR]
    job_spec = dict(get(rjob, "template", "spec") or {})
    job_spec.setdefault("completionMode", "Indexed")  # JobSet's webhook defaults it (jobset_webhook.go)
    batch = job_stamp(job, job_spec)
    return ControllerStamp(
        forced={**keys, **batch.forced},
        annotations={**keys, **placement, **batch.annotations},
        env_last=batch.env_last,
        init_env=True,
        owner=batch.owner,
    )


def _jobset(obj: Mapping[str, Any], pod: PodTemplate) -> ControllerStamp:
    index = pod.path[2] if len(pod.path) > 2 and isinstance(pod.path[2], int) else 0
    return jobset_stamp(
        name_of(obj), namespace_of(obj), get(obj, "spec"), pod, index, get(obj, "metadata", "annotations")
    )


KINDS: tuple[WorkloadKind, ...] = (
    WorkloadKind("JobSet", ("jobset.x-k8s.io",), (TemplatePath(JOBSET_TEMPLATES),), stamp=_jobset),
)
