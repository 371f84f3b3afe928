"""`workloads.kinds.trainer`: Kubeflow Trainer v2's runtimes (rewritten as the JobSet a TrainJob makes of them) and
the TrainJob (passed through). Expectations from kubeflow/trainer pkg/runtime.
"""

from __future__ import annotations

from typing import Any

import pytest

from dra.documents import Document
from manifest_translation import translate_documents
from tests.workloads.builders import POLICIES, Template, gpu_template, make_workload, pod_of
from workloads import UnknownWorkload, pod_templates
from workloads.kinds import trainer


def _runtime(t: Template) -> dict[str, Any]:
    node = {
        "name": "node",
        "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            "spec": {"template": t()},
        },
    }
    return {"spec": {"mlPolicy": {"numNodes": 2, "torch": {}}, "template": {"spec": {"replicatedJobs": [node]}}}}


EXAMPLES = {
    "TrainingRuntime": ("trainer.kubeflow.org/v1alpha1", _runtime),
    "ClusterTrainingRuntime": ("trainer.kubeflow.org/v1alpha1", _runtime),
}


def test_every_kind_of_the_module_has_an_example() -> None:
    assert {k.kind for k in trainer.KINDS if k.paths} == set(EXAMPLES)


def test_a_trainer_runtimes_node_container_gets_the_torch_env_and_others_do_not() -> None:
    # kubeflow/trainer pkg/runtime/framework/plugins/torch/torch.go: PET_* upserted into the `node` container of the
    # trainer's replicated Job; the Job's completion index reaches every container (JobSet's Indexed Jobs).
    template = gpu_template(2, env=[{"name": "PET_NNODES", "value": "9"}])
    template["spec"]["containers"][0]["name"] = "node"
    template["spec"]["containers"].append({"name": "sidecar", "image": "s"})
    pod = pod_of(make_workload("TrainingRuntime", template))
    node, sidecar = pod["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in node["env"]}
    assert env["PET_NNODES"] == "2" and env["PET_MASTER_ADDR"] == "wl-node-0-0.wl" and env["PET_MASTER_PORT"] == "29500"
    assert [e["name"] for e in node["env"]].count("PET_NNODES") == 1
    assert [e["name"] for e in sidecar["env"]] == ["JOB_COMPLETION_INDEX"]
    assert pod["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == "node"


def test_a_rewritten_runtime_says_what_its_train_jobs_must_not_do() -> None:
    obj = make_workload("ClusterTrainingRuntime", gpu_template(1))
    objects, errors = translate_documents([Document(obj, "rt.yaml", 1)], POLICIES)
    notes = objects[0].templates[0].warnings
    assert not errors and objects[0].changed
    assert any("resourcesPerNode" in n for n in notes) and any("serves every namespace" in n for n in notes)


def test_a_train_job_asking_for_gpus_is_passed_through_with_the_reason() -> None:
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "tj"},
        "spec": {"trainer": {"resourcesPerNode": {"limits": {"nvidia.com/gpu": 2}}}},
    }
    with pytest.raises(UnknownWorkload, match="runtimePatches cannot add a pod's resourceClaims"):
        pod_templates(job)
    assert pod_templates({**job, "spec": {"trainer": {"numNodes": 2}}}) == []  # no GPUs: nothing to say
