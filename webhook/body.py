"""Reading a request body within bounds: its size while it arrives, its time, and the bytes all bodies hold at once.

A body is read chunk by chunk: a `Content-Length` or a running total above the limit is refused (413) before the
rest is read, a body not complete within its deadline is refused (408), and every body holds a reservation in a
shared `BodyBudget` (its declared length up front, else each chunk as it comes) until its review is answered. When
the budget is spent a request waits, first come first served and without reading its body, for what it needs, as
long as its review's deadline allows; only then is it refused (503). The process never grows with slow clients:
a waiting request's body stays in the kernel and uvicorn's flow-controlled buffer.

Large bodies (above `large_body_bytes`) also take turns: `large_bodies` of them (default one) are read, parsed and
decided at a time in a process, the others wait unread in the same way (a body without a Content-Length that grows
past that size gets a turn at once or a 503: it would wait holding small-share bytes). Read side by side, each large
body costs the event loop a TLS read and a copy per 64 KiB, and the ordinary reviews on that loop wait behind all of
them: with 32 clients sending 2.5 MB reviews at once (issue 37 row 7), the ordinary pods' p99 through the API server
was ~125-138 ms with up to 12 large bodies in flight per process, 54 ms with two and 42 ms with one, and the 550
large reviews were answered sooner (6.0 s against 7.3 s).

A large body's turn, given back, rests before the next taker gets it (`BodyBudget.rest_after`: in proportion to how
long it was held, at most half a second), so that large bodies take at most `large_share` of a worker's time (a
quarter by default) and leave the rest of the machine to the API server and the ordinary reviews: with the turn free
at once, 32 clients sending 2.5 MB reviews back to back for 50 s kept about 1.4 of a 2-core machine's cores busy,
and the ordinary pods' p99 through the API server was 3.35-3.47x what it was without them; with a quarter,
1.26-1.73x (docs/webhook-reliability.md, row 7). The waiting bodies are not refused for it: they wait, unread,
within their deadline as before.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass

from starlette.requests import ClientDisconnect, Request

from dra.errors import GpudraError

__all__ = ["BodyBudget", "BodyLimits", "BodyRefused", "read_body"]

# Most pods are a few kB: bodies up to this size draw on their own share, so large bodies cannot shed them.
DEFAULT_LARGE_BODY_BYTES = 256 * 1024
DEFAULT_SMALL_SHARE_BYTES = 16 * 2**20
DEFAULT_LARGE_SHARE_BYTES = 32 * 2**20
DEFAULT_LARGE_BODIES = 1
DEFAULT_LARGE_SHARE = 0.25
# A turn that took longer than this (a stalled client) does not make the next one wait longer than this.
_MAX_LARGE_REST_SECONDS = 0.5
# The API server sends a whole review at once; only a stalled or hostile client takes seconds to send one.
DEFAULT_BODY_SECONDS = 10.0
_FIRST_CHUNK_SECONDS = 0.25


class BodyRefused(GpudraError):
    """The body was not read whole; `status` is the HTTP status to answer with (None: the client went away)."""

    def __init__(self, reason: str, status: int | None) -> None:
        self.reason = reason
        self.status = status
        # The body's first bytes, where a large body was refused before it was read (503): its review's uid is
        # there, for an answer the API server shows the pod's creator (webhook.review.sniff_uid).
        self.start = b""
        super().__init__(reason)


@dataclass(frozen=True)
class BodyLimits:
    max_bytes: int
    deadline_seconds: float = DEFAULT_BODY_SECONDS
    large_body_bytes: int = DEFAULT_LARGE_BODY_BYTES


class _Share:
    """A byte counter with a ceiling and a queue of those waiting for room; the event loop is its only user."""

    def __init__(self, name: str, capacity: int) -> None:
        if capacity <= 0:
            raise ValueError(f"the {name} body share must be above 0 bytes (got {capacity})")
        self.name = name
        self.capacity = capacity
        self.held = 0
        self._waiting: deque[tuple[int, asyncio.Future[None]]] = deque()

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def _busy(self, size: int, waited: float) -> BodyRefused:
        return BodyRefused(
            f"gpudra webhook is busy: {self.held} bytes of {self.name} request bodies are in flight and {size} more "
            f"would pass the limit of {self.capacity} (waited {waited:g} s); retry shortly",
            503,
        )

    async def take(self, size: int, wait_seconds: float) -> None:
        """Hold `size` more bytes, waiting up to `wait_seconds` behind earlier takers; BodyRefused (503) if not."""
        if size > self.capacity:
            raise self._busy(size, 0)
        if not self._waiting and self.held + size <= self.capacity:
            self.held += size
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        ticket = (size, granted)
        self._waiting.append(ticket)
        try:
            async with asyncio.timeout(max(0.0, wait_seconds)):
                await asyncio.shield(granted)  # the timeout must not cancel the grant itself: see _withdraw
        except TimeoutError:
            if self._withdraw(ticket):
                raise self._busy(size, wait_seconds) from None
        except BaseException:  # the request went away while it waited
            if not self._withdraw(ticket):
                self.give(size)
            raise

    def _withdraw(self, ticket: tuple[int, asyncio.Future[None]]) -> bool:
        """Leave the queue; False when the bytes were granted already (the taker then holds them)."""
        granted = ticket[1]
        if granted.done() and not granted.cancelled():
            return False
        granted.cancel()
        with contextlib.suppress(ValueError):
            self._waiting.remove(ticket)
        self._grant()  # a large taker leaving the head of the queue may let smaller ones through
        return True

    def give(self, size: int) -> None:
        self.held -= size
        self._grant()

    def _grant(self) -> None:
        while self._waiting:
            size, granted = self._waiting[0]
            if granted.cancelled():
                self._waiting.popleft()
                continue
            if self.held + size > self.capacity:
                return
            self._waiting.popleft()
            self.held += size
            granted.set_result(None)


class BodyBudget:
    """The bytes all bodies in flight may hold: small ones (up to `large_body_bytes`) and large ones apart; and how
    many large bodies may be in flight at once (`large_bodies`)."""

    def __init__(
        self,
        small_bytes: int = DEFAULT_SMALL_SHARE_BYTES,
        large_bytes: int = DEFAULT_LARGE_SHARE_BYTES,
        large_bodies: int = DEFAULT_LARGE_BODIES,
        large_share: float = DEFAULT_LARGE_SHARE,
    ) -> None:
        if large_bodies < 1:
            raise ValueError(f"at least one large body must be let in at a time (got {large_bodies})")
        if not 0 < large_share <= 1:
            raise ValueError(f"the large bodies' share of the time must be above 0 and at most 1 (got {large_share})")
        self.large_share = large_share
        self.small = _Share("small", small_bytes)
        self.large = _Share("large", large_bytes)
        self.large_bodies = large_bodies
        self._large_turns: asyncio.Semaphore | None = None  # made on first use, inside the serving loop
        self.large_in_flight = 0
        self.large_waiting = 0

    @property
    def held(self) -> int:
        return self.small.held + self.large.held

    async def take_large_turn(self, wait_seconds: float, large_body_bytes: int) -> None:
        """Wait, first come first served, up to `wait_seconds` for one of the `large_bodies` turns; BodyRefused (503)
        if none came."""
        if self._large_turns is None:
            self._large_turns = asyncio.Semaphore(self.large_bodies)
        self.large_waiting += 1
        try:
            async with asyncio.timeout(max(0.0, wait_seconds)):
                await self._large_turns.acquire()
        except TimeoutError:
            raise BodyRefused(
                f"gpudra webhook is busy with other large reviews (bodies above {large_body_bytes} bytes are read "
                f"and decided {self.large_bodies} at a time); not read within {wait_seconds:.3g} s, retry shortly",
                503,
            ) from None
        finally:
            self.large_waiting -= 1
        self.large_in_flight += 1

    def rest_after(self, held_seconds: float) -> float:
        """How long a large turn held `held_seconds` rests before the next taker gets it: large bodies then take at
        most `large_share` of the time, and a turn held long (a slow client) makes the next wait at most
        `_MAX_LARGE_REST_SECONDS`."""
        return min(max(0.0, held_seconds) * (1 / self.large_share - 1), _MAX_LARGE_REST_SECONDS)

    def give_large_turn(self, held_seconds: float = 0.0) -> None:
        """End a turn held `held_seconds`: the next taker gets it once the turn has rested long enough that large
        bodies keep to `large_share` of the time."""
        assert self._large_turns is not None
        self.large_in_flight -= 1
        rest = self.rest_after(held_seconds)
        if rest <= 0:
            self._large_turns.release()
        else:
            asyncio.get_running_loop().call_later(rest, self._large_turns.release)


class _Reservation:
    """What one body holds of the budget; it moves from the small to the large share when the body outgrows it."""

    def __init__(self, budget: BodyBudget, large_body_bytes: int) -> None:
        self._budget = budget
        self._threshold = large_body_bytes
        self._share: _Share | None = None
        self._large_turn = False
        self._turn_started = 0.0
        self.bytes = 0

    async def cover(self, size: int, wait_seconds: float) -> None:
        """Hold at least `size` bytes (and, above the large-body size, a large body's turn), waiting up to
        `wait_seconds` in all; raises BodyRefused (503) when the budget cannot."""
        if size <= self.bytes:
            return
        share = self._budget.large if size > self._threshold else self._budget.small
        if share is self._share:
            await share.take(size - self.bytes, wait_seconds)
        else:
            loop = asyncio.get_running_loop()
            until = loop.time() + wait_seconds
            if share is self._budget.large:
                # A body without a length outgrowing the small share does not wait for a turn while it holds small
                # bytes (a few such waiters would starve the ordinary reviews); the API server always sends a length.
                await self.take_large_turn(0.0 if self._share is not None else wait_seconds)
            await share.take(size, until - loop.time())
            self._give_bytes()
            self._share = share
        self.bytes = size

    async def take_large_turn(self, wait_seconds: float) -> None:
        """A large body's turn (once), waiting up to `wait_seconds`; raises BodyRefused (503) when none came."""
        if not self._large_turn:
            await self._budget.take_large_turn(wait_seconds, self._threshold)
            self._large_turn = True  # from here release() gives it back, whatever happens next
            self._turn_started = asyncio.get_running_loop().time()

    def _give_bytes(self) -> None:
        if self._share is not None:
            self._share.give(self.bytes)
        self._share = None
        self.bytes = 0

    def release(self) -> None:
        self._give_bytes()
        if self._large_turn:
            self._large_turn = False
            self._budget.give_large_turn(asyncio.get_running_loop().time() - self._turn_started)


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


async def _first_chunk(request: Request) -> bytes:
    """What uvicorn holds of the body already (at most its 64 KiB flow-control mark), or b"" if nothing comes soon."""
    with contextlib.suppress(ClientDisconnect, TimeoutError):
        async with asyncio.timeout(_FIRST_CHUNK_SECONDS):
            async for chunk in request.stream():
                return chunk
    return b""


@contextlib.asynccontextmanager
async def read_body(
    request: Request, limits: BodyLimits, budget: BodyBudget, *, wait_seconds: float = 0.0
) -> AsyncIterator[bytes]:
    """Yield the whole body; its bytes stay charged to `budget` until the block ends. A body that does not fit the
    budget waits up to `wait_seconds` for room (its review's deadline) before it is read. Raises BodyRefused."""
    reservation = _Reservation(budget, limits.large_body_bytes)
    loop = asyncio.get_running_loop()
    wait_until = loop.time() + wait_seconds
    try:
        declared = _declared_length(request, limits.max_bytes)
        if declared is not None:
            if declared > limits.large_body_bytes:
                try:
                    await reservation.take_large_turn(wait_seconds)
                except BodyRefused as refused:
                    refused.start = await _first_chunk(request)
                    raise
            await reservation.cover(declared, wait_until - loop.time())
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
                    await reservation.cover(size, wait_until - loop.time())
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
