"""How many GPU devices a pod already asks for through DRA: the ResourceClaims and ResourceClaimTemplates its
`spec.resourceClaims` name, read from the API server, so that namespace caps count them too (`gpu.draDevices`).

A request counts its `count` (ExactCount, 1 when unset); `allocationMode: All` counts as the most one claim can
allocate (32, AllocationResultsMaxSize), since it can take every matching device; `firstAvailable` counts its
largest alternative. Only requests of the NVIDIA driver's GPU DeviceClasses count, and of any other class the
cluster maps a legacy GPU resource to (KEP-5004 `extendedResourceName`: `gpu_classes`). A claim or template that does
not exist yet cannot be counted: `claim_demand` names it, and admission denies such a pod where a cap applies (else
the pod would be admitted at 0 and get whatever the template created later asks for).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from dra.gpus import GPU_DEVICE_CLASSES
from policyengine import extended_resource_pairs
from policyengine.pod_shape import MAX_DEVICES_PER_CLAIM

__all__ = [
    "GPU_DEVICE_CLASSES",
    "gpu_classes",
    "ClaimDemand",
    "ClaimReader",
    "claim_demand",
    "claimed_gpu_devices",
    "spec_gpu_devices",
]


def gpu_classes(extended_resources: Mapping[str, str] | None) -> frozenset[str]:
    """The NVIDIA driver's GPU classes plus those the cluster maps a legacy GPU resource to (`nvidia.com/gpu`,
    `nvidia.com/mig-<profile>`): a claim of such a class asks for GPUs, whatever its name."""
    if not extended_resources:
        return GPU_DEVICE_CLASSES
    return GPU_DEVICE_CLASSES | {c for _, c in extended_resource_pairs(extended_resources)}


class ClaimReader(Protocol):
    def read_claim_spec(self, namespace: str, kind: str, name: str) -> dict[str, Any] | None:
        """The ResourceClaimSpec of ResourceClaim (`kind="claim"`) or ResourceClaimTemplate (`"template"`)
        `namespace/name`, or None when it does not exist."""
        ...


def _request_devices(request: Mapping[str, Any], classes: frozenset[str]) -> int:
    if request.get("deviceClassName") not in classes:
        return 0
    if request.get("allocationMode") == "All":
        return MAX_DEVICES_PER_CLAIM
    count = request.get("count", 1)
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1


def spec_gpu_devices(spec: Mapping[str, Any], classes: frozenset[str] = GPU_DEVICE_CLASSES) -> int:
    """The GPU devices one ResourceClaimSpec asks for (see the module's rules); `classes`: the GPU DeviceClasses."""
    total = 0
    found = spec.get("devices")
    devices: Mapping[str, Any] = found if isinstance(found, dict) else {}
    for request in devices.get("requests") or []:
        if not isinstance(request, dict):
            continue
        if isinstance(request.get("exactly"), dict):
            total += _request_devices(request["exactly"], classes)
        elif isinstance(request.get("firstAvailable"), list):
            alternatives = request["firstAvailable"]
            total += max((_request_devices(s, classes) for s in alternatives if isinstance(s, dict)), default=0)
    return total


@dataclass(frozen=True)
class ClaimDemand:
    devices: int  # GPU devices of the claims and templates that exist
    missing: tuple[str, ...] = ()  # `spec.resourceClaims[i].<field> 'name'` of each that does not exist yet


def claim_demand(
    pod: Mapping[str, Any], namespace: str, reader: ClaimReader, classes: frozenset[str] = GPU_DEVICE_CLASSES
) -> ClaimDemand:
    """The GPU devices the claims and templates `pod` names ask for, read through `reader`, and the ones missing;
    `classes`: the GPU DeviceClasses (`gpu_classes`)."""
    total = 0
    missing: list[str] = []
    for i, entry in enumerate((pod.get("spec") or {}).get("resourceClaims") or []):
        if not isinstance(entry, dict):
            continue
        for field, kind in (("resourceClaimName", "claim"), ("resourceClaimTemplateName", "template")):
            if isinstance(entry.get(field), str):
                found = reader.read_claim_spec(namespace, kind, entry[field])
                if found is None:
                    missing.append(f"spec.resourceClaims[{i}].{field} {entry[field]!r}")
                else:
                    total += spec_gpu_devices(found, classes)
                break
    return ClaimDemand(total, tuple(missing))


def claimed_gpu_devices(
    pod: Mapping[str, Any], namespace: str, reader: ClaimReader, classes: frozenset[str] = GPU_DEVICE_CLASSES
) -> int:
    """The GPU devices the existing claims and templates `pod` names ask for, read through `reader`."""
    return claim_demand(pod, namespace, reader, classes).devices
