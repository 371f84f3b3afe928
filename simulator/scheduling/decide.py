"""One scheduling decision as kube-scheduler v1.37.2 would make it, node by node: the verifier's question.

Unlike the engine's path (`simulator.strategies.kube`, cached per pod shape), nothing is kept between calls and
`state` is left as it was; the arithmetic is the same code (`class_fit`, `scored_classes`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from dra.allocator import Mode, prepare_claim
from dra.errors import InputError

from ..state import ClusterState
from ..workload import SimPod
from .candidates import Candidates, scored_classes
from .devices import Placer, claim_devices
from .evaluate import Devices, class_fit
from .profile import DEFAULT_PROFILE, Profile
from .selection import normalised

__all__ = ["Decision", "decide"]


@dataclass(frozen=True, slots=True)
class Decision:
    """What kube-scheduler would do with one pod (node names throughout)."""

    feasible: frozenset[str]  # pass every filter
    scored: frozenset[str]  # the feasible nodes scored (fewer only when percentageOfNodesToScore cut the search)
    scores: dict[str, int]  # total weighted score per scored node
    plugin_scores: dict[str, dict[str, int]]  # node -> plugin -> weighted (normalised) score
    tie_set: frozenset[str]  # the scored nodes with the top total
    node: str | None  # a seeded choice among `tie_set`; None: unschedulable
    devices: dict[str, tuple[str, ...]]  # feasible node -> the devices the allocator picked for the claim


def _claim_spec(claim: Mapping[str, Any]) -> dict[str, Any]:
    """A ResourceClaim object's spec, or a spec as it is."""
    return dict(claim["spec"]) if "spec" in claim and "devices" not in claim else dict(claim)


def decide(
    state: ClusterState,
    pod: SimPod,
    profile: Profile = DEFAULT_PROFILE,
    *,
    claims: Sequence[Mapping[str, Any]] = (),
    mode: str = "upstream",
    seed: int = 0,
    placer: Placer | None = None,
    advance: bool = False,
) -> Decision:
    """kube-scheduler's filters, scores and tie set for `pod` (with its unallocated `claims`) in `state`.

    `advance` moves `state.next_start` as the scheduler's search does (only matters with 100+ nodes)."""
    if mode not in ("upstream", "scored"):
        raise InputError(f"mode must be upstream or scored (got {mode!r})")
    if len(claims) > 1:
        raise InputError(f"pod {pod.name}: the simulator places one ResourceClaim per pod (got {len(claims)})")
    placer = placer or Placer(cast(Mode, mode))
    claim_key = ""
    prepared = None
    requests: list[dict[str, Any]] = []
    if claims:
        spec = _claim_spec(claims[0])
        claim_key = json.dumps(spec, sort_keys=True, separators=(",", ":"))
        prepared = prepare_claim({"metadata": {"name": "claim", "namespace": pod.namespace}, "spec": spec})
        requests = list((spec.get("devices") or {}).get("requests") or ())

    def devices_on(cid: int) -> Devices | None:
        if prepared is None:
            return (), (), 0
        node = state.representative(cid)
        if node.spec.gpu is None:
            return None
        return claim_devices(placer, node, claim_key, prepared, requests, pod.gpu_milli or 1000)

    cands = Candidates()
    for cid in state.classes:
        fit = class_fit(profile, state, cid, pod, lambda cid=cid: devices_on(cid))  # type: ignore[misc]
        if fit is not None:
            cands.add(cid, fit)
    names = {n.index: n.spec.name for n in state.nodes}
    feasible = {names[i]: cid for cid in cands.fits for i in state.classes[cid]}
    scored = scored_classes(state, cands, profile, advance=advance)
    if scored is None:
        return Decision(frozenset(), frozenset(), {}, {}, frozenset(), None, {})
    nodes = [int(i) for i in scored.nodes] if scored.nodes is not None else [
        i for cid in scored.classes for i in state.classes[cid]
    ]  # fmt: skip
    scores: dict[str, int] = {}
    plugin_scores: dict[str, dict[str, int]] = {}
    for index in nodes:
        node_class = state.node_sig[index]
        assert node_class is not None
        fit = cands.fits[node_class]
        scores[names[index]] = scored.classes[node_class]
        plugin_scores[names[index]] = dict(fit.plugin_scores) | normalised(fit.raw, scored.top, profile)
    tie = sorted(names[i] for i in nodes if state.node_sig[i] in scored.tie)
    node = tie[random.Random(seed).randrange(len(tie))] if tie else None
    devices = {name: cands.fits[cid].devices for name, cid in feasible.items()}
    return Decision(frozenset(feasible), frozenset(scores), scores, plugin_scores, frozenset(tie), node, devices)
