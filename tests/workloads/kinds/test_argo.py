"""`workloads.kinds.argo`: an Argo Rollout's template, the Rollouts controller's label, and `workloadRef`."""

from __future__ import annotations

import pytest

from tests.workloads.builders import gpu_template, make_workload, pod_of
from workloads import UnknownWorkload, pod_templates
from workloads.kinds import argo

EXAMPLES = {"Rollout": ("argoproj.io/v1alpha1", lambda t: {"spec": {"replicas": 2, "template": t()}})}


def test_every_kind_of_the_module_has_an_example() -> None:
    assert {k.kind for k in argo.KINDS if k.paths} == set(EXAMPLES)


def test_rollout_pods_carry_the_rollouts_hash_and_belong_to_its_replica_set() -> None:
    # argo-rollouts pkg/apis/rollouts/v1alpha1/types.go DefaultRolloutUniqueLabelKey
    metadata = pod_of(make_workload("Rollout", gpu_template(1)))["metadata"]
    digest = metadata["labels"]["rollouts-pod-template-hash"]
    assert metadata["ownerReferences"][0]["name"] == f"wl-{digest}"


def test_a_rollout_naming_a_deployment_holds_no_template() -> None:
    ref = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "metadata": {"name": "r"}}
    assert pod_templates({**ref, "spec": {"workloadRef": {"kind": "Deployment", "name": "d"}}}) == []
    with pytest.raises(UnknownWorkload, match="no pod template at spec.template"):
        pod_templates({**ref, "spec": {"replicas": 1}})
