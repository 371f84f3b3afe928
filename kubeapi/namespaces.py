"""Namespace objects for admission, cached briefly and bounded (every GPU pod in a namespace asks for the same one).

A burst's first reviews in a namespace all miss at once: one of them reads it, the others wait for that read. Once
read, a namespace is renewed ahead: past `ttl` it is still handed out, for up to `stale_seconds` more, while one read
renews it in the background (kubeapi.refresh), so a steady stream of pods never waits for that read again.
(A watch over every namespace would serve them from memory, but needs list and watch on all namespaces, where one
read per namespace per `ttl` is what admission costs the API server now.)"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from dra.cancellation import check_deadline

from .errors import ApiServerError, ApiServerUnanswered
from .refresh import BackgroundRefresh, time_for_another_call
from .templates import TemplateWriter

__all__ = ["NamespaceCache"]

_WAIT_SLICE_SECONDS = 0.05


class _Read:
    """One Namespace read in progress; callers asking for the same name meanwhile wait for its outcome."""

    __slots__ = ("done", "read", "value", "error")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.read = False
        self.value: dict[str, Any] | None = None
        self.error: ApiServerError | None = None

    def outcome(self) -> dict[str, Any] | None:
        while not self.done.wait(_WAIT_SLICE_SECONDS):
            check_deadline()  # the review was answered at its deadline: stop waiting for it
        if self.read:
            return self.value
        if self.error is not None:
            raise type(self.error)(str(self.error))
        raise ApiServerUnanswered("the Namespace read this review waited for was abandoned")  # its caller's deadline


class NamespaceCache:
    """Namespace objects by name for `ttl` seconds; the rollout label of a namespace changes rarely. An entry between
    `ttl` and `ttl + stale_seconds` old is handed out as it is while one background read renews it (a failed renewal
    keeps it until then); an older one is read again before it is handed out, as a missing one is. Callers that
    waited for a read that got no answer (`ApiServerUnanswered`) ask once more rather than share its timeout, when
    their deadline leaves room for a whole read (`call_seconds`).

    Bounded by `max_entries` and by `max_bytes` of the objects' JSON text, least recently used out first: a review
    can name any namespace (one that does not exist included), so the cache must not grow with the names sent.
    """

    def __init__(
        self,
        writer: TemplateWriter,
        *,
        ttl: float = 10.0,
        stale_seconds: float = 10.0,
        max_entries: int = 4096,
        max_bytes: int = 8 * 2**20,
        renewals: BackgroundRefresh | None = None,
        clock: Callable[[], float] = time.monotonic,
        call_seconds: float = 2.0,
    ) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise ValueError(f"max_entries and max_bytes must be above 0 (got {max_entries}, {max_bytes})")
        if stale_seconds < 0:
            raise ValueError(f"stale_seconds must be 0 or more (got {stale_seconds})")
        self._writer = writer
        self._ttl = ttl
        self.stale_seconds = stale_seconds
        self.renewals = renewals or BackgroundRefresh(1, name="gpudra-namespace-renew")
        self._clock = clock
        self.call_seconds = call_seconds  # what bounds one read (KubeSideEffects.timeout)
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[float, dict[str, Any] | None, int]] = OrderedDict()
        self._bytes = 0
        self._reads: dict[str, _Read] = {}  # reads in progress, by name
        self._waiting = 0

    @property
    def waiting(self) -> int:
        """Callers waiting now for another caller's read."""
        return self._waiting

    @property
    def size(self) -> tuple[int, int]:
        """(entries, bytes) held now."""
        with self._lock:
            return len(self._entries), self._bytes

    def get(self, name: str) -> dict[str, Any] | None:
        asked_again = False
        while True:
            now = self._clock()
            with self._lock:
                hit = self._entries.get(name)
                if hit is not None and now - hit[0] < self._ttl + self.stale_seconds:
                    self._entries.move_to_end(name)
                    if now - hit[0] >= self._ttl and name not in self._reads:
                        self.renewals.submit(("namespace", name), lambda: self._renew(name))
                    return hit[1]
                read = self._reads.get(name)
                leader = read is None
                if read is None:
                    read = self._reads[name] = _Read()
            if leader:
                return self._read(name, read, now)
            with self._lock:
                self._waiting += 1
            try:
                return read.outcome()
            except ApiServerUnanswered:
                # The read this review waited for got no answer (its timeout): that says nothing about this review,
                # which asks once more, itself or behind another waiter, if its deadline leaves room for a whole
                # read; else it is refused with that read's reason.
                if asked_again or not time_for_another_call(self.call_seconds):
                    raise
                asked_again = True
            finally:
                with self._lock:
                    self._waiting -= 1

    def _renew(self, name: str) -> None:
        """A background read of an entry past its `ttl`; a review that finds it past `stale_seconds` meanwhile waits
        for this read instead of starting another."""
        with self._lock:
            if name in self._reads:
                return
            read = self._reads[name] = _Read()
        self._read(name, read, self._clock())

    def _read(self, name: str, read: _Read, now: float) -> dict[str, Any] | None:
        try:
            value = read.value = self._writer.get_namespace(name)
            read.read = True
        except ApiServerError as exc:
            read.error = exc
            raise
        finally:
            with self._lock:
                del self._reads[name]
            read.done.set()
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
