"""`workloads.kinds.jobset`: replicated Jobs' pod templates and the JobSet controller's keys on their pods.

Expectations from kubernetes-sigs/jobset pkg/controllers/jobset_controller.go and the Job controller's strategy.go.
"""

from __future__ import annotations

from typing import Any

from tests.workloads.builders import Template, gpu_template, make_workload, pod_of
from workloads import pod_owner
from workloads.kinds import jobset


def _jobset(t: Template) -> dict[str, Any]:
    return {
        "spec": {
            "replicatedJobs": [
                {"name": "driver", "replicas": 1, "template": {"spec": {"template": t()}}},
                {"name": "workers", "replicas": 2, "template": {"spec": {"parallelism": 2, "template": t()}}},
            ]
        }
    }


EXAMPLES = {"JobSet": ("jobset.x-k8s.io/v1alpha2", _jobset)}


def test_every_kind_of_the_module_has_an_example() -> None:
    assert {k.kind for k in jobset.KINDS if k.paths} == set(EXAMPLES)


def test_jobset_pods_carry_the_jobset_keys_and_the_indexed_job_labels() -> None:
    # jobset pkg/controllers/jobset_controller.go labelAndAnnotateObject; kubernetes pkg/registry/batch/job/strategy.go
    pod = pod_of(make_workload("JobSet", gpu_template(8)), 1)
    labels, annotations = pod["metadata"]["labels"], pod["metadata"]["annotations"]
    assert labels["jobset.sigs.k8s.io/jobset-name"] == "wl"
    assert labels["jobset.sigs.k8s.io/replicatedjob-name"] == "workers"
    assert labels["jobset.sigs.k8s.io/job-global-index"] == "1" and labels["jobset.sigs.k8s.io/global-replicas"] == "3"
    assert annotations["jobset.sigs.k8s.io/replicatedjob-replicas"] == "2"
    assert labels["batch.kubernetes.io/job-name"] == "wl-workers-0"
    assert "jobset.sigs.k8s.io/coordinator" not in labels
    workload = make_workload("JobSet", gpu_template(8))
    workload["spec"]["coordinator"] = {"replicatedJob": "driver", "jobIndex": 0, "podIndex": 0}
    coordinated = pod_of(workload, 1)["metadata"]
    assert coordinated["labels"]["jobset.sigs.k8s.io/coordinator"] == "wl-driver-0-0.wl"
    assert coordinated["annotations"]["jobset.sigs.k8s.io/coordinator"] == "wl-driver-0-0.wl"
    # exclusive placement: the JobSet's annotation reaches its pods as an annotation, never a label
    workload["metadata"]["annotations"] = {
        "alpha.jobset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool"
    }
    placed = pod_of(workload, 1)["metadata"]
    assert placed["annotations"]["alpha.jobset.sigs.k8s.io/exclusive-topology"] == "cloud.google.com/gke-nodepool"
    assert "alpha.jobset.sigs.k8s.io/exclusive-topology" not in placed["labels"]
    assert annotations["batch.kubernetes.io/job-completion-index"] == "0"
    assert pod["spec"]["containers"][0]["env"][-1]["name"] == "JOB_COMPLETION_INDEX"


def test_a_jobset_pod_is_keyed_by_its_job_as_the_cron_job_heuristic_reads_it() -> None:
    # A JobSet is no owner kind: its pods are keyed by their Job, `<jobset>-<replicatedJob>-<index>`, which the
    # CronJob rule (`<cronjob>-<digits>`) reads as a CronJob's. Known and kept: the recommender keys it the same way,
    # so it costs nothing but a name that reads oddly.
    assert pod_owner(pod_of(make_workload("JobSet", gpu_template(1)), 1)) == ("CronJob", "wl-workers")
