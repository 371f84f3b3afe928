"""Argo Rollouts (argoproj.io): a Rollout's pod template and the label its controller stamps on the pods.

pkg/apis/rollouts/v1alpha1/types.go: RolloutSpec.Template is a PodTemplateSpec; the pods carry
DefaultRolloutUniqueLabelKey (`rollouts-pod-template-hash`) and belong to a ReplicaSet `<rollout>-<hash>`. A Rollout
with `workloadRef` instead names a Deployment and holds no template (passed through).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._fields import name_of, stand_in_hash
from ..kind import ControllerStamp, PodTemplate, TemplatePath, WorkloadKind

__all__ = ["KINDS", "ORDER"]

ORDER = 60


def _rollout(obj: Mapping[str, Any], pod: PodTemplate) -> ControllerStamp:
    name, digest = name_of(obj), stand_in_hash(pod.template)
    owner = ("apps/v1", "ReplicaSet", f"{name}-{digest}")
    return ControllerStamp(forced={"rollouts-pod-template-hash": digest}, owner=owner)


KINDS: tuple[WorkloadKind, ...] = (
    WorkloadKind(
        "Rollout", ("argoproj.io",), (TemplatePath("spec.template"),), reference="spec.workloadRef", stamp=_rollout
    ),
)
