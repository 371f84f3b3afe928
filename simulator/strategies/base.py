"""What every strategy shares: the request a pod becomes, GPU fitting on a class signature, and the class loop.

A strategy turns a pod into a `Demand` (CPU, memory and device options tried in order, like DRA's
`firstAvailable`), then scores every node state class it fits. Fits and scores are pure functions of
(class, demand), so they are cached by (class id, demand): each distinct node state is evaluated once per
pod shape, never once per node.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dra.gpus import MigProfile

from ..cluster import mig_profiles
from ..state import DYNAMIC, PLAIN, STATIC, ClusterState, GpuInfo, NodeState, Part, Sig
from ..workload import SimPod

if TYPE_CHECKING:
    from .settings import RunSettings

__all__ = ["NODE_SCORES", "Demand", "Option", "Strategy", "fit_option", "least_allocated"]

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
    consumable: bool = False  # share through DRA consumable capacity: only where the node's GPUs allow it


@dataclass(frozen=True, slots=True)
class Demand:
    cpu: int
    mem: int
    options: tuple[Option, ...]  # empty: CPU only
    models: tuple[str, ...] = ()


Answer = tuple[float, tuple[Part, ...]] | None


# how the gpudra strategy may rank nodes; the others take the first two (`Strategy.node_score`)
NODE_SCORES = ("least-allocated", "most-allocated", "fragmentation")


class Strategy:
    """Base: subclasses define `demand` and `score`; `choose` runs the cached class loop."""

    name = "base"
    device_order = "first"  # how GPUs are picked inside a node: first | nvlink | pack
    node_score = "least-allocated"  # kube-scheduler's default; most-allocated packs (NodeResourcesFit)

    def __init__(self, seed: int = 0, *, node_score: str | None = None) -> None:
        self.seed = seed
        if node_score is not None:
            if node_score not in NODE_SCORES[:2]:
                raise ValueError(f"node_score must be least-allocated or most-allocated (got {node_score!r})")
            self.node_score = node_score
        self._demands: dict[tuple[Any, ...], tuple[int, Demand | None]] = {}
        self._ids: dict[Demand, int] = {}
        self._cache: dict[tuple[int, int], Answer] = {}
        # per demand: how far into `state.born` it has looked, and the live classes it fits (with answers)
        self._fits: dict[int, _Fits] = {}
        self._parts: dict[tuple[int, int], tuple[Part, ...] | None] = {}  # GPU fit by (class, options id)
        self._option_ids: dict[tuple[Option, ...], int] = {}
        self._option_of: dict[int, int] = {}

    fgd_peer = False  # on the FGD protocol, run by the paper's own simulator (`simulator.peer_protocol`) instead

    @classmethod
    def runs(cls, settings: RunSettings) -> list[Strategy]:
        """The runs a simulation makes of this strategy (most: one, with the seed)."""
        return [cls(settings.seed)]

    def describe(self) -> dict[str, Any] | None:
        """What the summary's `input.strategy_details` says of this run (None: nothing)."""
        return None

    def prepare(self, state: ClusterState, pods: list[SimPod]) -> None:
        """Called once before the run (convert MIG modes, learn the workload)."""

    def demand(self, pod: SimPod) -> Demand | None:
        raise NotImplementedError

    def score(self, state: ClusterState, node: NodeState, sig: Sig, demand: Demand, parts: tuple[Part, ...]) -> float:
        """Higher is better; default: kube-scheduler's LeastAllocated (or MostAllocated) over CPU and memory."""
        spread = least_allocated(node, demand)
        return spread if self.node_score == "least-allocated" else -spread

    def demand_key(self, pod: SimPod) -> Any:
        """What `demand(pod)` depends on: pods with equal keys share one demand (and its caches)."""
        return pod.shape

    def _demand(self, pod: SimPod) -> tuple[int, Demand | None]:
        key = self.demand_key(pod)
        found = self._demands.get(key)
        if found is None:
            demand = self.demand(pod)
            # pods of different shapes that become the same demand share one id, hence one cache
            did = self._ids.setdefault(demand, len(self._ids)) if demand is not None else -1
            found = self._demands[key] = (did, demand)
        return found

    def evaluate(self, state: ClusterState, cid: int, demand: Demand) -> Answer:
        sig = state.sigs[cid]
        if sig[1] < demand.cpu or sig[2] < demand.mem:  # free CPU and memory are part of the signature
            return None
        node = state.representative(cid)
        if (
            demand.models
            and node.spec.model_label not in demand.models
            and (node.spec.gpu is None or node.spec.gpu.key not in demand.models)
        ):
            return None
        parts: tuple[Part, ...] | None = ()
        if demand.options:
            opt = self._option_of.get(id(demand))  # demands live as long as the strategy: ids are stable
            if opt is None:
                opt = self._option_of[id(demand)] = self._option_ids.setdefault(demand.options, len(self._option_ids))
            key = (cid, opt)
            parts = self._parts.get(key, _MISSING)  # type: ignore[arg-type]
            if parts is _MISSING:
                info = state.gpu_info(cid)
                for option in demand.options:
                    parts = fit_option(node, info, option, self.device_order)
                    if parts is not None:
                        break
                self._parts[key] = parts
        if parts is None:
            return None
        return self.score(state, node, sig, demand, parts), parts

    def candidates(self, state: ClusterState, did: int, demand: Demand) -> _Fits:
        """The classes `demand` fits, best first (a heap; entries of classes that died are dropped lazily).

        Class states never change (a node that changes moves to another class), so a class is evaluated once
        per demand, when it is born or comes back; each call only looks at classes born since the last one.
        """
        fits = self._fits.get(did)
        if fits is None:
            fits = self._fits[did] = _Fits()
        born = state.born
        classes = state.classes
        cache = self._cache
        for position in range(fits.seen, len(born)):
            cid = born[position]
            if cid in fits.members or cid not in classes:
                continue
            key = (cid, did)
            answer = cache.get(key, _MISSING)
            if answer is _MISSING:
                answer = cache[key] = self.evaluate(state, cid, demand)
            if answer is not None:
                fits.push(cid, answer)  # type: ignore[arg-type]
        fits.seen = len(born)
        heap = fits.heap
        while heap and heap[0][2] not in classes:  # dead: it is in `born` again if it comes back
            fits.members.discard(heapq.heappop(heap)[2])
        return fits

    def choose(self, state: ClusterState, pod: SimPod) -> tuple[int, tuple[Part, ...]] | None:
        """The node and canonical parts for `pod`, or None when no node fits."""
        did, demand = self._demand(pod)
        if demand is None:
            return None
        fits = self.candidates(state, did, demand)
        if not fits.heap:
            return None
        _, _, cid, parts = fits.heap[0]  # best score; the earliest evaluated class wins ties
        return next(iter(state.classes[cid])), parts


