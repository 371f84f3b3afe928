"""Issue 25 item 7: a workload's count fields are integers, as the API server requires; `replicas: "two"` is an
error naming the field, never passed through silently."""

from __future__ import annotations

from typing import Any

import pytest

from workloads import WorkloadShapeError, pod_templates

_TEMPLATE = {"metadata": {}, "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}


def _deployment(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {**spec, "template": _TEMPLATE},
    }


@pytest.mark.parametrize("value", ["two", "2", 2.5, True, None])
def test_a_replicas_that_is_not_an_integer_is_an_error_naming_the_field(value: Any) -> None:
    with pytest.raises(WorkloadShapeError, match=r"spec\.replicas must be an integer"):
        pod_templates(_deployment(replicas=value))


def test_integer_counts_pass() -> None:
    assert len(pod_templates(_deployment(replicas=3))) == 1
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"parallelism": 2, "completions": 4, "template": _TEMPLATE}}  # fmt: skip
    assert len(pod_templates(job)) == 1


def test_a_nested_count_is_named_with_its_path() -> None:
    ray = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "r"},
        "spec": {
            "headGroupSpec": {"template": _TEMPLATE},
            "workerGroupSpecs": [{"groupName": "g", "replicas": "many", "template": _TEMPLATE}],
        },
    }
    with pytest.raises(WorkloadShapeError, match=r"spec\.workerGroupSpecs\[0\]\.replicas must be an integer"):
        pod_templates(ray)
