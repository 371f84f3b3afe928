"""One pod's decision from its containers' decisions: each GPU container's claim policy is chosen in its own view.

The engine evaluates the whole pod (validations and warnings see every container) and then each container that
needs a request of its own (`PodFacts.view`); this module joins them into the one `Decision` whose claim holds every
container's request, so a MIG sidecar never turns the tensor-parallel server beside it into plain whole GPUs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._claim import validate_claim
from .decision import ContainerRequest, Decision, JsonView, Violation, pod_order
from .facts import ContainerFacts
from .init_reuse import with_extra_requests

__all__ = ["container_request", "merge_decisions"]


def container_request(
    container: ContainerFacts,
    request: str,
    policy: str,
    variables: Any = None,
    also: tuple[str, ...] = (),
) -> ContainerRequest:
    """The decision's record of a legacy container and the claim request(s) that stand in for its resources."""
    return ContainerRequest(
        container=container.name,
        kind=container.kind,
        index=container.index,
        request=request,
        replaces=dict(container.legacy),
        variables=JsonView({} if variables is None else variables),
        policy=policy,
        also=also,
    )


def _verdict(violation: Violation) -> str:
    if violation.reason == "InternalError":
        return f"GPUClaimPolicy '{violation.policy}' could not be evaluated: {violation.message}"
    return f"GPUClaimPolicy '{violation.policy}' denied the pod: {violation.message}"


def _unique(items: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(dict.fromkeys(items))


def _claim(parts: Sequence[Decision]) -> dict[str, Any] | None:
    """Every part's requests, constraints and config, in container order; None when a part has no claim (then the
    pod keeps its legacy resources whole: a claim for some of its containers would leave the others beside it)."""
    if any(p.claim is None for p in parts):
        return None
    devices: dict[str, list[Any]] = {"requests": [], "constraints": [], "config": []}
    for part in parts:
        assert part.claim is not None
        for key, items in devices.items():
            items.extend(part.claim["devices"].get(key) or [])
    return {"devices": {k: v for k, v in devices.items() if v or k == "requests"}}


def _joined(
    claim: dict[str, Any], parts: Sequence[Decision], inits: Sequence[ContainerFacts]
) -> list[ContainerRequest]:
    """Join `inits` (init containers that share several requests or add an extra one, `PodFacts.joined_inits`) to
    `claim`: each one's extra request is added (`init_reuse`), and each one references the requests it shares and its
    extra; its policy is that of the request it extends."""
    devices = claim["devices"]
    extras = [(c.reuses, c.name, c.extra) for c in inits if c.extra]
    requests, constraints, config = with_extra_requests(
        devices["requests"], devices.get("constraints") or [], devices.get("config") or [], extras
    )
    claim["devices"] = {"requests": requests, "constraints": constraints, "config": config}
    claim["devices"] = {k: v for k, v in claim["devices"].items() if v or k == "requests"}
    names = {r.get("name") for r in requests}
    policies = {c.container: c.policy for p in parts for c in p.containers}
    return [
        container_request(c, c.reuses, policies.get(c.reuses, ""), also=tuple(n for n in c.also if n in names))
        for c in inits
    ]


def _mode(parts: Sequence[Decision]) -> str | None:
    """Enforce only when every container's policy enforces: one claim serves the pod, so a container whose policy
    audits keeps the whole pod in audit (its warnings say what would change)."""
    modes = {p.mode for p in parts if p.mode is not None}
    if not modes:
        return None
    return "enforce" if modes == {"enforce"} else "audit" if "audit" in modes else sorted(modes)[0]


def merge_decisions(whole: Decision, parts: Sequence[Decision], inits: Sequence[ContainerFacts] = ()) -> Decision:
    """`whole` (the pod's pod-level decision) with the claim built from `parts`, one decision per container that
    has a request of its own, and the init containers `inits` joined to it (`PodFacts.joined_inits`): violations
    and warnings of all, each said once; the claim policy names joined by ',' in container order
    (`gpudra.io/policy`)."""
    violations = _unique([*whole.violations, *(v for p in parts for v in p.violations)])
    denials = [v for v in violations if v.mode == "enforce"]
    claim = _claim(parts)
    joined = _joined(claim, parts, inits) if claim is not None and inits else []
    problems = validate_claim(claim) if claim is not None else []
    if problems:
        reason = "the containers' requests together are not a valid ResourceClaimSpec: " + "; ".join(problems)
        denials.append(Violation("per-container", reason, "Invalid", "enforce", "", ""))
        violations = (*violations, denials[-1])
    containers = tuple(sorted([*(c for p in parts for c in p.containers), *joined], key=pod_order)) if claim else ()
    policies = _unique([c.policy for c in containers if c.policy])
    sizing = {k: v for p in parts for k, v in p.sizing.items()}
    return Decision(
        allowed=not denials,
        message="; ".join(_verdict(v) for v in denials),
        reason=denials[0].reason if denials else "",
        policy=",".join(policies) if policies else whole.policy,
        mode=_mode(parts) if claim is not None else whole.mode,
        namespace=whole.namespace,
        matched=_unique([*whole.matched, *(m for p in parts for m in p.matched)]),
        shadowed=_unique([*whole.shadowed, *(s for p in parts for s in p.shadowed)]),
        unmatched=whole.unmatched,
        variables=whole.variables,
        claim=claim,
        containers=containers,
        violations=violations,
        warnings=_unique([*whole.warnings, *(w for p in parts for w in p.warnings)]),
        audit=_unique([*whole.audit, *(a for p in parts for a in p.audit)]),
        sizing=sizing or whole.sizing,
        sizing_source=whole.sizing_source,
        held_bytes=whole.held_bytes + sum(p.held_bytes for p in parts),
    )
