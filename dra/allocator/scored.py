"""The `scored` search: upstream's request/claim structure, a better device order, symmetry breaking, a bound.

Differences from `Search` (upstream):
- candidates of a request are tried best-first by the greedy key of `scoring` (whole GPUs kept, least new
  fragmentation, same NVLink group), not in slice order;
- at one slot, a device whose *signature* equals that of a device already tried there is skipped: the
  signature holds everything that decides feasibility and score (selector results for every request of
  the call, constraint and topology attributes, capacities, taints, counter consumption and the counter
  set's remaining values), so the skipped subtree is a mirror image of one already explored — this is what
  removes the exponential blow-up of identical devices (kubernetes/kubernetes#131730);
- complete allocations are collected up to `max_solutions`, the best by `scoring.score` wins; after the first
  one the search goes on for at most as many steps again (plus `EXTRA_STEPS`), and never past `max_steps`;
- shares of devices that allow multiple allocations (consumable capacity, KEP-5075) are scored by capacity: a
  share of a device nothing has consumed yet breaks a whole GPU (the score's first term), and among devices
  already shared the one left with the least capacity is best (best fit, `fit` in the score).
"""

from __future__ import annotations

from typing import Any

from dra.allocator._errors import AllocationError
from dra.allocator._objects import Request
from dra.allocator.capacity import consumed_capacity
from dra.allocator.constraints import lookup_attribute
from dra.allocator.requests import Candidate, RequestData
from dra.allocator.scoring import footprint, group_of, score, topology_attribute, unit_delta, unit_usage
from dra.allocator.search import DeviceResult, MaxSizeExceeded, Search

__all__ = ["EXTRA_STEPS", "MAX_SOLUTIONS", "MAX_STEPS", "ScoredSearch"]

MAX_SOLUTIONS = 8
MAX_STEPS = 20_000
EXTRA_STEPS = 16


# `scoring.score` with the shares' capacity fit: (broken + fresh shares, fragmentation, spread, fit, order)
SearchScore = tuple[int, int, int, int, int]


class _Budget(Exception):
    pass


def _device_signature(cand: Candidate) -> tuple[Any, ...]:
    """What of a device decides feasibility and score, without its name (cached on the candidate)."""
    if cand.signature is None:
        device = cand.device
        cand.signature = (
            cand.pool.id,
            topology_attribute(cand),
            tuple(sorted((n, c.value, c.has_policy) for n, c in device.capacity.items())),
            device.taints,
            device.allow_multiple,
            tuple(tuple(sorted(counters)) for _, counters in device.consumes),
            device.binding_conditions,
            device.node_name,
            device.all_nodes,
            footprint(cand).slices,
            footprint(cand).total,
        )
    signature: tuple[Any, ...] = cand.signature
    return signature


