"""The structured allocator: upstream-exact (`mode="upstream"`) or fragmentation/NVLink-aware (`"scored"`).

`allocate(claims, node=..., slices=..., classes=...)` returns one ResourceClaim `status.allocation` dict per
claim or raises `Unsatisfiable(reason)`; fatal input problems (CEL runtime errors, unknown classes, bad
constraints) raise `AllocationError`. `Allocator` does the same but keeps parsed inputs and caches across calls.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dra.allocator._allocator import Allocator, Mode
from dra.allocator._errors import AllocationError, Unsatisfiable
from dra.allocator._objects import Claim, Node, parse_claim
from dra.allocator.diagnosis import DeviceCheck, RequestDiagnosis
from dra.allocator.features import FeatureSet
from dra.allocator.requests import Candidate, SelectorMatcher, cel_selector_matcher

__all__ = [
    "AllocationError",
    "Allocator",
    "Candidate",
    "Claim",
    "DeviceCheck",
    "FeatureSet",
    "Mode",
    "Node",
    "RequestDiagnosis",
    "SelectorMatcher",
    "Unsatisfiable",
    "allocate",
    "cel_selector_matcher",
    "prepare_claim",
]


def prepare_claim(claim: Any) -> Claim:
    """Parse a ResourceClaim (or template) once; `allocate` accepts the result and skips re-parsing it."""
    return parse_claim(claim)


def allocate(
    claims: Iterable[Any],
    *,
    node: Any,
    slices: Iterable[Any],
    classes: Iterable[Any],
    allocated: Iterable[Any] = (),
    features: FeatureSet | None = None,
    mode: Mode = "upstream",
    selector_matcher: SelectorMatcher | None = None,
) -> list[dict[str, Any]]:
    """Allocate `claims` together on `node` (a Node object/dict, a `Node`, or a node name)."""
    allocator = Allocator(
        slices=slices, classes=classes, allocated=allocated, features=features, selector_matcher=selector_matcher
    )
    return allocator.allocate(claims, node=node, mode=mode)
