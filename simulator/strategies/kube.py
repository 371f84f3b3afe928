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
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..scheduling import (
    DEFAULT_PROFILE,
    Candidates,
    ClassFit,
    Devices,
    Profile,
    base_scores,
    choose,
    passes_pod_filters,
    pod_raw,
)
from ..scheduling.plugins import LocalParts, cpu_memory_parts, fast_path
from ..scheduling.profile import AFFINITY, FIT, TAINTS
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
        self._fit_filter = FIT in profile.filters
        self._needs_raw = bool(profile.weight(TAINTS) or profile.weight(AFFINITY))
        self.rng = random.Random(seed)
        self._candidates: dict[int, Candidates] = {}
        # the node-local scores without a detour (None: `node_local_score`, e.g. a what-if score or other resources)
        self._scorer: LocalParts | None = cpu_memory_parts(profile) if fast_path(profile) else None

    @classmethod
    def runs(cls, settings: RunSettings) -> list[Strategy]:
        return [cls(settings.seed, profile=settings.scheduler)]

    def demand_key(self, pod: SimPod) -> Any:
        return (pod.shape, _constraints_key(pod))

    def devices(self, state: ClusterState, cid: int, demand: Demand) -> Devices | None:
        """The pod's devices on class `cid` (DynamicResources Filter) and their prioritized-list score; by default
        the demand's options tried in order on the class's GPUs (exact requests: score 0), cached per option list."""
        if not demand.options:
            return (), (), 0
        opt = self._option_of.get(id(demand))  # demands live as long as the strategy: ids are stable
        if opt is None:
            opt = self._option_of[id(demand)] = self._option_ids.setdefault(demand.options, len(self._option_ids))
        key = (cid, opt)
        parts = self._parts.get(key, _MISSING)
        if parts is _MISSING:
            node = state.representative(cid)
            info = state.gpu_info(cid)
            parts = None
            for option in demand.options:
                parts = fit_option(node, info, option, self.device_order)
                if parts is not None:
                    break
            self._parts[key] = parts
        return None if parts is None else (parts, (), 0)  # type: ignore[return-value]

    def node_local_score(self, state: ClusterState, cid: int, demand: Demand, pod: SimPod) -> Mapping[str, int]:
        """The weighted node-local plugin scores (NodeResourcesFit, BalancedAllocation) on class `cid`; unless
        overridden, a function of the node's capacity and use and the pod's requests (`class_fit` memoises it)."""
        return base_scores(self.profile, state.representative(cid), pod)

    def class_fit(self, state: ClusterState, cid: int, demand: Demand, pod: SimPod) -> ClassFit | None:
        """`simulator.scheduling.class_fit` with this strategy's devices and memoised node-local scores (the
        engine's hot path: the cheap CPU/memory filter first, from the signature; a node looked up only when the
        pod's constraints or the node's taints need one)."""
        sig = state.sigs[cid]
        free_cpu, free_mem = sig[1], sig[2]
        if self._fit_filter and (free_cpu < demand.cpu or free_mem < demand.mem):
            return None
        spec = state.template_specs[sig[0]]  # what the class's nodes share (their names aside)
        constrained = pod.pod is not None or spec.taints
        node = None
        if constrained or pod.gpu_models:
            node = state.representative(cid)
            if not passes_pod_filters(self.profile, node, pod):
                return None
        found = self.devices(state, cid, demand)
        if found is None:
            return None
        if node is not None and constrained and self._needs_raw:
            raw = (found[2], *pod_raw(self.profile, node, pod))
        else:
            raw = (found[2], 0, 0)
        if self._scorer is not None:
            # the total only: the per-plugin parts are for `simulator.scheduling.decide`, which scores on its own
            fit, balanced = self._scorer(spec.cpu_milli, spec.memory_mib, free_cpu, free_mem, demand.cpu, demand.mem)
            return ClassFit(found[0], found[1], (fit or 0) + (balanced or 0), raw)
        scores = self.node_local_score(state, cid, demand, pod)
        return ClassFit(found[0], found[1], sum(scores.values()), raw, tuple(scores.items()))

    def candidates_of(self, state: ClusterState, pod: SimPod) -> Candidates | None:
        """The classes that pass the filters for `pod`'s shape, brought up to date with the classes born since."""
        did, demand = self._demand(pod)
        if demand is None:
            return None
        cands = self._candidates.get(did)
        if cands is None:
            cands = self._candidates[did] = Candidates()
        cands.catch_up(state, self.class_fit, demand, pod)
        return cands

    def choose(self, state: ClusterState, pod: SimPod) -> tuple[int, tuple[Part, ...]] | None:
        cands = self.candidates_of(state, pod)
        if cands is None:
            return None
        picked = choose(state, cands, self.profile, self.rng)
        if picked is None:
            return None
        return picked[0], picked[1].parts
