"""The upstream depth-first search (1.37 allocator_incubating.go `Allocate`, `allocateOne`, `allocateDevice`).

One `Search` per call: validate requests, build constraints, then search claim → request → device slot in
pool/slice/device order; the first full solution wins. Every tentative pick returns its own rollback, and a
rejected pick undoes its partial reservations (counters, constraints, capacity) in reverse order.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dra.allocator._errors import AllocationError
from dra.allocator._objects import Amount, Claim, DeviceClass, Node, Request, SliceDevice
from dra.allocator.capacity import Consumed, consumed_capacity, request_fits
from dra.allocator.constraints import Constraint, build_constraints
from dra.allocator.counters import CounterLedger, CounterSets, available_counters
from dra.allocator.features import FeatureSet
from dra.allocator.pools import Pool, node_matches
from dra.allocator.requests import Candidate, RequestData, SelectorCache, selectors_match

__all__ = ["ALLOCATION_RESULTS_MAX_SIZE", "AllocatedState", "DeviceResult", "MaxSizeExceeded", "Search"]

ALLOCATION_RESULTS_MAX_SIZE = 32  # resourceapi.AllocationResultsMaxSize

DeviceKey = tuple[str, str, str]


class MaxSizeExceeded(Exception):
    """Upstream's errAllocationResultMaxSizeExceeded: prunes branches that would pass 32 devices."""


@dataclass(slots=True)
class AllocatedState:
    """Devices already allocated by other claims (upstream `AllocatedState`)."""

    devices: set[DeviceKey]
    shared: set[tuple[DeviceKey, str]]
    capacity: dict[DeviceKey, dict[str, Amount]]

    def is_allocated(self, key: DeviceKey) -> bool:
        return key in self.devices or key in self.capacity or any(k == key for k, _ in self.shared)


@dataclass(frozen=True, slots=True)
class DeviceResult:
    request: Request
    candidate: Candidate
    share_id: str | None
    consumed: dict[str, Consumed] | None
    admin_access: bool

    @property
    def name(self) -> str:
        return self.request.full_name


def taint_prevents(device: SliceDevice, request: Request) -> bool:
    """A NoSchedule/NoExecute taint no toleration covers (None and unknown effects are ignored)."""
    for key, value, effect in device.taints:
        if effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(_tolerates(t, key, value, effect) for t in request.tolerations):
            return True
    return False


def _tolerates(t: dict[str, Any], key: str, value: str, effect: str) -> bool:
    if t.get("effect") and t["effect"] != effect:
        return False
    if t.get("key") and t["key"] != key:
        return False
    op = t.get("operator") or "Equal"
    if op == "Equal":
        return (t.get("value") or "") == value
    return op == "Exists"


