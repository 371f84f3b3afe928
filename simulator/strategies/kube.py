"""Strategies that kube-scheduler places: the DRA ones (KEP-5004 whole GPUs, gpudra's claims).

A `KubeScheduled` strategy filters and scores node classes with a kube-scheduler profile
(`simulator.scheduling`: the default profile of v1.37.2, or `--scheduler-config`), picks among the tied nodes
with a seeded generator, and is queued by the engine as kube-scheduler queues pods (`SchedulingQueue`), its pods'
devices freed `device_release_delay` after their CPU and memory (the resource claim controller deallocates a
deleted pod's claims after the pod is gone: about 40 ms on the test control plane, issue 24). Subclasses say
how a pod's devices are found on a class (`devices`): the DynamicResources filter and its prioritized-list score.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..scheduling import DEFAULT_PROFILE, Candidates, ClassFit, Devices, Profile, base_scores, choose, class_fit
from ..state import ClusterState, Part
from ..workload import SimPod
from .base import Demand, Strategy, fit_option

if TYPE_CHECKING:
    from .settings import RunSettings

__all__ = ["DEVICE_RELEASE_DELAY", "FIT_TYPES", "Devices", "KubeScheduled"]

DEVICE_RELEASE_DELAY = 0.04  # seconds between a deleted pod's CPU/memory and its devices being free (issue 24)
FIT_TYPES = {"least-allocated": "LeastAllocated", "most-allocated": "MostAllocated"}  # --node-score's names

_MISSING = object()


def _constraints_key(pod: SimPod) -> Any:
    """The pod object when it says anything about nodes (the filters and scores then depend on it)."""
    spec = (pod.pod or {}).get("spec") or {}
    if spec.get("nodeSelector") or spec.get("affinity") or spec.get("tolerations"):
        return id(pod.pod)
    return None


class KubeScheduled(Strategy):
    """Base of the strategies kube-scheduler places; `choose` is the profile's filters, scores and tie-break."""

    queue_model = "kube"
    device_release_delay = DEVICE_RELEASE_DELAY

    def __init__(self, seed: int = 0, *, profile: Profile | None = None, node_score: str | None = None) -> None:
        super().__init__(seed)
        profile = profile or DEFAULT_PROFILE
        if node_score in FIT_TYPES:  # --node-score: the NodeResourcesFit strategy of the profile
            profile = replace(profile, fit=replace(profile.fit, type=FIT_TYPES[node_score]))
            self.node_score = node_score
        self.profile = profile
        self.rng = random.Random(seed)
        self._candidates: dict[int, Candidates] = {}
        self._class_fits: dict[tuple[int, int], ClassFit | None] = {}

    @classmethod
    def runs(cls, settings: RunSettings) -> list[Strategy]:
        return [cls(settings.seed, profile=settings.scheduler)]

    def demand_key(self, pod: SimPod) -> Any:
        return (pod.shape, _constraints_key(pod))

    def devices(self, state: ClusterState, cid: int, demand: Demand) -> Devices | None:
        """The pod's devices on class `cid` (DynamicResources Filter) and their prioritized-list score; by default
        the demand's options tried in order on the class's GPUs (exact requests: score 0)."""
        parts: tuple[Part, ...] | None = ()
        if demand.options:
            node = state.representative(cid)
            info = state.gpu_info(cid)
            for option in demand.options:
                parts = fit_option(node, info, option, self.device_order)
                if parts is not None:
                    break
        return None if parts is None else (parts, (), 0)

    def node_local_score(self, state: ClusterState, cid: int, demand: Demand, pod: SimPod) -> dict[str, int]:
        """The weighted node-local plugin scores (NodeResourcesFit, BalancedAllocation) on class `cid`."""
        return dict(base_scores(self.profile, state.representative(cid), pod))

    def class_fit(self, state: ClusterState, cid: int, demand: Demand, pod: SimPod) -> ClassFit | None:
        return class_fit(
            self.profile, state, cid, pod, lambda: self.devices(state, cid, demand),
            lambda: self.node_local_score(state, cid, demand, pod),
        )  # fmt: skip

    def candidates_of(self, state: ClusterState, pod: SimPod) -> Candidates | None:
        """The classes that pass the filters for `pod`'s shape, brought up to date with the classes born since."""
        did, demand = self._demand(pod)
        if demand is None:
            return None
        cands = self._candidates.get(did)
        if cands is None:
            cands = self._candidates[did] = Candidates()
        born, classes, cache = state.born, state.classes, self._class_fits
        for position in range(cands.seen, len(born)):
            cid = born[position]
            if cid not in classes:
                continue
            if cid in cands.fits:  # back from the dead: its heap entry may be gone
                cands.add(cid, cands.fits[cid])
                continue
            key = (cid, did)
            fit = cache.get(key, _MISSING)
            if fit is _MISSING:
                fit = cache[key] = self.class_fit(state, cid, demand, pod)
            if fit is not None:
                cands.add(cid, fit)  # type: ignore[arg-type]
        cands.seen = len(born)
        return cands

    def choose(self, state: ClusterState, pod: SimPod) -> tuple[int, tuple[Part, ...]] | None:
        cands = self.candidates_of(state, pod)
        if cands is None:
            return None
        picked = choose(state, cands, self.profile, self.rng)
        if picked is None:
            return None
        return picked[0], picked[1].parts
