"""GPU fragmentation as the FGD paper defines it (Weng et al., USENIX ATC'23, §4).

The *target workload* M is the pods' distribution over shapes (CPU, GPUs per pod, compute share per GPU,
allowed models) with popularity p_m. For a node n and a shape m, the free GPU compute that m cannot use is
a fragment: all of it when m needs no GPU, when n's GPU model is not allowed for m, when too few GPUs have
`gpu_milli` free, or when CPU is short; otherwise only the GPUs whose free share is below m's share.
F_n(M) = sum_m p_m F_n(m), which never exceeds the node's free GPU compute; the cluster's fragmentation
ratio is sum_n F_n(M) / sum_n free_n, in [0, 1]. FGD places a pod where F grows least.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from .workload import SimPod

__all__ = ["TypicalPod", "fgd_score", "frag_amount", "typical_pods"]


@dataclass(frozen=True, slots=True)
class TypicalPod:
    cpu_milli: int
    num_gpu: int
    gpu_milli: int
    models: tuple[str, ...]
    weight: float


def typical_pods(pods: list[SimPod], coverage: float = 0.95, include_cpu: bool = True) -> tuple[TypicalPod, ...]:
    """The most popular shapes covering `coverage` of the pods, weights renormalised to sum to 1."""
    counts = Counter(
        (p.cpu_milli, p.num_gpu if p.is_gpu else 0, p.gpu_milli if p.is_gpu else 0, p.gpu_models)
        for p in pods
        if include_cpu or p.is_gpu
    )
    total = sum(counts.values())
    if not total:
        return ()
    chosen: list[tuple[tuple[int, int, int, tuple[str, ...]], int]] = []
    covered = 0
    for shape, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if covered >= coverage * total:
            break
        chosen.append((shape, count))
        covered += count
    return tuple(TypicalPod(c, n, m, models, count / covered) for (c, n, m, models), count in chosen)


@lru_cache(maxsize=1 << 18)
def frag_amount(free_cpu: int, free_milli: tuple[int, ...], label: str, typical: tuple[TypicalPod, ...]) -> float:
    """F_n(M) in GPU milli for a node with `free_cpu`, per-GPU free compute `free_milli` and model `label`."""
    total = sum(free_milli)
    if total == 0:
        return 0.0
    out = 0.0
    for m in typical:
        if m.gpu_milli == 0 or (m.models and label not in m.models):
            out += m.weight * total
            continue
        usable = sum(1 for f in free_milli if f >= m.gpu_milli)
        if usable >= m.num_gpu and free_cpu >= m.cpu_milli:
            out += m.weight * sum(f for f in free_milli if f < m.gpu_milli)
        else:
            out += m.weight * total
    return out


def fgd_score(before: float, after: float) -> int:
    """FGD's node score for a move from fragmentation `before` to `after` (milli), as the peer simulator computes
    it: `int(sigmoid((before - after) / 1000) * 100)`, so moves within a point of each other tie."""
    return int(100 / (1 + math.exp((after - before) / 1000)))
