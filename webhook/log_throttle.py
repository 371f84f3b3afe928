"""A flood of bad requests writes a bounded log: each message template at most a few lines a second.

uvicorn logs every request it cannot parse, and the app every refused review; a client that sends thousands a second
would otherwise write megabytes of log a second (measured: 1.5 MB in 11 s). Past the allowance a template's records
are counted, not written, and the next record written says how many were left out.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

__all__ = ["ThrottleFilter"]

_TEMPLATES_KEPT = 256


class ThrottleFilter(logging.Filter):
    """Pass at most `per_second` records of each message template (record.msg) per second, with a burst of as many."""

    def __init__(self, per_second: float = 5.0, *, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        if per_second <= 0:
            raise ValueError(f"per_second must be above 0 (got {per_second})")
        self.per_second = per_second
        self._clock = clock
        self._tokens: dict[str, tuple[float, float, int]] = {}  # template -> (tokens, stamp, left out since)

    def filter(self, record: logging.LogRecord) -> bool:
        template = str(record.msg)
        now = self._clock()
        tokens, stamp, dropped = self._tokens.get(template, (self.per_second, now, 0))
        tokens = min(self.per_second, tokens + (now - stamp) * self.per_second)
        if tokens < 1.0:
            self._remember(template, (tokens, now, dropped + 1))
            return False
        if dropped:
            record.msg = f"{record.msg} ({dropped} more like this left out of the log)"
        self._remember(template, (tokens - 1.0, now, 0))
        return True

    def _remember(self, template: str, state: tuple[float, float, int]) -> None:
        self._tokens[template] = state
        if len(self._tokens) > _TEMPLATES_KEPT:
            self._tokens.pop(next(iter(self._tokens)))
