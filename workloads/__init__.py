"""Workload kinds: where each kind keeps its pod templates and what its controller stamps on the pods it makes.

Pure data and pure functions over Kubernetes objects as plain mappings: no policy engine, no API client. Read by
the policy engine, the recommender, the simulator and `gpudra translate`.
"""

from .stamping import ControllerStamp, controller_pod, controller_stamp, ray_cluster_name
from .templates import (
    KNOWN_KINDS,
    PASSED_THROUGH_KINDS,
    PassedThroughKind,
    PodTemplate,
    TemplatePath,
    UnknownWorkload,
    WorkloadKind,
    WorkloadShapeError,
    api_group,
    dotted,
    legacy_gpu_paths,
    pod_templates,
    workload_kind,
)

__all__ = [
    "KNOWN_KINDS",
    "PASSED_THROUGH_KINDS",
    "ControllerStamp",
    "PassedThroughKind",
    "PodTemplate",
    "TemplatePath",
    "UnknownWorkload",
    "WorkloadKind",
    "WorkloadShapeError",
    "api_group",
    "controller_pod",
    "controller_stamp",
    "dotted",
    "legacy_gpu_paths",
    "pod_templates",
    "ray_cluster_name",
    "workload_kind",
]
