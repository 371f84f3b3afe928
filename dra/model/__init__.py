"""The resource.k8s.io/v1 API (and the Pod fields DRA touches) as pydantic models.

Every model reads and writes the Kubernetes JSON form (`from_k8s(dict)`, `to_k8s()`), keeps unknown fields (or, with
`from_k8s(dict, extra="reject")`, rejects them as the API server's strict field validation does), and names its
types as the Go API does. `dra.model.conversion` reads v1beta1/v1beta2 objects as v1. `KINDS` maps a `kind` to its
top-level model.
"""

from __future__ import annotations

from dra.model._base import K8sModel, UnknownFieldsError, format_path
from dra.model.allocation import (
    AllocatedDeviceStatus,
    AllocationResult,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    NetworkDeviceData,
    ResourceClaimConsumerReference,
    ResourceClaimStatus,
)
from dra.model.claim import (
    CapacityRequirements,
    DeviceClaim,
    DeviceClaimConfiguration,
    DeviceConstraint,
    DeviceRequest,
    DeviceSubRequest,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimSpec,
    ResourceClaimTemplate,
    ResourceClaimTemplateSpec,
)
from dra.model.conversion import (
    SUPPORTED_VERSIONS,
    Converted,
    UnsupportedVersionError,
    parse_strict,
    to_v1,
)
from dra.model.deviceclass import DeviceClass, DeviceClassConfiguration, DeviceClassSpec
from dra.model.limits import LIMITS, LIMITS_1_34
from dra.model.meta import (
    Condition,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
    OwnerReference,
)
from dra.model.pod import (
    Container,
    ContainerExtendedResourceRequest,
    ContainerResourceClaim,
    Pod,
    PodExtendedResourceClaimStatus,
    PodResourceClaim,
    PodResourceClaimStatus,
    PodSpec,
    PodStatus,
    ResourceRequirements,
)
from dra.model.selector import CELDeviceSelector, DeviceSelector, DeviceToleration, OpaqueDeviceConfiguration
from dra.model.slice import (
    CapacityRequestPolicy,
    CapacityRequestPolicyRange,
    Counter,
    CounterSet,
    Device,
    DeviceAttribute,
    DeviceCapacity,
    DeviceCounterConsumption,
    DeviceTaint,
    NodeAllocatableMapping,
    NodeAllocatableOverhead,
    NodeAllocatableResource,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)

__all__ = [
    "AllocatedDeviceStatus",
    "AllocationResult",
    "CELDeviceSelector",
    "CapacityRequestPolicy",
    "CapacityRequestPolicyRange",
    "CapacityRequirements",
    "Condition",
    "Container",
    "ContainerExtendedResourceRequest",
    "ContainerResourceClaim",
    "Converted",
    "Counter",
    "CounterSet",
    "Device",
    "DeviceAllocationConfiguration",
    "DeviceAllocationResult",
    "DeviceAttribute",
    "DeviceCapacity",
    "DeviceClaim",
    "DeviceClaimConfiguration",
    "DeviceClass",
    "DeviceClassConfiguration",
    "DeviceClassSpec",
    "DeviceConstraint",
    "DeviceCounterConsumption",
    "DeviceRequest",
    "DeviceRequestAllocationResult",
    "DeviceSelector",
    "DeviceSubRequest",
    "DeviceTaint",
    "DeviceToleration",
    "ExactDeviceRequest",
    "K8sModel",
    "KINDS",
    "LIMITS",
    "LIMITS_1_34",
    "NetworkDeviceData",
    "NodeAllocatableMapping",
    "NodeAllocatableOverhead",
    "NodeAllocatableResource",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "ObjectMeta",
    "OpaqueDeviceConfiguration",
    "OwnerReference",
    "Pod",
    "PodExtendedResourceClaimStatus",
    "PodResourceClaim",
    "PodResourceClaimStatus",
    "PodSpec",
    "PodStatus",
    "ResourceClaim",
    "ResourceClaimConsumerReference",
    "ResourceClaimSpec",
    "ResourceClaimStatus",
    "ResourceClaimTemplate",
    "ResourceClaimTemplateSpec",
    "ResourcePool",
    "ResourceRequirements",
    "ResourceSlice",
    "ResourceSliceSpec",
    "SUPPORTED_VERSIONS",
    "UnknownFieldsError",
    "UnsupportedVersionError",
    "format_path",
    "parse_strict",
    "to_v1",
]

KINDS: dict[str, type[K8sModel]] = {
    "DeviceClass": DeviceClass,
    "ResourceClaim": ResourceClaim,
    "ResourceClaimTemplate": ResourceClaimTemplate,
    "ResourceSlice": ResourceSlice,
}
