"""Per pod shape: the node classes that pass the filters, and kube-scheduler's choice among their nodes.

Nodes in one state class (`simulator.state`) get the same filter result and plugin scores, so each class is
evaluated once per pod shape (`ClassFit`), and a choice looks at classes, not nodes: classes are grouped by the raw
scores of the plugins that normalise over the scored nodes (DynamicResources, TaintToleration, NodeAffinity), each
group a max-heap by the node-local scores (NodeResourcesFit, BalancedAllocation). The best total is then one heap
top per group, and the tie set the tops equal to it. Only when percentageOfNodesToScore cuts the search (100+ nodes,
more feasible than `num_feasible_nodes_to_find`) are the nodes scanned, from `ClusterState.next_start`, as
schedule_one.go findNodesThatPassFilters does.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..state import ClusterState, Part
from .profile import Profile
from .selection import Maxima, Raw, normalised_extra, normalised_totals, num_feasible_nodes_to_find

__all__ = ["Candidates", "ClassFit", "Scored", "choose", "scored_classes"]


@dataclass(slots=True)  # not frozen: built once per (class, pod shape) on the engine's hot path
class ClassFit:
    """A class that passes every filter for a pod shape: the devices it gets there and its raw scores."""

    parts: tuple[Part, ...]  # canonical GPU order of the class
    devices: tuple[str, ...]  # device names the allocator picked (empty for strategies without one)
    base: int  # weighted NodeResourcesFit + NodeResourcesBalancedAllocation
    raw: Raw
    plugin_scores: tuple[tuple[str, int], ...] = ()  # the base's parts, by plugin


ClassFitFn = Callable[[ClusterState, int, Any, Any], ClassFit | None]  # (state, class id, demand, pod)


class Candidates:
    """The classes one pod shape fits, by group; `seen` is how far into `ClusterState.born` it has looked."""

    __slots__ = ("seen", "fits", "unfit", "groups", "mask", "bases", "raws", "_unsynced")

    def __init__(self) -> None:
        self.seen = 0
        self.fits: dict[int, ClassFit] = {}
        self.unfit: set[int] = set()  # classes that fail a filter (class states never change: for good)
        self.groups: dict[Raw, list[tuple[int, int]]] = {}  # raw -> heap of (-base, class id)
        self.mask = np.zeros(64, dtype=bool)  # class id -> fits (ids of dead classes may stay set: no node has them)
        self.bases = np.zeros(64, dtype=np.int64)  # class id -> base score (for the scan of `_cut_search`)
        self.raws = np.zeros((64, 3), dtype=np.int64)  # class id -> raw scores
        self._unsynced: list[int] = []  # classes added since the arrays were last written (`synced`)

    def add(self, cid: int, fit: ClassFit) -> None:
        self.fits[cid] = fit
        heapq.heappush(self.groups.setdefault(fit.raw, []), (-fit.base, cid))
        self._unsynced.append(cid)

    def catch_up(self, state: ClusterState, class_fit: ClassFitFn, demand: Any, pod: Any) -> None:
        """Look at the classes born since `seen`: the live ones not known to fail are added with
        `class_fit(state, cid, demand, pod)`, computed once per class (a class back from the dead is added again:
        its heap entry may be gone)."""
        born, classes = state.born, state.classes
        fits, unfit, groups, unsynced = self.fits, self.unfit, self.groups, self._unsynced
        push = heapq.heappush
        for cid in born[self.seen :]:
            if cid not in classes or cid in unfit:
                continue
            fit = fits.get(cid)
            if fit is None:
                fit = class_fit(state, cid, demand, pod)
                if fit is None:
                    unfit.add(cid)
                    continue
                fits[cid] = fit
            heap = groups.get(fit.raw)
            if heap is None:
                heap = groups[fit.raw] = []
            push(heap, (-fit.base, cid))
            unsynced.append(cid)
        self.seen = len(born)

    def synced(self) -> Candidates:
        """The arrays (`mask`, `bases`, `raws` by class id) brought up to date, in one write."""
        if not self._unsynced:
            return self
        cids = np.array(self._unsynced, dtype=np.int64)
        self._unsynced.clear()
        top = int(cids.max())
        if top >= len(self.mask):
            self._grow(max(top + 1, 2 * len(self.mask)))
        fits = [self.fits[int(c)] for c in cids]
        self.mask[cids] = True
        self.bases[cids] = [f.base for f in fits]
        self.raws[cids] = [f.raw for f in fits]
        return self

    def _grow(self, size: int) -> None:
        """The arrays by class id extended to `size` entries (new ones: not fitting, zero)."""
        extra = size - len(self.mask)
        self.mask = np.concatenate((self.mask, np.zeros(extra, dtype=bool)))
        self.bases = np.concatenate((self.bases, np.zeros(extra, dtype=np.int64)))
        self.raws = np.concatenate((self.raws, np.zeros((extra, 3), dtype=np.int64)))

    def live_groups(self, classes: dict[int, Any]) -> dict[Raw, list[tuple[int, int]]]:
        """The groups with a live class, their heap tops live (dead entries dropped for good)."""
        for raw in list(self.groups):
            heap = self.groups[raw]
            while heap and heap[0][1] not in classes:
                heapq.heappop(heap)
            if not heap:
                del self.groups[raw]
        return self.groups

    def feasible_nodes(self, state: ClusterState) -> np.ndarray:
        """A boolean per node: it is up and its class fits."""
        if len(self.mask) <= len(state.sigs):  # room for every class id, and a last slot no class has
            self._grow(2 * len(state.sigs) + 1)
        # a down node's class is -1: the last slot, which no class id reaches, so it reads False
        return self.mask[state.node_class]


@dataclass(frozen=True, slots=True)
class Scored:
    """The classes scored for one pod and, when the search was cut, the nodes it reached (else all feasible)."""

    classes: dict[int, int]  # class id -> total score
    tie: tuple[int, ...]  # class ids with the top total, ascending
    nodes: np.ndarray | None  # the nodes scored, when percentageOfNodesToScore cut the search
    top: Maxima


def _cut_search(state: ClusterState, cands: Candidates, profile: Profile) -> np.ndarray | None:
    """The nodes kube-scheduler scores when it stops at `num_feasible_nodes_to_find` feasible ones (advancing
    `next_start` by the nodes it looked at), or None when every feasible node is scored."""
    n = len(state.nodes)
    want = num_feasible_nodes_to_find(profile.percentage_of_nodes_to_score, n)
    if want >= n:
        return None
    found = np.flatnonzero(cands.synced().feasible_nodes(state))
    if len(found) <= want:
        return None  # every node looked at: next_start moves by n, i.e. stays
    start = state.next_start
    split = int(np.searchsorted(found, start))
    order = np.concatenate((found[split:], found[:split]))[: want + 1]  # feasible nodes from `start`, wrapping
    # the search stops when the (want + 1)-th feasible node turns up: it and the nodes after it are not counted
    state.next_start = int(order[want])
    return order[:want]


def scored_classes(state: ClusterState, cands: Candidates, profile: Profile, *, advance: bool = True) -> Scored | None:
    """Every scored class's total and the tie set (None: no node fits)."""
    saved = state.next_start
    nodes = _cut_search(state, cands, profile)
    if not advance:
        state.next_start = saved
    if nodes is not None:
        cids = np.unique(state.node_class[nodes])
        top = Maxima.of(cands.fits[int(c)].raw for c in cids)
        values = normalised_totals(cands.bases[cids], cands.raws[cids], profile)
        totals = {int(c): int(t) for c, t in zip(cids, values, strict=True)}
    else:
        groups = cands.live_groups(state.classes)
        if not groups:
            return None
        top = Maxima.of(groups)
        totals = {}
        for raw, heap in groups.items():
            extra = normalised_extra(raw, top, profile)
            totals.update((cid, -neg + extra) for neg, cid in heap if cid in state.classes)
    if not totals:
        return None
    best = max(totals.values())
    return Scored(totals, tuple(sorted(c for c, t in totals.items() if t == best)), nodes, top)


