"""The FGD paper's evaluation protocol as its own simulator runs it, for the node-scoring baselines.

Semantics read from hkust-adsl/kubernetes-scheduler-simulator (docs/simulator.md, "The peer simulator's
protocol and baselines"): the trace sorted by name and shuffled, tuned to 1.3 x the cluster's GPU milli by
appending draws with replacement; pods arrive once, never leave, and fail when nothing fits; each policy's
integer node score, ties to a random but fixed node rank per seed; the allocation ratio at X % arrived demand
is the mean over the pod events whose rounded arrived share is X. No code is taken from there.

Implemented here: Random, DotProd, GpuClustering, GpuPacking, BestFit and FGD (the fragmentation gradient over
the original trace's typical pods, `simulator.frag`). Every run also records the cluster's fragmentation ratio
per event, and `PeerRun.recorder()` turns a run into the engine's `Recorder` so the summary, the KPIs at
80/100/130 % and the report treat it like any other strategy.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from .cluster import ClusterSpec
from .frag import TypicalPod, fgd_score, frag_amount, typical_pods
from .kpis import Recorder, Sample, alloc_pct_at
from .tuning import TUNE_RATIO, tuned_workload
from .workload import SimPod

__all__ = ["PEER_POLICIES", "PeerRun", "run_peer"]

MILLI = 1000
MAX_CPU = 128_000  # the peer's MaxSpecCpu: node CPU is normalised by it
MAX_GPU = 8_000  # the peer's MaxSpecGpu: 8 GPUs
PEER_POLICIES = ("random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd")

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


@dataclass(slots=True)
class PeerRun:
    """One seed: per pod event the arrived and used GPU milli (both over the cluster's) and the failures so far."""

    policy: str
    seed: int
    capacity_milli: int
    arrived: list[int] = field(default_factory=list)
    used: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    fragmentation: list[float] = field(default_factory=list)  # the cluster's FGD ratio after each event
    wall_seconds: float = 0.0

    def alloc_pct_at(self, load: int) -> float | None:
        """The peer's allocation % at `load` % arrived (`simulator.kpis.alloc_pct_at`)."""
        cap = self.capacity_milli / 100
        return alloc_pct_at([a / cap for a in self.arrived], [u / cap for u in self.used], load)

    def recorder(self) -> Recorder:
        """The run as the engine records one: a sample per pod event (VRAM and NVLink are not in the peer's model:
        their summary fields are None)."""
        rec = Recorder(strategy=self.policy, total_gpus=self.capacity_milli // MILLI, protocol="fgd")
        rec.pods_total = len(self.arrived)
        placed = len(self.arrived) - (self.failed[-1] if self.failed else 0)
        rec.placed = {str(i) for i in range(placed)}
        for i, (a, u, f, frag) in enumerate(zip(self.arrived, self.used, self.failed, self.fragmentation, strict=True)):
            gpus = u / MILLI
            rec.samples.append(Sample(float(i), gpus, gpus, 0.0, 0.0, f, f, -1, frag, a / self.capacity_milli))
        rec.pending_at_end = self.failed[-1] if self.failed else 0
        rec.window = (0.0, float(len(self.arrived)))
        rec.wall_seconds = self.wall_seconds
        rec.extra["unmodelled"] = ("vram_waste_ratio", "nvlink_satisfied_ratio")  # compute shares only
        return rec


class _Nodes:
    """The cluster as arrays: CPU, memory and per-GPU milli left, GPU-pod tags, and each node's rank."""

    def __init__(self, cluster: ClusterSpec, rng: random.Random, typical: tuple[TypicalPod, ...] = ()) -> None:
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
        self.frag = _FragStates(typical)
        self.state: Ints = np.array([self._intern(i) for i in range(self.count)], dtype=np.int64)
        self.frag_total = float(sum(self.frag.values[s] for s in self.state))
        self.free_total = int(self.left.sum())

    def _intern(self, i: int) -> int:
        return self.frag.intern(int(self.cpu[i]), tuple(sorted(int(v) for v in self.left[i])), self.models[i])

    def fragmentation(self) -> float:
        """sum_n F_n(M) / sum_n free GPU milli (0 when nothing is free), as `simulator.kpis` defines it."""
        return min(1.0, self.frag_total / self.free_total) if self.free_total > 0 else 0.0

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
        self.frag_total -= self.frag.values[int(self.state[i])]
        self.state[i] = self._intern(i)
        self.frag_total += self.frag.values[int(self.state[i])]
        self.free_total -= pod.num * pod.milli


_State = tuple[int, tuple[int, ...], str]  # free CPU, sorted free GPU milli, GPU model


class _FragStates:
    """Node states interned to ids with their fragmentation F_n(M), and FGD's score of a pod shape on a state."""

    def __init__(self, typical: tuple[TypicalPod, ...]) -> None:
        self.typical = typical
        self.ids: dict[_State, int] = {}
        self.keys: list[_State] = []
        self.values: list[float] = []
        self._scores: dict[tuple[int, int, int, int], tuple[int, frozenset[int]]] = {}

    def intern(self, cpu: int, left: tuple[int, ...], model: str) -> int:
        key = (cpu, left, model)
        found = self.ids.get(key)
        if found is None:
            found = self.ids[key] = len(self.keys)
            self.keys.append(key)
            self.values.append(frag_amount(cpu, left, model, self.typical))
        return found

    def fgd(self, state: int, pod: _Pod) -> tuple[int, frozenset[int]]:
        """`int(sigmoid((F_before - F_after) / 1000) * 100)` for the pod's best placement on `state`, and for a
        shared pod the free milli values of the GPUs that reach it (the peer takes the first such GPU)."""
        key = (state, pod.cpu, pod.num, pod.milli)
        found = self._scores.get(key)
        if found is not None:
            return found
        cpu, left, model = self.keys[state]
        before = self.values[state]

        def score(after: list[int]) -> int:
            return fgd_score(before, frag_amount(cpu - pod.cpu, tuple(sorted(after)), model, self.typical))

        if pod.num == 1 and pod.milli < MILLI:
            best, values = -1, set()
            for value in sorted(set(left)):
                if value < pod.milli:
                    continue
                after = list(left)
                after[after.index(value)] -= pod.milli
                got = score(after)
                if got > best:
                    best, values = got, {value}
                elif got == best:
                    values.add(value)
            found = (best, frozenset(values))
        else:  # whole GPUs (or none): taken from the least sufficient ones, as the peer's NodeResource.Sub
            after, need = list(left), pod.num
            for k, value in enumerate(after):  # `left` is sorted ascending
                if need and value >= pod.milli:
                    after[k] -= pod.milli
                    need -= 1
            found = (score(after), frozenset())
        self._scores[key] = found
        return found


def _score(nodes: _Nodes, idx: Ints, pod: _Pod, policy: str) -> Ints:
    if policy == "fgd":
        states, inverse = np.unique(nodes.state[idx], return_inverse=True)
        scores = np.array([nodes.frag.fgd(int(st), pod)[0] for st in states], dtype=np.int64)
        return np.asarray(scores[inverse], dtype=np.int64)
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
    if policy == "fgd":  # the first GPU whose placement scores best
        values = nodes.frag.fgd(int(nodes.state[i]), pod)[1]
        return [next(g for g in fits if int(row[g]) in values)]
    return [min(fits, key=lambda g: (int(row[g]), g))]  # best fit: the least left, first index on ties


def run_peer(
    cluster: ClusterSpec,
    pods: list[SimPod],
    policy: str,
    seed: int,
    *,
    ratio: float = TUNE_RATIO,
    workload: list[SimPod] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> PeerRun:
    """One seed of the peer's protocol for `policy` on `cluster` with the trace `pods` (the original trace:
    FGD's typical pods come from it), tuned to `ratio` x capacity unless the tuned `workload` is given."""
    if policy not in PEER_POLICIES:
        raise ValueError(f"unknown peer policy {policy!r} (known: {', '.join(PEER_POLICIES)})")
    started = time.perf_counter()
    rng = random.Random(f"{seed}:nodes")  # the node rank, Random's GPU draws; the workload has its own stream
    nodes = _Nodes(cluster, rng, typical_pods(pods))
    capacity = int(nodes.gpus.sum()) * MILLI
    run = PeerRun(policy, seed, capacity)
    arrived = used = failed = 0
    tuned = workload if workload is not None else tuned_workload(pods, capacity, seed, ratio)
    for done, sim_pod in enumerate(tuned, 1):
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
        run.fragmentation.append(nodes.fragmentation())
        if progress is not None and (done % 256 == 0 or done == len(tuned)):
            progress(done, len(tuned))
    run.wall_seconds = time.perf_counter() - started
    return run
