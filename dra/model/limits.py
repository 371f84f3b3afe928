"""The API server's validation limits for resource.k8s.io/v1: one table for the model's validation and the GPU slices.

Names and values are the constants of k8s.io/api resource/v1/types.go at v1.37.2
(staging/src/k8s.io/api/resource/v1/types.go); `LIMITS_1_34` holds the 1.34 ones that 1.35 replaced.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = ["LIMITS", "LIMITS_1_34"]

LIMITS: Final[Mapping[str, int]] = MappingProxyType(
    {
        "DeviceRequestsMaxSize": 32,  # = AllocationResultsMaxSize
        "DeviceConstraintsMaxSize": 32,
        "DeviceConfigMaxSize": 32,
        "DeviceSelectorsMaxSize": 32,
        "FirstAvailableDeviceRequestMaxSize": 8,
        "DeviceTolerationsMaxLength": 16,
        "AllocationResultsMaxSize": 32,
        "ResourceClaimReservedForMaxSize": 256,
        "ResourceSliceMaxDevices": 128,
        "ResourceSliceMaxDevicesWithAdvancedFeatures": 64,  # taints, counter consumption, binding conditions
        "ResourceSliceMaxCounterSets": 8,
        "ResourceSliceMaxCountersPerCounterSet": 32,
        "ResourceSliceMaxDeviceCounterConsumptionsPerDevice": 2,
        "ResourceSliceMaxCountersPerDeviceCounterConsumption": 32,
        "ResourceSliceMaxAttributesAndCapacitiesPerDevice": 32,
        "ResourceSliceMaxAttributeValuesPerDevice": 48,
        "DeviceTaintsMaxLength": 16,
        "BindingConditionsMaxSize": 4,
        "BindingFailureConditionsMaxSize": 4,
        "DeviceAttributeMaxValueLength": 64,
        "DeviceMaxDomainLength": 63,
        "DeviceMaxIDLength": 32,
        "DriverNameMaxLength": 63,
        "PoolNameMaxLength": 253,  # a DNS subdomain; no constant of its own in types.go
        "CELSelectorExpressionMaxLength": 10 * 1024,
        "OpaqueParametersMaxLength": 10 * 1024,
        "CapacityRequestPolicyDiscreteMaxOptions": 10,  # validValues; validation.go, not types.go
        "AllocatedDeviceStatusMaxConditions": 8,
        "AllocatedDeviceStatusDataMaxLength": 10 * 1024,
        "NetworkDeviceDataInterfaceNameMaxLength": 256,
        "NetworkDeviceDataHardwareAddressMaxLength": 128,
        "NetworkDeviceDataMaxIPs": 16,
    }
)

# resource/v1 types.go at kubernetes-1.34.0 (../shared/reference/dra.md §1.6): counters counted per slice, not per set.
LIMITS_1_34: Final[Mapping[str, int]] = MappingProxyType(
    {
        "ResourceSliceMaxSharedCounters": 32,  # across all counter sets of a slice
        "ResourceSliceMaxCountersPerDevice": 32,
        "ResourceSliceMaxDeviceCountersPerSlice": 1024,  # 64 devices x 16
    }
)
