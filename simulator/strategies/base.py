"""What every strategy shares: the request a pod becomes, GPU fitting on a class signature, and the class loop.

A strategy turns a pod into a `Demand` (CPU, memory and device options tried in order, like DRA's
`firstAvailable`), then scores every node state class it fits. Fits and scores are pure functions of
(class, demand), so they are cached by (class id, demand): each distinct node state is evaluated once per
pod shape, never once per node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..gputypes import MigProfile
from ..state import DYNAMIC, PLAIN, STATIC, ClusterState, NodeState, Part, Sig
from ..workload import SimPod

__all__ = ["Demand", "Option", "Strategy", "fit_option", "least_allocated"]

_MISSING = object()


@dataclass(frozen=True, slots=True)
class Option:
    """One way to satisfy a pod's GPUs: `count` devices of `kind` whole | share | mig."""

    kind: str
    count: int
    milli: int = 1000  # compute held per device (share); requested for whole
    vram: int = 0  # VRAM needed per device (whole, mig) or held (share)
    profiles: tuple[str, ...] = ()  # mig: acceptable profiles, smallest first
    nvlink: bool = False  # all devices must share one NVLink group


@dataclass(frozen=True, slots=True)
class Demand:
    cpu: int
    mem: int
    options: tuple[Option, ...]  # empty: CPU only
    models: tuple[str, ...] = ()


Answer = tuple[float, tuple[Part, ...]] | None


class Strategy:
    """Base: subclasses define `demand` and `score`; `choose` runs the cached class loop."""

    name = "base"
    device_order = "first"  # how GPUs are picked inside a node: first | nvlink | pack
    node_score = "least-allocated"  # kube-scheduler's default; most-allocated packs (NodeResourcesFit)

    def __init__(self, seed: int = 0, *, node_score: str | None = None) -> None:
        self.seed = seed
        if node_score is not None:
            if node_score not in ("least-allocated", "most-allocated"):
                raise ValueError(f"node_score must be least-allocated or most-allocated (got {node_score!r})")
            self.node_score = node_score
        self._demands: dict[tuple[Any, ...], tuple[int, Demand | None]] = {}
        self._cache: dict[tuple[int, int], Answer] = {}

    def prepare(self, state: ClusterState, pods: list[SimPod]) -> None:
        """Called once before the run (convert MIG modes, learn the workload)."""

    def demand(self, pod: SimPod) -> Demand | None:
        raise NotImplementedError

    def score(self, state: ClusterState, node: NodeState, sig: Sig, demand: Demand, parts: tuple[Part, ...]) -> float:
        """Higher is better; default: kube-scheduler's LeastAllocated (or MostAllocated) over CPU and memory."""
        spread = least_allocated(node, demand)
        return spread if self.node_score == "least-allocated" else -spread

    def _demand(self, pod: SimPod) -> tuple[int, Demand | None]:
        key = pod.shape
        found = self._demands.get(key)
        if found is None:
            found = self._demands[key] = (len(self._demands), self.demand(pod))
        return found

    def evaluate(self, state: ClusterState, cid: int, demand: Demand) -> Answer:
        node = state.representative(cid)
        sig = state.sigs[cid]
        if node.free_cpu < demand.cpu or node.free_mem < demand.mem:
            return None
        if (
            demand.models
            and node.spec.model_label not in demand.models
            and (node.spec.gpu is None or node.spec.gpu.key not in demand.models)
        ):
            return None
        parts: tuple[Part, ...] | None = ()
        for option in demand.options:
            parts = fit_option(node, sig, option, self.device_order)
            if parts is not None:
                break
        if parts is None:
            return None
        return self.score(state, node, sig, demand, parts), parts

    def choose(self, state: ClusterState, pod: SimPod) -> tuple[int, tuple[Part, ...]] | None:
        """The node and canonical parts for `pod`, or None when no node fits."""
        did, demand = self._demand(pod)
        if demand is None:
            return None
        cache = self._cache
        best: Answer = None
        best_cid = -1
        for cid in state.classes:
            key = (cid, did)
            answer = cache.get(key, _MISSING)
            if answer is _MISSING:
                answer = cache[key] = self.evaluate(state, cid, demand)
            if answer is not None and (best is None or answer[0] > best[0]):  # type: ignore[index]
                best, best_cid = answer, cid  # type: ignore[assignment]
        if best is None:
            return None
        return next(iter(state.classes[best_cid])), best[1]


