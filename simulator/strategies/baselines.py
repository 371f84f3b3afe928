"""The FGD paper's node-choice policies on the `replay` engine (departures, queue): Random, BestFit, DotProd,
GpuPacking, GpuClustering, FGD.

On the `fgd` protocol the CLI runs them as the paper's own simulator does (`simulator.peer_protocol`); here they
are carried over to an engine where pods leave: the same resource model (Weng et al., ATC'23 §6.1: `num_gpu`
GPUs with `gpu_milli` of compute each, a pod below 1000 milli shares one GPU; VRAM held as the pod needs it;
MIG pools behave as plain GPUs), and DotProd, BestFit and GpuPacking score with the peer's integer formulas
(MaxSpecCpu 128,000, MaxSpecGpu 8,000). What differs, because nodes are scored per state class: ties go to the
class evaluated first (not a random node rank), BestFit is not min-max normalised, GpuClustering clusters by
equal share (the peer's pod-kind tags are not part of a class), and FGD breaks ties towards the fuller node.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

from ..frag import TypicalPod, frag_amount, typical_pods
from ..state import PLAIN, ClusterState, NodeState, Part, Sig
from ..workload import SimPod
from .base import Answer, Demand, Option, Strategy

__all__ = ["BASELINES", "BestFit", "DotProd", "Fgd", "GpuClustering", "GpuPacking", "RandomFit", "ShareStrategy"]


class ShareStrategy(Strategy):
    """Shared-GPU demand: fractional pods share one GPU by compute share; others take whole GPUs."""

    device_order = "pack"
    fgd_peer = True

    def describe(self) -> dict[str, Any] | None:
        return {"implementation": "simulator.strategies"}  # the replay engine's carry-over of the paper's baseline

    def prepare(self, state: ClusterState, pods: list[SimPod]) -> None:
        for node in state.nodes:
            if node.spec.mig != "none":
                node.set_mig("none", ())
                state.reindex(node)

    def demand(self, pod: SimPod) -> Demand | None:
        if not pod.is_gpu:
            return Demand(pod.cpu_milli, pod.memory_mib, (), pod.gpu_models)
        if pod.is_shared:
            option = Option("share", 1, pod.gpu_milli, pod.vram_mib)
        else:
            option = Option("whole", pod.num_gpu, 1000, pod.vram_mib)
        return Demand(pod.cpu_milli, pod.memory_mib, (option,), pod.gpu_models)


def _free_milli(sig: Sig) -> list[int]:
    return [g[1] if g[0] == PLAIN else 0 for group in sig[3] for g in group]


class RandomFit(ShareStrategy):
    name = "random"

    def __init__(self, seed: int = 0, *, node_score: str | None = None) -> None:
        super().__init__(seed, node_score=node_score)
        self.rng = random.Random(seed)

    def choose(self, state: ClusterState, pod: SimPod) -> tuple[int, tuple[Part, ...]] | None:
        """A node drawn uniformly among all nodes that fit."""
        did, demand = self._demand(pod)
        if demand is None:
            return None
        fits = self.candidates(state, did, demand)
        classes = state.classes
        fits.members.intersection_update(classes)  # a dead class re-enters through `born`
        if not fits.members:
            return None
        pick = self.rng.randrange(sum(len(classes[cid]) for cid in fits.members))
        for cid in fits.members:
            members = classes[cid]
            if pick < len(members):
                parts = self._cache[(cid, did)][1]  # type: ignore[index]
                return next(itertools.islice(members, pick, None)), parts
            pick -= len(members)
        raise AssertionError("unreachable")


MAX_CPU = 128_000  # the peer's MaxSpecCpu
MAX_GPU = 8_000  # the peer's MaxSpecGpu


class BestFit(ShareStrategy):
    """The node left with the least CPU and GPU after placement: the peer's `int((1 - residual) * 100)`."""

    name = "bestfit"

    def score(self, state: ClusterState, node: NodeState, sig: Sig, demand: Demand, parts: tuple[Part, ...]) -> float:
        left = sum(_free_milli(sig)) - sum(p.milli for p in parts)
        residual = 0.5 * (node.free_cpu - demand.cpu) / MAX_CPU + 0.5 * left / MAX_GPU
        return int((1 - residual) * 100)


class DotProd(ShareStrategy):
    """The peer's DotProd: the smaller the dot product of the pod's demand and the node's free CPU and GPU,
    the higher the score, `int(100 * (1 - dot / 2))`."""

    name = "dotprod"

    def score(self, state: ClusterState, node: NodeState, sig: Sig, demand: Demand, parts: tuple[Part, ...]) -> float:
        want = sum(p.milli for p in parts)
        dot = (node.free_cpu / MAX_CPU) * (demand.cpu / MAX_CPU) + (sum(_free_milli(sig)) / MAX_GPU) * (want / MAX_GPU)
        return int((1 - dot / 2) * 100)


