"""The cluster while a simulation runs: free resources per node and GPU, and an index of nodes by state.

Nodes in the same *state class* (same template, same free CPU/memory, same GPU states up to a permutation
within NVLink groups) are interchangeable for placement, so strategies score each class once per pod shape
instead of every node: `ClusterState.classes` maps a class signature to its member nodes. Placements come
back from strategies in the class's canonical GPU order and are mapped onto the chosen node here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dra.gpus import MigProfile

from .breakdown import Totals, pod_size
from .cluster import ClusterSpec, Layout, NodeSpec, nvlink_groups
from .workload import SimPod

__all__ = ["Allocation", "ClusterState", "GpuInfo", "GpuState", "NodeState", "Part", "Sig"]

Sig = tuple[Any, ...]
PLAIN, STATIC, DYNAMIC = 0, 1, 2


@dataclass(frozen=True, slots=True)
class Part:
    """What one pod holds on one GPU: `kind` whole | share | mig; `milli`/`vram` are what it holds."""

    gpu: int  # canonical index in a strategy's answer, real GPU index once applied
    kind: str
    milli: int
    vram: int
    profile: MigProfile | None = None
    start: int = 0


@dataclass(slots=True)
class Allocation:
    pod: SimPod
    node: int
    parts: tuple[Part, ...]
    started: float
    nvlink_ok: bool | None  # None for pods with fewer than two GPUs
    requested_milli: int
    held_milli: int
    needed_vram: int
    held_vram: int
    partitions_created: int = 0


class GpuState:
    """One GPU. PLAIN: whole or shared by compute milli + VRAM; STATIC: fixed MIG slots; DYNAMIC: MIG on demand."""

    __slots__ = ("mode", "memory", "free_milli", "free_vram", "share_type", "slots", "used", "mask", "compute", "whole")

    def __init__(self, mode: int, memory: int, layout: Layout = ()) -> None:
        self.mode = mode
        self.memory = memory
        self.share_type = 0  # PLAIN: gpu_milli of the sharing pods when all equal, -1 when mixed
        self.slots = layout  # STATIC
        self.used = [0] * len(layout)  # STATIC: pods per slot (0 or 1)
        self.mask = 0  # DYNAMIC: memory slices in use
        self.compute = 0  # DYNAMIC: compute slices in use
        self.whole = False  # DYNAMIC: the whole GPU is allocated
        if mode == STATIC:
            self.free_milli = sum(pl.profile.compute_milli for pl in layout)
            self.free_vram = sum(pl.profile.memory_mib for pl in layout)
        else:
            self.free_milli, self.free_vram = 1000, memory

    def sig(self) -> tuple[Any, ...]:
        if self.mode == PLAIN:
            return (PLAIN, self.free_milli, self.free_vram, self.share_type)
        if self.mode == STATIC:
            return (STATIC, tuple(self.used), self.slots)
        return (DYNAMIC, self.whole, self.mask, self.compute)

    @property
    def idle(self) -> bool:
        if self.mode == PLAIN:
            return self.free_milli == 1000 and self.share_type == 0
        if self.mode == STATIC:
            return not any(self.used)
        return not self.whole and self.mask == 0


class NodeState:
    __slots__ = ("spec", "template", "free_cpu", "free_mem", "gpus", "groups", "pods", "down_until", "canon", "index")

    def __init__(self, index: int, spec: NodeSpec, template: int) -> None:
        self.index = index
        self.spec = spec
        self.template = template
        self.free_cpu = spec.cpu_milli
        self.free_mem = spec.memory_mib
        mode = {"none": PLAIN, "static": STATIC, "dynamic": DYNAMIC}[spec.mig]
        memory = spec.gpu.memory_mib if spec.gpu else 0
        self.gpus = [GpuState(mode, memory, spec.layout) for _ in range(spec.gpu_count)]
        self.groups = nvlink_groups(spec.gpu, spec.gpu_count)
        self.pods: dict[str, Allocation] = {}
        self.down_until = 0.0
        self.canon: list[int] = list(range(spec.gpu_count))

    def sig(self) -> Sig:
        """The class signature; also refreshes `canon` (canonical position -> real GPU index)."""
        groups = sorted((sorted((self.gpus[i].sig(), i) for i in group) for group in self.groups), key=_group_key)
        self.canon = [i for group in groups for _, i in group]
        return (self.template, self.free_cpu, self.free_mem, tuple(tuple(s for s, _ in g) for g in groups))

    def set_mig(self, mode: str, layout: Layout) -> None:
        """Repartition every GPU (the node must be empty): device-plugin MIG reconfiguration."""
        code = {"none": PLAIN, "static": STATIC, "dynamic": DYNAMIC}[mode]
        memory = self.spec.gpu.memory_mib if self.spec.gpu else 0
        self.gpus = [GpuState(code, memory, layout) for _ in self.gpus]


@dataclass(frozen=True, slots=True)
class GpuInfo:
    gpus: list[tuple[Any, ...]]  # GPU signatures in canonical order
    ranges: list[range]  # canonical index ranges of the NVLink groups
    whole_free: list[int]  # canonical indices of GPUs free as a whole


def _whole_free(g: tuple[Any, ...]) -> bool:
    if g[0] == PLAIN:
        return bool(g[1] == 1000 and g[3] == 0)
    if g[0] == DYNAMIC:
        return not g[1] and g[2] == 0
    return False


def _slot(gpu: GpuState, part: Part) -> int:
    """The static MIG slot a part holds on `gpu`."""
    return next(i for i, pl in enumerate(gpu.slots) if pl.profile == part.profile and pl.start == part.start)


def _group_key(group: list[tuple[tuple[Any, ...], int]]) -> tuple[Any, ...]:
    return (len(group), tuple(s for s, _ in group))


class ClusterState:
    """Mutable nodes plus the class index; `apply`/`release` keep both and the running totals in step."""

    def __init__(self, spec: ClusterSpec) -> None:
        templates: dict[tuple[Any, ...], int] = {}
        self.nodes = [
            NodeState(i, n, templates.setdefault(n.template, len(templates))) for i, n in enumerate(spec.nodes)
        ]
        # template id -> the spec of its first node: what every node of a template shares (its name aside)
        self.template_specs: list[NodeSpec] = []
        for node in self.nodes:
            if node.template == len(self.template_specs):
                self.template_specs.append(node.spec)
        self.total_gpus = spec.total_gpus
        self.classes: dict[int, dict[int, None]] = {}  # class id -> member nodes (insertion-ordered)
        self.sig_ids: dict[Sig, int] = {}
        self.sigs: list[Sig] = []  # class id -> signature; ids are never reused, so caches keyed by id stay valid
        self.node_sig: list[int | None] = [None] * len(self.nodes)
        # the same as an array (-1: down), for kube-scheduler's scan over nodes (`simulator.scheduling.selection`)
        self.node_class = np.full(len(self.nodes), -1, dtype=np.int64)
        self.next_start = 0  # kube-scheduler's nextStartNodeIndex: where the next search for feasible nodes starts
        self._info: dict[int, GpuInfo] = {}
        self.born: list[int] = []  # class ids in the order they gained their first member (again)
        self.requested_milli = 0
        self.held_milli = 0
        self.needed_vram = 0
        self.held_vram = 0
        self.gpu_pods = 0
        # per group the same totals (`simulator.breakdown`): by the node's GPU model, by the pod's size
        self.node_model = [n.spec.gpu.key if n.spec.gpu is not None else "" for n in self.nodes]
        self.by_model: dict[object, Totals] = {}
        self.by_size: dict[object, Totals] = {}
        for node in self.nodes:
            self._index(node)

    def _index(self, node: NodeState) -> None:
        sig = node.sig()
        cid = self.sig_ids.get(sig)
        if cid is None:
            cid = self.sig_ids[sig] = len(self.sigs)
            self.sigs.append(sig)
        self.node_sig[node.index] = cid
        self.node_class[node.index] = cid
        members = self.classes.get(cid)
        if members is None:
            members = self.classes[cid] = {}
            self.born.append(cid)
        members[node.index] = None

    def _unindex(self, node: NodeState) -> None:
        sig = self.node_sig[node.index]
        if sig is None:
            return
        members = self.classes[sig]
        del members[node.index]
        if not members:
            del self.classes[sig]
        self.node_sig[node.index] = None
        self.node_class[node.index] = -1

    def take_down(self, node: NodeState, until: float) -> None:
        self._unindex(node)
        node.down_until = until

    def bring_up(self, node: NodeState) -> None:
        node.down_until = 0.0
        if self.node_sig[node.index] is None:
            self._index(node)

    def apply(self, pod: SimPod, node_index: int, canonical: tuple[Part, ...], now: float) -> Allocation:
        """Place `pod` on the node with the strategy's parts (canonical GPU order of the node's class)."""
        node = self.nodes[node_index]
        self._unindex(node)
        parts = tuple(Part(node.canon[p.gpu], p.kind, p.milli, p.vram, p.profile, p.start) for p in canonical)
        created = 0
        for part in parts:
            gpu = node.gpus[part.gpu]
            if part.kind == "mig":
                assert part.profile is not None
                if gpu.mode == STATIC:
                    slot = next(
                        i for i, pl in enumerate(gpu.slots) if pl.profile == part.profile and pl.start == part.start
                    )
                    gpu.used[slot] += 1
                else:
                    gpu.mask |= ((1 << part.profile.memory_slices) - 1) << part.start
                    gpu.compute += part.profile.compute_slices
                    created += 1
            elif part.kind == "whole":
                gpu.whole = True
            else:
                gpu.share_type = pod.gpu_milli if gpu.share_type in (0, pod.gpu_milli) else -1
            gpu.free_milli -= part.milli
            gpu.free_vram -= part.vram
        node.free_cpu -= pod.cpu_milli
        node.free_mem -= pod.memory_mib
        nvlink_ok = None
        if len(parts) >= 2:
            used = {p.gpu for p in parts}
            nvlink_ok = any(used <= set(g) for g in node.groups)
        alloc = Allocation(
            pod=pod,
            node=node_index,
            parts=parts,
            started=now,
            nvlink_ok=nvlink_ok,
            requested_milli=sum(min(pod.gpu_milli, p.milli) for p in parts),  # demand a slice actually serves
            held_milli=sum(p.milli for p in parts),
            needed_vram=sum(min(pod.vram_mib, p.vram) for p in parts),
            held_vram=sum(p.vram for p in parts),
            partitions_created=created,
        )
        node.pods[pod.name] = alloc
        self._add_totals(alloc, 1)
        if node.down_until == 0.0:
            self._index(node)
        return alloc

    def release_compute(self, alloc: Allocation) -> None:
        """Free the pod's CPU and memory only (its devices follow with `release(alloc, compute=False)`)."""
        node = self.nodes[alloc.node]
        self._unindex(node)
        node.free_cpu += alloc.pod.cpu_milli
        node.free_mem += alloc.pod.memory_mib
        if node.down_until == 0.0:
            self._index(node)

    def release(self, alloc: Allocation, *, compute: bool = True) -> None:
        """Free what the pod holds: its devices, and its CPU and memory unless `release_compute` already did."""
        node = self.nodes[alloc.node]
        self._unindex(node)
        for part in alloc.parts:
            gpu = node.gpus[part.gpu]
            gpu.free_milli += part.milli
            gpu.free_vram += part.vram
            if part.kind == "mig":
                assert part.profile is not None
                if gpu.mode == STATIC:
                    gpu.used[_slot(gpu, part)] -= 1
                else:
                    gpu.mask &= ~(((1 << part.profile.memory_slices) - 1) << part.start)
                    gpu.compute -= part.profile.compute_slices
            elif part.kind == "whole":
                gpu.whole = False
            if gpu.mode == PLAIN and gpu.free_milli == 1000:
                gpu.share_type = 0
        if compute:
            node.free_cpu += alloc.pod.cpu_milli
            node.free_mem += alloc.pod.memory_mib
        del node.pods[alloc.pod.name]
        self._add_totals(alloc, -1)
        if node.down_until == 0.0:
            self._index(node)

    def reindex(self, node: NodeState) -> None:
        self._unindex(node)
        if node.down_until == 0.0:
            self._index(node)

    def _add_totals(self, alloc: Allocation, sign: int) -> None:
        self.requested_milli += sign * alloc.requested_milli
        self.held_milli += sign * alloc.held_milli
        self.needed_vram += sign * alloc.needed_vram
        self.held_vram += sign * alloc.held_vram
        self.gpu_pods += sign * (1 if alloc.parts else 0)
        if alloc.parts:
            for key, table in ((self.node_model[alloc.node], self.by_model), (pod_size(alloc.pod), self.by_size)):
                row = table.get(key)
                if row is None:
                    row = table[key] = [0, 0, 0, 0]
                row[0] += sign * alloc.requested_milli
                row[1] += sign * alloc.held_milli
                row[2] += sign * alloc.needed_vram
                row[3] += sign * alloc.held_vram

    def gpu_info(self, cid: int) -> GpuInfo:
        """Class `cid`'s GPUs in canonical order, NVLink group ranges and whole-free GPUs (memoised)."""
        info = self._info.get(cid)
        if info is None:
            groups = self.sigs[cid][3]
            flat = [g for group in groups for g in group]
            ranges, start = [], 0
            for group in groups:
                ranges.append(range(start, start + len(group)))
                start += len(group)
            whole = [i for i, g in enumerate(flat) if _whole_free(g)]
            info = self._info[cid] = GpuInfo(flat, ranges, whole)
        return info

    def representative(self, cid: int) -> NodeState:
        return self.nodes[next(iter(self.classes[cid]))]
