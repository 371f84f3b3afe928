"""What the engine decides about one pod: `Decision`, its `Violation`s and `ContainerRequest`s.

Plain frozen data with `to_json()`, shared by the webhook (AdmissionReview answers), the CLI (`explain`) and the
simulator. Variable values are kept as CEL values and shown as JSON when read.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import _cel

if TYPE_CHECKING:
    from dra.model import ResourceClaimSpec

__all__ = ["ContainerRequest", "Decision", "JsonView", "Violation", "canonical_json", "claim_digest", "pod_order"]


def canonical_json(data: Any) -> str:
    """JSON with sorted keys, no spaces, ASCII only: one text for equal data (what template names hash)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def claim_digest(claim: Mapping[str, Any]) -> str:
    """The SHA-256 (hex) of a claim spec's canonical JSON (`translate.template_name` names templates by it)."""
    return hashlib.sha256(canonical_json(dict(claim)).encode()).hexdigest()


class JsonView(Mapping[str, Any]):
    """CEL values shown as JSON, converted only when read (most decisions never show their variables)."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values = values

    def __getitem__(self, key: str) -> Any:
        return _cel.to_json(self._values[key])

    @property
    def cel_values(self) -> Mapping[str, Any]:
        """The CEL values themselves (those evaluated so far), not converted."""
        return self._values

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return repr(dict(self))


@dataclass(frozen=True)
class Violation:
    """A failed validation (or a policy that could not be evaluated), with where it is written."""

    policy: str
    message: str
    reason: str
    mode: str
    where: str
    expression: str

    def to_json(self) -> dict[str, str]:
        return {
            "policy": self.policy,
            "message": self.message,
            "reason": self.reason,
            "mode": self.mode,
            "where": self.where,
            "expression": self.expression,
        }


@dataclass(frozen=True)
class ContainerRequest:
    """One container whose legacy resources the claim replaces, and the request that stands in for them."""

    container: str
    kind: str
    index: int
    request: str
    replaces: Mapping[str, int]
    variables: Mapping[str, Any]
    # The claim policy that built the request (decisions are per container; an init container's is its target's).
    policy: str = ""
    # The further requests it references: an init container's that shares several, or has an extra request
    # (`facts.ContainerFacts.also`).
    also: tuple[str, ...] = ()

    @property
    def requests(self) -> tuple[str, ...]:
        """Every request of the claim this container references (`resources.claims[].request`), in order."""
        return (self.request, *self.also)

    def without_variables(self) -> ContainerRequest:
        """The same request without its claim variables (see `Decision.without_variables`)."""
        slim = object.__new__(ContainerRequest)
        slim.__dict__.update(self.__dict__)
        slim.__dict__["variables"] = {}
        return slim

    def to_json(self) -> dict[str, Any]:
        return {
            "container": self.container,
            "kind": self.kind,
            "index": self.index,
            "request": self.request,
            "replaces": dict(self.replaces),
            "variables": dict(self.variables),
            "policy": self.policy,
            "also": list(self.also),
        }


def pod_order(request: ContainerRequest) -> tuple[int, int]:
    """Where the request's container is in the pod: init containers first, each list in its order."""
    return (0 if request.kind == "initContainers" else 1, request.index)


@dataclass(frozen=True)
class Decision:
    """Everything the webhook, the CLI and the simulator need to know about one pod."""

    allowed: bool
    message: str = ""
    reason: str = ""
    policy: str | None = None
    mode: str | None = None
    namespace: str = "default"
    matched: tuple[str, ...] = ()
    shadowed: tuple[str, ...] = ()
    # Only when explaining (`PolicySet.explaining()`): policy -> (name, expression) of the match condition that was
    # false, so `policy explain` can say why a policy did not match.
    unmatched: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    variables: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    claim: Mapping[str, Any] | None = None
    containers: tuple[ContainerRequest, ...] = ()
    violations: tuple[Violation, ...] = ()
    warnings: tuple[str, ...] = ()
    audit: tuple[str, ...] = ()
    # Container -> how its memory was sized when not by the pod's own annotation (`observed` or `model`):
    # "<vram> from <source>: <reason>", for audit messages and explanations.
    sizing: Mapping[str, str] = field(default_factory=dict)
    # Which source sized the pod (`gpu.sizing.source`: annotation, observed, model, default); "" when unreadable.
    sizing_source: str = ""
    # Roughly the bytes the decision keeps alive besides the pod (variables, claim, messages): a cache of decisions
    # is charged this on top of its key's inputs.
    held_bytes: int = 0
    # `claim_digest(claim)` as decided, when the engine had it at hand ("" when not: then computed when needed).
    # A caller that changes `claim` afterwards must not pass the decision on with it.
    claim_digest: str = field(default="", compare=False)
    # The pickle of `claim` as decided, when the engine had it (a plain JSON tree built from its memo): loading it is
    # a fresh copy of the claim (translate's template spec). The same caveat as `claim_digest`.
    claim_blob: bytes | None = field(default=None, compare=False, repr=False)

    def without_variables(self) -> Decision:
        """The same decision without the policies' and containers' variables, which hold on to the evaluation's
        inputs (for a cache of decisions that never shows them). Every other field is this one's; `held_bytes` is
        what this decision held, variables included. Built field by field (a frozen dataclass: `replace` would run
        `__init__` again, several times slower)."""
        slim = object.__new__(Decision)
        slim.__dict__.update(self.__dict__)
        slim.__dict__["variables"] = {}
        slim.__dict__["containers"] = tuple(c.without_variables() for c in self.containers)
        return slim

    @property
    def mutates(self) -> bool:
        """True when the pod should be rewritten (an allowed, enforced claim)."""
        return self.allowed and self.mode == "enforce" and self.claim is not None

    def claim_model(self) -> ResourceClaimSpec | None:
        """The claim as a `dra.model.ResourceClaimSpec` (None when there is no claim)."""
        if self.claim is None:
            return None
        from dra.model import ResourceClaimSpec

        return ResourceClaimSpec.from_k8s(dict(self.claim))

    def to_json(self) -> dict[str, Any]:
        return {
            "allowed": self.allowed,
            "message": self.message,
            "reason": self.reason,
            "policy": self.policy,
            "mode": self.mode,
            "namespace": self.namespace,
            "matched": list(self.matched),
            "shadowed": list(self.shadowed),
            "unmatched": {k: {"condition": n, "expression": e} for k, (n, e) in self.unmatched.items()},
            "variables": {k: dict(v) for k, v in self.variables.items()},
            "claim": self.claim,
            "containers": [c.to_json() for c in self.containers],
            "violations": [v.to_json() for v in self.violations],
            "warnings": list(self.warnings),
            "audit": list(self.audit),
        }
