"""Alternatives the allocator can never choose: whenever one of their devices is free, an earlier one is too.

kube-scheduler's allocator tries `firstAvailable` alternatives in order on every node it filters, evaluating the
class's and the request's CEL selectors on each device it passes (k8s.io/dynamic-resource-allocation v0.37.2,
structured/internal/incubating: `isSelectable` caches per alternative, not across them). An alternative that cannot
win still costs a full scan of the node's devices each time the ones before it fail there, which on a node with
dynamic MIG is every one of its ~200 partitions. Dropping such an alternative changes no allocation; it only saves
the scans.

Alternative B (one device) is *redundant* on a shape when every device d_B it can take has a device d_A that an
earlier one-device alternative A can take, with d_A = d_B, or d_A and d_B drawing on the same pool's counters such
that d_A needs no counter d_B does not need in at least the same amount, and they cannot both be allocated (some
shared counter is too small for both). Then, in any state: d_B free means d_A is not allocated (they exclude each
other) and the counters left cover d_A's (they cover d_B's), so A allocates wherever B would. A claim with
constraints, devices shared between claims, capacity requests or admin access is left alone: there, which device
an alternative takes matters beyond whether it is free.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dra.allocator import AllocationError, Allocator, Candidate

__all__ = ["redundant_alternatives"]

Usage = dict[tuple[str, str], Any]  # (counter set, counter) -> amount


Target = tuple[str, str, Allocator]  # shape key, the node name its empty copy uses, an allocator over it


def redundant_alternatives(
    devices: Mapping[str, Any], fitting: Mapping[str, tuple[tuple[str, ...], ...]], targets: Iterable[Target]
) -> tuple[str, ...]:
    """`request/alternative` refs that are redundant on every target shape.

    `fitting[request]` gives, per alternative in order, the keys of shapes it allocates on alone; an alternative that
    fits nowhere is not considered here (the satisfiability check drops it) and never stands in for a later one."""
    if devices.get("constraints"):
        return ()
    listed = list(targets)
    out: list[str] = []
    for raw in devices.get("requests") or []:
        subs = raw.get("firstAvailable") or []
        name = str(raw.get("name", ""))
        fits = fitting.get(name, ())
        if len(fits) != len(subs) or sum(1 for f in fits if f) < 2:
            continue
        for index in _redundant(name, subs, fits, listed):
            out.append(f"{name}/{subs[index].get('name', '')}")
    return tuple(out)


def _single(sub: Mapping[str, Any]) -> bool:
    """One whole device, exclusively: the only kind of alternative the argument above covers."""
    mode = sub.get("allocationMode") or "ExactCount"
    count = sub.get("count", 1)
    return mode == "ExactCount" and count == 1 and not sub.get("capacity") and not sub.get("adminAccess")


def _redundant(
    name: str, subs: list[Mapping[str, Any]], fits: tuple[tuple[str, ...], ...], targets: list[Target]
) -> list[int]:
    request = {"name": name, "firstAvailable": subs}
    claim = {"metadata": {"name": "redundancy"}, "spec": {"devices": {"requests": [request]}}}
    usable: list[dict[str, list[Candidate]]] = [{} for _ in subs]  # alternative -> shape key -> devices it can take
    for key, node, allocator in targets:
        try:
            devices = allocator.selectable_devices(claim, node=node)
        except AllocationError:
            return []
        for si, sub in enumerate(subs):
            if key in fits[si] and _single(sub):
                usable[si][key] = devices.get(f"{name}/{sub.get('name', '')}", [])
    tolerations = [sub.get("tolerations") or [] for sub in subs]
    redundant: list[int] = []
    for b in range(1, len(subs)):
        if not fits[b] or not _single(subs[b]):
            continue
        earlier = [a for a in range(b) if fits[a] and _single(subs[a]) and tolerations[a] == tolerations[b]]
        if earlier and all(
            _covered(d_b, [d for a in earlier for d in usable[a].get(key, ())])
            for key in fits[b]
            for d_b in usable[b].get(key, ())
        ):
            redundant.append(b)
    return redundant


def _covered(d_b: Candidate, candidates: list[Candidate]) -> bool:
    """Some candidate is free whenever `d_b` is."""
    if d_b.device.allow_multiple or d_b.device.binding_conditions:
        return False
    b_use = _usage(d_b)
    for d_a in candidates:
        if d_a is d_b or d_a.key == d_b.key:
            return True
        if d_a.device.allow_multiple or d_a.device.binding_conditions or d_a.pool is not d_b.pool:
            continue
        a_use = _usage(d_a)
        if a_use and _within(a_use, b_use) and _exclusive(a_use, b_use, d_a.pool.counter_sets):
            return True
    return False


def _usage(candidate: Candidate) -> Usage:
    return {
        (counter_set, counter): amount
        for counter_set, counters in candidate.device.consumes
        for counter, amount in counters
    }


def _within(a_use: Usage, b_use: Usage) -> bool:
    return all(key in b_use and amount <= b_use[key] for key, amount in a_use.items())


def _exclusive(a_use: Usage, b_use: Usage, counter_sets: Mapping[str, Mapping[str, Any]]) -> bool:
    for (counter_set, counter), amount in a_use.items():
        capacity = (counter_sets.get(counter_set) or {}).get(counter)
        if capacity is not None and capacity < amount + b_use[(counter_set, counter)]:
            return True
    return False
