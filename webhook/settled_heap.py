"""The worker's start-up heap set aside from the cyclic collector, and young collections made rarer, once it serves.

After start-up (modules, compiled policies, the warm-up decision) a worker holds a few hundred thousand objects
that live as long as it does, and CPython's collector walks them all at every full collection, several times a
second under a burst. Reviews themselves leave no reference cycles (the policy engine's evaluations are freed by
refcount), so collections find next to nothing. `SettledHeap.start` collects once, moves what survives into the
permanent generation (`gc.freeze`) and raises the young generation's threshold from 700 to `YOUNG_THRESHOLD`
allocations; the older generations keep their defaults, and the byte-paced full collections of
`webhook.collector` still bound what large reviews leave behind. Measured with `benchmarks/admission.py
--workers 2` (quiet 2-core machine, 3 runs each way, same session): server CPU per unique /mutate 553-568 ->
507-522 us, its p99 45-63 -> 34-39 ms, and 36-47 -> 10-14 ms for replicas of one pod.

A policy set that was replaced leaves a few hundred objects in reference cycles (compiled programs), which a
frozen heap would keep for good: `resettle`, run by the policy reloader after a reload, unfreezes, collects and
freezes again (one full collection per policy change).

Process-wide settings: the first start in a process changes them and the last stop puts back what was there (an
in-process test can run several apps).
"""

from __future__ import annotations

import gc
import threading

__all__ = ["YOUNG_THRESHOLD", "SettledHeap"]

YOUNG_THRESHOLD = 10_000

_lock = threading.Lock()
_active = 0
_previous: tuple[int, int, int] | None = None


class SettledHeap:
    """A webhook.app BackgroundService; list it after the services whose start-up objects it should set aside."""

    def __init__(self, young_threshold: int = YOUNG_THRESHOLD) -> None:
        if young_threshold <= 0:
            raise ValueError(f"young_threshold must be above 0 (got {young_threshold})")
        self.young_threshold = young_threshold
        self._started = False

    def start(self) -> None:
        global _active, _previous
        with _lock:
            if self._started:
                return
            self._started = True
            _active += 1
            if _active == 1:
                _previous = gc.get_threshold()
                gc.collect()
                gc.freeze()
                _young, middle, old = _previous
                gc.set_threshold(self.young_threshold, middle, old)

    def resettle(self) -> None:
        """Collect what the frozen heap holds that is garbage now (a replaced policy set), then freeze again."""
        with _lock:
            if not self._started:
                return
            gc.unfreeze()
            gc.collect()
            gc.freeze()

    def stop(self, timeout: float = 0.0) -> None:
        global _active, _previous
        with _lock:
            if not self._started:
                return
            self._started = False
            _active -= 1
            if _active == 0 and _previous is not None:
                gc.unfreeze()
                gc.set_threshold(*_previous)
                _previous = None
