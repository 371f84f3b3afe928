"""The legacy world and its DRA twin: GPUs by count, MIG only as named per-profile resources.

`device-plugin`: `nvidia.com/gpu: N` gives N whole GPUs (a pod needing 0.3 of a GPU holds a whole one);
a pod that asks for `nvidia.com/mig-<profile>` gets a slot of a node's static layout. Pools declared
`mig: dynamic` start without MIG and are re-partitioned like mig-parted does it: the node is drained (pods
evicted and requeued), stays down `drain_seconds`, and comes back with a homogeneous `all-<profile>` layout.
Node choice is kube-scheduler's LeastAllocated; the device plugin's preferred allocation packs NVLink groups.

`dra-whole`: the same requests through KEP-5004 (extended resources backed by DRA): whole devices, first-fit
inside the node as the upstream allocator does, and MIG profiles on dynamic pools created on the fly; placed by
kube-scheduler's profile and queue (`KubeScheduled`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dra.gpus import MigProfile

from ..cluster import Layout, mig_profiles, place_layout
from ..state import DYNAMIC, ClusterState, NodeState
from ..workload import SimPod
from .base import Demand, Option, Strategy
from .kube import KubeScheduled

if TYPE_CHECKING:
    from .settings import RunSettings

__all__ = ["DevicePlugin", "DraWhole", "Reconfiguration"]


@dataclass(frozen=True, slots=True)
class Reconfiguration:
    """Drain `node` and bring it back with MIG `mode` (`none` or `static`) and `layout`."""

    node: int
    mode: str
    layout: Layout
    reason: str


class _ByCount(Strategy):
    """Pods keep their legacy requests: whole GPUs by count, or one named MIG profile."""

    def prepare(self, state: ClusterState, pods: list[SimPod]) -> None:
        profiles: dict[str, MigProfile] = {}
        for node in state.nodes:
            gpu = node.spec.gpu
            if node.spec.mig == "static":
                profiles.update((pl.profile.name, pl.profile) for pl in node.spec.layout)
            elif node.spec.mig == "dynamic" and gpu is not None:
                profiles.update((p.name, p) for p in mig_profiles(gpu))
        # the resource a user would pick: the smallest offered MIG profile that holds the pod
        self.profiles = sorted(profiles.values(), key=lambda p: (p.memory_mib, p.compute_slices))

    def demand(self, pod: SimPod) -> Demand | None:
        if not pod.is_gpu:
            return Demand(pod.cpu_milli, pod.memory_mib, (), pod.gpu_models)
        if pod.is_shared:
            for prof in self.profiles:
                if prof.compute_milli >= pod.gpu_milli and prof.memory_mib >= pod.vram_mib:
                    option = Option("mig", 1, prof.compute_milli, pod.vram_mib, (prof.name,))
                    return Demand(pod.cpu_milli, pod.memory_mib, (option,), pod.gpu_models)
        whole = Option("whole", pod.num_gpu, 1000, pod.vram_mib)
        return Demand(pod.cpu_milli, pod.memory_mib, (whole,), pod.gpu_models)


class DevicePlugin(_ByCount):
    name = "device-plugin"
    device_order = "nvlink"

    def __init__(
        self,
        seed: int = 0,
        *,
        drain_seconds: float = 600.0,
        min_layout_age: float = 3600.0,
        drain_max_pods: int = 4,
        node_score: str | None = None,
    ) -> None:
        super().__init__(seed, node_score=node_score)
        self.drain_seconds = drain_seconds
        self.min_layout_age = min_layout_age  # an operator does not flip a node's layout back and forth
        self.drain_max_pods = drain_max_pods  # nor drain a node that runs many pods for one waiting pod
        self.reconfigurable: set[int] = set()
        self.changed_at: dict[int, float] = {}
        self.inflight: dict[int, str] = {}  # node -> layout it is being drained for

    @classmethod
    def runs(cls, settings: RunSettings) -> list[Strategy]:
        """The cluster spec's `device_plugin` knobs (drain_seconds, min_layout_age, drain_max_pods) apply."""
        knobs = dict(settings.cluster.device_plugin)
        drain_max_pods = knobs.pop("drain_max_pods", None)
        if drain_max_pods is not None:
            knobs["drain_max_pods"] = int(drain_max_pods)
        return [cls(settings.seed, **knobs)]  # type: ignore[arg-type]

    def prepare(self, state: ClusterState, pods: list[SimPod]) -> None:
        super().prepare(state, pods)
        for node in state.nodes:
            if node.spec.mig == "dynamic":
                self.reconfigurable.add(node.index)
                node.set_mig("none", ())
                state.reindex(node)

    def reconfigure(self, state: ClusterState, pending: list[SimPod], now: float) -> list[Reconfiguration]:
        """Nodes to re-partition for pods no node can take now (at most one per wanted layout)."""
        out: list[Reconfiguration] = []
        self.inflight = {i: t for i, t in self.inflight.items() if state.nodes[i].down_until > 0}
        wanted: set[str] = set(self.inflight.values())
        busy = set(self.inflight)
        shapes = {pod.shape: pod for pod in pending}  # pending pods failed their last try: no need to re-check
        for pod in shapes.values():
            _, demand = self._demand(pod)
            if demand is None or not demand.options:
                continue
            option = demand.options[0]
            target = option.profiles[0] if option.kind == "mig" else "none"
            if target in wanted:
                continue
            wanted.add(target)
            node = self._candidate(state, target, option.count, busy, now)
            if node is None:
                continue
            busy.add(node.index)
            self.inflight[node.index] = target
            self.changed_at[node.index] = now
            if target == "none":
                out.append(Reconfiguration(node.index, "none", (), f"whole GPUs for {pod.name}"))
            else:
                assert node.spec.gpu is not None
                out.append(
                    Reconfiguration(node.index, "static", _homogeneous(node, target), f"{target} for {pod.name}")
                )
        return out

    def _candidate(self, state: ClusterState, target: str, count: int, busy: set[int], now: float) -> NodeState | None:
        best: NodeState | None = None
        for index in sorted(self.reconfigurable - busy):
            node = state.nodes[index]
            gpu = node.spec.gpu
            if gpu is None or len(node.pods) > self.drain_max_pods:
                continue
            if now - self.changed_at.get(index, -1e18) < self.min_layout_age:
                continue
            layout_names = {pl.profile.name for pl in (node.gpus[0].slots if node.gpus else ())}
            if target == "none":
                if not layout_names or node.spec.gpu_count < count:
                    continue
            elif all(p.name != target for p in mig_profiles(gpu)) or layout_names == {target}:
                continue
            if best is None or len(node.pods) < len(best.pods):
                best = node
        return best


def _homogeneous(node: NodeState, profile: str) -> Layout:
    """mig-parted's `all-<profile>`: as many instances of one profile as fit on the GPU."""
    assert node.spec.gpu is not None
    for count in range(7, 0, -1):
        layout = place_layout(node.spec.gpu, [profile] * count)
        if layout is not None:
            return layout
    return ()


class DraWhole(KubeScheduled, _ByCount):
    """Whole GPUs through DRA, placed by kube-scheduler with the upstream allocator's first-fit device choice: what
    KEP-5004 (GA in Kubernetes 1.37) gives an unchanged `nvidia.com/gpu: N` pod through a DeviceClass with
    `extendedResourceName`. Run as `kep-5004`, or by its older name `dra-whole`."""

    name = "dra-whole"
    device_order = "first"

    def prepare(self, state: ClusterState, pods: list[SimPod]) -> None:
        super().prepare(state, pods)
        for node in state.nodes:
            assert node.spec.mig != "dynamic" or all(g.mode == DYNAMIC for g in node.gpus)


class Kep5004(DraWhole):
    """`DraWhole` under the name of the Kubernetes feature that provides it natively."""

    name = "kep-5004"
