"""Whole-run figures of one run of a sample, computed the same way for the real control plane and the model: when
each pod arrived, when it first ran (or that it had not by the cut), and how long it ran; both sides cut at the
same simulated second (the last arrival), so that a pod placed later, or never, counts as unplaced there."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dra.errors import InputError

from ..workload import SimPod

__all__ = ["PodRun", "figures", "model_runs", "pod_runs"]


@dataclass(frozen=True, slots=True)
class PodRun:
    """One pod of a run: its GPUs and requested GPU compute, arrival, the second it first ran (None: not by the
    cut) and how long it runs once started (None: to the end)."""

    name: str
    gpus: int
    request: float  # requested GPU compute in GPUs (`SimPod.gpu_request`)
    arrival: float
    start: float | None
    duration: float | None


def pod_runs(pods: Iterable[SimPod], starts: Mapping[str, float]) -> list[PodRun]:
    """`pods` with the second each first ran (`starts`, by pod name; absent: it never ran)."""
    return [
        PodRun(p.name, p.num_gpu if p.is_gpu else 0, p.gpu_request, p.arrival, starts.get(p.name), p.duration)
        for p in pods
    ]


def model_runs(pods: Iterable[SimPod], placed: set[str], waits: Mapping[str, float]) -> list[PodRun]:
    """`pods` as the simulator's run recorded them (`Recorder.placed` and `.waits`: the seconds before a pod first
    ran); pods the run never saw (the policies denied them) are left out, as the real runs never submit them."""
    chosen = [p for p in pods if p.name in waits]
    return pod_runs(chosen, {p.name: p.arrival + waits[p.name] for p in chosen if p.name in placed})


def figures(runs: list[PodRun], cut: float, total_gpus: int) -> dict[str, Any]:
    """The whole-run figures at `cut` (simulated seconds): `gpu_allocation` (requested GPUs of running pods over the
    cluster's GPUs, averaged over [first arrival, cut]), `pending_by_gpus` (GPUs per pod -> mean seconds from arrival
    to first run, a pod not running by the cut counting `cut - arrival`), `unplaced_pods` (pods arrived by the cut
    that had not run) and `unplaced_by_gpus` (every size
    of the sample, 0 for CPU pods). `InputError` for no pods, no GPUs, or a pod arriving after the cut."""
    if not runs:
        raise InputError("whole-run figures: no pods")
    if total_gpus < 1:
        raise InputError(f"whole-run figures: the cluster has no GPUs (total_gpus {total_gpus})")
    late = [r.name for r in runs if r.arrival > cut]
    if late:
        raise InputError(f"whole-run figures: pod {late[0]} arrives after the cut at {cut:g} s")
    first = min(r.arrival for r in runs)
    span = cut - first
    used = 0.0
    waits: dict[int, list[float]] = {}
    unplaced: dict[int, int] = dict.fromkeys(sorted({r.gpus for r in runs}), 0)  # every size, placed or not
    for run in runs:
        start = run.start if run.start is not None and run.start <= cut else None
        if run.gpus:
            waits.setdefault(run.gpus, []).append((cut if start is None else start) - run.arrival)
        if start is None:
            unplaced[run.gpus] += 1
            continue
        end = cut if run.duration is None else min(cut, start + run.duration)
        used += run.request * max(0.0, end - start)
    return {
        "gpu_allocation": round(used / (total_gpus * span), 6) if span > 0 else None,
        "pending_by_gpus": {str(g): round(sum(w) / len(w), 3) for g, w in sorted(waits.items())},
        "unplaced_pods": sum(unplaced.values()),
        "unplaced_by_gpus": {str(g): n for g, n in unplaced.items()},
    }