class ScoredSearch(Search):
    max_solutions = MAX_SOLUTIONS
    max_steps = MAX_STEPS

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.best: tuple[SearchScore, list[list[DeviceResult]]] | None = None
        self.solutions = 0
        self._static: dict[int, tuple[Any, ...]] = {}
        self._before: dict[tuple[str, str], tuple[int, frozenset[int]]] | None = None
        self._attr_names: tuple[str, ...] = ()
        self._orders: dict[tuple[int, int, int], list[Candidate]] = {}

    # -- search driver ---------------------------------------------------------------------------------

    def run(self) -> bool:
        self.prepare()
        names = {
            c.get("matchAttribute") or c.get("distinctAttribute") for claim in self.claims for c in claim.constraints
        }
        self._attr_names = tuple(sorted(n for n in names if n))
        self._single_device = (
            all(rd.num_devices <= 1 for rd in self.data.values()) and sum(len(c.requests) for c in self.claims) == 1
        )
        try:
            self.allocate_one(0, 0, 0, 0, False, 0)
        except (_Budget, MaxSizeExceeded):
            pass
        if self.best is None:
            return False
        self.results = [list(r) for r in self.best[1]]
        for (ci, ri, si), rd in self.data.items():
            if si == 0 and rd.parent is not None:
                rd.selected_sub = self._chosen_sub(ci, ri)
        return True

    def _chosen_sub(self, ci: int, ri: int) -> int:
        for r in self.results[ci]:
            req = r.request
            if req.parent == self.claims[ci].requests[ri].name:
                for si, sub in enumerate(self.claims[ci].requests[ri].subrequests):
                    if sub.name == req.name:
                        return si
        return 0

    def allocate_one(self, ci: int, ri: int, si: int, di: int, in_sub: bool, start: int) -> bool:
        if self.steps >= self.max_steps:
            raise _Budget
        return super().allocate_one(ci, ri, si, di, in_sub, start)

    def on_solution(self) -> bool:
        chosen = [[r.candidate for r in rs] for rs in self.results]
        broken, frag, spread, order = score(self.before(), chosen)
        fresh = fit = 0
        for r in (r for rs in self.results for r in rs if r.consumed):
            share = self._share_terms(r.candidate, None)
            fresh, fit = fresh + share[0], fit + share[1]
        value: SearchScore = (broken + fresh, frag, spread, fit, order)
        if self.best is None or value < self.best[0]:
            self.best = (value, [list(rs) for rs in self.results])
        self.solutions += 1
        if self.solutions == 1:
            # Look for a better score for at most as many steps again as the first solution took.
            self.max_steps = min(self.max_steps, 2 * self.steps + EXTRA_STEPS)
        # With a single device in the whole call, best-first order makes the first solution the best one.
        return self.solutions >= self.max_solutions or value[:3] == (0, 0, 0) or self._single_device

    # -- scoring state ---------------------------------------------------------------------------------

    def before(self) -> dict[tuple[str, str], tuple[int, frozenset[int]]]:
        """Unit usage by already-allocated devices (fixed for an Allocator, so cached per node)."""
        if self._before is None:
            cached = self.view_cache.get("scored:before")
            if cached is None:
                cached = unit_usage(c for c in self.candidates if self.allocated.is_allocated(c.key))
                self.view_cache["scored:before"] = cached
            self._before = cached
        return self._before

    def _current(self) -> dict[tuple[str, str], tuple[int, frozenset[int]]]:
        usage = dict(self.before())
        for fp in (footprint(r.candidate) for rs in self.results for r in rs):
            total, used = usage.get(fp.unit, (fp.total, frozenset()))
            usage[fp.unit] = (total, used | fp.slices)
        return usage

    def _order(self, ci: int, key: tuple[int, int, int], rd: RequestData) -> list[Candidate]:
        """The request's usable candidates, best first by the greedy key of `scoring`."""
        current = self._current()
        groups = {group_of(r.candidate) for r in self.results[ci]}
        multi = rd.num_devices > 1 or bool(groups)
        admin = bool(rd.request.admin_access)
        shared_key = ("scored:selectable", rd.device_class.name if rd.device_class else None, rd.request.selectors)
        selectable: list[Candidate] | None = self.view_cache.get(shared_key)
        if selectable is None:
            selectable = [c for c in self.candidates if self._selectable_or_error(key, rd, c)]
            self.view_cache[shared_key] = selectable
        usable = [c for c in selectable if admin or not self.in_use(c.key)]

        def greedy(cand: Candidate) -> tuple[int, int, int, int, int]:
            broken, frag = unit_delta(current, (footprint(cand),))
            new_group = 1 if multi and groups and group_of(cand) not in groups else 0
            fresh, fit = self._share_terms(cand, rd.request) if cand.device.allow_multiple else (0, 0)
            return broken + fresh, frag, new_group, fit, cand.index

        return sorted(usable, key=greedy)

    def _share_terms(self, cand: Candidate, request: Request | None) -> tuple[int, int]:
        """(breaks a whole device, permille of capacity left) of a share of `cand`, a device that allows multiple
        allocations: after taking `request` from it, or as this call's results have already taken (None)."""
        device = cand.device
        if not device.allow_multiple or not device.capacity:
            return 0, 0
        prior = self.allocated.capacity.get(cand.key) or {}
        taking = dict(self.allocating_capacity.get(cand.key) or {})
        if request is not None:
            try:
                consumed = consumed_capacity(request, device.capacity, self.features.FractionalCapacityRange)
            except AllocationError:  # surfaces where the search checks the capacity
                return 0, 0
            for name, (value, _) in consumed.items():
                taking[name] = taking.get(name, 0) + value
        whole = all(taking.get(n, 0) >= c.value for n, c in device.capacity.items())
        fresh = 0 if whole or any(prior.values()) else 1
        left = 0
        for name, cap in device.capacity.items():
            if cap.value:
                left = max(left, int(1000 * (cap.value - prior.get(name, 0) - taking.get(name, 0)) / cap.value))
        return fresh, left

    def _selectable_or_error(self, key: tuple[int, int, int], rd: RequestData, cand: Candidate) -> bool:
        # Errors surface later in iterate(), in search order, as in the upstream loop.
        try:
            return self.selectable(key, rd, cand)
        except AllocationError:
            return True

    def _signature(self, cand: Candidate) -> tuple[Any, ...]:
        static = self._static.get(cand.index)
        if static is None:
            selected: list[bool | None] = []
            for key, rd in self.data.items():
                try:
                    selected.append(self.selectable(key, rd, cand))
                except AllocationError:
                    selected.append(None)
            attrs = []
            for name in self._attr_names:
                attr = lookup_attribute(cand.device, cand.slice.driver, name)
                attrs.append(None if attr is None else (attr.kind, attr.value))
            static = self._static[cand.index] = (_device_signature(cand), tuple(selected), tuple(attrs))
        dynamic: list[Any] = []
        if cand.device.consumes:
            pool_available = self._available(cand.pool)
            pool_id = (cand.pool.driver, cand.pool.name)
            for set_name, _ in cand.device.consumes:
                remaining = self.ledger.remaining(pool_id, set_name, pool_available)
                dynamic.append(tuple(sorted(remaining.items())))
        dynamic.append(self._unit_used(footprint(cand).unit))
        if cand.device.allow_multiple:  # what earlier claims and this call consumed: feasibility and fit
            dynamic.append(tuple(sorted((self.allocated.capacity.get(cand.key) or {}).items())))
            dynamic.append(tuple(sorted(self.allocating_capacity.get(cand.key, {}).items())))
        return static, tuple(dynamic)

    def _unit_used(self, unit: tuple[str, str]) -> frozenset[int]:
        used = self.before().get(unit, (0, frozenset()))[1]
        for rs in self.results:
            for r in rs:
                fp = footprint(r.candidate)
                if fp.unit == unit:
                    used = used | fp.slices
        return used

    # -- candidate iteration ---------------------------------------------------------------------------

    def iterate(
        self, ci: int, ri: int, si: int, di: int, in_sub: bool, start: int, key: tuple[int, int, int], rd: RequestData
    ) -> bool:
        order = self._order(ci, key, rd) if di == 0 else self._orders[(ci, ri, si)]
        if di == 0:
            self._orders[(ci, ri, si)] = order
        request = rd.request
        admin = bool(request.admin_access)
        capacity = self.features.ConsumableCapacity
        tried: set[tuple[Any, ...]] = set()
        for pos in range(start, len(order)):
            cand = order[pos]
            dkey = cand.key
            if admin:
                if ci in self.allocating.get(dkey, ()):
                    continue
            elif self.in_use(dkey):
                continue
            if not self.selectable(key, rd, cand):
                continue
            if capacity and not self.capacity_fits(ci, request, cand):
                continue
            sig = self._signature(cand)
            if sig in tried:
                continue
            undo = self.allocate_device(ci, key, cand, False)
            if undo is None:
                tried.add(sig)
                continue
            try:
                done = self.allocate_one(ci, ri, si, di + 1, in_sub, pos + 1)
            except BaseException:
                undo()
                raise
            if done:
                return True
            undo()
            tried.add(sig)
        return False
