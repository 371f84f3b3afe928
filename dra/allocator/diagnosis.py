"""Why a claim is unsatisfiable: per failing request, the closest non-matching device and the check it failed.

Run only after a search has failed (lazily, when `Unsatisfiable.details` is first read), so it costs the success
path nothing and a caller that only counts failures (the simulator) nothing either. The diagnosis re-checks every
device of the node against every request on its own, in the order the allocator checks them:

    class selectors → request selectors → per-device node selection → taints → free → capacity → counters

and names the device that got furthest (ties: the smallest shortfall, then search order) with the check that
failed: the CEL text of the selector that was false, the capacity or counter that was short and by how much. When
every request has enough devices on its own, it looks at the claim's `matchAttribute` / `distinctAttribute`
constraints (the value that came closest) and otherwise says that the requests only fail together.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dra.allocator._errors import AllocationError
from dra.allocator._objects import Amount, Request, format_quantity
from dra.allocator.capacity import _consumed, _violates
from dra.allocator.constraints import lookup_attribute
from dra.allocator.pools import node_matches
from dra.allocator.requests import Candidate, RequestData, SelectorCompileError, SelectorRuntimeError
from dra.allocator.search import Search, taint_prevents

__all__ = ["DeviceCheck", "RequestDiagnosis", "diagnose", "request_diagnoses"]

Key = tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class DeviceCheck:
    """One device against one request: how many checks it passed and, if it failed one, which and by how much."""

    candidate: Candidate
    passed: int
    failure: str | None  # None: the device fits the request on its own
    shortfall: Fraction = Fraction(0)  # the missing share (0..1) of a capacity or counter, for ranking

    @property
    def device(self) -> str:
        return "/".join(self.candidate.key)


@dataclass(frozen=True, slots=True)
class RequestDiagnosis:
    """A request (or subrequest) short of devices that fit it on its own."""

    claim: str
    request: str
    needed: int
    fitting: int
    closest: DeviceCheck | None

    def text(self) -> str:
        head = f"claim {self.claim}, request {self.request}: needs {self.needed} device(s), {self.fitting} fit"
        if self.closest is None:
            return f"{head}; no device on this node to compare"
        c = self.closest
        return f"{head}; closest device {c.device} (passed {c.passed} check(s)): {c.failure}"


def _amount(value: Amount, like: str) -> str:
    try:
        return format_quantity(value, like)
    except Exception:  # a quantity text that does not parse cannot reach here; keep the message anyway
        return str(value)


def _fraction(short: Amount, needed: Amount) -> Fraction:
    return Fraction(short) / Fraction(needed) if needed else Fraction(1)


class _Checker:
    """Device-by-device checks against one fresh (prepared, nothing tentatively taken) search."""

    def __init__(self, search: Search) -> None:
        self.search = search

    def selector(self, cand: Candidate, expr: str | None, owner: str, index: int) -> str | None:
        if expr is None:
            return f"{owner} selector #{index} is not a CEL selector"
        try:
            if self.search.selectors.matches(cand.slice.driver, cand.device, expr):
                return None
        except SelectorCompileError as err:
            return f"{owner} selector #{index} does not compile: {err} (expression: {expr})"
        except SelectorRuntimeError as err:
            return f"{owner} selector #{index} fails on this device: {err} (expression: {expr})"
        return f"{owner} selector #{index} is false: {expr}"

    def check(self, rd: RequestData, cand: Candidate) -> DeviceCheck:
        s = self.search
        f = s.features
        device = cand.device
        request = rd.request
        passed = 0
        if not f.DeviceBindingAndStatus and device.binding_conditions:
            return DeviceCheck(cand, passed, "the device has binding conditions and DRADeviceBindingConditions is off")
        if not f.PartitionableDevices and device.consumes:
            return DeviceCheck(cand, passed, "the device consumes counters and DRAPartitionableDevices is off")
        if rd.device_class is not None:
            for i, expr in enumerate(rd.device_class.selectors):
                failure = self.selector(cand, expr, f"device class {rd.device_class.name}", i)
                if failure:
                    return DeviceCheck(cand, passed, failure)
                passed += 1
        for i, expr in enumerate(request.selectors):
            failure = self.selector(cand, expr, "request", i)
            if failure:
                return DeviceCheck(cand, passed, failure)
            passed += 1
        if cand.slice.per_device_node_selection:
            try:
                ok = node_matches(s.node, device.node_name, device.all_nodes, device.node_selector)
            except AllocationError as err:
                return DeviceCheck(cand, passed, f"its node selection is invalid: {err}")
            if not ok:
                return DeviceCheck(cand, passed, "the device is not usable from this node (per-device node selection)")
            passed += 1
        if device.taints and f.DeviceTaints and taint_prevents(device, request):
            taints = ", ".join(f"{k}={v}:{e}" if v else f"{k}:{e}" for k, v, e in device.taints)
            return DeviceCheck(cand, passed, f"the device has a taint the request does not tolerate ({taints})")
        passed += 1
        multi = f.ConsumableCapacity and device.allow_multiple is True
        if not request.admin_access and not multi and cand.key in s.allocated.devices:
            return DeviceCheck(cand, passed, "the device is already allocated to another claim")
        passed += 1
        if f.ConsumableCapacity:
            failure, short = self.capacity(request, cand)
            if failure:
                return DeviceCheck(cand, passed, failure, short)
        passed += 1
        if device.consumes and not (multi and s.capacity_in_use(cand.key)):
            failure, short = self.counters(cand)
            if failure:
                return DeviceCheck(cand, passed, failure, short)
        passed += 1
        return DeviceCheck(cand, passed, None)

    def capacity(self, request: Request, cand: Candidate) -> tuple[str | None, Fraction]:
        s = self.search
        capacity = cand.device.capacity
        for name, (_, asked) in (request.capacity or {}).items():
            if name not in capacity:
                return f"the device has no capacity {name!r} (the request asks for {asked})", Fraction(1)
        used = s.allocated.capacity.get(cand.key) or {}
        fractional = s.features.FractionalCapacityRange
        for name, cap in capacity.items():
            try:
                value, text = _consumed((request.capacity or {}).get(name), cap, fractional)
            except AllocationError as err:
                return f"capacity {name!r}: {err}", Fraction(1)
            if _violates(value, cap, fractional):
                return (
                    f"capacity {name!r}: the request rounds to {text}, which the device's requestPolicy does not allow",
                    Fraction(1),
                )
            left = cap.value - used.get(name, 0)
            if value > left:
                short = value - left
                return (
                    f"capacity {name!r} is short: needs {text}, {_amount(left, cap.text)} of "
                    f"{cap.text} left (short by {_amount(short, cap.text)})",
                    _fraction(short, value),
                )
        return None, Fraction(0)

    def counters(self, cand: Candidate) -> tuple[str | None, Fraction]:
        available = self.search._available(cand.pool)
        for set_name, counters in cand.device.consumes:
            left_in_set = available.get(set_name, {})
            for counter, value in counters:
                left = left_in_set.get(counter, 0)
                if value > left:
                    short = value - left
                    like = "1Gi" if set_name and "memory" in counter and value >= 2**20 else "1"
                    return (
                        f"counter {counter!r} of counter set {set_name!r} (pool {cand.pool.id}) is exhausted: "
                        f"the device consumes {_amount(value, like)}, {_amount(max(left, 0), like)} left "
                        f"(short by {_amount(short, like)})",
                        _fraction(short, value),
                    )
        return None, Fraction(0)


def _closest(checks: Iterable[DeviceCheck]) -> DeviceCheck | None:
    best: DeviceCheck | None = None
    for c in checks:
        if c.failure is None:
            continue
        if best is None or (-c.passed, c.shortfall) < (-best.passed, best.shortfall):
            best = c
    return best


def _fresh(failed: Search) -> Search:
    return Search(
        claims=failed.claims,
        node=failed.node,
        pools=failed.pools,
        candidates=failed.candidates,
        classes=failed.classes,
        allocated=failed.allocated,
        features=failed.features,
        selectors=failed.selectors,
        available=failed.available,
        view_cache=failed.view_cache,
    )


def request_diagnoses(failed: Search) -> list[RequestDiagnosis]:
    """Per (sub)request that too few devices fit on their own, the closest device: `diagnose`'s first part as data.

    A request in `All` mode counts as needing one device; constraints and shared use are not looked at."""
    search = _fresh(failed)
    search.prepare()
    checker = _Checker(search)
    out: list[RequestDiagnosis] = []
    for (ci, _, _), rd in search.data.items():
        checks = [checker.check(rd, cand) for cand in search.candidates]
        fitting = sum(1 for c in checks if c.failure is None)
        needed = 1 if rd.request.mode == "All" else rd.num_devices
        if fitting < needed:
            out.append(RequestDiagnosis(search.claims[ci].ref, rd.name, needed, fitting, _closest(checks)))
    return out


def diagnose(failed: Search, slice_nodes: Iterable[str] = ()) -> list[str]:
    """Lines that say why `failed` (a search that found no allocation) failed; empty when nothing more is known.

    `slice_nodes` are the node names the allocator's slices name, for the "no devices at all" case.
    """
    search = _fresh(failed)
    lines: list[str] = []
    node = search.node.name if search.node is not None else "(none)"
    bad_pools = [p for p in search.pools if p.incomplete or p.invalid]
    for p in bad_pools:
        if p.invalid:
            lines.append(f"resource pool {p.id} is invalid: {p.invalid_reason}")
        else:
            lines.append(f"resource pool {p.id} is incomplete (fewer slices than resourceSliceCount): it is not used")
    if not search.candidates:
        others = sorted(set(slice_nodes) - {node})
        text = f"no device on node {node}: no ResourceSlice with devices is usable from it"
        if others:
            text += f" (slices name node(s) {', '.join(others)})"
        lines.append(text)
        return lines
    try:
        search.prepare()
    except AllocationError as err:  # the failed search passed the same preparation; be safe anyway
        lines.append(str(err))
        return lines
    checker = _Checker(search)
    fits: dict[Key, list[Candidate]] = {}
    failing: list[tuple[Key, str]] = []
    alone_ok: dict[tuple[int, int], bool] = {}
    for key, rd in search.data.items():
        ci, ri, _ = key
        claim = search.claims[ci]
        checks = [checker.check(rd, cand) for cand in search.candidates]
        fitting = [c.candidate for c in checks if c.failure is None]
        fits[key] = fitting
        if rd.request.mode == "All":
            taken = [c for c in checks if c.failure == "the device is already allocated to another claim"]
            matching = len(fitting) + len(taken)
            ok = bool(fitting) and not taken
            if not ok:
                if taken:
                    failing.append(
                        (
                            key,
                            f"claim {claim.ref}, request {rd.name}: asks for all {matching} matching device(s), but "
                            f"{taken[0].device} is already allocated to another claim",
                        )
                    )
                else:
                    text = RequestDiagnosis(claim.ref, rd.name, 1, 0, _closest(checks)).text()
                    failing.append(
                        (key, text.replace("needs 1 device(s), 0 fit", "asks for all devices, none matches"))
                    )
        else:
            ok = len(fitting) >= rd.num_devices
            if not ok:
                diagnosis = RequestDiagnosis(claim.ref, rd.name, rd.num_devices, len(fitting), _closest(checks))
                failing.append((key, diagnosis.text()))
        alone_ok[(ci, ri)] = alone_ok.get((ci, ri), False) or ok
    # A firstAvailable request fails alone only when every subrequest does; report those requests only.
    lines.extend(line for (ci, ri, _), line in failing if not alone_ok[(ci, ri)])
    if any(not ok for ok in alone_ok.values()):
        return lines
    lines.extend(_constraints(search, fits))
    if not any(line.startswith("claim ") for line in lines):
        counts = ", ".join(
            f"{search.claims[ci].ref} {rd.name}: {len(fits[(ci, ri, si)])} fit, {rd.num_devices} needed"
            for (ci, ri, si), rd in search.data.items()
            if rd.request.mode != "All"
        )
        lines.append(
            "every request has enough fitting devices on its own"
            + (f" ({counts})" if counts else "")
            + "; together they exceed the shared counters or capacity, or need the same devices"
        )
    return lines


def _in_scope(names: frozenset[str], rd: RequestData) -> bool:
    if not names:
        return True
    if rd.parent is None:
        return rd.request.name in names
    return rd.parent in names or f"{rd.parent}/{rd.request.name}" in names


def _constraints(search: Search, fits: dict[Key, list[Candidate]]) -> list[str]:
    lines: list[str] = []
    for ci, claim in enumerate(search.claims):
        for raw in claim.constraints:
            names = frozenset(raw.get("requests") or ())
            attribute = raw.get("matchAttribute") or raw.get("distinctAttribute")
            if not attribute:
                continue
            # One entry per request in scope: for firstAvailable, the first subrequest that fits on its own.
            scoped: dict[int, Key] = {}
            for key, rd in search.data.items():
                if key[0] != ci or not _in_scope(names, rd) or rd.request.mode == "All":
                    continue
                if key[1] not in scoped or len(fits[scoped[key[1]]]) < search.data[scoped[key[1]]].num_devices:
                    scoped[key[1]] = key
            keys = list(scoped.values())
            if not keys:
                continue
            scope = ", ".join(search.data[k].name for k in keys)
            if raw.get("matchAttribute"):
                line = _match_attribute(search, fits, keys, attribute)
                if line:
                    lines.append(f"claim {claim.ref}, constraint matchAttribute {attribute} over {scope}: {line}")
            else:
                line = _distinct_attribute(search, fits, keys, attribute)
                if line:
                    lines.append(f"claim {claim.ref}, constraint distinctAttribute {attribute} over {scope}: {line}")
    return lines


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def _match_attribute(search: Search, fits: dict[Key, list[Candidate]], keys: list[Key], attribute: str) -> str | None:
    by_value: dict[Any, dict[Key, list[Candidate]]] = {}
    lacking: list[Candidate] = []
    for key in keys:
        for cand in fits[key]:
            attr = lookup_attribute(cand.device, cand.slice.driver, attribute)
            if attr is None:
                lacking.append(cand)
                continue
            for value in attr.values:
                by_value.setdefault((attr.kind, value), {}).setdefault(key, []).append(cand)
    needed = {k: search.data[k].num_devices for k in keys}
    best: tuple[int, Any] | None = None
    for value, per_key in by_value.items():
        if all(len(per_key.get(k, ())) >= needed[k] for k in keys) and sum(needed.values()) <= len(
            {c.key for cs in per_key.values() for c in cs}
        ):
            return None  # some value works on its own; the failure is elsewhere
        covered = sum(min(len(per_key.get(k, ())), needed[k]) for k in keys)
        if best is None or covered > best[0]:
            best = (covered, value)
    parts: list[str] = []
    if best is None:
        parts.append(f"no fitting device has the attribute {attribute}")
    else:
        per_key = by_value[best[1]]
        counts = ", ".join(f"{search.data[k].name} {len(per_key.get(k, ()))} of {needed[k]}" for k in keys)
        parts.append(
            f"no single value is shared by enough fitting devices; closest: {_value_text(best[1][1])} "
            f"({counts} device(s))"
        )
    if lacking:
        names = ", ".join(sorted({"/".join(c.key) for c in lacking})[:3])
        parts.append(f"{len({c.key for c in lacking})} fitting device(s) lack the attribute ({names})")
    return "; ".join(parts)


def _distinct_attribute(
    search: Search, fits: dict[Key, list[Candidate]], keys: list[Key], attribute: str
) -> str | None:
    values: set[Any] = set()
    lacking = 0
    for key in keys:
        for cand in fits[key]:
            attr = lookup_attribute(cand.device, cand.slice.driver, attribute)
            if attr is None:
                lacking += 1
                continue
            values.update((attr.kind, v) for v in attr.values)
    needed = sum(search.data[k].num_devices for k in keys)
    if len(values) >= needed:
        return None
    text = f"needs {needed} distinct value(s), the fitting devices have {len(values)}"
    if lacking:
        text += f" ({lacking} fitting device(s) lack the attribute)"
    return text
