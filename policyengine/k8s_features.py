"""Which Kubernetes version serves what a claim asks for, so that `gpudra translate --k8s-version` can warn before a
claim meets a cluster that would refuse or ignore it.

From kube_features.go (Kubernetes 1.34-1.37; `../shared/reference/dra.md` §1.7, docs/kubernetes-versions.md): the
first minor where each feature is on by default.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

__all__ = ["FEATURE_DEFAULT_ON", "claim_features", "parse_minor", "unserved_features"]

# feature -> (first minor on by default, the gate and KEP that name it)
FEATURE_DEFAULT_ON: Final[dict[str, tuple[int, str]]] = {
    "resource.k8s.io/v1": (34, "DynamicResourceAllocation GA (resource.k8s.io/v1)"),
    "firstAvailable": (34, "DRAPrioritizedList, KEP-4816 (beta on in 1.34)"),
    "capacity": (36, "DRAConsumableCapacity, KEP-5075 (beta on in 1.36)"),
    "adminAccess": (34, "DRAAdminAccess (beta on in 1.34)"),
}


def parse_minor(version: str) -> int:
    """The minor of a Kubernetes version `1.35`, `v1.35.2`, `1.36.0-alpha.1`; ValueError otherwise."""
    match = re.fullmatch(r"v?1\.(\d+)(\.\d+)?([-+].*)?", version.strip())
    if match is None:
        raise ValueError(f"--k8s-version must be a Kubernetes version such as 1.35 (got {version!r})")
    return int(match.group(1))


def _requests(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for request in (spec.get("devices") or {}).get("requests") or []:
        exactly = request.get("exactly")
        if isinstance(exactly, Mapping):
            yield exactly
        for sub in request.get("firstAvailable") or []:
            if isinstance(sub, Mapping):
                yield sub


def claim_features(spec: Mapping[str, Any]) -> set[str]:
    """The features of `FEATURE_DEFAULT_ON` a ResourceClaimSpec uses."""
    used = {"resource.k8s.io/v1"}
    if any(r.get("firstAvailable") for r in (spec.get("devices") or {}).get("requests") or []):
        used.add("firstAvailable")
    for request in _requests(spec):
        selectors = " ".join(str((s.get("cel") or {}).get("expression", "")) for s in request.get("selectors") or [])
        # a shareable device is selected by a field of the same feature: the API server rejects it without the gate
        if (request.get("capacity") or {}).get("requests") or "allowMultipleAllocations" in selectors:
            used.add("capacity")
        if request.get("adminAccess"):
            used.add("adminAccess")
    return used


def unserved_features(spec: Mapping[str, Any], minor: int) -> list[str]:
    """Why a cluster of Kubernetes 1.`minor` with default feature gates would not serve this claim as written."""
    return [
        f"needs {FEATURE_DEFAULT_ON[name][1]}: not on by default before 1.{FEATURE_DEFAULT_ON[name][0]} "
        f"(target 1.{minor})"
        for name in sorted(claim_features(spec))
        if FEATURE_DEFAULT_ON[name][0] > minor
    ]
