"""Consumable capacity (KEP-5075): requestPolicy rounding and the over-capacity check.

Mirrors upstream's consumable_capacity.go: a capacity the request does not name consumes the policy default
(or the whole value without a policy); a named one is rounded up by `validRange` (min, step) or
`validValues`; a result that violates the policy, or that would overdraw the device, rejects it.
"""

from __future__ import annotations

import math
from fractions import Fraction

from dra.allocator._objects import Capacity, Request, binary_quantity

__all__ = ["Consumed", "consumed_capacity", "request_fits"]

# One consumed amount: the exact value and its quantity text as upstream would print it.
Consumed = tuple[Fraction, str]


def _ceil(value: Fraction) -> int:
    # resource.Quantity.Value() rounds up to the next integer.
    return math.ceil(value)


def _consumed(requested: Consumed | None, cap: Capacity) -> Consumed:
    if requested is None:
        if cap.default is not None:
            return cap.default
        return cap.value, cap.text
    if not cap.has_policy:
        return requested
    if cap.has_range and cap.range_min is not None:
        lo = cap.range_min
        if requested[0] < lo[0]:
            return lo
        if cap.range_step is None:
            return requested
        req, step, low = _ceil(requested[0]), _ceil(cap.range_step[0]), _ceil(lo[0])
        added = req - low
        n = int(added / step) if step else 0  # Go integer division truncates toward zero
        if step and added - n * step != 0:
            n += 1
        value = low + step * n
        return Fraction(value), binary_quantity(value)
    if cap.valid_values is not None:
        for v in cap.valid_values:
            if requested[0] <= v[0]:
                return v
    return requested


def _violates(value: Fraction, cap: Capacity) -> bool:
    if not cap.has_policy:
        return False
    # Upstream compares the Quantity structs; a value equal to the default passes.
    if cap.default is not None and value == cap.default[0]:
        return False
    if cap.has_range:
        if cap.range_max is not None and value > cap.range_max[0]:
            return True
        if cap.range_step is not None and cap.range_min is not None:
            step = _ceil(cap.range_step[0])
            added = _ceil(value) - _ceil(cap.range_min[0])
            return step != 0 and math.fmod(added, step) != 0
        return False
    if cap.valid_values:
        return all(value != v[0] for v in cap.valid_values)
    return False


def request_fits(
    request: Request,
    capacity: dict[str, Capacity],
    current: dict[str, Fraction] | None,
    allocating: dict[str, Fraction] | None,
) -> bool | None:
    """Upstream `CmpRequestOverCapacity`: True if it fits, False if not, None if the request names a
    capacity the device does not have (upstream: an error that skips the device)."""
    requests = request.capacity
    if requests:
        for name in requests:
            if name not in capacity:
                return None
    for name, cap in capacity.items():
        wanted = requests.get(name) if requests else None
        value = _consumed(wanted, cap)[0]
        if _violates(value, cap):
            return False
        total = value
        if current and name in current:
            total += current[name]
        if allocating and name in allocating:
            total += allocating[name]
        if total > cap.value:
            return False
    return True


def consumed_capacity(request: Request, capacity: dict[str, Capacity]) -> dict[str, Consumed]:
    """Upstream `GetConsumedCapacityFromRequest`: every capacity of the device with its consumed amount."""
    requests = request.capacity or {}
    return {name: _consumed(requests.get(name), cap) for name, cap in capacity.items()}
