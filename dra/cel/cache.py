"""Memoised selector results per distinct device.

The DRA `device` variable carries no device name, so devices with the same driver, attributes, capacities
and allowMultipleAllocations evaluate every selector identically. `device_key(value)` is a hashable identity of
that CEL-visible content; compute it once per device (e.g. when a slice is loaded) and pass it to
`SelectorCache.evaluate(program, key, value)`, which evaluates each (program, key) pair once. Errors are
cached too and re-raised. Costs are not re-checked on a hit (the same evaluation already passed the limit).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from dra.cel.env import Program
from dra.errors import CelRuntimeError

__all__ = ["SelectorCache", "device_key"]


def _freeze(v: Any) -> Hashable:
    if isinstance(v, dict):
        return ("m", tuple(sorted(((str(k), _freeze(x)) for k, x in v.items()), key=lambda kv: kv[0])))
    if isinstance(v, list):
        return ("l", tuple(_freeze(x) for x in v))
    # type name first: True, 1 and 1.0 must stay distinct devices; library values by their canonical text
    return (type(v).__name__, v if isinstance(v, (bool, int, float, str, bytes)) or v is None else str(v))


def device_key(value: dict[str, Any]) -> Hashable:
    """A hashable identity of a `device_value(...)` map: equal exactly when CEL cannot tell them apart."""
    return _freeze(value)


class SelectorCache:
    """(program, device key) → result, bounded by `max_entries` (cleared wholesale when full)."""

    def __init__(self, max_entries: int = 1_000_000) -> None:
        self.max_entries = max_entries
        self._results: dict[tuple[int, Hashable], tuple[bool, Any]] = {}
        self._programs: dict[int, Program] = {}  # keeps programs alive so their id() is not reused
        self.hits = 0
        self.misses = 0

    def evaluate(self, program: Program, key: Hashable, device: dict[str, Any], cost_limit: int | None = None) -> Any:
        """`program.evaluate({"device": device})`, once per (program, key)."""
        slot = (id(program), key)
        found = self._results.get(slot)
        if found is not None:
            self.hits += 1
            ok, value = found
            if ok:
                return value
            raise value
        self.misses += 1
        if len(self._results) >= self.max_entries:
            self._results.clear()
        self._programs[id(program)] = program
        try:
            value = program.evaluate({"device": device}, cost_limit)
        except CelRuntimeError as e:
            self._results[slot] = (False, e)
            raise
        self._results[slot] = (True, value)
        return value

    def clear(self) -> None:
        self._results.clear()
        self._programs.clear()

    def __len__(self) -> int:
        return len(self._results)
