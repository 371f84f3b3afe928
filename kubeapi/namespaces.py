"""Namespace objects for admission, cached briefly and bounded (every GPU pod in a namespace asks for the same one)."""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from typing import Any

from .templates import TemplateWriter

__all__ = ["NamespaceCache"]


class NamespaceCache:
    """Namespace objects by name for `ttl` seconds; the rollout label of a namespace changes rarely.

    Bounded by `max_entries` and by `max_bytes` of the objects' JSON text, least recently used out first: a review
    can name any namespace (one that does not exist included), so the cache must not grow with the names sent.
    """

    def __init__(
        self, writer: TemplateWriter, *, ttl: float = 10.0, max_entries: int = 4096, max_bytes: int = 8 * 2**20
    ) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise ValueError(f"max_entries and max_bytes must be above 0 (got {max_entries}, {max_bytes})")
        self._writer = writer
        self._ttl = ttl
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[float, dict[str, Any] | None, int]] = OrderedDict()
        self._bytes = 0

    @property
    def size(self) -> tuple[int, int]:
        """(entries, bytes) held now."""
        with self._lock:
            return len(self._entries), self._bytes

    def get(self, name: str) -> dict[str, Any] | None:
        now = time.monotonic()
        with self._lock:
            hit = self._entries.get(name)
            if hit is not None and now - hit[0] < self._ttl:
                self._entries.move_to_end(name)
                return hit[1]
        value = self._writer.get_namespace(name)
        weight = len(name) + len(json.dumps(value, separators=(",", ":"), default=str))
        with self._lock:
            old = self._entries.pop(name, None)
            if old is not None:
                self._bytes -= old[2]
            if weight <= self.max_bytes:
                self._entries[name] = (now, value, weight)
                self._bytes += weight
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                _, (_, _, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped
        return value
