"""Exponential backoff for loops that retry the API server: a delay that doubles up to a cap after each failure,
jittered so that replicas do not retry in step, and back to the start after a success."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

__all__ = ["Backoff"]


@dataclass(slots=True)
class Backoff:
    """`next()` is the delay to wait after a failure (then the next one doubles, up to `maximum`); `reset()` after a
    success. `jitter` spreads each delay by +-jitter (0.2: 80% to 120%)."""

    initial: float
    maximum: float
    jitter: float = 0.0
    rng: random.Random = field(default_factory=random.Random)
    current: float = field(init=False)

    def __post_init__(self) -> None:
        if not 0 < self.initial <= self.maximum:
            raise ValueError(f"backoff needs 0 < initial <= maximum (got {self.initial}, {self.maximum})")
        if not 0 <= self.jitter < 1:
            raise ValueError(f"jitter must be in [0, 1) (got {self.jitter})")
        self.current = self.initial

    def next(self) -> float:
        delay = self.current
        self.current = min(self.current * 2, self.maximum)
        return delay * self.rng.uniform(1 - self.jitter, 1 + self.jitter) if self.jitter else delay

    def reset(self) -> None:
        self.current = self.initial
