"""The FGD paper's evaluation protocol as its own simulator runs it, for the node-scoring baselines.

Semantics read from hkust-adsl/kubernetes-scheduler-simulator (docs/simulator.md, "The peer simulator's
protocol and baselines"): the trace sorted by name and shuffled, tuned to 1.3 x the cluster's GPU milli by
appending draws with replacement; pods arrive once, never leave, and fail when nothing fits; each policy's
integer node score, ties to a random but fixed node rank per seed; the allocation ratio at X % arrived demand
is the mean over the pod events whose rounded arrived share is X. No code is taken from there.

Implemented here: Random, DotProd, GpuClustering, GpuPacking, BestFit. FGD is not yet peer-exact (its
fragmentation gradient runs in `simulator.strategies`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from .cluster import ClusterSpec
from .workload import SimPod

__all__ = ["PEER_POLICIES", "PeerRun", "inflate", "run_peer"]

MILLI = 1000
MAX_CPU = 128_000  # the peer's MaxSpecCpu: node CPU is normalised by it
MAX_GPU = 8_000  # the peer's MaxSpecGpu: 8 GPUs
TUNE_RATIO = 1.3
PEER_POLICIES = ("random", "dotprod", "gpuclustering", "gpupacking", "bestfit")
LOADS = (80, 100, 130)

Ints = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class _Pod:
    cpu: int
    mem: int
    num: int
    milli: int  # per GPU; 0 for CPU pods
    models: tuple[str, ...]


def _shape(pod: SimPod) -> _Pod:
    gpu = pod.is_gpu
    return _Pod(pod.cpu_milli, pod.memory_mib, pod.num_gpu if gpu else 0, pod.gpu_milli if gpu else 0, pod.gpu_models)


def _gpu_milli(pod: SimPod) -> int:
    shape = _shape(pod)
    return shape.num * shape.milli


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
    demand = sum(_gpu_milli(p) for p in out)
    if demand > target:
        while demand > target and out:
            demand -= _gpu_milli(out.pop(rng.randrange(len(out))))
        return out
    while original:
        pick = original[rng.randrange(len(original))]
        if demand + _shape(pick).milli > target:
            break
        demand += _gpu_milli(pick)
        out.append(pick)
    return out


@dataclass(slots=True)
class PeerRun:
    """One seed: per pod event the arrived and used GPU milli (both over the cluster's) and the failures so far."""

    policy: str
    seed: int
    capacity_milli: int
    arrived: list[int] = field(default_factory=list)
    used: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)

    def alloc_pct_at(self, load: int) -> float | None:
        """The peer's value: mean of round(used %, 2) over events with round(arrived %) == load (±1 if none)."""
        cap = self.capacity_milli / 100
        pairs = [(round(a / cap), round(u / cap, 2)) for a, u in zip(self.arrived, self.used, strict=True)]
        values = [u for a, u in pairs if a == load] or [u for a, u in pairs if load - 1 <= a <= load + 1]
        return round(sum(values) / len(values), 2) if values else None


class _Nodes:
    """The cluster as arrays: CPU, memory and per-GPU milli left, GPU-pod tags, and each node's rank."""

    def __init__(self, cluster: ClusterSpec, rng: random.Random) -> None:
        specs = sorted(cluster.nodes, key=lambda n: n.name)
        width = max([n.gpu_count for n in specs] + [1])
        self.count = len(specs)
        self.cpu: Ints = np.array([n.cpu_milli for n in specs], dtype=np.int64)
        self.mem: Ints = np.array([n.memory_mib for n in specs], dtype=np.int64)
        self.gpus: Ints = np.array([n.gpu_count for n in specs], dtype=np.int64)
        self.models = [n.model_label for n in specs]
        self.left: Ints = np.zeros((self.count, width), dtype=np.int64)  # absent GPUs stay 0: they never fit
        for i, n in enumerate(specs):
            self.left[i, : n.gpu_count] = MILLI
        self.tags: Ints = np.zeros((self.count, width + 1), dtype=np.int64)  # 0: share-gpu, k: k-gpu pods
        self.rank: Ints = np.array(rng.sample(range(self.count), self.count), dtype=np.int64)
        self._model_masks: dict[tuple[str, ...], npt.NDArray[np.bool_]] = {}

    def feasible(self, pod: _Pod) -> Ints:
        ok = (self.cpu >= pod.cpu) & (self.mem >= pod.mem)
        if pod.num:
            ok &= self._model_mask(pod.models) & ((self.left >= pod.milli).sum(axis=1) >= pod.num)
        return np.nonzero(ok)[0]

    def _model_mask(self, models: tuple[str, ...]) -> npt.NDArray[np.bool_]:
        mask = self._model_masks.get(models)
        if mask is None:
            mask = np.array(
                [g > 0 and (not models or m in models) for g, m in zip(self.gpus, self.models, strict=True)]
            )
            self._model_masks[models] = mask
        return mask

    def place(self, i: int, pod: _Pod, gpus: list[int]) -> None:
        self.cpu[i] -= pod.cpu
        self.mem[i] -= pod.mem
        for g in gpus:
            self.left[i, g] -= pod.milli
        if pod.num:
            self.tags[i, 0 if pod.milli < MILLI else pod.num] += 1


