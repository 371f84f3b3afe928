"""A decided claim checked against device shapes before it leaves gpudra (DESIGN: "Claims shaped by the cluster").

`ClaimCheck.apply` drops the `firstAvailable` alternatives no shape can satisfy (`dra.shapes.prune`), and for a claim
with none left does what the chosen policy's `spec.onUnsatisfiable` says: Deny refuses the pod with the evidence
(`dra.shapes.explain`: the size and its source, the namespace's cap, the closest device, the largest device memory),
Warn keeps the claim with that warning, LeaveUnchanged admits the pod untranslated; audit mode only records it.
A view that cannot decide (no shapes yet, more shapes than the cap) changes nothing.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .decision import Decision

if TYPE_CHECKING:  # dra.shapes brings the allocator and the Kubernetes object model: imported on the first check
    from dra.shapes import DeviceShapes, SatisfiabilityChecker, SizeEvidence

__all__ = ["ClaimCheck", "UNSATISFIABLE_ACTIONS"]

UNSATISFIABLE_ACTIONS = ("Deny", "Warn", "LeaveUnchanged")
CAP_LABELS = ("gpudra.io/max-vram", "gpudra.io/max-gpus")
_SOURCES = {
    "annotation": "the gpudra.io/vram annotation",
    "model": "the model estimate",
    "observed": "observed usage",
}


def _sizes(decision: Decision) -> dict[str, SizeEvidence]:
    """Request name -> the size the engine decided for its container and where it came from (`Decision.sizing`:
    "<bytes> from <source>: <reason>")."""
    from dra.shapes import SizeEvidence

    by_container = {c.container: c.request for c in decision.containers}
    out: dict[str, SizeEvidence] = {}
    for container, note in decision.sizing.items():
        amount, _, rest = note.partition(" from ")
        source = rest.partition(":")[0].strip()
        size = f"{math.ceil(int(amount) / 2**20)}Mi" if amount.isdigit() else amount
        out[by_container.get(container, container)] = SizeEvidence(size, _SOURCES.get(source, source or "unknown"))
    return out


def _cap(namespace: Mapping[str, Any] | None) -> str | None:
    meta = (namespace or {}).get("metadata") or {}
    labels = meta.get("labels") or {}
    caps = [f"{label}={labels[label]}" for label in CAP_LABELS if isinstance(labels.get(label), str)]
    if not caps:
        return None
    return f"namespace {meta.get('name', '')}: {', '.join(caps)}".replace("namespace : ", "namespace: ")


class ClaimCheck:
    """Checks decisions' claims against `shapes()` (called per decision: a cache's current snapshot, or fixed
    shapes); thread-safe, memoised by the checker per claim digest and shapes generation."""

    def __init__(
        self,
        shapes: Callable[[], DeviceShapes],
        checker: SatisfiabilityChecker | None = None,
        *,
        few_products: int = 0,
        where: str = "",
    ) -> None:
        """`few_products` > 0: warn when a claim fits the devices of that many products or fewer (the CLI against
        the catalog: "only NVIDIA B200 holds it"); `where` names the shapes in that warning ("the GPU catalog")."""
        self.shapes = shapes
        self._checker = checker
        self.few_products = few_products
        self.where = where
        self._lock = threading.Lock()

    @property
    def checker(self) -> SatisfiabilityChecker:
        """The satisfiability checker (made on first use: `dra.shapes` is imported only when a claim is checked)."""
        if self._checker is None:
            from dra.shapes import SatisfiabilityChecker

            self._checker = SatisfiabilityChecker()
        return self._checker

    def apply(self, decision: Decision, action: str, namespace: Mapping[str, Any] | None = None) -> Decision:
        """`decision` with its claim pruned, or refused / warned / left unchanged by `action` (onUnsatisfiable)."""
        claim = decision.claim
        if claim is None or not decision.allowed:
            return decision
        from dra.shapes import explain, prune

        shapes = self.shapes()
        with self._lock:
            verdict = self.checker.check(claim, shapes, key=decision.claim_digest or None)
        if verdict.satisfiable:
            few = self._few(decision, verdict.together, shapes)
            if few:
                decision = dataclasses.replace(decision, warnings=(*decision.warnings, few))
            if not verdict.removable():
                return decision
            pruned = {**claim, "devices": prune(claim.get("devices") or {}, verdict)}
            return dataclasses.replace(decision, claim=pruned, claim_digest="", claim_blob=None)
        reason = explain(verdict, shapes, claim, sizes=_sizes(decision), cap=_cap(namespace))
        message = f"GPUClaimPolicy '{decision.policy}': {reason.message() if reason else verdict.note}"
        if decision.mode != "enforce":
            note = f"would refuse (onUnsatisfiable: {action}): {message}"
            return dataclasses.replace(
                decision, audit=(*decision.audit, note), warnings=(*decision.warnings, f"audit: {note}")
            )
        if action == "Warn":
            return dataclasses.replace(decision, warnings=(*decision.warnings, message))
        if action == "LeaveUnchanged":
            left = f"left untranslated (onUnsatisfiable: LeaveUnchanged): {message}"
            return dataclasses.replace(
                decision, claim=None, containers=(), claim_digest="", claim_blob=None,
                warnings=(*decision.warnings, left),
            )  # fmt: skip
        return dataclasses.replace(decision, allowed=False, message=message, reason="Invalid")

    def _few(self, decision: Decision, together: tuple[str, ...], shapes: DeviceShapes) -> str:
        """The warning for a claim only a few products can hold ("" when more can, or nobody asked)."""
        if self.few_products <= 0 or not together:
            return ""
        products = sorted({p for key in together for p in shapes.shape(key).evidence.products})
        every = {p for shape in shapes.shapes for p in shape.evidence.products}
        if not products or len(products) > self.few_products or len(products) == len(every):
            return ""
        sizes = ", ".join(f"request {r} {e.size} from {e.source}" for r, e in sorted(_sizes(decision).items()))
        holders = " and ".join(products)
        return (
            f"GPUClaimPolicy '{decision.policy}': only {holders} of the {len(every)} GPU models of "
            f"{self.where or 'the known devices'} can hold this claim" + (f" ({sizes})" if sizes else "")
        )
