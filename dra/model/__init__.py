"""The resource.k8s.io/v1 API (and the Pod fields DRA touches) as pydantic models.

Every model reads and writes the Kubernetes JSON form (`from_k8s(dict)`, `to_k8s()`), keeps unknown fields (or, with
`from_k8s(dict, extra="reject")`, rejects them as the API server's strict field validation does), and names its
types as the Go API does. `dra.model.conversion` reads v1beta1/v1beta2 objects as v1. `KINDS` maps a `kind` to its
top-level model.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Names -> the submodule defining them, imported on first use (PEP 562): importing one part of the model (the
# limits, the claim) does not build every pydantic model of the API, which a short CLI call would pay for.
_WHERE: dict[str, str] = {
    "K8sModel": "dra.model._base",
    "UnknownFieldsError": "dra.model._base",
    "format_path": "dra.model._base",
    "AllocatedDeviceStatus": "dra.model.allocation",
    "AllocationResult": "dra.model.allocation",
    "DeviceAllocationConfiguration": "dra.model.allocation",
    "DeviceAllocationResult": "dra.model.allocation",
    "DeviceRequestAllocationResult": "dra.model.allocation",
    "NetworkDeviceData": "dra.model.allocation",
    "ResourceClaimConsumerReference": "dra.model.allocation",
    "ResourceClaimStatus": "dra.model.allocation",
    "CapacityRequirements": "dra.model.claim",
    "DeviceClaim": "dra.model.claim",
    "DeviceClaimConfiguration": "dra.model.claim",
    "DeviceConstraint": "dra.model.claim",
    "DeviceRequest": "dra.model.claim",
    "DeviceSubRequest": "dra.model.claim",
    "ExactDeviceRequest": "dra.model.claim",
    "ResourceClaim": "dra.model.claim",
    "ResourceClaimSpec": "dra.model.claim",
    "ResourceClaimTemplate": "dra.model.claim",
    "ResourceClaimTemplateSpec": "dra.model.claim",
    "SUPPORTED_VERSIONS": "dra.model.conversion",
    "Converted": "dra.model.conversion",
    "UnsupportedVersionError": "dra.model.conversion",
    "parse_strict": "dra.model.conversion",
    "to_v1": "dra.model.conversion",
    "DeviceClass": "dra.model.deviceclass",
    "DeviceClassConfiguration": "dra.model.deviceclass",
    "DeviceClassSpec": "dra.model.deviceclass",
    "LIMITS": "dra.model.limits",
    "LIMITS_1_34": "dra.model.limits",
    "Condition": "dra.model.meta",
    "NodeSelector": "dra.model.meta",
    "NodeSelectorRequirement": "dra.model.meta",
    "NodeSelectorTerm": "dra.model.meta",
    "ObjectMeta": "dra.model.meta",
    "OwnerReference": "dra.model.meta",
    "Container": "dra.model.pod",
    "ContainerExtendedResourceRequest": "dra.model.pod",
    "ContainerResourceClaim": "dra.model.pod",
    "Pod": "dra.model.pod",
    "PodExtendedResourceClaimStatus": "dra.model.pod",
    "PodResourceClaim": "dra.model.pod",
    "PodResourceClaimStatus": "dra.model.pod",
    "PodSpec": "dra.model.pod",
    "PodStatus": "dra.model.pod",
    "ResourceRequirements": "dra.model.pod",
    "CELDeviceSelector": "dra.model.selector",
    "DeviceSelector": "dra.model.selector",
    "DeviceToleration": "dra.model.selector",
    "OpaqueDeviceConfiguration": "dra.model.selector",
    "CapacityRequestPolicy": "dra.model.slice",
    "CapacityRequestPolicyRange": "dra.model.slice",
    "Counter": "dra.model.slice",
    "CounterSet": "dra.model.slice",
    "Device": "dra.model.slice",
    "DeviceAttribute": "dra.model.slice",
    "DeviceCapacity": "dra.model.slice",
    "DeviceCounterConsumption": "dra.model.slice",
    "DeviceTaint": "dra.model.slice",
    "NodeAllocatableMapping": "dra.model.slice",
    "NodeAllocatableOverhead": "dra.model.slice",
    "NodeAllocatableResource": "dra.model.slice",
    "ResourcePool": "dra.model.slice",
    "ResourceSlice": "dra.model.slice",
    "ResourceSliceSpec": "dra.model.slice",
}

if TYPE_CHECKING:
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

    KINDS: dict[str, type[K8sModel]]

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
    "KIND_NAMES",
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


# The kinds `KINDS` maps, known without building their models.
KIND_NAMES: frozenset[str] = frozenset({"DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice"})


def _kinds() -> dict[str, Any]:
    from dra.model.claim import ResourceClaim, ResourceClaimTemplate
    from dra.model.deviceclass import DeviceClass
    from dra.model.slice import ResourceSlice

    return {
        "DeviceClass": DeviceClass,
        "ResourceClaim": ResourceClaim,
        "ResourceClaimTemplate": ResourceClaimTemplate,
        "ResourceSlice": ResourceSlice,
    }


def __getattr__(name: str) -> Any:
    if name == "KINDS":
        value: Any = _kinds()
    elif name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name]), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
