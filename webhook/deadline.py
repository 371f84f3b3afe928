"""Policy decisions off the event loop, each bounded by a deadline below the API server's webhook timeout.

A review is CPU-bound Python; run inline, one slow review stalls every other review, `/healthz` and signal handling
for as long as it takes. Here each decision runs on one of a few daemon threads, and the request waits at most the
deadline: past it the review is answered (as a denial, see `webhook.app`) and the work stops: each job runs under a
`dra.cancellation` deadline that the policy engine and the CEL runtime check at bounded intervals (between
policies, containers and expressions, and every few thousand CEL cost units), so the thread is free again within
about a millisecond and raises `EvaluationCancelled` into a future nobody waits for. The threads are daemons so
that a decision stuck outside those checks never holds up process exit on SIGTERM, and there are a fixed number of
them: when all are busy, new reviews queue and are answered at their own deadline.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from dra.cancellation import Deadline, EvaluationCancelled, deadline_scope

__all__ = ["DeadlineExceeded", "DecisionPool", "EvaluationCancelled"]

T = TypeVar("T")


class DeadlineExceeded(Exception):
    """The decision did not finish within the deadline (it may still be running)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"policy evaluation did not finish within {seconds:g} s")


_Job = tuple[Callable[[], Any], asyncio.AbstractEventLoop, "asyncio.Future[Any]", Deadline, float]


def _expire(future: asyncio.Future[Any], deadline: Deadline) -> None:
    """On the loop, at the deadline: the request is answered `DeadlineExceeded` now, a job still queued is dropped
    (its future is done), and one running stops at its next deadline check."""
    deadline.cancel()  # the clock says so too; this also stops one whose deadline the loop saw first
    if not future.done():
        future.set_exception(DeadlineExceeded(deadline.seconds))


def _settle(future: asyncio.Future[Any], result: Any, failure: BaseException | None) -> None:
    """On the loop: the job's outcome to its request, unless the request stopped waiting (deadline, disconnect)."""
    if future.done():
        return
    if failure is None:
        future.set_result(result)
    else:
        future.set_exception(failure)


class DecisionPool:
    """`threads` daemon workers; `await pool.run(fn, deadline)` returns fn's result or raises DeadlineExceeded."""

    def __init__(
        self, threads: int = 4, *, name: str = "gpudra-decide", on_wait: Callable[[float], object] | None = None
    ) -> None:
        """`on_wait`, if given, is told how long each job waited for a thread (seconds), on that thread: a queue
        behind threads held by something slow shows there first (issue 41's steady load)."""
        if threads < 1:
            raise ValueError(f"a decision pool needs at least one thread (got {threads})")
        self._on_wait = on_wait
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._busy = 0
        self._lock = threading.Lock()
        self.threads = threads
        for i in range(threads):
            threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True).start()

    @property
    def busy(self) -> int:
        """Decisions running now (stuck ones included)."""
        return self._busy

    def _work(self) -> None:
        while True:
            fn, loop, future, deadline, queued = self._jobs.get()
            if self._on_wait is not None:
                self._on_wait(time.perf_counter() - queued)
            # Its request gave up while it waited in the queue. Reading the loop's future from this thread is a
            # read of one attribute; a request that gives up just after it only finds its outcome dropped.
            if future.done():
                continue
            with self._lock:
                self._busy += 1
            failure: BaseException | None = None
            result: Any = None
            try:
                with deadline_scope(deadline):
                    deadline.check()  # expired while queued: nobody waits for it any more
                    result = fn()
            except EvaluationCancelled:  # an Exception for the waiter (asyncio must not see a BaseException)
                failure = DeadlineExceeded(deadline.seconds)
            except BaseException as exc:  # handed to the awaiting request, which decides what it means
                failure = exc
            with self._lock:  # free before the outcome is seen, so a waiter that sees it finds the thread free
                self._busy -= 1
            # Straight to the loop, one wake-up: a concurrent.futures.Future wrapped for asyncio costs a lock, a
            # condition and a callback chain more (about 30 us of CPU per decision with one request at a time).
            try:
                loop.call_soon_threadsafe(_settle, future, result, failure)
            except RuntimeError:  # the loop has closed: nobody waits for this outcome
                pass
            del fn, loop, future, deadline, result, failure, queued

    async def run(self, fn: Callable[[], T], deadline_seconds: float) -> T:
        """fn's result, run on a pool thread under a `deadline_seconds` deadline (from now); past it,
        `DeadlineExceeded` here while fn, at its next deadline check, stops with `EvaluationCancelled`."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        deadline = Deadline(deadline_seconds)
        self._jobs.put((fn, loop, future, deadline, time.perf_counter()))
        expiry = loop.call_later(deadline_seconds, _expire, future, deadline)
        try:
            return await future
        finally:
            expiry.cancel()
