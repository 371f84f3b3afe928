"""The plan's early stop: a probe's simulation ends as soon as it has provably missed the target's pending clauses.

A clause `pNN-pending <= X` over the workload's n GPU pods (nearest rank, as `plan_inputs.percentile` reads it: the
value at 0-based index k = ceil(NN/100 x n) - 1 of the sorted waits) is missed exactly when at least n - k of the
waits exceed X. A wait is known to exceed X before the run ends in two ways: the pod was placed after waiting more
than X, or, at the end of a time step `now`, it is still waiting and arrived more than X before `now` (it is placed
at `now` or later, or never: its wait is at least now - arrival). Both only accumulate, so once n - k pods are known
late the clause stays missed whatever the rest of the run does: stopping there changes no probe's met/missed and so
no answer of the search. A run that meets the target is never stopped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .plan_inputs import Target
from .workload import SimPod

__all__ = ["PendingStop"]


class PendingStop:
    """An engine `StopRule` that says stop once any pending clause of `target` is decided missed on `pods`."""

    def __init__(self, target: Target, pods: Sequence[SimPod]) -> None:
        count = len({p.name for p in pods if p.is_gpu})
        # per pending clause: (the wait limit X, how many late pods miss it)
        self.clauses = [
            (c.value, count - max(0, math.ceil(c.percentile / 100 * count) - 1))
            for c in target.conditions if c.metric == "pending" and count
        ]  # fmt: skip
        self.late = [0] * len(self.clauses)  # per clause: placed pods that waited more than its limit
        self.placed_names: set[str] = set()
        self.missed = False  # set when the rule stopped the run: the target is missed

    def placed(self, pod: SimPod, wait: float) -> None:
        """A pod's first placement, after `wait` seconds."""
        if not pod.is_gpu:
            return
        self.placed_names.add(pod.name)
        for i, (limit, _) in enumerate(self.clauses):
            if wait > limit:
                self.late[i] += 1

    def stop(self, now: float, waiting: Sequence[tuple[SimPod, float]]) -> bool:
        """Whether a clause is missed whatever happens after `now`, given the pods still waiting then (a pod's own
        arrival counts, not the time it was queued: a pod evicted and queued again was placed once already)."""
        if not any(late + len(waiting) >= needed for (_, needed), late in zip(self.clauses, self.late, strict=True)):
            return False  # not enough pods waiting to decide anything: skip the scan
        queued = [p for p, _ in waiting if p.is_gpu and p.name not in self.placed_names]
        for (limit, needed), late in zip(self.clauses, self.late, strict=True):
            if late + sum(1 for p in queued if now - p.arrival > limit) >= needed:
                self.missed = True
                return True
        return False
