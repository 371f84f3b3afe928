"""ResourceSlice: a driver's devices in a pool (attributes, capacities, counters, taints) and where they are usable."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from dra.model._base import K8sModel
from dra.model.meta import NodeSelector, ObjectMeta, Timestamp
from dra.quantity import Quantity

__all__ = [
    "CapacityRequestPolicy",
    "CapacityRequestPolicyRange",
    "Counter",
    "CounterSet",
    "Device",
    "DeviceAttribute",
    "DeviceCapacity",
    "DeviceCounterConsumption",
    "DeviceTaint",
    "NodeAllocatableMapping",
    "NodeAllocatableOverhead",
    "NodeAllocatableResource",
    "ResourcePool",
    "ResourceSlice",
    "ResourceSliceSpec",
]

AttributeValue = int | bool | str | list[int] | list[bool] | list[str]


class ResourcePool(K8sModel):
    """The pool a slice belongs to: consumers use the slices of the highest `generation`."""

    name: str = ""
    generation: int = 0
    resource_slice_count: int = 0


class Counter(K8sModel):
    """An amount in a counter set or consumed from one."""

    value: Quantity = Field(default_factory=lambda: Quantity("0"))


class CounterSet(K8sModel):
    """Named counters that partitionable devices draw from."""

    name: str = ""
    counters: dict[str, Counter] | None = None


class DeviceCounterConsumption(K8sModel):
    """What a device consumes from one counter set when allocated."""

    counter_set: str = ""
    counters: dict[str, Counter] | None = None
    compatibility_groups: list[str] | None = None  # DRADeviceCompatibilityGroups (alpha)


class CapacityRequestPolicyRange(K8sModel):
    """Valid consumption amounts `min + n*step` up to `max`."""

    min: Quantity | None = None
    max: Quantity | None = None
    step: Quantity | None = None


class CapacityRequestPolicy(K8sModel):
    """How much of a shareable device's capacity a request consumes: `default`, and `validValues` xor `validRange`."""

    default: Quantity | None = None
    valid_values: list[Quantity] | None = None
    valid_range: CapacityRequestPolicyRange | None = None


class DeviceCapacity(K8sModel):
    """A capacity of a device; `requestPolicy` only with `allowMultipleAllocations`."""

    value: Quantity = Field(default_factory=lambda: Quantity("0"))
    request_policy: CapacityRequestPolicy | None = None


class DeviceAttribute(K8sModel):
    """Exactly one of int, bool, string, version (semver) — or, from 1.36 (alpha), one of the list forms."""

    int_: int | None = Field(default=None, alias="int")
    bool_: bool | None = Field(default=None, alias="bool")
    string: str | None = None
    version: str | None = None
    ints: list[int] | None = None
    bools: list[bool] | None = None
    strings: list[str] | None = None
    versions: list[str] | None = None

    def kinds(self) -> list[str]:
        """The value kinds that are set (valid attributes have exactly one)."""
        return [kind for kind in _ATTRIBUTE_KINDS if getattr(self, _ATTRIBUTE_FIELDS[kind]) is not None]

    @property
    def value(self) -> AttributeValue | None:
        """The value of the (first) set kind, or None when none is set."""
        for kind in _ATTRIBUTE_KINDS:
            found: AttributeValue | None = getattr(self, _ATTRIBUTE_FIELDS[kind])
            if found is not None:
                return found
        return None

    @classmethod
    def of(cls, value: int | bool | str, *, version: bool = False) -> DeviceAttribute:
        """An attribute from a Python value; strings become `version` with `version=True`."""
        if isinstance(value, bool):
            return cls(bool=value)
        if isinstance(value, int):
            return cls(int=value)
        return cls(version=value) if version else cls(string=value)


_ATTRIBUTE_KINDS = ("int", "bool", "string", "version", "ints", "bools", "strings", "versions")
_ATTRIBUTE_FIELDS = {kind: kind + "_" if kind in ("int", "bool") else kind for kind in _ATTRIBUTE_KINDS}


class DeviceTaint(K8sModel):
    """A taint: `effect` NoSchedule, NoExecute or (1.35+) None; `timeAdded` as the API server wrote it."""

    key: str = ""
    value: str | None = None
    effect: str = ""
    time_added: Timestamp | None = None


class NodeAllocatableMapping(K8sModel):
    """How a device capacity maps onto a node-allocatable resource (1.36 alpha)."""

    capacity_key: str | None = None
    capacity_multiplier: Quantity | None = None
    device_multiplier: Quantity | None = None


class NodeAllocatableOverhead(K8sModel):
    """Per-pod / per-container overhead for a node-allocatable resource (1.36 alpha)."""

    per_pod: Quantity | None = None
    per_container: Quantity | None = None


class NodeAllocatableResource(K8sModel):
    """A node-allocatable resource a device contributes (1.36 alpha, DRANodeAllocatableResources)."""

    mapping: NodeAllocatableMapping | None = None
    overhead: NodeAllocatableOverhead | None = None


class Device(K8sModel):
    """One device; node selection fields only when the slice sets `perDeviceNodeSelection`."""

    name: str = ""
    attributes: dict[str, DeviceAttribute] | None = None
    capacity: dict[str, DeviceCapacity] | None = None
    consumes_counters: list[DeviceCounterConsumption] | None = None
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: list[DeviceTaint] | None = None
    binds_to_node: bool | None = None
    binding_conditions: list[str] | None = None
    binding_failure_conditions: list[str] | None = None
    allow_multiple_allocations: bool | None = None
    node_allocatable_resources: dict[str, NodeAllocatableResource] | None = None


class ResourceSliceSpec(K8sModel):
    """A driver's slice of a pool: exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection."""

    driver: str = ""
    pool: ResourcePool = Field(default_factory=ResourcePool)
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    devices: list[Device] | None = None
    per_device_node_selection: bool | None = None
    shared_counters: list[CounterSet] | None = None
    partition_type_attribute: str | None = None
    skip_node_operations: list[str] | None = None


class ResourceSlice(K8sModel):
    """resource.k8s.io/v1 ResourceSlice (cluster-scoped)."""

    api_version: Literal["resource.k8s.io/v1"] = "resource.k8s.io/v1"
    kind: Literal["ResourceSlice"] = "ResourceSlice"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceSliceSpec = Field(default_factory=ResourceSliceSpec)
