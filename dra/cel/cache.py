"""Memoised selector results per distinct device.

The DRA `device` variable carries no device name, so devices with the same driver, attributes, capacities
and allowMultipleAllocations evaluate every selector identically. For the allocator:

    cache = SelectorCache()
    key = cache.key(value)            # once per device (when its slice is loaded): a small interned int
    cache.evaluate(program, key, value)   # evaluates each (program, key) pair once

`device_key(value)` is the underlying hashable identity of the CEL-visible content (any hashable key works
with `evaluate`; interned ints make hits cheapest). Errors are cached too and re-raised. A hit does not
re-check the cost limit: the same evaluation already ran within it.
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
    """(program, device key) → result; each program's table is cleared when it reaches `max_entries`."""

    def __init__(self, max_entries: int = 1_000_000) -> None:
        self.max_entries = max_entries
        self._tables: dict[int, dict[Hashable, tuple[bool, Any]]] = {}
        self._programs: dict[int, Program] = {}  # keeps programs alive so their id() is not reused
        self._keys: dict[Hashable, int] = {}
        self.hits = 0
        self.misses = 0

    def key(self, value: dict[str, Any]) -> int:
        """An interned small-int key for a device value: identical devices get the same int."""
        frozen = _freeze(value)
        found = self._keys.get(frozen)
        if found is None:
            found = self._keys[frozen] = len(self._keys)
        return found

    def evaluate(self, program: Program, key: Hashable, device: dict[str, Any], cost_limit: int | None = None) -> Any:
        """`program.evaluate({"device": device})`, once per (program, key)."""
        table = self._tables.get(id(program))
        if table is None:
            table = self._tables[id(program)] = {}
            self._programs[id(program)] = program
        found = table.get(key)
        if found is not None:
            self.hits += 1
            if found[0]:
                return found[1]
            raise found[1]
        self.misses += 1
        if len(table) >= self.max_entries:
            table.clear()
        try:
            value = program.evaluate({"device": device}, cost_limit)
        except CelRuntimeError as e:
            table[key] = (False, e)
            raise
        table[key] = (True, value)
        return value

    def clear(self) -> None:
        self._tables.clear()
        self._programs.clear()

    def __len__(self) -> int:
        return sum(len(t) for t in self._tables.values())
