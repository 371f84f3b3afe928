"""API reads and writes that renew what the admission path remembers, run off that path.

The webhook remembers Namespaces and ensured ResourceClaimTemplates for a few seconds. When an entry's time was up,
the next review made the API call itself and every review needing the same entry waited for it on a decision thread:
under a steady 150 pods/s, kube-apiserver took 0.6 s for the Namespace read and 1.3 s for the template call, every
decision thread waited, and the reviews behind them queued for those 1.9 s, every ten seconds (issue 41). An entry
past its time but still usable is now handed out while one renewal runs here, in the background.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable

from dra.cancellation import current_deadline

from .errors import ApiServerError

__all__ = ["SPARE_SECONDS", "BackgroundRefresh", "time_for_another_call"]

log = logging.getLogger("gpudra.kubeapi.refresh")


# Left over after a second call, before the review's deadline: its answer is still to be encoded, sent and read by the
# API server, on a machine that may be loaded (tests/e2e/test_webhook_faults_e2e.py wants it a second early).
SPARE_SECONDS = 1.0


def time_for_another_call(call_seconds: float) -> bool:
    """Whether the current work's deadline (`dra.cancellation`) leaves room for one more API call bounded by
    `call_seconds` and SPARE_SECONDS more: a review that waited for a call that got no answer asks again only then,
    so that whatever it gets (the object, or the API server's own reason) still comes well before its deadline, never
    the deadline's bare timeout. True outside a deadline scope."""
    deadline = current_deadline()
    if deadline is None:
        return True
    return not deadline.expired and deadline.at - time.monotonic() > call_seconds + SPARE_SECONDS


class BackgroundRefresh:
    """Renewals by key on `threads` daemon threads (started on first use): at most one per key queued or running.

    A renewal's failure is logged and dropped: its owner keeps what it had until that stops being usable."""

    def __init__(self, threads: int = 2, *, name: str = "gpudra-refresh") -> None:
        if threads < 1:
            raise ValueError(f"a background refresh needs at least one thread (got {threads})")
        self.threads = threads
        self.name = name
        self._cond = threading.Condition()
        self._queue: list[tuple[Hashable, Callable[[], None]]] = []
        self._pending: set[Hashable] = set()  # queued or running
        self._started = 0

    def submit(self, key: Hashable, renew: Callable[[], None]) -> bool:
        """Queue `renew` unless a renewal of `key` is queued or running; whether it was queued."""
        with self._cond:
            if key in self._pending:
                return False
            self._pending.add(key)
            self._queue.append((key, renew))
            if self._started < self.threads:
                threading.Thread(target=self._work, name=f"{self.name}-{self._started}", daemon=True).start()
                self._started += 1
            self._cond.notify_all()  # a worker, and not only a wait_idle waiter
        return True

    def pending(self, key: Hashable) -> bool:
        with self._cond:
            return key in self._pending

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing is queued or running (tests); whether that happened within `timeout` seconds."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._pending, timeout)

    def _work(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._queue))
                key, renew = self._queue.pop(0)
            try:
                renew()
            except ApiServerError as exc:  # the owner keeps its entry (or forgets it); a later use asks again
                log.warning("background renewal of %r failed: %s", key, exc)
            except Exception:  # a bug: with its traceback
                log.exception("background renewal of %r failed", key)
            finally:
                with self._cond:
                    self._pending.discard(key)
                    self._cond.notify_all()
