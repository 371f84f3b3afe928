"""Cooperative cancellation: a deadline that long-running work checks at bounded intervals, and stops at.

Whoever runs work with a time limit (the webhook's decision pool) opens `deadline_scope(seconds)` around it; the
work calls `check_deadline()` between units (policies, containers, expressions; the CEL cost meter every few
thousand cost units), which raises `EvaluationCancelled` once the deadline has passed or `Deadline.cancel()` was
called. Outside a scope `check_deadline()` does nothing, so the CLI and the simulator run unbounded as before.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator

__all__ = ["Deadline", "EvaluationCancelled", "check_deadline", "current_deadline", "deadline_scope"]


class EvaluationCancelled(BaseException):
    """The work's deadline passed (or it was cancelled): it stops here, and nobody waits for its result.

    A `BaseException`, as `asyncio.CancelledError` is, so that no `except Exception` on the way (a library call
    converted into a CEL error, a policy's failurePolicy) turns a cancellation into an answer."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"stopped: its deadline of {seconds:g} s passed")


class Deadline:
    """A point in `time.monotonic()` time, or an explicit `cancel()`, after which `check()` raises."""

    __slots__ = ("at", "seconds", "_cancelled")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds
        self._cancelled = False

    def cancel(self) -> None:
        self._cancelled = True

    @property
    def expired(self) -> bool:
        return self._cancelled or time.monotonic() >= self.at

    def check(self) -> None:
        if self.expired:
            raise EvaluationCancelled(self.seconds)


_current: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar("gpudra_deadline", default=None)


def current_deadline() -> Deadline | None:
    """The deadline of the work running in this thread (context), if any."""
    return _current.get()


@contextlib.contextmanager
def deadline_scope(deadline: Deadline) -> Iterator[Deadline]:
    """Run the body under `deadline`: `check_deadline()` inside it raises once the deadline has passed."""
    token = _current.set(deadline)
    try:
        yield deadline
    finally:
        _current.reset(token)


def check_deadline() -> None:
    """Raise `EvaluationCancelled` when the current work's deadline has passed; nothing outside a scope."""
    deadline = _current.get()
    if deadline is not None and deadline.expired:
        raise EvaluationCancelled(deadline.seconds)
