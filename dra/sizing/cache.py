"""A least-recently-used cache bounded in bytes as well as entries, safe to share between threads.

Keys are digests, never the tenant's strings themselves, and each value is charged what it holds, so what the cache
keeps is bounded whatever the pods that filled it carried.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["ByteBoundedLRU"]

K = TypeVar("K")
V = TypeVar("V")


class ByteBoundedLRU(Generic[K, V]):
    """At most `max_entries` values whose `weigh`ed sizes add up to at most `max_bytes`; the least recently used go
    first. A value heavier than `max_bytes` alone is not kept."""

    def __init__(self, max_bytes: int, max_entries: int, weigh: Callable[[V], int]) -> None:
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._weigh = weigh
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            self._entries.move_to_end(key)
            return found[0]

    def put(self, key: K, value: V) -> None:
        weight = self._weigh(value)
        if weight > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._entries[key] = (value, weight)
            self._bytes += weight
            while self._bytes > self.max_bytes or len(self._entries) > self.max_entries:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    @property
    def bytes(self) -> int:
        """The weight of what is held now (at most `max_bytes`)."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)