class Search:
    """State of one allocation call on one node."""

    def __init__(
        self,
        *,
        claims: list[Claim],
        node: Node | None,
        pools: list[Pool],
        candidates: list[Candidate],
        classes: dict[str, DeviceClass],
        allocated: AllocatedState,
        features: FeatureSet,
        selectors: SelectorCache,
        available: dict[tuple[str, str], CounterSets],
        view_cache: dict[Any, Any] | None = None,
    ) -> None:
        self.claims = claims
        self.node = node
        self.pools = pools
        self.candidates = candidates
        self.classes = classes
        self.allocated = allocated
        self.features = features
        self.selectors = selectors
        self.available = available  # shared across calls of one Allocator, keyed by (driver, pool)
        self.view_cache = view_cache if view_cache is not None else {}  # per node, shared across calls
        self.data: dict[tuple[int, int, int], RequestData] = {}
        self.constraints: list[list[Constraint]] = []
        self.matches: dict[tuple[tuple[int, int, int], int], bool] = {}
        self.flags: dict[tuple[int, int, int], list[bool | None]] = {}  # selectable per candidate, for the loop
        self.allocating: dict[DeviceKey, set[int]] = {}
        self.allocating_capacity: dict[DeviceKey, dict[str, Amount]] = {}
        self.ledger = CounterLedger()
        self.results: list[list[DeviceResult]] = [[] for _ in claims]
        self.steps = 0

    # -- validation (upstream Allocate, before the search) --------------------------------------------

    def prepare(self) -> None:
        f = self.features
        for ci, claim in enumerate(self.claims):
            min_devices = 0
            for ri, req in enumerate(claim.requests):
                if req.subrequests:
                    if not f.PrioritizedList:
                        raise AllocationError(
                            f"claim {claim.ref}, request {req.name}: has subrequests, "
                            "but the DRAPrioritizedList feature is disabled"
                        )
                if not f.ConsumableCapacity:
                    if req.exact is not None and req.exact.has_capacity:
                        raise AllocationError(
                            f"claim {claim.ref}, request {req.name}: has capacity requests, "
                            "but the DRAConsumableCapacity feature is disabled"
                        )
                    for sub in req.subrequests:
                        if sub.has_capacity:
                            raise AllocationError(
                                f"claim {claim.ref}, subrequest {sub.name}: has capacity requests, "
                                "but the DRAConsumableCapacity feature is disabled"
                            )
                if req.subrequests:
                    lowest: int | None = None
                    for si, sub in enumerate(req.subrequests):
                        rd = self._validate(ci, (ci, ri, si), sub, req.name)
                        self.data[(ci, ri, si)] = rd
                        lowest = rd.num_devices if lowest is None else min(lowest, rd.num_devices)
                    needed = lowest or 0
                else:
                    if req.exact is None:
                        raise AllocationError(
                            f"claim {claim.ref}, request {req.name}: neither exactly nor firstAvailable is set"
                        )
                    rd = self._validate(ci, (ci, ri, 0), req.exact, None)
                    self.data[(ci, ri, 0)] = rd
                    needed = rd.num_devices
                if needed > ALLOCATION_RESULTS_MAX_SIZE - min_devices:
                    raise AllocationError(
                        f"claim {claim.ref}, request {req.name}: adding {needed} devices exceeds the claim limit "
                        f"of {ALLOCATION_RESULTS_MAX_SIZE}, with {min_devices} already accounted for"
                    )
                min_devices += needed
            self.constraints.append(build_constraints(claim.ref, claim.constraints, f.ListTypeAttributes))

    def _validate(self, ci: int, key: tuple[int, int, int], request: Request, parent: str | None) -> RequestData:
        claim = self.claims[ci]
        if request.derived:
            raise AllocationError(
                f"claim {claim.ref}, request {request.name}: cannot handle request with derived attributes, "
                "the feature is disabled"
            )
        for i, sel in enumerate(request.selectors):
            if sel is None:
                raise AllocationError(
                    f"claim {claim.ref}, request {request.name}, selector #{i}: "
                    "CEL expression empty (unsupported selector type?)"
                )
        if not self.features.AdminAccess and request.admin_access is not None:
            raise AllocationError(
                f"claim {claim.ref}, request {request.name}: admin access is requested, but the feature is disabled"
            )
        if not request.class_name:
            raise AllocationError(
                f"claim {claim.ref}, request {request.name}: missing device class name (unsupported request type?)"
            )
        cls = self.classes.get(request.class_name)
        if cls is None:
            raise AllocationError(
                f"claim {claim.ref}, request {request.name}: could not retrieve device class {request.class_name}: "
                f'deviceclass.resource.k8s.io "{request.class_name}" not found'
            )
        rd = RequestData(request, parent, cls)
        if request.mode == "ExactCount":
            rd.num_devices = request.count
        elif request.mode == "All":
            rd.all_devices = []
            by_pool: dict[int, list[Candidate]] = {}
            for cand in self.candidates:
                by_pool.setdefault(id(cand.pool), []).append(cand)
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"claim {claim.ref}, request {request.name}: asks for all devices, "
                        f"but resource pool {pool.id} is currently being updated"
                    )
                if pool.invalid:
                    raise AllocationError(
                        f"claim {claim.ref}, request {request.name}: asks for all devices, "
                        f"but resource pool {pool.id} is currently invalid"
                    )
                for cand in by_pool.get(id(pool), ()):
                    if not self.selectable(key, rd, cand):
                        continue
                    if self.features.ConsumableCapacity:
                        # Upstream checks "all" devices against empty consumption, not the allocated state.
                        try:
                            fits = request_fits(
                                request, cand.device.capacity, None, None, self.features.FractionalCapacityRange
                            )
                        except AllocationError as err:
                            raise AllocationError(
                                f"claim {claim.ref}, request {request.name}: checking capacity for device "
                                f"{cand.device.name}: {err}"
                            ) from None
                        if not fits:
                            continue
                    rd.all_devices.append(cand)
            rd.num_devices = len(rd.all_devices)
        else:
            raise AllocationError(f"claim {claim.ref}, request {request.name}: unsupported count mode {request.mode}")
        return rd

    # -- device checks --------------------------------------------------------------------------------

    def selectable(self, key: tuple[int, int, int], rd: RequestData, cand: Candidate) -> bool:
        device = cand.device
        if not self.features.DeviceBindingAndStatus and device.binding_conditions:
            return False
        mk = (key, cand.index)
        hit = self.matches.get(mk)
        if hit is not None:
            return hit
        # Across calls, a (class, selectors) pair gives the same answer for the same device on this node.
        shared_key = (rd.device_class.name if rd.device_class else None, rd.request.selectors)
        shared: dict[int, bool] | None = self.view_cache.get(shared_key)
        if shared is None:
            shared = self.view_cache[shared_key] = {}
        hit = shared.get(cand.index)
        if hit is not None:
            self.matches[mk] = hit
            return hit
        driver = cand.slice.driver
        ok = True
        if rd.device_class is not None:
            ok = selectors_match(
                self.selectors, device, driver, cand.key, rd.device_class.selectors, f"class {rd.device_class.name}"
            )
        if ok:
            ok = selectors_match(
                self.selectors, device, driver, cand.key, rd.request.selectors, f"claim {self.claims[key[0]].ref}"
            )
        if ok and cand.slice.per_device_node_selection:
            ok = node_matches(self.node, device.node_name, device.all_nodes, device.node_selector)
        self.matches[mk] = ok
        shared[cand.index] = ok
        return ok

    def _fits(self, request: Request, cand: Candidate) -> bool:
        # Fast path: nothing requested, no policy, nothing consumed yet: the whole device fits.
        if (
            request.capacity is None
            and cand.device.plain_capacity
            and cand.key not in self.allocated.capacity
            and cand.key not in self.allocating_capacity
        ):
            return True
        return request_fits(
            request,
            cand.device.capacity,
            self.allocated.capacity.get(cand.key),
            self.allocating_capacity.get(cand.key),
            self.features.FractionalCapacityRange,
        )

    def capacity_fits(self, ci: int, request: Request, cand: Candidate) -> bool:
        """The capacity check before taking a device; a fatal capacity error names claim, request and device."""
        try:
            return self._fits(request, cand)
        except AllocationError as err:
            raise AllocationError(
                f"claim {self.claims[ci].ref}, request {request.name}: checking capacity for device "
                f"{'/'.join(cand.key)}: {err}"
            ) from None

    def in_use(self, key: DeviceKey) -> bool:
        return key in self.allocated.devices or bool(self.allocating.get(key))

    def capacity_in_use(self, key: DeviceKey) -> bool:
        if key in self.allocated.capacity or key in self.allocating_capacity:
            return True
        return any(k == key for k, _ in self.allocated.shared)

    def _available(self, pool: Pool) -> CounterSets:
        pool_id = (pool.driver, pool.name)
        got = self.available.get(pool_id)
        if got is None:
            got = self.available[pool_id] = available_counters(pool, self.allocated.is_allocated)
        return got

    def allocate_device(
        self, ci: int, key: tuple[int, int, int], cand: Candidate, must: bool
    ) -> Callable[[], None] | None:
        """Try to take `cand` for request `key`; the rollback on success, None when it does not fit.

        Every rejection after a partial reservation undoes it in reverse order (upstream `rollbackDevice`).
        """
        rd = self.data[key]
        request = rd.request
        device = cand.device
        dkey = cand.key
        f = self.features
        admin = bool(request.admin_access)
        multi = f.ConsumableCapacity and device.allow_multiple is True
        if not multi and admin and ci in self.allocating.get(dkey, ()):
            return None
        if not admin and self.in_use(dkey):
            return None
        # Upstream's experimental variant (chosen when list-type attributes are on) refuses devices whose
        # slice skips node operations unless DRAOptionalNodeOperations is on, which gpudra does not implement.
        if f.ListTypeAttributes and cand.slice.skips_node_operations:
            return None
        if not f.PartitionableDevices and device.consumes:
            return None
        pool_id = (cand.pool.driver, cand.pool.name)
        counters = False
        if device.consumes and not (multi and self.capacity_in_use(dkey)):
            if not self.ledger.take(pool_id, device, self._available(cand.pool)):
                return None
            counters = True
        base = rd.parent if rd.parent is not None else request.name
        sub = request.name if rd.parent is not None else ""
        driver = cand.slice.driver
        constraints = self.constraints[ci]
        added = 0
        marked = False
        inserted: dict[str, Consumed] | None = None
        existed = False
        results = self.results[ci]
        before = len(results)

        def rollback() -> None:
            del results[before:]
            if inserted is not None:
                into = self.allocating_capacity.get(dkey)
                if into is not None:
                    for name, (value, _) in inserted.items():
                        if name in into:
                            into[name] -= value
                    if all(v == 0 for v in into.values()):
                        del self.allocating_capacity[dkey]
                if existed and dkey not in self.allocating_capacity:
                    self.allocating_capacity[dkey] = {}
            if marked:
                self.allocating[dkey].discard(ci)
            for i in range(added - 1, -1, -1):
                constraints[i].remove(base, sub, device, driver)
            if counters:
                self.ledger.release(pool_id, device)

        if device.taints and f.DeviceTaints and taint_prevents(device, request):
            rollback()
            return None
        for con in constraints:
            if not con.add(base, sub, device, driver):
                # Cheap common case first: nothing but the constraints taken so far to undo.
                for i in range(added - 1, -1, -1):
                    constraints[i].remove(base, sub, device, driver)
                if counters:
                    self.ledger.release(pool_id, device)
                if must:
                    raise AllocationError(
                        f"claim {self.claims[ci].ref}, request {request.name}: cannot add device {'/'.join(dkey)} "
                        "because a claim constraint would not be satisfied"
                    )
                return None
            added += 1
        if not multi:
            self.allocating.setdefault(dkey, set()).add(ci)
            marked = True
        consumed: dict[str, Consumed] = {}
        share_id: str | None = None
        if f.ConsumableCapacity:
            try:
                fits = self._fits(request, cand)
            except AllocationError as err:
                rollback()
                raise AllocationError(
                    f"claim {self.claims[ci].ref}, request {request.name}: rechecking capacity for device "
                    f"{'/'.join(dkey)}: {err}"
                ) from None
            if not fits:
                rollback()
                return None
            if multi:
                consumed = consumed_capacity(request, device.capacity, f.FractionalCapacityRange)
                share_id = str(uuid.uuid4())
                existed = dkey in self.allocating_capacity
                into = self.allocating_capacity.setdefault(dkey, {})
                for name, (value, _) in consumed.items():
                    into[name] = into.get(name, 0) + value
                inserted = consumed
        results.append(DeviceResult(request, cand, share_id, consumed or None, admin))
        return rollback

    # -- the search ------------------------------------------------------------------------------------

    def run(self) -> bool:
        self.prepare()
        try:
            return self.allocate_one(0, 0, 0, 0, False, 0)
        except MaxSizeExceeded:
            return False

    def on_solution(self) -> bool:
        """Called with a complete allocation in `results`; True stops the search (upstream: first fit)."""
        return True

    def allocate_one(self, ci: int, ri: int, si: int, di: int, in_sub: bool, start: int) -> bool:
        self.steps += 1
        if ci >= len(self.claims):
            return self.on_solution()
        claim = self.claims[ci]
        if ri >= len(claim.requests):
            try:
                return self.allocate_one(ci + 1, 0, 0, 0, False, 0)
            except MaxSizeExceeded:
                return False
        key = (ci, ri, si)
        rd = self.data[key]
        if not in_sub and rd.parent is not None:
            all_exceeded = True
            sub_index = 0
            while (ci, ri, sub_index) in self.data:
                try:
                    ok = self.allocate_one(ci, ri, sub_index, di, True, 0)
                except MaxSizeExceeded:
                    sub_index += 1
                    continue
                all_exceeded = False
                if ok:
                    self.data[key].selected_sub = sub_index
                    return True
                sub_index += 1
            if all_exceeded:
                raise MaxSizeExceeded
            return False

        request = rd.request
        if request.mode == "All" and not rd.all_devices:
            return False
        if di >= rd.num_devices:
            return self.allocate_one(ci, ri + 1, 0, 0, False, 0)
        if len(self.results[ci]) + rd.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE:
            raise MaxSizeExceeded
        if request.mode == "All":
            assert rd.all_devices is not None
            undo = self.allocate_device(ci, key, rd.all_devices[di], True)
            if undo is None:
                return False
            try:
                done = self.allocate_one(ci, ri, si, di + 1, in_sub, 0)
            except MaxSizeExceeded:
                undo()
                raise
            if not done:
                undo()
            return done
        return self.iterate(ci, ri, si, di, in_sub, start, key, rd)

    def iterate(
        self, ci: int, ri: int, si: int, di: int, in_sub: bool, start: int, key: tuple[int, int, int], rd: RequestData
    ) -> bool:
        request = rd.request
        admin = bool(request.admin_access)
        capacity = self.features.ConsumableCapacity
        cands = self.candidates
        allocated = self.allocated.devices
        allocating = self.allocating
        flags = self.flags.get(key)
        if flags is None:
            flags = self.flags[key] = [None] * len(cands)
        for index in range(start, len(cands)):
            cand = cands[index]
            dkey = cand.key
            if admin:
                if ci in allocating.get(dkey, ()):
                    continue
            elif dkey in allocated or allocating.get(dkey):
                continue
            hit = flags[index]
            if hit is None:
                hit = flags[index] = self.selectable(key, rd, cand)
            if not hit:
                continue
            if capacity and not self.capacity_fits(ci, request, cand):
                continue
            undo = self.allocate_device(ci, key, cand, False)
            if undo is None:
                continue
            try:
                done = self.allocate_one(ci, ri, si, di + 1, in_sub, index + 1)
            except MaxSizeExceeded:
                undo()
                raise
            if done:
                return True
            undo()
        return False

    def explain(self) -> str:
        """A short reason for an unsatisfiable outcome: the first request short of free matching devices."""
        if not self.candidates:
            return "no resource pool with devices is available on this node"
        for (ci, _ri, _si), rd in self.data.items():
            claim = self.claims[ci]
            if rd.request.mode == "All":
                if not rd.all_devices:
                    return f"claim {claim.ref}, request {rd.name}: no device matches"
                continue
            try:
                free = sum(
                    1
                    for cand in self.candidates
                    if self.selectable((ci, _ri, _si), rd, cand)
                    and (rd.request.admin_access or not self.in_use(cand.key))
                )
            except AllocationError as err:
                return str(err)
            if free < rd.num_devices and rd.parent is None:
                return (
                    f"claim {claim.ref}, request {rd.name}: needs {rd.num_devices} device(s), "
                    f"{free} free device(s) match its class and selectors"
                )
        refs = ", ".join(c.ref for c in self.claims)
        return f"no combination of free devices satisfies all requests, counters and constraints of claim(s) {refs}"
