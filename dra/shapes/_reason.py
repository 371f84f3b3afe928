"""Why a claim has no alternative left: the evidence a refusal names, in data and in one message.

Per failing request: the memory bounds its alternatives carry (read off their selectors and capacity requests), the
size and its source when the caller knows them, the device that came closest and the check it failed; for the claim:
the cap the caller applied, and the largest device memory the shapes have.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dra.errors import QuantityError
from dra.quantity import Quantity
from dra.shapes._satisfiability import Alternative, Closest, Verdict, claim_devices
from dra.shapes._shape import DeviceShapes

__all__ = ["MemoryBounds", "RequestReason", "SizeEvidence", "Unsatisfied", "explain", "memory_bounds"]

_BOUND = re.compile(
    r"capacity\[['\"][^'\"]*['\"]\]\.memory\.compareTo\(\s*quantity\(\s*['\"]([^'\"]+)['\"]\s*\)\s*\)\s*(>=|<=|==)\s*0"
)


@dataclass(frozen=True, slots=True)
class SizeEvidence:
    """What the caller knows of a request's size: the amount and where it came from (annotation, model, observed)."""

    size: str
    source: str


@dataclass(frozen=True, slots=True)
class MemoryBounds:
    """The per-device memory an alternative asks for, in bytes (None: unbounded on that side)."""

    low: int | None
    high: int | None

    @property
    def empty(self) -> bool:
        return self.low is not None and self.high is not None and self.low > self.high

    def text(self) -> str:
        parts = []
        if self.low is not None:
            parts.append(f"memory >= {_binary(self.low)}")
        if self.high is not None:
            parts.append(f"memory <= {_binary(self.high)}")
        return " and ".join(parts)


def _binary(value: int) -> str:
    return str(Quantity.from_scaled(value, 0, "BinarySI"))


def _bytes(text: str) -> int | None:
    try:
        return int(Quantity.parse(text.strip()).value)
    except QuantityError:
        return None


def memory_bounds(request: Mapping[str, Any]) -> MemoryBounds:
    """The memory bounds of one request or alternative: `memory.compareTo(quantity(X)) >= 0 / <= 0 / == 0` in its
    selectors, and a `memory` capacity request (a lower bound)."""
    low: int | None = None
    high: int | None = None
    for selector in request.get("selectors") or []:
        expression = ((selector or {}).get("cel") or {}).get("expression") or ""
        for text, op in _BOUND.findall(expression):
            value = _bytes(text)
            if value is None:
                continue
            if op in (">=", "=="):
                low = value if low is None else max(low, value)
            if op in ("<=", "=="):
                high = value if high is None else min(high, value)
    for name, text in ((request.get("capacity") or {}).get("requests") or {}).items():
        if name.rpartition("/")[2] == "memory":
            value = _bytes(str(text))
            if value is not None:
                low = value if low is None else max(low, value)
    return MemoryBounds(low, high)


@dataclass(frozen=True, slots=True)
class RequestReason:
    """One request none of whose alternatives any shape can satisfy."""

    request: str
    alternatives: tuple[Alternative, ...]
    bounds: tuple[MemoryBounds, ...]  # per alternative, in order
    size: SizeEvidence | None
    closest: Closest | None

    @property
    def contradictory(self) -> bool:
        """Every alternative asks for more memory than it allows (a cap below the size)."""
        return bool(self.bounds) and all(b.empty for b in self.bounds)

    def text(self) -> str:
        head = f"request {self.request}"
        if self.size is not None:
            head += f" (size {self.size.size} from {self.size.source})"
        bounds = sorted({b.text() for b in self.bounds if b.text()})
        parts = [head]
        if self.contradictory:
            parts.append(f"every alternative asks {' / '.join(bounds)}, which no device can be")
        elif bounds:
            parts.append(f"its alternatives ask {' / '.join(bounds)}")
        errors = sorted({a.error for a in self.alternatives if a.error})
        parts.extend(f"the allocator refuses it: {e}" for e in errors)
        if self.closest is not None:
            parts.append(self.closest.text())
        return "; ".join(parts)


@dataclass(frozen=True, slots=True)
class Unsatisfied:
    """The evidence for refusing a claim no shape can satisfy; `message()` says it in one paragraph."""

    requests: tuple[RequestReason, ...]
    together: str  # when every request fits alone but not together: the allocator's reason
    cap: str | None
    largest_memory: int
    largest_device: str
    shapes: int
    nodes: int

    def message(self) -> str:
        head = f"no device can satisfy this claim ({self.shapes} device shape(s) on {self.nodes} node(s) checked)"
        parts = [head, *(r.text() for r in self.requests)]
        if self.together:
            parts.append(self.together)
        if self.cap:
            parts.append(f"cap {self.cap}")
        if self.largest_memory:
            parts.append(f"the largest device memory is {_binary(self.largest_memory)} ({self.largest_device})")
        return "; ".join(parts)


def explain(
    verdict: Verdict,
    shapes: DeviceShapes,
    claim: Any,
    *,
    sizes: Mapping[str, SizeEvidence] | None = None,
    cap: str | None = None,
) -> Unsatisfied | None:
    """The evidence for `verdict` (None when the claim is satisfiable or the view undecided); `sizes` by request
    name and `cap` (e.g. `gpudra.io/max-vram=160Gi`) are what the caller knows of how it sized the claim."""
    if verdict.satisfiable:
        return None
    raw = {str(r.get("name", "")): r for r in claim_devices(claim).get("requests") or []}
    reasons = []
    for request in verdict.requests:
        if request.survivors:
            continue
        spec = raw.get(request.name, {})
        alternatives = spec.get("firstAvailable") or [spec.get("exactly") or {}]
        ranked = [a.closest for a in request.alternatives if a.closest is not None]
        # The alternative whose closest device got furthest (checks passed), then the first in order.
        closest = max(ranked, key=lambda c: c.passed) if ranked else None
        reasons.append(
            RequestReason(
                request.name,
                request.alternatives,
                tuple(memory_bounds(a) for a in alternatives),
                (sizes or {}).get(request.name),
                closest,
            )
        )
    memory, device = shapes.largest_memory()
    together = verdict.note if not reasons else ""
    return Unsatisfied(tuple(reasons), together, cap, memory, device, len(shapes.shapes), shapes.nodes)
