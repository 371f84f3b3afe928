"""ResourceClaim status: the allocation result, the consumers it is reserved for, and per-device status."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from dra.model._base import K8sModel
from dra.model.meta import Condition, NodeSelector, Timestamp
from dra.model.selector import DeviceToleration, OpaqueDeviceConfiguration
from dra.quantity import Quantity

__all__ = [
    "AllocatedDeviceStatus",
    "AllocationResult",
    "DeviceAllocationConfiguration",
    "DeviceAllocationResult",
    "DeviceRequestAllocationResult",
    "NetworkDeviceData",
    "ResourceClaimConsumerReference",
    "ResourceClaimStatus",
]


class DeviceRequestAllocationResult(K8sModel):
    """One allocated device: `request` is `<req>` or `<req>/<subreq>`, the device is `<driver>/<pool>/<device>`."""

    request: str = ""
    driver: str = ""
    pool: str = ""
    device: str = ""
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] | None = None
    binding_conditions: list[str] | None = None
    binding_failure_conditions: list[str] | None = None
    share_id: str | None = Field(default=None, alias="shareID")
    consumed_capacity: dict[str, Quantity] | None = None
    skip_node_operations: list[str] | None = None


class DeviceAllocationConfiguration(K8sModel):
    """Configuration copied into the allocation: `source` is FromClass or FromClaim."""

    source: str = ""
    requests: list[str] | None = None
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceAllocationResult(K8sModel):
    """The allocated devices and their configuration."""

    results: list[DeviceRequestAllocationResult] | None = None
    config: list[DeviceAllocationConfiguration] | None = None


class AllocationResult(K8sModel):
    """Where and what: `nodeSelector` limits the nodes that can use the devices (unset: all nodes)."""

    devices: DeviceAllocationResult | None = None
    node_selector: NodeSelector | None = None
    allocation_timestamp: Timestamp | None = None


class ResourceClaimConsumerReference(K8sModel):
    """A consumer (usually a pod) the claim is reserved for."""

    api_group: str | None = None
    resource: str = ""
    name: str = ""
    uid: str = ""


class NetworkDeviceData(K8sModel):
    """Network data a driver reports for an allocated device."""

    interface_name: str | None = None
    ips: list[str] | None = None
    hardware_address: str | None = None


class AllocatedDeviceStatus(K8sModel):
    """Driver-reported status of one allocated device."""

    driver: str = ""
    pool: str = ""
    device: str = ""
    share_id: str | None = Field(default=None, alias="shareID")
    conditions: list[Condition] | None = None
    data: Any = None
    network_data: NetworkDeviceData | None = None


class ResourceClaimStatus(K8sModel):
    """Allocation, reservations and device status of a claim."""

    allocation: AllocationResult | None = None
    reserved_for: list[ResourceClaimConsumerReference] | None = None
    devices: list[AllocatedDeviceStatus] | None = None
