"""Who may hold a connection: per-source budgets, and which connection goes first when the table is nearly full.

Every pod in the cluster can open connections to the webhook's Service, and with `failurePolicy: Fail` a full
connection table is an outage of GPU pod creation. The gate keeps one entry per TCP connection from its accept to its
close, in one of three states (a TLS handshake, idle between requests, busy with one), and knows which sources are
*trusted*: those that presented a client certificate the `--client-ca` signed, or had a review answered. The rules:

- a source that is not trusted may hold at most `per_source` connections and open at most `opens_per_second` new ones
  (a burst of `open_burst`); beyond that a new connection is refused at accept, before any TLS work;
- when the table reaches `max_connections - headroom`, each new connection first evicts one that is worth less:
  an idle untrusted connection of the source that holds the most, else any idle untrusted one, and only at the hard
  limit a busy untrusted one, then the oldest idle trusted one (which its client simply re-opens);
- at the hard limit with nothing to evict, the new connection is refused.

A trusted source's connections are never refused by a per-source rule: kube-apiserver opens one connection per
concurrent review (at most `--max-mutating-requests-inflight`, 200 by default), all from one address.
The gate is bookkeeping only; `webhook.connections` aborts what it names. The event loop is its only user.
"""

from __future__ import annotations

import enum
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["ConnectionGate", "Entry", "GateLimits", "GateStats", "State"]

# kube-apiserver's default --max-mutating-requests-inflight is 200: a cold API server may open that many connections
# before its first review is answered, so an untrusted source's cap stays above it.
DEFAULT_PER_SOURCE = 256
DEFAULT_MAX_CONNECTIONS = 512
_TRUSTED_SOURCES_KEPT = 64


class State(enum.Enum):
    HANDSHAKE = "handshake"
    IDLE = "idle"
    BUSY = "busy"


@dataclass(frozen=True)
class GateLimits:
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    per_source: int = DEFAULT_PER_SOURCE
    # New connections an untrusted source may open per second (token bucket): a TLS handshake costs the server about a
    # millisecond of CPU, so a source that re-opens without end would buy CPU with it.
    opens_per_second: float = 50.0
    open_burst: int = 256
    # Eviction starts this many connections below the hard limit, so a new connection from the API server finds room.
    headroom: int = 32

    def __post_init__(self) -> None:
        if self.max_connections < 1:
            raise ValueError(f"max_connections must be at least 1 (got {self.max_connections})")
        if self.per_source < 1:
            raise ValueError(f"per_source must be at least 1 (got {self.per_source})")
        if self.opens_per_second <= 0 or self.open_burst < 1:
            raise ValueError(
                f"opens_per_second must be above 0 and open_burst at least 1 "
                f"(got {self.opens_per_second}, {self.open_burst})"
            )
        if self.headroom < 0:
            raise ValueError(f"headroom must be 0 or more (got {self.headroom})")


@dataclass(eq=False)
class Entry:
    """One connection's standing; `abort` closes it at once, without reading anything more from it."""

    source: str
    abort: Callable[[], None]
    state: State = State.HANDSHAKE
    verified: bool = False  # presented a client certificate the --client-ca signed
    closed: bool = False


@dataclass
class GateStats:
    refused_per_source: int = 0
    refused_open_rate: int = 0
    refused_full: int = 0
    refused_tenant_pod: int = 0  # a source whose review was refused as a tenant pod's (webhook.review_sources)
    # Connections let in (each a TLS handshake behind it): what a client that re-opens instead of reusing costs.
    opened: int = 0
    evicted: dict[str, int] = field(default_factory=dict)  # by what was evicted: "untrusted-idle", ...


class _Bucket:
    __slots__ = ("tokens", "stamp")

    def __init__(self, tokens: float, stamp: float) -> None:
        self.tokens = tokens
        self.stamp = stamp


