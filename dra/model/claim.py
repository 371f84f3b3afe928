"""ResourceClaim, ResourceClaimTemplate and the claim spec: requests (exactly / firstAvailable), constraints, config."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from dra.model._base import K8sModel
from dra.model.allocation import ResourceClaimStatus
from dra.model.meta import ObjectMeta
from dra.model.selector import DeviceSelector, DeviceToleration, OpaqueDeviceConfiguration
from dra.quantity import Quantity

__all__ = [
    "CapacityRequirements",
    "DeviceClaim",
    "DeviceClaimConfiguration",
    "DeviceConstraint",
    "DeviceRequest",
    "DeviceSubRequest",
    "ExactDeviceRequest",
    "ResourceClaim",
    "ResourceClaimSpec",
    "ResourceClaimTemplate",
    "ResourceClaimTemplateSpec",
]


class CapacityRequirements(K8sModel):
    """Minimum capacity per device (`requests` by qualified capacity name), consumed on shareable devices."""

    requests: dict[str, Quantity] | None = None


class ExactDeviceRequest(K8sModel):
    """Devices from one class: `allocationMode` ExactCount (default, `count` default 1) or All."""

    device_class_name: str = ""
    selectors: list[DeviceSelector] | None = None
    allocation_mode: str | None = None
    count: int | None = None
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] | None = None
    capacity: CapacityRequirements | None = None
    derived_attributes: list[dict[str, Any]] | None = None  # DRADerivedAttributes (alpha); kept, not allocated


class DeviceSubRequest(K8sModel):
    """One alternative of a `firstAvailable` request (no adminAccess)."""

    name: str = ""
    device_class_name: str = ""
    selectors: list[DeviceSelector] | None = None
    allocation_mode: str | None = None
    count: int | None = None
    tolerations: list[DeviceToleration] | None = None
    capacity: CapacityRequirements | None = None
    derived_attributes: list[dict[str, Any]] | None = None  # DRADerivedAttributes (alpha); kept, not allocated


class DeviceRequest(K8sModel):
    """A named request: exactly one of `exactly` and `firstAvailable`."""

    name: str = ""
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] | None = None


class DeviceConstraint(K8sModel):
    """`matchAttribute` (same value on all devices) or `distinctAttribute` (all different) over `requests`."""

    requests: list[str] | None = None
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaimConfiguration(K8sModel):
    """Opaque configuration for the devices of some (or, with no `requests`, all) requests."""

    requests: list[str] | None = None
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClaim(K8sModel):
    """The device part of a claim spec."""

    requests: list[DeviceRequest] | None = None
    constraints: list[DeviceConstraint] | None = None
    config: list[DeviceClaimConfiguration] | None = None


class ResourceClaimSpec(K8sModel):
    """What a claim asks for; immutable once created."""

    devices: DeviceClaim = Field(default_factory=DeviceClaim)


class ResourceClaim(K8sModel):
    """resource.k8s.io/v1 ResourceClaim (namespaced)."""

    api_version: Literal["resource.k8s.io/v1"] = "resource.k8s.io/v1"
    kind: Literal["ResourceClaim"] = "ResourceClaim"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = Field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus | None = None


class ResourceClaimTemplateSpec(K8sModel):
    """The claim created per pod: its labels/annotations (`metadata`) and `spec`."""

    metadata: ObjectMeta | None = None
    spec: ResourceClaimSpec = Field(default_factory=ResourceClaimSpec)


class ResourceClaimTemplate(K8sModel):
    """resource.k8s.io/v1 ResourceClaimTemplate (namespaced)."""

    api_version: Literal["resource.k8s.io/v1"] = "resource.k8s.io/v1"
    kind: Literal["ResourceClaimTemplate"] = "ResourceClaimTemplate"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceClaimTemplateSpec = Field(default_factory=ResourceClaimTemplateSpec)
