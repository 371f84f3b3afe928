"""Consumable capacity (KEP-5075): requestPolicy rounding and the over-capacity check.

Mirrors upstream's consumable_capacity.go (1.37): a capacity the request does not name consumes the
policy default (or the whole value without a policy); a named one is rounded up by `validRange` (min,
step; in milli-units when DRAFractionalCapacityRange applies) or `validValues`; a result that violates
the policy, or that would overdraw the device, skips the device; an unrepresentable or negative amount
is a fatal error.
"""

from __future__ import annotations

import math
from fractions import Fraction

from dra.allocator._errors import AllocationError
from dra.allocator._objects import Amount, Capacity, Request, format_quantity

__all__ = ["Consumed", "consumed_capacity", "request_fits"]

# One consumed amount: the exact value and its quantity text as upstream would print it.
Consumed = tuple[Amount, str]
_MAX_INT64 = 2**63 - 1


def _exact(value: Fraction) -> Amount:
    return int(value) if value.denominator == 1 else value


def _milli(value: Amount) -> int | None:
    """`safeMilliValue`: the value in milli-units when that is exact, else None."""
    scaled = Fraction(value) * 1000
    return int(scaled) if scaled.denominator == 1 and abs(scaled) <= _MAX_INT64 else None


def _use_milli(cap: Capacity, fractional: bool) -> bool:
    if not fractional:
        return False
    for i, q in enumerate((cap.range_min, cap.range_max, cap.range_step)):
        if q is None:
            continue
        m = _milli(q[0])
        if m is None or (i == 2 and m < 1):
            return False
    return True


def _consumed(requested: Consumed | None, cap: Capacity, fractional: bool) -> Consumed:
    if requested is None:
        return cap.default if cap.default is not None else (cap.value, cap.text)
    if not cap.has_policy:
        return requested
    if cap.has_range and cap.range_min is not None:
        low = cap.range_min
        if requested[0] < low[0]:
            return low
        step = cap.range_step
        if step is None:
            return requested
        if _use_milli(cap, fractional):
            req_m = _milli(requested[0])
            if req_m is None:
                raise AllocationError(
                    "capacity request cannot be represented in the device's range arithmetic: "
                    f"request {requested[1]} is not a representable milli value"
                )
            step_m, min_m = math.ceil(step[0] * 1000), math.ceil(low[0] * 1000)
            n = _round_steps(req_m - min_m, step_m, min_m, requested[1])
            value = _exact(Fraction(min_m + step_m * n, 1000))
            return value, format_quantity(value, step[1])
        if requested[0] > _MAX_INT64:
            raise AllocationError(
                "capacity request cannot be represented in the device's range arithmetic: "
                f"request {requested[1]} exceeds MaxInt64"
            )
        req_i, step_i, min_i = math.ceil(requested[0]), math.ceil(step[0]), math.ceil(low[0])
        n = _round_steps(req_i - min_i, step_i, min_i, requested[1])
        value = min_i + step_i * n
        return value, format_quantity(value, step[1])
    if cap.valid_values is not None:
        for v in cap.valid_values:
            if requested[0] <= v[0]:
                return v
    return requested


def _round_steps(added: int, step: int, low: int, text: str) -> int:
    n = int(added / step) if step else 0  # Go's integer division truncates toward zero
    if step and added - n * step != 0:
        n += 1
    if low >= 0 and step and n > (_MAX_INT64 - low) // step:
        raise AllocationError(
            "capacity request cannot be represented in the device's range arithmetic: "
            f"rounding request {text} up to the next step passes the range"
        )
    return n


def _violates(value: Amount, cap: Capacity, fractional: bool) -> bool:
    if not cap.has_policy:
        return False
    # Upstream compares Quantity structs here; a value equal to the default passes.
    if cap.default is not None and value == cap.default[0]:
        return False
    if cap.has_range:
        if cap.range_max is not None and value > cap.range_max[0]:
            return True
        if cap.range_step is not None and cap.range_min is not None:
            if _use_milli(cap, fractional):
                req = _milli(value)
                if req is None:
                    return True
                step, low = math.ceil(cap.range_step[0] * 1000), math.ceil(cap.range_min[0] * 1000)
            else:
                req, step, low = math.ceil(value), math.ceil(cap.range_step[0]), math.ceil(cap.range_min[0])
            return step != 0 and math.fmod(req - low, step) != 0
        return False
    if cap.valid_values:
        return all(value != v[0] for v in cap.valid_values)
    return False


def request_fits(
    request: Request,
    capacity: dict[str, Capacity],
    current: dict[str, Amount] | None,
    allocating: dict[str, Amount] | None,
    fractional: bool,
) -> bool:
    """Upstream `CmpRequestOverCapacity`; raises `AllocationError` (message without context) when fatal."""
    requests = request.capacity
    if requests and any(name not in capacity for name in requests):
        return False
    consumed: dict[str, Amount] = {}
    for name, cap in capacity.items():
        try:
            value = _consumed(requests.get(name) if requests else None, cap, fractional)[0]
        except AllocationError as err:
            raise AllocationError(f'capacity "{name}": {err}') from None
        if value < 0:
            raise AllocationError(f'capacity "{name}": capacity value is negative')
        consumed[name] = value
    for name, cap in capacity.items():
        value = consumed[name]
        if _violates(value, cap, fractional):
            return False
        total = value
        if current and name in current:
            total += current[name]
        if allocating and name in allocating:
            total += allocating[name]
        if total > cap.value:
            return False
    return True


def consumed_capacity(request: Request, capacity: dict[str, Capacity], fractional: bool) -> dict[str, Consumed]:
    """Upstream `GetConsumedCapacityFromRequest`: every capacity of the device with its consumed amount."""
    requests = request.capacity or {}
    return {name: _consumed(requests.get(name), cap, fractional) for name, cap in capacity.items()}
