"""Kubeflow training-operator v1 jobs (kubeflow.org/v1) and mpi-operator v2's MPIJob, and their pods' stamps.

Template paths from training-operator v1.9 `*_types.go` (`spec.<x>ReplicaSpecs.<role>.template`); the stamps are
cited in `_kubeflow`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._fields import env as _env
from .._fields import get, name_of
from ..kind import ControllerStamp, PodTemplate, TemplatePath, WorkloadKind

__all__ = ["KINDS", "ORDER"]

ORDER = 20

_KUBEFLOW_OPERATOR = {
    "PyTorchJob": "pytorchjob-controller",
    "TFJob": "tfjob-controller",
    "MPIJob": "mpijob-controller",
    "XGBoostJob": "xgboostjob-controller",
    "PaddleJob": "paddlejob-controller",
    "JAXJob": "jaxjob-controller",
}


def _kubeflow(obj: Mapping[str, Any], pod: PodTemplate) -> ControllerStamp:
    """pkg/controller.v1/common/pod.go (`training.kubeflow.org/job-name`, `operator-name`, `replica-type` in lower
    case, `replica-index`, `job-role: master`) and pytorch/envvar.go (env `PYTHONUNBUFFERED`, and with a Master
    `MASTER_ADDR`, `MASTER_PORT`, `WORLD_SIZE`, `RANK`); mpi-operator v2 (kubeflow.org/v2beta1) its own labels."""
    kind, name = str(obj.get("kind")), name_of(obj)
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
        specs = get(obj, "spec", "pytorchReplicaSpecs")
        if isinstance(specs, Mapping) and "Master" in specs:
            world = sum(r if isinstance(r := get(s, "replicas"), int) else 1 for s in specs.values())
            rank = 1 if replica == "worker" else 0
            env += (
                _env("MASTER_PORT", "23456"),
                _env("MASTER_ADDR", f"{name}-master-0"),
                _env("WORLD_SIZE", str(world)),
                _env("RANK", str(rank)),
            )
    return ControllerStamp(forced=forced, env_last=env, owner=("kubeflow.org/v1", kind, name))


_REPLICA_SPECS = {
    "PyTorchJob": "pytorchReplicaSpecs",
    "TFJob": "tfReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
    "XGBoostJob": "xgbReplicaSpecs",
    "PaddleJob": "paddleReplicaSpecs",
    "JAXJob": "jaxReplicaSpecs",
}

KINDS: tuple[WorkloadKind, ...] = tuple(
    WorkloadKind(kind, ("kubeflow.org",), (TemplatePath(f"spec.{field}{{*}}.template"),), stamp=_kubeflow)
    for kind, field in _REPLICA_SPECS.items()
)
