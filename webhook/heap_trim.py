"""Memory a burst of connections held goes back to the system once they are gone.

Each TLS connection holds read buffers of a few hundred kilobytes (asyncio's TLS protocol, uvicorn's body buffer,
OpenSSL's), and its objects hold one another in reference cycles, so only the cyclic collector frees them; after a
burst the server is quiet and young collections are rare (webhook.settled_heap), so nothing would. Once the connection
table has shrunk, a full collection frees them and `malloc_trim(0)` hands the free pages back (glibc keeps them
otherwise: a heap grown past its trim threshold is only returned at its top). Elsewhere than glibc the trim does
nothing. Measured (benchmarks/tenant_attacks.py --smoke --only half_sent_bodies --direct, 280 half-sent 2 MiB
bodies, two workers): 30 s after the attack the processes held 372 MiB against 240 before with the trim alone, and
268 MiB at once with the collection first.

What counts is how many connections ended (`ConnectionGate.ended`), not how far the table shrank between two polls:
through the API server a tenant's half-sent bodies are refused (403, webhook.review_sources) and reset within
milliseconds, so 140 connections a worker came and went between two polls with the table's size unchanged, no trim
ran, and young collections are rare (webhook.settled_heap): 30 s after the attack each worker still held all 170 of
its closed connections (GatedProtocol, transports, flow control, request cycles) and 12-25 MiB more than before.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
from collections.abc import Callable

__all__ = ["HeapTrim"]

log = logging.getLogger("gpudra.webhook.heap_trim")

# Connections closed since the last trim before another is worth its cost (a few milliseconds on a large heap): a
# burst of 32 clients of large reviews closes about 16 per worker.
DEFAULT_CLOSED_BEFORE_TRIM = 8


def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


class HeapTrim:
    """Called periodically with a count of connections ended so far (`ConnectionGate.ended`, only ever growing).
    Once `closed` connections have ended since the last trim, it collects and trims at the first poll that finds no
    more ended (the burst is over, so what its last connections held goes back too), or at once past eight times as
    many (a burst that goes on)."""

    def __init__(self, ended_connections: Callable[[], int], *, closed: int = DEFAULT_CLOSED_BEFORE_TRIM) -> None:
        if closed < 1:
            raise ValueError(f"closed must be at least 1 (got {closed})")
        self._ended = ended_connections
        self._closed = closed
        self._last = ended_connections()
        self._closed_since = 0
        self._trim = _malloc_trim()
        self.trims = 0

    def __call__(self) -> None:
        now = self._ended()
        if now < self._last:
            raise ValueError(f"the count of ended connections went back from {self._last} to {now}")
        ended = now - self._last
        self._last = now
        self._closed_since += ended
        if self._closed_since < self._closed or not (ended == 0 or self._closed_since >= 8 * self._closed):
            return
        closed, self._closed_since = self._closed_since, 0
        # A closed connection's objects (asyncio's TLS protocol and transport, uvicorn's protocol, their buffers and
        # OpenSSL's) hold one another in reference cycles: only the cyclic collector frees them, and on a server
        # gone quiet after the burst (webhook.settled_heap makes young collections rare) it would not run.
        gc.collect()
        self.trims += 1
        if self._trim is not None:
            self._trim(0)
            log.debug("returned free heap pages after %d connections closed", closed)
