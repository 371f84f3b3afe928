"""How a function's CPU cost grows with its input, measured on this thread's CPU clock (not the wall clock).

A wall-clock bound flakes on a loaded machine; this thread's CPU time barely moves with load, and a ratio between
two sizes of the same run cancels the machine's speed: linear work grows 4x from n to 4n, quadratic 16x.

The cyclic collector is off while a call is timed (and the heap collected before): in a long test run the process
holds the whole suite's objects, and a full collection that the larger call happens to trigger walks all of them,
which is the runner's cost, not the function's (a linear decision measured 8.04x in a full CI run once, ~5.5x alone).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

__all__ = ["cpu_seconds", "growth"]


def cpu_seconds(run: Callable[[], object], repeat: int = 3) -> float:
    """The least CPU time of this thread over `repeat` calls of `run` (the least: noise only ever adds), each with
    the cyclic collector off."""
    best = float("inf")
    was_enabled = gc.isenabled()
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            started = time.thread_time()
            run()
            best = min(best, time.thread_time() - started)
        finally:
            if was_enabled:
                gc.enable()
    return best


def growth(run: Callable[[int], object], n: int, factor: int = 4, repeat: int = 3) -> float:
    """CPU time of `run(factor * n)` over that of `run(n)`: about `factor` when linear, `factor**2` when quadratic."""
    small = cpu_seconds(lambda: run(n), repeat)
    large = cpu_seconds(lambda: run(factor * n), repeat)
    return large / max(small, 1e-6)
