"""`workloads.kinds.kubeflow`: training-operator v1 jobs and mpi-operator v2's MPIJob, and their pods' stamps.

Expectations from kubeflow/training-operator pkg/controller.v1 and kubeflow/mpi-operator pkg/controller.
"""

from __future__ import annotations

from typing import Any

from tests.workloads.builders import Template, gpu_template, make_workload, pod_of
from workloads.kinds import kubeflow


def _replica_specs(kind: str) -> tuple[str, Any]:
    field = {"PyTorchJob": "pytorch", "TFJob": "tf", "MPIJob": "mpi", "XGBoostJob": "xgb"}.get(kind)
    field = field or kind.removesuffix("Job").lower()
    roles = ("Master", "Worker") if kind != "MPIJob" else ("Launcher", "Worker")

    def body(t: Template) -> dict[str, Any]:
        specs = {role: {"replicas": 1 if i == 0 else 2, "template": t()} for i, role in enumerate(roles)}
        return {"spec": {f"{field}ReplicaSpecs": specs}}

    return "kubeflow.org/v1", body


EXAMPLES = {
    kind: _replica_specs(kind) for kind in ("PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob")
}


def test_every_kind_of_the_module_has_an_example() -> None:
    assert {k.kind for k in kubeflow.KINDS if k.paths} == set(EXAMPLES)


def test_pytorchjob_pods_carry_the_training_operator_labels_and_env() -> None:
    # training-operator v1 pkg/controller.v1/pytorch/envvar.go setPodEnv: PYTHONUNBUFFERED, MASTER_*, WORLD_SIZE, RANK
    pod = pod_of(make_workload("PyTorchJob", gpu_template(2)), 1)
    labels = pod["metadata"]["labels"]
    assert labels["training.kubeflow.org/replica-type"] == "worker"
    assert labels["training.kubeflow.org/operator-name"] == "pytorchjob-controller"
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    assert env["WORLD_SIZE"] == "3" and env["RANK"] == "1" and env["PYTHONUNBUFFERED"] == "0"


def test_an_mpi_operator_v2_job_gets_its_role_labels() -> None:
    # kubeflow/mpi-operator pkg/controller/mpi_job_controller.go defaultLabels
    workload = make_workload("MPIJob", gpu_template(1))
    workload["apiVersion"] = "kubeflow.org/v2beta1"
    labels = pod_of(workload, 1)["metadata"]["labels"]
    assert labels["training.kubeflow.org/operator-name"] == "mpi-operator"
    assert labels["training.kubeflow.org/job-role"] == "worker" and labels["training.kubeflow.org/replica-index"] == "0"
    assert pod_of(workload, 0)["metadata"]["labels"]["training.kubeflow.org/job-role"] == "launcher"
