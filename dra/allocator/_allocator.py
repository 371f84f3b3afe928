"""`Allocator`: parse slices, classes and allocated claims once, then allocate claims on many nodes.

The per-node pool view, the selector results per device and the available counters per pool are cached on
the instance (inputs are treated as immutable while it lives), so a simulator can call `allocate` thousands
of times at a small per-call cost.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal

from dra.allocator._errors import AllocationError, Unsatisfiable
from dra.allocator._objects import (
    Claim,
    DeviceClass,
    Node,
    Slice,
    as_dict,
    parse_claim,
    parse_class,
    parse_node,
    parse_quantity,
    parse_slice,
)
from dra.allocator.counters import CounterSets
from dra.allocator.features import FeatureSet
from dra.allocator.pools import Pool, gather_pools
from dra.allocator.requests import Candidate, SelectorCache, SelectorMatcher, cel_selector_matcher
from dra.allocator.result import build_allocation
from dra.allocator.search import AllocatedState, Search, taint_prevents

if TYPE_CHECKING:
    from dra.allocator.diagnosis import RequestDiagnosis

__all__ = ["Allocator", "Mode"]

Mode = Literal["upstream", "scored"]


def allocated_state(claims: Iterable[Claim], features: FeatureSet) -> AllocatedState:
    """What the scheduler counts as in use: results without adminAccess; shared ones by shareID."""
    state = AllocatedState(set(), set(), {})
    for claim in claims:
        allocation = claim.allocation or {}
        for r in (allocation.get("devices") or {}).get("results") or []:
            if r.get("adminAccess"):
                continue
            key = (r.get("driver", ""), r.get("pool", ""), r.get("device", ""))
            if features.ConsumableCapacity and r.get("shareID") is not None:
                state.shared.add((key, str(r["shareID"])))
                consumed = r.get("consumedCapacity")
                if consumed is not None:
                    into = state.capacity.setdefault(key, {})
                    for name, q in consumed.items():
                        into[name] = into.get(name, 0) + parse_quantity(str(q))
                continue
            state.devices.add(key)
    return state


class Allocator:
    """Reusable allocator over one snapshot of slices, classes and already-allocated claims."""

    def __init__(
        self,
        *,
        slices: Iterable[Any],
        classes: Iterable[Any],
        allocated: Iterable[Any] = (),
        features: FeatureSet | None = None,
        selector_matcher: SelectorMatcher | None = None,
    ) -> None:
        self.features = features if features is not None else FeatureSet.latest()
        # Slices are parsed lazily: a call needs only the node's own and the node-independent slices.
        self._raw: list[dict[str, Any]] = [as_dict(s) for s in slices]
        self._parsed: dict[int, Slice] = {}
        self._on_node: dict[str, list[int]] = {}
        self._shared: list[int] = []
        self._by_pool: dict[tuple[str, str], list[int]] = {}
        for i, raw in enumerate(self._raw):
            spec = raw.get("spec") or {}
            name = spec.get("nodeName")
            (self._on_node.setdefault(name, []) if name else self._shared).append(i)
            pool = (spec.get("pool") or {}).get("name", "")
            self._by_pool.setdefault((spec.get("driver", ""), pool), []).append(i)
        self.classes: dict[str, DeviceClass] = {}
        for c in classes:
            cls = parse_class(c)
            self.classes[cls.name] = cls
        self.allocated = allocated_state((parse_claim(c) for c in allocated), self.features)
        self._matcher = selector_matcher
        self._selectors: SelectorCache | None = None
        self._views: dict[Node | None, tuple[list[Pool], list[Candidate]]] = {}
        self._view_caches: dict[Node | None, dict[Any, Any]] = {}
        self._available: dict[tuple[str, str], CounterSets] = {}

    def with_allocated(self, allocated: Iterable[Any]) -> Allocator:
        """The same slices, classes, parsed slices, node views and selector results over other allocated claims.

        For callers that ask again and again while allocations change (the simulator): nothing that depends only on
        the slices is parsed or evaluated twice; what depends on allocations (counters left, scored-mode usage)
        starts fresh."""
        clone = copy.copy(self)
        clone.allocated = allocated_state((parse_claim(c) for c in allocated), self.features)
        clone._view_caches = {}
        clone._available = {}
        _ = self.selectors  # created here so that every clone shares one selector cache
        clone._selectors = self._selectors
        return clone

    def _slice(self, i: int) -> Slice:
        parsed = self._parsed.get(i)
        if parsed is None:
            parsed = self._parsed[i] = parse_slice(self._raw[i])
        return parsed

    def _pool_slices(self, driver: str, pool: str) -> list[Slice]:
        return [self._slice(i) for i in self._by_pool.get((driver, pool), ())]

    @property
    def selectors(self) -> SelectorCache:
        if self._selectors is None:
            self._selectors = SelectorCache(self._matcher or cel_selector_matcher())
        return self._selectors

    def node_view(self, node: Node | None) -> tuple[list[Pool], list[Candidate]]:
        """The node's pools and its devices in upstream search order (cached per node)."""
        view = self._views.get(node)
        if view is None:
            name = node.name if node is not None else ""
            slices_for_node = [self._slice(i) for i in self._on_node.get(name, []) + self._shared]
            pools = gather_pools(slices_for_node, node, self.features, self._pool_slices)
            candidates: list[Candidate] = []
            for pool in pools:
                if pool.incomplete or pool.invalid:
                    continue
                for s in pool.slices:
                    for d in s.devices:
                        candidates.append(Candidate(len(candidates), pool, s, d, (s.driver, s.pool, d.name)))
            view = self._views[node] = (pools, candidates)
        return view

    def search(self, claims: Iterable[Any], node: Any, mode: Mode = "upstream") -> tuple[Search, list[Claim]]:
        parsed = [c if isinstance(c, Claim) else parse_claim(c) for c in claims]
        the_node = parse_node(node)
        pools, candidates = self.node_view(the_node)
        kwargs: dict[str, Any] = {
            "claims": parsed,
            "node": the_node,
            "pools": pools,
            "candidates": candidates,
            "classes": self.classes,
            "allocated": self.allocated,
            "features": self.features,
            "selectors": self.selectors,
            "available": self._available,
            "view_cache": self._view_caches.setdefault(the_node, {}),
        }
        if mode == "upstream":
            return Search(**kwargs), parsed
        if mode == "scored":
            from dra.allocator.scored import ScoredSearch

            return ScoredSearch(**kwargs), parsed
        raise AllocationError(f"mode: expected 'upstream' or 'scored' (got {mode!r})")

    def _diagnosis(self, search: Search) -> Callable[[], list[str]]:
        """Why `search` failed, computed only when someone reads `Unsatisfiable.details`."""

        def run() -> list[str]:
            from dra.allocator.diagnosis import diagnose

            return diagnose(search, (name for name in self._on_node if name))

        return run

    def selectable_devices(self, claim: Any, *, node: Any) -> dict[str, list[Candidate]]:
        """Per request (or `request/subrequest`) of one claim: the node's devices it could take were they all free,
        in search order (class and request selectors, per-device node selection, binding conditions, taints its
        tolerations do not cover). Raises `AllocationError` for a claim the allocator refuses outright."""
        search, _ = self.search([claim], node)
        search.prepare()
        taints = self.features.DeviceTaints
        out: dict[str, list[Candidate]] = {}
        for key, data in search.data.items():
            out[data.name] = [
                c
                for c in search.candidates
                if search.selectable(key, data, c)
                and not (taints and c.device.taints and taint_prevents(c.device, data.request))
            ]
        return out

    def unsatisfied_requests(
        self, claims: Iterable[Any], *, node: Any, mode: Mode = "upstream"
    ) -> list[RequestDiagnosis]:
        """Per (sub)request that too few devices of `node` fit on their own: the closest device and the check it
        failed (`Unsatisfiable.details` as data). Empty when the claims allocate or fail only together."""
        from dra.allocator.diagnosis import request_diagnoses

        search, _ = self.search(claims, node, mode)
        if search.run():
            return []
        return request_diagnoses(search)

    def allocate(self, claims: Iterable[Any], *, node: Any, mode: Mode = "upstream") -> list[dict[str, Any]]:
        """One `status.allocation` dict per claim, or raise `Unsatisfiable` / `AllocationError`."""
        search, parsed = self.search(claims, node, mode)
        if not search.run():
            pools = search.pools
            if any(p.invalid for p in pools):
                raise Unsatisfiable("invalid resource pools were encountered", self._diagnosis(search))
            raise Unsatisfiable(search.explain(), self._diagnosis(search))
        node_name = search.node.name if search.node is not None else ""
        binding = self.features.DeviceBindingAndStatus
        return [
            build_allocation(claim, ci, search.results[ci], search.data, node_name, binding)
            for ci, claim in enumerate(parsed)
        ]