class GpuPacking(ShareStrategy):
    """The peer's GpuPacking: the tightest partly used GPU first, then partly used nodes, idle nodes last."""

    name = "gpupacking"

    def score(self, state: ClusterState, node: NodeState, sig: Sig, demand: Demand, parts: tuple[Part, ...]) -> float:
        if not parts:
            return 0  # CPU pods: every node alike
        free = _free_milli(sig)
        idle = sum(1 for f in free if f == 1000)
        if idle == len(free):
            return max(33 - idle, idle)
        milli = parts[0].milli
        if milli >= 1000:
            return max(50 - len(parts), 33)
        tightest = min(f for f in free if f >= milli)
        return 49 if tightest == 1000 else max(100 - (tightest * 100 // 1000) // 10, 50)


class GpuClustering(ShareStrategy):
    """Pods with the same GPU share go together: GPUs already shared by that share first."""

    name = "gpuclustering"

    def evaluate(self, state: ClusterState, cid: int, demand: Demand) -> Answer:
        answer = super().evaluate(state, cid, demand)
        if answer is None or not demand.options or demand.options[0].kind != "share":
            return answer
        option = demand.options[0]
        gpus = state.gpu_info(cid).gpus
        same = [
            i for i, g in enumerate(gpus) if g[0] == PLAIN and g[3] == option.milli and g[1] >= option.milli
            and g[2] >= option.vram
        ]  # fmt: skip
        if same:
            return 2.0, (Part(same[0], "share", option.milli, option.vram),)
        return answer

    def score(self, state: ClusterState, node: NodeState, sig: Sig, demand: Demand, parts: tuple[Part, ...]) -> float:
        gpus = [g for group in sig[3] for g in group]
        if parts and parts[0].kind == "whole":  # whole-GPU pods cluster where whole GPUs are already taken
            return 1.0 if any(g[0] == PLAIN and g[1] == 0 and g[3] == 0 for g in gpus) else 0.0
        return 1.0 if any(g[0] == PLAIN and g[1] == 1000 for g in gpus) else 0.0


class Fgd(ShareStrategy):
    """Fragmentation Gradient Descent: the placement (node and GPU) that grows F_n(M) the least."""

    name = "fgd"

    def __init__(
        self, seed: int = 0, *, typical: tuple[TypicalPod, ...] | None = None, node_score: str | None = None
    ) -> None:
        super().__init__(seed, node_score=node_score)
        self.typical: tuple[TypicalPod, ...] = typical or ()
        self.tie_weight = 1e-3  # milli of fragmentation per unit of free GPU share: only breaks ties

    def prepare(self, state: ClusterState, pods: list[SimPod]) -> None:
        super().prepare(state, pods)
        if not self.typical:
            self.typical = typical_pods(pods)

    def evaluate(self, state: ClusterState, cid: int, demand: Demand) -> Answer:
        answer = super().evaluate(state, cid, demand)
        if answer is None:
            return None
        node = state.representative(cid)
        sig = state.sigs[cid]
        free = _free_milli(sig)
        label = node.spec.model_label
        before = frag_amount(node.free_cpu, tuple(sorted(free)), label, self.typical)
        after_cpu = node.free_cpu - demand.cpu
        candidates: list[tuple[Part, ...]] = [answer[1]]
        if demand.options and demand.options[0].kind == "share":
            option = demand.options[0]
            gpus = state.gpu_info(cid).gpus
            seen: set[tuple[Any, ...]] = set()
            candidates = []
            for i, g in enumerate(gpus):
                if g[0] == PLAIN and g[1] >= option.milli and g[2] >= option.vram and g not in seen:
                    seen.add(g)
                    candidates.append((Part(i, "share", option.milli, option.vram),))
        best: Answer = None
        for parts in candidates:
            after = list(free)
            for part in parts:
                after[part.gpu] -= part.milli
            delta = frag_amount(after_cpu, tuple(sorted(after)), label, self.typical) - before
            # ties (common: many nodes whose fragmentation moves alike) go to the fuller node, as packing would
            score = -delta - self.tie_weight * sum(after) / max(1000, 1000 * len(after))
            if best is None or score > best[0]:
                best = (score, parts)
        return best


BASELINES: dict[str, type[ShareStrategy]] = {
    s.name: s for s in (RandomFit, BestFit, DotProd, GpuPacking, GpuClustering, Fgd)
}