class _Fits:
    """Per demand: a max-heap of (score, class) and how far into `ClusterState.born` it has looked."""

    __slots__ = ("seen", "heap", "members", "counter")

    def __init__(self) -> None:
        self.seen = 0
        self.heap: list[tuple[float, int, int, tuple[Part, ...]]] = []
        self.members: set[int] = set()
        self.counter = 0

    def push(self, cid: int, answer: tuple[float, tuple[Part, ...]]) -> None:
        self.counter += 1
        heapq.heappush(self.heap, (-answer[0], self.counter, cid, answer[1]))
        self.members.add(cid)


def least_allocated(node: NodeState, demand: Demand) -> float:
    spec = node.spec
    cpu = (node.free_cpu - demand.cpu) / spec.cpu_milli if spec.cpu_milli else 0.0
    mem = (node.free_mem - demand.mem) / spec.memory_mib if spec.memory_mib else 0.0
    return (cpu + mem) / 2


def fit_option(node: NodeState, info: GpuInfo, option: Option, order: str) -> tuple[Part, ...] | None:
    """Parts (canonical GPU indices) satisfying `option` on a node whose class has GPUs `info`, or None."""
    gpu_type = node.spec.gpu
    if gpu_type is None:
        return None
    memory = gpu_type.memory_mib
    if option.kind == "whole":
        free = info.whole_free
        if option.vram > memory or len(free) < option.count:
            return None
        if option.count >= 2 and (option.nvlink or order in ("nvlink", "pack")):
            fits = [f for f in ([i for i in free if i in r] for r in info.ranges) if len(f) >= option.count]
            if fits:
                free = min(fits, key=len)  # the tightest group that holds the pod
            elif option.nvlink:
                return None
        return tuple(Part(i, "whole", 1000, memory) for i in free[: option.count])
    gpus = list(enumerate(info.gpus))
    if option.kind == "share":
        if option.consumable and not node.spec.sharing:
            return None
        cands = [(g[1], i) for i, g in gpus if g[0] == PLAIN and g[1] >= option.milli and g[2] >= option.vram]
        if not cands:
            return None
        if order == "pack":
            cands.sort()  # least free compute first: fill partly used GPUs before idle ones
        return (Part(cands[0][1], "share", option.milli, option.vram),)
    if option.kind == "mig":
        return _fit_mig(gpus, mig_profiles(gpu_type), node, option, order)
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
                for slot, placed in enumerate(g[2]):
                    if placed.profile.name == prof.name and g[1][slot] == 0:
                        found.append((0, i, placed.start))
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
