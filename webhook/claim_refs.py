"""Every claim a container names must be one of the pod's `spec.resourceClaims`, checked before translation.

The API server validates this only after mutating admission, so a container naming a missing claim called `gpudra`
would be made valid by the entry gpudra adds and silently handed the GPU; gpudra refuses it, naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.review import AdmissionDenied

__all__ = ["check_claim_references"]

_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def check_claim_references(pod: Mapping[str, Any]) -> None:
    """Deny (400) a pod whose container `resources.claims[].name` names no entry of `spec.resourceClaims`."""
    spec = pod.get("spec") or {}
    declared = {c.get("name") for c in spec.get("resourceClaims") or [] if isinstance(c, dict)}
    for field in _CONTAINER_LISTS:
        for i, container in enumerate(spec.get(field) or []):
            claims = ((container or {}).get("resources") or {}).get("claims") or []
            for j, claim in enumerate(claims):
                name = claim.get("name") if isinstance(claim, dict) else None
                if name not in declared:
                    raise AdmissionDenied(
                        f"gpudra: spec.{field}[{i}].resources.claims[{j}].name is {name!r}, which names no entry of "
                        "spec.resourceClaims; add the claim to spec.resourceClaims or remove it from the container",
                        code=400,
                        reason="BadRequest",
                    )
