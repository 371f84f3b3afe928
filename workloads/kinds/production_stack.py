"""vLLM production-stack (production-stack.vllm.ai): the VLLMRuntime, which gpudra cannot rewrite ahead of time.

operator/api/v1alpha1 (common.go): DeploymentConfig.Resources is the operator's own {cpu, memory, gpu, gpuType};
operator/internal/controller/resources.go buildResourceRequirements writes `gpu` as the Deployment container's
requests and limits of gpuType (default nvidia.com/gpu). Passed through: the webhook translates its pods.
"""

from __future__ import annotations

from ..kind import WorkloadKind

__all__ = ["KINDS", "ORDER"]

ORDER = 70

KINDS: tuple[WorkloadKind, ...] = (
    WorkloadKind(
        "VLLMRuntime",
        ("production-stack.vllm.ai",),
        passed_through="the production-stack operator writes the Deployment from spec.deploymentConfig.resources "
        "(its own cpu, memory, gpu fields), which has no place for a DRA claim",
        gpu_fields=("spec.deploymentConfig.resources.gpu", "spec.deploymentConfig.sidecarConfig.resources.gpu"),
    ),
)
