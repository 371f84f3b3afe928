"""The FGD protocol's workload, as the peer simulator builds it (docs/simulator.md, "The peer simulator's protocol").

The trace is sorted by name and shuffled, then tuned to `ratio` x the cluster's GPU milli (the peer's `-tune
1.3`): draws with replacement from the original trace are appended, or random pods removed when the trace is
already above the target. Pods arrive in that order and never leave, so arrived demand sweeps 0 to 130 %.
"""

from __future__ import annotations

import random

from .workload import SimPod

__all__ = ["TUNE_RATIO", "inflate", "per_gpu_milli", "tuned_workload"]

TUNE_RATIO = 1.3


def per_gpu_milli(pod: SimPod) -> int:
    """GPU compute per GPU in milli (0 for CPU pods)."""
    return pod.gpu_milli if pod.is_gpu else 0


def _demand(pod: SimPod) -> int:
    return pod.num_gpu * pod.gpu_milli if pod.is_gpu else 0


def inflate(pods: list[SimPod], capacity_milli: int, rng: random.Random, ratio: float = TUNE_RATIO) -> list[SimPod]:
    """The peer's workload: sorted by name, shuffled, then tuned to `ratio` x `capacity_milli` of GPU demand.

    Below the target, draws with replacement from the original trace are appended while the next draw's
    per-GPU milli (the peer's test, not its total) keeps the demand within the target; above it, random pods
    are removed until it is within.
    """
    original = sorted(pods, key=lambda p: p.name)
    out = list(original)
    rng.shuffle(out)
    target = ratio * capacity_milli
    demand = sum(_demand(p) for p in out)
    if demand > target:
        while demand > target and out:
            demand -= _demand(out.pop(rng.randrange(len(out))))
        return out
    while original:
        pick = original[rng.randrange(len(original))]
        if demand + per_gpu_milli(pick) > target:
            break
        demand += _demand(pick)
        out.append(pick)
    return out


def tuned_workload(pods: list[SimPod], capacity_milli: int, seed: int, ratio: float = TUNE_RATIO) -> list[SimPod]:
    """The seed's tuned workload: the same for the peer's policies and for the engine's strategies."""
    return inflate(pods, capacity_milli, random.Random(seed), ratio)
