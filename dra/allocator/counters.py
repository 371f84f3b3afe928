"""Partitionable devices (KEP-4815): shared counters left per pool and the tentative consumption of one run.

Available counters are a pool's counter sets minus what already-allocated devices consume (computed once
per pool and cached, keyed by (driver, pool)). A run's tentative consumption lives in `CounterLedger`; a
device fits when no counter of its pool is overdrawn afterwards.
"""

from __future__ import annotations

from collections.abc import Callable

from dra.allocator._objects import Amount, SliceDevice
from dra.allocator.pools import Pool

__all__ = ["CounterLedger", "available_counters"]

DeviceKey = tuple[str, str, str]
CounterSets = dict[str, dict[str, Amount]]


def available_counters(pool: Pool, is_allocated: Callable[[DeviceKey], bool]) -> CounterSets:
    """The pool's counters minus the consumption of every allocated device (may go negative)."""
    available = {name: dict(counters) for name, counters in pool.counter_sets.items()}
    for group in (pool.slices, pool.slices_not_targeting):
        for s in group:
            for d in s.devices:
                if not d.consumes or not is_allocated((s.driver, s.pool, d.name)):
                    continue
                for set_name, counters in d.consumes:
                    target = available.get(set_name)
                    if target is None:
                        continue
                    for counter, value in counters:
                        if counter in target:
                            target[counter] -= value
    return available


class CounterLedger:
    """Counters consumed by devices picked so far in one run, keyed by (driver, pool)."""

    __slots__ = ("consumed",)

    def __init__(self) -> None:
        self.consumed: dict[tuple[str, str], CounterSets] = {}

    def take(self, pool_name: tuple[str, str], device: SliceDevice, available: CounterSets) -> bool:
        """Add the device's consumption; if any counter of the pool is overdrawn, undo it and say False."""
        mine = self.consumed.setdefault(pool_name, {})
        for set_name, consumption in device.consumes:
            target = mine.setdefault(set_name, {})
            for counter, value in consumption:
                target[counter] = target.get(counter, 0) + value
        for set_name, left in available.items():
            used = mine.get(set_name)
            if used is None:
                if any(v < 0 for v in left.values()):
                    self.release(pool_name, device)
                    return False
                continue
            for counter, value in left.items():
                if value < used.get(counter, 0):
                    self.release(pool_name, device)
                    return False
        return True

    def release(self, pool_name: tuple[str, str], device: SliceDevice) -> None:
        mine = self.consumed.get(pool_name, {})
        for set_name, counters in device.consumes:
            target = mine.setdefault(set_name, {})
            for counter, value in counters:
                target[counter] = target.get(counter, 0) - value

    def remaining(self, pool_name: tuple[str, str], set_name: str, available: CounterSets) -> dict[str, Amount]:
        base = available.get(set_name, {})
        used = self.consumed.get(pool_name, {}).get(set_name, {})
        return {k: v - used.get(k, 0) for k, v in base.items()}
