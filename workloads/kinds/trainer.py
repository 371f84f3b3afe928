"""Kubeflow Trainer v2 (trainer.kubeflow.org): runtimes gpudra rewrites, and the TrainJob it passes through.

A runtime's `spec.template` is a JobSetTemplateSpec (trainingruntime_types.go): its pods are the JobSet a TrainJob
makes of it. A TrainJob asks for GPUs in `spec.trainer.resourcesPerNode`, outside any template.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._fields import env as _env
from .._fields import get, name_of, namespace_of
from ..kind import ControllerStamp, PodTemplate, TemplatePath, TranslationEffects, WorkloadKind
from .jobset import JOBSET_TEMPLATES, jobset_stamp

__all__ = ["KINDS", "ORDER"]

ORDER = 50


def _training_runtime(obj: Mapping[str, Any], pod: PodTemplate) -> ControllerStamp:
    """A TrainJob's pods: the JobSet made of the runtime's template (pkg/runtime/framework/plugins/jobset), with the
    torch plugin's env on the trainer's `node` container (pkg/runtime/framework/plugins/torch)."""
    index = pod.path[4] if len(pod.path) > 4 and isinstance(pod.path[4], int) else 0
    template = get(obj, "spec", "template")
    stamp = jobset_stamp(
        name_of(obj), namespace_of(obj), get(template, "spec"), pod, index, get(template, "metadata", "annotations")
    )
    template_labels = get(obj, *pod.path[:-2], "metadata", "labels")  # the replicated Job's template
    ancestor = template_labels.get("trainer.kubeflow.org/trainjob-ancestor-step") if isinstance(
        template_labels, Mapping) else None  # fmt: skip
    if ancestor != "trainer" or get(obj, "spec", "mlPolicy", "torch") is None:
        return stamp
    # torch.go: PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK (the completion index), PET_MASTER_ADDR and
    # PET_MASTER_PORT (constants.ContainerTrainerPort) upserted into the trainer's `node` container only.
    nodes = get(obj, "spec", "mlPolicy", "numNodes")
    rank = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    torch_env = (
        _env("PET_NNODES", str(nodes if isinstance(nodes, int) else 1)),
        _env("PET_NPROC_PER_NODE", "auto"),
        {"name": "PET_NODE_RANK", "valueFrom": {"fieldRef": {"fieldPath": rank}}},
        _env("PET_MASTER_ADDR", f"{name_of(obj)}-node-0-0.{name_of(obj)}"),
        _env("PET_MASTER_PORT", "29500"),
    )
    containers = get(pod.template, "spec", "containers")
    nodes_at = [i for i, c in enumerate(containers if isinstance(containers, list) else []) if get(c, "name") == "node"]
    return ControllerStamp(
        forced=stamp.forced,
        annotations=stamp.annotations,
        env_last=stamp.env_last,
        init_env=True,
        owner=stamp.owner,
        container_env=dict.fromkeys(nodes_at, torch_env),
    )


def _runtime_notes(obj: Mapping[str, Any], template: PodTemplate, rewritten: Mapping[str, Any]) -> TranslationEffects:
    """What a rewritten runtime template needs from the TrainJobs that use it."""
    notes = []
    job: Any = obj
    for part in template.path[:-2]:  # the replicated Job's template, which carries the ancestor label
        job = job[part]
    labels = (job.get("metadata") or {}).get("labels") if isinstance(job, dict) else None
    if isinstance(labels, dict) and labels.get("trainer.kubeflow.org/trainjob-ancestor-step") == "trainer":
        # kubeflow/trainer pkg/runtime/core/trainingruntime.go: resourcesPerNode is merged over the `node`
        # container's requests and limits, and the container's resources are rebuilt from those two alone.
        notes.append(
            "a TrainJob that sets spec.trainer.resourcesPerNode replaces the `node` container's resources and drops "
            "its DRA claim reference (Kubeflow Trainer rebuilds them from requests and limits): set no "
            "resourcesPerNode on TrainJobs using this runtime, or leave the runtime to `gpudra serve`"
        )
    if obj.get("kind") == "ClusterTrainingRuntime":
        notes.append(
            "a ClusterTrainingRuntime serves every namespace: its ResourceClaimTemplate must exist in each namespace "
            "whose TrainJobs use it (apply it there with -n)"
        )
    return TranslationEffects(notes=tuple(notes))


_TRAINER = ("trainer.kubeflow.org",)

KINDS: tuple[WorkloadKind, ...] = (
    *(
        WorkloadKind(
            kind,
            _TRAINER,
            (TemplatePath(f"spec.template.{JOBSET_TEMPLATES}"),),
            stamp=_training_runtime,
            effects=_runtime_notes,
        )
        for kind in ("TrainingRuntime", "ClusterTrainingRuntime")
    ),
    # pkg/apis/trainer/v1alpha1/trainjob_types.go: Trainer.ResourcesPerNode; and pkg/runtime/core/trainingruntime.go,
    # which merges it over the runtime's `node` container's requests and limits and rebuilds that container's
    # resources from them alone (its `claims` do not survive); trainjob_types.go's PodSpecPatch (runtimePatches) has
    # no resourceClaims field.
    WorkloadKind(
        "TrainJob",
        _TRAINER,
        passed_through="Kubeflow Trainer builds its pods from the runtime it names, with spec.trainer.resourcesPerNode "
        "replacing the trainer `node` container's resources (a DRA claim reference there would not survive), and "
        "spec.runtimePatches cannot add a pod's resourceClaims",
    ),
)
