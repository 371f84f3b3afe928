"""A kube-scheduler profile as the simulator applies it: the plugins it models, their weights and arguments.

The defaults are v1.37.2's (pkg/scheduler/apis/config/v1/default_plugins.go: MultiPoint weights TaintToleration
3, NodeAffinity 2, NodeResourcesFit 1, NodeResourcesBalancedAllocation 1, DynamicResources 2 with the
DynamicResourceAllocation gate on; pkg/scheduler/apis/config/v1/defaults.go: NodeResourcesFit LeastAllocated
over cpu and memory, weight 1 each; percentageOfNodesToScore 0, i.e. adaptive; pod backoff 1 s to 10 s).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DEFAULT_PROFILE",
    "DEFAULT_SCORE_WEIGHTS",
    "FILTER_PLUGINS",
    "INERT_PLUGINS",
    "FitScoring",
    "Profile",
    "SCORE_PLUGINS",
]

FIT, BALANCED, DRA, TAINTS, AFFINITY = (
    "NodeResourcesFit", "NodeResourcesBalancedAllocation", "DynamicResources", "TaintToleration", "NodeAffinity",
)  # fmt: skip

# What the simulator computes at each extension point (the rest of the default set cannot change its answers).
FILTER_PLUGINS = frozenset({FIT, DRA, TAINTS, AFFINITY, "NodeUnschedulable"})
SCORE_PLUGINS = (TAINTS, AFFINITY, FIT, BALANCED, DRA)  # in default_plugins.go's order
DEFAULT_SCORE_WEIGHTS = {TAINTS: 3, AFFINITY: 2, FIT: 1, BALANCED: 1, DRA: 2}

# In-tree plugins that cannot change a simulated decision: no volumes, host ports, images, inter-pod (anti-)
# affinity or topology spread constraints in the simulated pods, no nominated nodes, gates or pod groups; binding,
# queue sorting by priority and PreEnqueue are what the engine does anyway.
INERT_PLUGINS = frozenset({
    "SchedulingGates", "PrioritySort", "NodeName", "NodePorts", "VolumeRestrictions", "NodeVolumeLimits",
    "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DefaultPreemption", "ImageLocality",
    "DefaultBinder", "NodeDeclaredFeatures", "GangScheduling", "TopologyPlacementGenerator", "PodGroupPodsCount",
    "DeferredPodScheduling",
})  # fmt: skip

DEFAULT_RESOURCES = (("cpu", 1), ("memory", 1))


@dataclass(frozen=True, slots=True)
class FitScoring:
    """NodeResourcesFitArgs.scoringStrategy: LeastAllocated | MostAllocated | RequestedToCapacityRatio."""

    type: str = "LeastAllocated"
    resources: tuple[tuple[str, int], ...] = DEFAULT_RESOURCES
    shape: tuple[tuple[int, int], ...] = ()  # RequestedToCapacityRatio: (utilization %, score 0..10)


@dataclass(frozen=True, slots=True)
class Profile:
    """What `simulator.scheduling.decide` and the DRA strategies apply; `DEFAULT_PROFILE` is kube-scheduler's."""

    scheduler_name: str = "default-scheduler"
    filters: frozenset[str] = FILTER_PLUGINS
    weights: tuple[tuple[str, int], ...] = tuple(DEFAULT_SCORE_WEIGHTS.items())  # enabled score plugins
    fit: FitScoring = field(default_factory=FitScoring)
    balanced_resources: tuple[tuple[str, int], ...] = DEFAULT_RESOURCES
    percentage_of_nodes_to_score: int = 0  # 0: adaptive (50 - nodes/125, at least 5%)
    initial_backoff: float = 1.0
    max_backoff: float = 10.0
    source: str = "kube-scheduler v1.37.2 defaults"
    _weight: dict[str, int] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_weight", dict(self.weights))

    def weight(self, plugin: str) -> int:
        """The plugin's score weight; 0 when it does not score in this profile."""
        return self._weight.get(plugin, 0)

    def describe(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "scheduler_name": self.scheduler_name,
            "score_weights": dict(self.weights),
            "filters": sorted(self.filters),
            "node_resources_fit": {
                "type": self.fit.type,
                "resources": dict(self.fit.resources),
                **({"shape": [list(p) for p in self.fit.shape]} if self.fit.shape else {}),
            },
            "percentage_of_nodes_to_score": self.percentage_of_nodes_to_score or "adaptive",
            "backoff_seconds": [self.initial_backoff, self.max_backoff],
        }


DEFAULT_PROFILE = Profile()
