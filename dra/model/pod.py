"""The Pod fields DRA touches: `spec.resourceClaims`, `containers[].resources.claims`, claim statuses.

Everything else in a pod is kept verbatim as unknown fields, so `Pod.from_k8s(d).to_k8s()` loses nothing; the
webhook and translation work on pod dicts, this model exists to validate the DRA parts.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from dra.model._base import K8sModel
from dra.model.meta import ObjectMeta
from dra.quantity import Quantity

__all__ = [
    "Container",
    "ContainerExtendedResourceRequest",
    "ContainerResourceClaim",
    "Pod",
    "PodExtendedResourceClaimStatus",
    "PodResourceClaim",
    "PodResourceClaimStatus",
    "PodSpec",
    "PodStatus",
    "ResourceRequirements",
]


class PodResourceClaim(K8sModel):
    """`pod.spec.resourceClaims[]`: a name for containers to use, and exactly one claim or claim template."""

    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class ContainerResourceClaim(K8sModel):
    """core/v1 `ResourceClaim` (`containers[].resources.claims[]`): a pod claim name and optionally one request."""

    name: str = ""
    request: str | None = None


class ResourceRequirements(K8sModel):
    """A container's `resources`."""

    limits: dict[str, Quantity] | None = None
    requests: dict[str, Quantity] | None = None
    claims: list[ContainerResourceClaim] | None = None


class Container(K8sModel):
    """A container (also used for init and ephemeral containers); only `name` and `resources` are typed."""

    name: str = ""
    resources: ResourceRequirements | None = None


class PodSpec(K8sModel):
    """The pod spec: containers of every kind and the pod-level resource claims."""

    containers: list[Container] = Field(default_factory=list)
    init_containers: list[Container] | None = None
    ephemeral_containers: list[Container] | None = None
    resource_claims: list[PodResourceClaim] | None = None
    resources: ResourceRequirements | None = None


class PodResourceClaimStatus(K8sModel):
    """The claim generated for a pod claim that names a template."""

    name: str = ""
    resource_claim_name: str | None = None


class ContainerExtendedResourceRequest(K8sModel):
    """Which request of the scheduler-generated claim serves a container's extended resource."""

    container_name: str = ""
    resource_name: str = ""
    request_name: str = ""


class PodExtendedResourceClaimStatus(K8sModel):
    """The claim the scheduler generated for extended resources backed by DRA (1.34+)."""

    request_mappings: list[ContainerExtendedResourceRequest] | None = None
    resource_claim_name: str = ""


class PodStatus(K8sModel):
    """The DRA parts of a pod's status."""

    resource_claim_statuses: list[PodResourceClaimStatus] | None = None
    extended_resource_claim_status: PodExtendedResourceClaimStatus | None = None


class Pod(K8sModel):
    """core/v1 Pod with its DRA fields typed and all other fields kept."""

    api_version: Literal["v1"] = "v1"
    kind: Literal["Pod"] = "Pod"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus | None = None

    def all_containers(self) -> list[Container]:
        """Init, regular and ephemeral containers, in that order."""
        spec = self.spec
        return [*(spec.init_containers or []), *spec.containers, *(spec.ephemeral_containers or [])]
