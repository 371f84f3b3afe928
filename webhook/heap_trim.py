"""Memory a burst of connections held goes back to the system once they are gone.

Each TLS connection holds read buffers of a few hundred kilobytes; when hundreds close, CPython frees them, but
glibc's allocator keeps the freed pages in the process (a heap grown past its trim threshold is only returned at its
top): measured, 280 half-sent bodies left two workers at 236 and 197 MiB 30 s later, against about 110 each before.
After the connection table has shrunk, `malloc_trim(0)` hands the free pages back. Elsewhere than glibc it does
nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from collections.abc import Callable

__all__ = ["HeapTrim"]

log = logging.getLogger("gpudra.webhook.heap_trim")

# Connections closed since the last trim before another is worth its cost (a few milliseconds on a large heap).
DEFAULT_CLOSED_BEFORE_TRIM = 32


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
    """Called periodically with the open connection count: trims once the table has shrunk by `closed` since the
    last trim (or since its peak)."""

    def __init__(self, open_connections: Callable[[], int], *, closed: int = DEFAULT_CLOSED_BEFORE_TRIM) -> None:
        self._open = open_connections
        self._closed = closed
        self._peak = 0
        self._trim = _malloc_trim()
        self.trims = 0

    def __call__(self) -> None:
        now = self._open()
        self._peak = max(self._peak, now)
        if self._peak - now < self._closed:
            return
        self._peak = now
        if self._trim is not None:
            self._trim(0)
            self.trims += 1
            log.debug("returned free heap pages after %d connections closed", self._closed)
