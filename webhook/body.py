"""Reading a request body within bounds: its size while it arrives, its time, and the bytes all bodies hold at once.

A body is read chunk by chunk: a `Content-Length` or a running total above the limit is refused (413) before the
rest is read, a body not complete within its deadline is refused (408), and every body holds a reservation in a
shared `BodyBudget` (its declared length up front, else each chunk as it comes) until its review is answered. When
the budget is spent the request is shed at once (503) instead of the process growing with every slow client.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from starlette.requests import ClientDisconnect, Request

from dra.errors import GpudraError

__all__ = ["BodyBudget", "BodyLimits", "BodyRefused", "read_body"]

# Most pods are a few kB: bodies up to this size draw on their own share, so large bodies cannot shed them.
DEFAULT_LARGE_BODY_BYTES = 256 * 1024
DEFAULT_SMALL_SHARE_BYTES = 16 * 2**20
DEFAULT_LARGE_SHARE_BYTES = 32 * 2**20
# The API server sends a whole review at once; only a stalled or hostile client takes seconds to send one.
DEFAULT_BODY_SECONDS = 10.0


class BodyRefused(GpudraError):
    """The body was not read whole; `status` is the HTTP status to answer with (None: the client went away)."""

    def __init__(self, reason: str, status: int | None) -> None:
        self.reason = reason
        self.status = status
        super().__init__(reason)


@dataclass(frozen=True)
class BodyLimits:
    max_bytes: int
    deadline_seconds: float = DEFAULT_BODY_SECONDS
    large_body_bytes: int = DEFAULT_LARGE_BODY_BYTES


class _Share:
    """A byte counter with a ceiling; the event loop is its only user, so it needs no lock."""

    def __init__(self, name: str, capacity: int) -> None:
        if capacity <= 0:
            raise ValueError(f"the {name} body share must be above 0 bytes (got {capacity})")
        self.name = name
        self.capacity = capacity
        self.held = 0

    def take(self, size: int) -> None:
        if self.held + size > self.capacity:
            raise BodyRefused(
                f"gpudra webhook is busy: {self.held} bytes of {self.name} request bodies are in flight and "
                f"{size} more would pass the limit of {self.capacity}; retry shortly",
                503,
            )
        self.held += size


class BodyBudget:
    """The bytes all bodies in flight may hold: small ones (up to `large_body_bytes`) and large ones apart."""

    def __init__(
        self,
        small_bytes: int = DEFAULT_SMALL_SHARE_BYTES,
        large_bytes: int = DEFAULT_LARGE_SHARE_BYTES,
    ) -> None:
        self.small = _Share("small", small_bytes)
        self.large = _Share("large", large_bytes)

    @property
    def held(self) -> int:
        return self.small.held + self.large.held


class _Reservation:
    """What one body holds of the budget; it moves from the small to the large share when the body outgrows it."""

    def __init__(self, budget: BodyBudget, large_body_bytes: int) -> None:
        self._budget = budget
        self._threshold = large_body_bytes
        self._share: _Share | None = None
        self.bytes = 0

    def cover(self, size: int) -> None:
        """Hold at least `size` bytes; raises BodyRefused (503) when the share cannot."""
        if size <= self.bytes:
            return
        share = self._budget.large if size > self._threshold else self._budget.small
        if share is self._share:
            share.take(size - self.bytes)
        else:
            share.take(size)
            self.release()
            self._share = share
        self.bytes = size

    def release(self) -> None:
        if self._share is not None:
            self._share.held -= self.bytes
        self._share = None
        self.bytes = 0


def _declared_length(request: Request, max_bytes: int) -> int | None:
    raw = request.headers.get("content-length")
    if raw is None:
        return None
    if not raw.isdigit():  # uvicorn already refuses most of these; a digit string is all HTTP allows
        raise BodyRefused(f"Content-Length {raw[:32]!r} is not a number of bytes", 400)
    size = int(raw)
    if size > max_bytes:
        raise BodyRefused(f"request body of {size} bytes exceeds the limit of {max_bytes} bytes", 413)
    return size


@contextlib.asynccontextmanager
async def read_body(request: Request, limits: BodyLimits, budget: BodyBudget) -> AsyncIterator[bytes]:
    """Yield the whole body; its bytes stay charged to `budget` until the block ends. Raises BodyRefused."""
    reservation = _Reservation(budget, limits.large_body_bytes)
    try:
        declared = _declared_length(request, limits.max_bytes)
        if declared is not None:
            reservation.cover(declared)
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(limits.deadline_seconds):
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > limits.max_bytes:
                        raise BodyRefused(
                            f"request body passed the limit of {limits.max_bytes} bytes while being read", 413
                        )
                    reservation.cover(size)
                    chunks.append(chunk)
        except TimeoutError:
            raise BodyRefused(
                f"request body not received within {limits.deadline_seconds:g} s ({size} bytes arrived)", 408
            ) from None
        except ClientDisconnect:
            raise BodyRefused("client disconnected before sending the whole body", None) from None
        body = b"".join(chunks)
        chunks.clear()  # one copy of the body while it is parsed, not two
        yield body
    finally:
        reservation.release()