def _score(nodes: _Nodes, idx: Ints, pod: _Pod, policy: str) -> Ints:
    left = nodes.left[idx]
    total = left.sum(axis=1)
    if policy == "dotprod":
        dot = (nodes.cpu[idx] / MAX_CPU) * (pod.cpu / MAX_CPU) + (total / MAX_GPU) * (pod.num * pod.milli / MAX_GPU)
        return np.asarray((1.0 - dot / 2) * 100, dtype=np.int64)  # truncation toward zero, as Go's int64()
    if policy == "bestfit":
        raw = (nodes.cpu[idx] - pod.cpu) / MAX_CPU * 0.5 + (total - pod.num * pod.milli) / MAX_GPU * 0.5
        score: Ints = np.asarray((1.0 - raw) * 100, dtype=np.int64)
        low, high = int(score.min()), int(score.max())
        return (score - low) * 100 // (high - low) if high > low else np.zeros_like(score)
    if not pod.num:  # GpuClustering and GpuPacking give CPU pods 0 everywhere
        return np.zeros(len(idx), dtype=np.int64)
    if policy == "gpuclustering":
        tag = 0 if pod.milli < MILLI else pod.num
        base = 25 * (MAX_GPU - total) // MAX_GPU
        kinds = (nodes.tags[idx] > 0).sum(axis=1)
        same = nodes.tags[idx, tag] > 0
        bonus = np.where(same, np.where(kinds == 1, 75, 50), np.where(kinds == 0, 25, 0))
        return np.asarray(base + bonus, dtype=np.int64)
    if policy == "gpupacking":
        free = (left == MILLI).sum(axis=1)
        idle = np.maximum(33 - free, free)
        if pod.milli == MILLI:
            partly = np.full(len(idx), max(50 - pod.num, 33), dtype=np.int64)
        else:
            tightest = np.where(left >= pod.milli, left, MILLI + 1).min(axis=1)
            partly = np.where(tightest == MILLI, 49, np.maximum(100 - (tightest * 100 // MILLI) // 10, 50))
        return np.asarray(np.where(free == nodes.gpus[idx], idle, partly), dtype=np.int64)
    raise ValueError(f"unknown peer policy {policy!r} (known: {', '.join(PEER_POLICIES)})")


def _gpus(nodes: _Nodes, i: int, pod: _Pod, policy: str, rng: random.Random) -> list[int]:
    row = nodes.left[i]
    if not pod.num:
        return []
    if pod.milli == MILLI:  # whole GPUs: the lowest-index free ones
        return [int(g) for g in np.nonzero(row == MILLI)[0][: pod.num]]
    fits = [int(g) for g in np.nonzero(row >= pod.milli)[0]]
    if policy == "random":
        return [rng.choice(fits)]
    return [min(fits, key=lambda g: (int(row[g]), g))]  # best fit: the least left, first index on ties


def run_peer(cluster: ClusterSpec, pods: list[SimPod], policy: str, seed: int) -> PeerRun:
    """One seed of the peer's protocol for `policy` on `cluster` with the trace `pods`."""
    if policy not in PEER_POLICIES:
        raise ValueError(f"unknown peer policy {policy!r} (known: {', '.join(PEER_POLICIES)})")
    rng = random.Random(seed)
    nodes = _Nodes(cluster, rng)
    capacity = int(nodes.gpus.sum()) * MILLI
    run = PeerRun(policy, seed, capacity)
    arrived = used = failed = 0
    for sim_pod in inflate(pods, capacity, rng):
        pod = _shape(sim_pod)
        arrived += pod.num * pod.milli  # counted before scheduling: failed pods arrive too
        idx = nodes.feasible(pod)
        if len(idx) == 0:
            failed += 1
        else:
            if len(idx) == 1:
                chosen = int(idx[0])
            elif policy == "random":
                chosen = int(idx[rng.randrange(len(idx))])
            else:
                score = _score(nodes, idx, pod, policy)
                best = idx[score == score.max()]
                chosen = int(best[np.argmin(nodes.rank[best])])
            nodes.place(chosen, pod, _gpus(nodes, chosen, pod, policy, rng))
            used += pod.num * pod.milli
        run.arrived.append(arrived)
        run.used.append(used)
        run.failed.append(failed)
    return run