class ConnectionGate:
    """The connection table of one server process (see the module docstring for the rules)."""

    def __init__(self, limits: GateLimits | None = None, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits or GateLimits()
        self.stats = GateStats()
        self._clock = clock
        # Insertion order is the order to evict in: an entry is moved to the end whenever it changes state.
        self._entries: OrderedDict[Entry, None] = OrderedDict()
        self._per_source: dict[str, int] = {}
        self._trusted: OrderedDict[str, None] = OrderedDict()
        self._buckets: dict[str, _Bucket] = {}
        # Connections ended since start: closed, lost, aborted, or refused at accept. A count, not the table's size,
        # tells how many connections came and went between two looks (webhook.heap_trim): a burst refused as fast
        # as it arrives leaves the table's size unchanged.
        self.ended = 0

    def __len__(self) -> int:
        return len(self._entries)

    def held_by(self, source: str) -> int:
        return self._per_source.get(source, 0)

    def trusted(self, source: str) -> bool:
        return source in self._trusted

    def open(self, source: str, abort: Callable[[], None]) -> Entry | None:
        """A connection was accepted from `source`: its entry, or None when it must be refused (abort it)."""
        limits = self.limits
        if not self.trusted(source):
            if self.held_by(source) >= limits.per_source:
                self.stats.refused_per_source += 1
                self.ended += 1
                return None
            if not self._take_open_token(source):
                self.stats.refused_open_rate += 1
                self.ended += 1
                return None
        if len(self._entries) >= limits.max_connections - min(limits.headroom, limits.max_connections // 8):
            self._evict_one(hard=len(self._entries) >= limits.max_connections)
        if len(self._entries) >= limits.max_connections:
            self.stats.refused_full += 1
            self.ended += 1
            return None
        entry = Entry(source, abort)
        self.stats.opened += 1
        self._entries[entry] = None
        self._per_source[source] = self.held_by(source) + 1
        return entry

    def refuse_tenant_pod(self) -> None:
        """A connection from a source known as a tenant pod's address was reset at accept, with no entry."""
        self.stats.refused_tenant_pod += 1
        self.ended += 1

    def set_state(self, entry: Entry, state: State) -> None:
        if entry.closed:
            return
        entry.state = state
        self._entries.move_to_end(entry)

    def verify(self, entry: Entry) -> None:
        """The connection presented a client certificate the --client-ca signed: its source is trusted."""
        entry.verified = True
        self.trust(entry.source)

    def trust(self, source: str) -> None:
        """`source` had a review answered (or a verified certificate): no per-source caps, evicted last."""
        self._trusted[source] = None
        self._trusted.move_to_end(source)
        while len(self._trusted) > _TRUSTED_SOURCES_KEPT:
            self._trusted.popitem(last=False)
        self._buckets.pop(source, None)

    def close(self, entry: Entry) -> None:
        """The connection is gone (closed, lost or aborted); idempotent."""
        if entry.closed:
            return
        entry.closed = True
        self.ended += 1
        self._entries.pop(entry, None)
        left = self._per_source.get(entry.source, 0) - 1
        if left > 0:
            self._per_source[entry.source] = left
        else:
            self._per_source.pop(entry.source, None)
            bucket = self._buckets.get(entry.source)
            # A source with nothing open and a full bucket is forgotten, so the table of buckets stays small.
            if bucket is not None and self._refill(bucket) >= self.limits.open_burst:
                del self._buckets[entry.source]

    def _refill(self, bucket: _Bucket) -> float:
        now = self._clock()
        limits = self.limits
        bucket.tokens = min(float(limits.open_burst), bucket.tokens + (now - bucket.stamp) * limits.opens_per_second)
        bucket.stamp = now
        return bucket.tokens

    def _take_open_token(self, source: str) -> bool:
        bucket = self._buckets.get(source)
        if bucket is None:
            bucket = self._buckets[source] = _Bucket(float(self.limits.open_burst), self._clock())
        if self._refill(bucket) < 1.0:
            return False
        bucket.tokens -= 1.0
        return True

    def _evict_one(self, *, hard: bool) -> None:
        victim, kind = self._victim(hard=hard)
        if victim is None:
            return
        self.stats.evicted[kind] = self.stats.evicted.get(kind, 0) + 1
        self.close(victim)
        victim.abort()

    def _victim(self, *, hard: bool) -> tuple[Entry | None, str]:
        idle_untrusted = [
            e for e in self._entries if e.state is not State.BUSY and not e.verified and not self.trusted(e.source)
        ]
        if idle_untrusted:
            # The source holding the most connections gives first; within it, the one idle longest.
            largest = max(idle_untrusted, key=lambda e: self.held_by(e.source)).source
            return next(e for e in idle_untrusted if e.source == largest), "untrusted-idle"
        if not hard:
            return None, ""
        for entry in self._entries:
            if entry.state is State.BUSY and not entry.verified and not self.trusted(entry.source):
                return entry, "untrusted-busy"
        for entry in self._entries:
            if entry.state is State.IDLE:
                return entry, "trusted-idle"
        return None, ""
