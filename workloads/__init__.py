"""Workload kinds: one record per kind, one module per operator (`workloads.kinds`), and the functions that read them.

A record (`WorkloadKind`) holds the kind's template paths, what its controller stamps on its pods, its owner rules
and its API resource. Pure data and pure functions over objects as plain mappings (no policy engine, no API client),
read by the policy engine, the recommender, the simulator and the manifest translation.
"""

from .kind import (
    ApiResource,
    ControllerStamp,
    PodTemplate,
    TemplatePath,
    TranslationEffects,
    WorkloadKind,
    dotted,
)
from .owners import owner_of_pod_name, pod_owner
from .registry import KINDS, KNOWN_KINDS, OWNER_KINDS, PASSED_THROUGH_KINDS, api_group, kind_named, workload_kind
from .stamping import controller_pod, controller_stamp
from .templates import UnknownWorkload, WorkloadShapeError, legacy_gpu_paths, pod_templates

__all__ = [
    "KINDS",
    "KNOWN_KINDS",
    "OWNER_KINDS",
    "PASSED_THROUGH_KINDS",
    "ApiResource",
    "ControllerStamp",
    "PodTemplate",
    "TemplatePath",
    "TranslationEffects",
    "UnknownWorkload",
    "WorkloadKind",
    "WorkloadShapeError",
    "api_group",
    "controller_pod",
    "controller_stamp",
    "dotted",
    "kind_named",
    "legacy_gpu_paths",
    "owner_of_pod_name",
    "pod_owner",
    "pod_templates",
    "workload_kind",
]
