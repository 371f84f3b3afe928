"""`workloads.pod_templates`: the template paths of each known kind, roles, API groups and template-name prefixes."""

from __future__ import annotations

from typing import Any

import pytest

from manifest_translation import template_prefix
from workloads import (
    KNOWN_KINDS,
    UnknownWorkload,
    WorkloadShapeError,
    dotted,
    pod_templates,
    workload_kind,
)


def _template(name: str = "c", gpus: int = 1) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": name, "image": "i", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}


def _found(obj: dict[str, Any]) -> list[tuple[str, str]]:
    return [(t.where, t.role) for t in pod_templates(obj)]


def test_jobset_replicated_jobs_are_job_templates_holding_pod_templates() -> None:
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "tpu"},
        "spec": {
            "replicatedJobs": [
                {"name": "driver", "template": {"spec": {"template": _template()}}},
                {"name": "workers", "replicas": 4, "template": {"spec": {"template": _template(gpus=8)}}},
            ]
        },
    }
    assert _found(jobset) == [
        ("spec.replicatedJobs[0].template.spec.template", "driver"),
        ("spec.replicatedJobs[1].template.spec.template", "workers"),
    ]


def test_other_kubeflow_jobs_and_ray_cron_jobs_and_pod_templates() -> None:
    tfjob = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "spec": {"tfReplicaSpecs": {"PS": {"template": _template()}}},
    }
    assert _found(tfjob) == [("spec.tfReplicaSpecs.PS.template", "PS")]
    cron = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "spec": {"jobTemplate": {"rayClusterSpec": {"headGroupSpec": {"template": _template()}}}},
    }
    assert _found(cron) == [("spec.jobTemplate.rayClusterSpec.headGroupSpec.template", "head")]
    assert _found({"apiVersion": "v1", "kind": "PodTemplate", "template": _template()}) == [("template", "")]


def test_a_ray_worker_group_without_a_name_is_known_by_its_index() -> None:
    cluster = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "spec": {"workerGroupSpecs": [{"template": _template()}]},
    }
    assert _found(cluster) == [("spec.workerGroupSpecs[0].template", "0")]


@pytest.mark.parametrize(
    ("api_version", "kind", "known"),
    [
        ("apps/v1", "Deployment", True),
        ("extensions/v1beta1", "Deployment", True),
        ("batch/v1beta1", "CronJob", True),
        (None, "StatefulSet", True),
        ("example.com/v1", "Deployment", False),
        ("apps/v1", "Rollout", False),
        ("v1", "Job", False),
    ],
)
def test_kinds_are_known_in_their_api_groups_only(api_version: str | None, kind: str, known: bool) -> None:
    obj = {"kind": kind, **({"apiVersion": api_version} if api_version else {})}
    assert (workload_kind(obj) is not None) is known


def test_every_known_kind_names_its_paths() -> None:
    tried = {k.kind: k.tried() for k in KNOWN_KINDS}
    assert tried["Pod"] == "the object itself"
    assert tried["CronJob"] == "spec.jobTemplate.spec.template"
    assert tried["RayJob"] == (
        "spec.rayClusterSpec.headGroupSpec.template, spec.rayClusterSpec.workerGroupSpecs[*].template, "
        "spec.submitterPodTemplate"
    )
    assert tried["LeaderWorkerSet"] == (
        "spec.leaderWorkerTemplate.leaderTemplate, spec.leaderWorkerTemplate.workerTemplate"
    )


def test_an_unknown_kind_without_gpus_or_pod_templates_is_nothing_to_do() -> None:
    assert pod_templates({"apiVersion": "v1", "kind": "ConfigMap", "data": {"limits": "nvidia.com/gpu"}}) == []
    with pytest.raises(UnknownWorkload, match=r"found pod templates at spec\.job\.template"):
        pod_templates({"apiVersion": "x.io/v1", "kind": "Thing", "spec": {"job": {"template": _template(gpus=0)}}})


def test_wrong_types_on_the_way_name_the_field() -> None:
    with pytest.raises(WorkloadShapeError, match=r"spec\.pytorchReplicaSpecs\.Worker must be an object \(got list\)"):
        pod_templates(
            {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": {"Worker": []}}}
        )
    with pytest.raises(WorkloadShapeError, match=r"spec\.template\.metadata must be an object \(got str\)"):
        pod_templates({"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": {"metadata": "x", "spec": {}}}})


def test_dotted_paths_quote_keys_that_are_not_names() -> None:
    assert dotted(("spec", "workerGroupSpecs", 0, "template")) == "spec.workerGroupSpecs[0].template"
    assert dotted(("limits", "nvidia.com/gpu")) == "limits['nvidia.com/gpu']"


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        (("vllm", ""), "vllm"),
        (("resnet50-ddp", "Master"), "resnet50-ddp-master"),
        (("My_App", "gpu group"), "my-app-gpu-group"),
        (("", ""), "gpudra"),
        (("-x-", "--"), "x"),
    ],
)
def test_template_prefixes_are_dns_names(parts: tuple[str, str], expected: str) -> None:
    assert template_prefix(*parts) == expected


def test_a_long_prefix_leaves_room_for_the_hash() -> None:
    prefix = template_prefix("a" * 200, "b" * 100)
    assert len(prefix) == 242 and prefix.startswith("a" * 200 + "-b") and not prefix.endswith("-")