def choose(state: ClusterState, cands: Candidates, profile: Profile, rng: random.Random) -> tuple[int, ClassFit] | None:
    """kube-scheduler's node for the pod shape: the top total, a seeded uniform choice among the tied nodes."""
    nodes = _cut_search(state, cands, profile)
    if nodes is not None:
        classes = state.node_class[nodes]
        totals = normalised_totals(cands.bases[classes], cands.raws[classes], profile)  # per node: same maxima
        tied = nodes[totals == totals.max()]
        index = int(tied[rng.randrange(len(tied))]) if len(tied) > 1 else int(tied[0])
        return index, cands.fits[int(state.node_class[index])]
    groups = cands.live_groups(state.classes)
    if not groups:
        return None
    top = Maxima.of(groups)
    best = None
    tops: list[tuple[int, Raw]] = []
    for raw, heap in groups.items():
        total = -heap[0][0] + normalised_extra(raw, top, profile)
        if best is None or total > best:
            best, tops = total, [(-heap[0][0], raw)]
        elif total == best:
            tops.append((-heap[0][0], raw))
    tie: list[int] = []
    for base, raw in tops:
        tie.extend(_tied_tops(groups[raw], base, state.classes))
    tie = sorted(set(tie))
    sizes = [len(state.classes[cid]) for cid in tie]
    pick = rng.randrange(sum(sizes)) if len(tie) > 1 or sizes[0] > 1 else 0
    for cid, size in zip(tie, sizes, strict=True):
        if pick < size:
            members = state.classes[cid]
            index = next(iter(members)) if pick == 0 else list(members)[pick]
            return index, cands.fits[cid]
        pick -= size
    raise AssertionError("unreachable: the pick is below the tie set's size")


def _tied_tops(heap: list[tuple[int, int]], base: int, classes: dict[int, Any]) -> list[int]:
    """The live classes of a group's heap with the top base score (dead ones met on the way are dropped)."""
    found: list[tuple[int, int]] = []
    tied: list[int] = []
    while heap and -heap[0][0] == base:
        entry = heapq.heappop(heap)
        if entry[1] in classes:
            found.append(entry)
            tied.append(entry[1])
    for entry in found:
        heapq.heappush(heap, entry)
    return tied
