"""The admission decision cache: least recently used first out, bounded in entries and in bytes, thread-safe.

Entries are keyed by a digest of a review's inputs and weighed by the size of the JSON text the digest was taken of
plus what the decision itself holds (`Decision.held_bytes`: variables, claim, messages): a decision holds on to its
pod, and to the values its policies' expressions built. The byte bound is what keeps the webhook inside its memory
limit when large distinct pods arrive (250 pods with a 1 MB annotation took an entry-bounded cache past 500 MB), or
small pods whose policies build large values; one entry larger than a quarter of the budget is not cached at all.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["DecisionCache"]

V = TypeVar("V")


class DecisionCache(Generic[V]):
    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def weight(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            hit = self._entries.get(key)
            if hit is None:
                return None
            self._entries.move_to_end(key)
            return hit[0]

    def put(self, key: Hashable, value: V, weight: int) -> bool:
        """Store `value`; False when it is too large to cache (then nothing changes)."""
        if self.max_entries <= 0 or weight > self.max_bytes // 4:
            return False
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._entries[key] = (value, weight)
            self._bytes += weight
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped
        return True

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0