def least_allocated(node: NodeState, demand: Demand) -> float:
    spec = node.spec
    cpu = (node.free_cpu - demand.cpu) / spec.cpu_milli if spec.cpu_milli else 0.0
    mem = (node.free_mem - demand.mem) / spec.memory_mib if spec.memory_mib else 0.0
    return (cpu + mem) / 2


def _gpus(sig: Sig) -> list[tuple[int, tuple[Any, ...]]]:
    """(canonical index, GPU signature) in canonical order."""
    flat = [g for group in sig[3] for g in group]
    return list(enumerate(flat))


def _group_ranges(sig: Sig) -> list[range]:
    out, start = [], 0
    for group in sig[3]:
        out.append(range(start, start + len(group)))
        start += len(group)
    return out


def _whole_free(g: tuple[Any, ...]) -> bool:
    if g[0] == PLAIN:
        return bool(g[1] == 1000 and g[3] == 0)
    if g[0] == DYNAMIC:
        return not g[1] and g[2] == 0
    return False


def fit_option(node: NodeState, sig: Sig, option: Option, order: str) -> tuple[Part, ...] | None:
    """Parts (canonical GPU indices) satisfying `option` on a node in state `sig`, or None."""
    gpu_type = node.spec.gpu
    if gpu_type is None:
        return None
    gpus = _gpus(sig)
    memory = gpu_type.memory_mib
    if option.kind == "whole":
        if option.vram > memory:
            return None
        free = [i for i, g in gpus if _whole_free(g)]
        if len(free) < option.count:
            return None
        if option.count >= 2 and (option.nvlink or order in ("nvlink", "pack")):
            ranges = _group_ranges(sig)
            fits = [[i for i in free if i in r] for r in ranges]
            fits = [f for f in fits if len(f) >= option.count]
            if fits:
                free = min(fits, key=len)  # the tightest group that holds the pod
            elif option.nvlink:
                return None
        return tuple(Part(i, "whole", 1000, memory) for i in free[: option.count])
    if option.kind == "share":
        cands = [(g[1], i) for i, g in gpus if g[0] == PLAIN and g[1] >= option.milli and g[2] >= option.vram]
        if not cands:
            return None
        if order == "pack":
            cands.sort()  # least free compute first: fill partly used GPUs before idle ones
        return (Part(cands[0][1], "share", option.milli, option.vram),)
    if option.kind == "mig":
        return _fit_mig(gpus, gpu_type.mig_profiles, node, option, order)
    raise ValueError(f"unknown option kind {option.kind!r}")


def _fit_mig(
    gpus: list[tuple[int, tuple[Any, ...]]],
    profiles: tuple[MigProfile, ...],
    node: NodeState,
    option: Option,
    order: str,
) -> tuple[Part, ...] | None:
    wanted = [p for name in option.profiles for p in profiles if p.name == name and p.memory_mib >= option.vram]
    for prof in wanted:
        found: list[tuple[int, int, int]] = []  # (-compute used, canonical gpu, start)
        for i, g in gpus:
            if g[0] == STATIC:
                for slot, (slot_prof, start) in enumerate(g[2]):
                    if slot_prof.name == prof.name and g[1][slot] == 0:
                        found.append((0, i, start))
                        break
            elif g[0] == DYNAMIC and not g[1] and g[3] + prof.compute_slices <= 7:
                for start in prof.starts:
                    bits = ((1 << prof.memory_slices) - 1) << start
                    if start + prof.memory_slices <= 8 and not g[2] & bits:
                        found.append((-g[3], i, start))
                        break
            if found and order == "first":
                break
        if found:
            if order != "first":
                found.sort()  # pack: the most partitioned GPU first
            _, i, start = found[0]
            return (Part(i, "mig", prof.compute_milli, prof.memory_mib, prof, start),)
    return None
