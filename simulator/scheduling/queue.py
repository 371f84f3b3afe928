"""kube-scheduler v1.37.2's scheduling queue, as the replay engine drives it at one simulated instant at a time.

pkg/scheduler/backend/queue/scheduling_queue.go, active_queue.go, backoff_queue.go:
- activeQ is ordered by PrioritySort (higher `priority` first, then the earlier queue timestamp);
- a pod that fails goes to the unschedulable pods with one more attempt, its timestamp re-stamped to now
  (AddUnschedulableIfNotPresent);
- a cluster event that can help (a pod's resources or devices freed, a node back) moves them: to backoffQ while
  `timestamp + backoff` is ahead (backoff = initial * 2^(attempts-1), at most max: 1 s .. 10 s by default), else to
  activeQ; pods left unschedulable for 5 minutes are moved at the next event too (flushUnschedulablePodsLeftover);
- SchedulerPopFromBackoffQ (beta, on since 1.33): when activeQ is empty the scheduler pops backoffQ, earliest backoff
  expiry first (then PrioritySort), so backoff orders retries rather than delaying them.
Scheduling takes no simulated time, so every pod in activeQ and backoffQ is tried at the instant of the event.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field

from ..workload import SimPod

__all__ = ["FLUSH_UNSCHEDULABLE_AFTER", "SchedulingQueue"]

FLUSH_UNSCHEDULABLE_AFTER = 300.0  # scheduling_queue.go DefaultPodMaxInUnschedulablePodsDuration


@dataclass(slots=True)
class _Queued:
    pod: SimPod
    timestamp: float
    attempts: int = 0
    since: float = 0.0  # first arrival (for the recorder's waits)
    key: int = field(default=0)


class SchedulingQueue:
    """activeQ, backoffQ and the unschedulable pods; `pop` gives the next pod to try at `now`."""

    def __init__(self, initial_backoff: float = 1.0, max_backoff: float = 10.0) -> None:
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self._active: list[tuple[int, float, int, _Queued]] = []
        self._backoff: list[tuple[float, int, float, int, _Queued]] = []
        self._unschedulable: dict[int, _Queued] = {}
        self._keys = itertools.count()

    def __len__(self) -> int:
        return len(self._active) + len(self._backoff) + len(self._unschedulable)

    def backoff(self, attempts: int) -> float:
        """backoff_queue.go calculateBackoffDuration: initial << (attempts - 1), capped at max."""
        if attempts <= 0:
            return 0.0
        if attempts > 62:
            return self.max_backoff
        return min(self.max_backoff, self.initial_backoff * float(1 << (attempts - 1)))

    def add(self, pod: SimPod, now: float, since: float | None = None) -> None:
        """A new (or evicted) pod: straight to activeQ."""
        self._push_active(_Queued(pod, now, 0, now if since is None else since, next(self._keys)))

    def _push_active(self, item: _Queued) -> None:
        heapq.heappush(self._active, (-item.pod.priority, item.timestamp, item.key, item))

    def pop(self) -> _Queued | None:
        if self._active:
            return heapq.heappop(self._active)[3]
        if self._backoff:
            return heapq.heappop(self._backoff)[4]
        return None

    def failed(self, item: _Queued, now: float) -> None:
        """The pod did not fit: one more attempt, re-stamped, unschedulable until an event moves it."""
        item.attempts += 1
        item.timestamp = now
        self._unschedulable[item.key] = item

    def move_all(self, now: float) -> None:
        """A cluster event that may help every unschedulable pod (MoveAllToActiveOrBackoffQueue)."""
        for item in self._unschedulable.values():
            expiry = item.timestamp + self.backoff(item.attempts)
            if expiry > now:
                heapq.heappush(self._backoff, (expiry, -item.pod.priority, item.timestamp, item.key, item))
            else:
                self._push_active(item)
        self._unschedulable.clear()

    def flush_leftover(self, now: float) -> None:
        """Unschedulable pods waiting over 5 minutes go back to be tried (flushUnschedulablePodsLeftover)."""
        old = [k for k, item in self._unschedulable.items() if now - item.timestamp > FLUSH_UNSCHEDULABLE_AFTER]
        for key in old:
            self._push_active(self._unschedulable.pop(key))

    def waiting(self) -> list[tuple[SimPod, float]]:
        """Every queued pod with its first arrival, in no particular order."""
        items = [e[3] for e in self._active] + [e[4] for e in self._backoff] + list(self._unschedulable.values())
        return [(item.pod, item.since) for item in items]
