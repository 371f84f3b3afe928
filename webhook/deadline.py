"""Policy decisions off the event loop, each bounded by a deadline below the API server's webhook timeout.

A review is CPU-bound Python; run inline, one slow review stalls every other review, `/healthz` and signal handling
for as long as it takes. Here each decision runs on one of a few daemon threads, and the request waits at most the
deadline: past it the review is answered (as a denial, see `webhook.app`) while the thread finishes in the
background. The threads are daemons so that a stuck decision never holds up process exit on SIGTERM, and there are a
fixed number of them so that stuck decisions cannot pile up threads: when all are busy, new reviews queue and are
answered at their own deadline.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["DeadlineExceeded", "DecisionPool"]

T = TypeVar("T")


class DeadlineExceeded(Exception):
    """The decision did not finish within the deadline (it may still be running)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"policy evaluation did not finish within {seconds:g} s")


_Job = tuple[Callable[[], Any], "concurrent.futures.Future[Any]"]


class DecisionPool:
    """`threads` daemon workers; `await pool.run(fn, deadline)` returns fn's result or raises DeadlineExceeded."""

    def __init__(self, threads: int = 4, *, name: str = "gpudra-decide") -> None:
        if threads < 1:
            raise ValueError(f"a decision pool needs at least one thread (got {threads})")
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
            fn, future = self._jobs.get()
            if not future.set_running_or_notify_cancel():
                continue  # its request gave up while it waited in the queue
            with self._lock:
                self._busy += 1
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to the awaiting request, which decides what it means
                future.set_exception(exc)
            finally:
                with self._lock:
                    self._busy -= 1

    async def run(self, fn: Callable[[], T], deadline_seconds: float) -> T:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._jobs.put((fn, future))
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout=deadline_seconds)
        except TimeoutError:
            future.cancel()  # drops it if still queued; a running one finishes unobserved
            raise DeadlineExceeded(deadline_seconds) from None
