"""kube-scheduler v1.37.2 as the simulator applies it: filters, integer scores, tie sets, the scheduling queue.

Stable API (the scheduler verifier codes against it; see docs/simulator.md):

- `state_from_objects(nodes, slices, bound) -> ClusterState`: the simulator's state of a real cluster from its
  v1 Node objects, resource.k8s.io/v1 ResourceSlices and bound pods with their allocated ResourceClaims.
- `sim_pod(pod) -> SimPod`: a Pod object as the simulator's pod (requests, priority; the Pod kept for its
  tolerations, nodeSelector and affinity).
- `decide(state, pod, profile, claims=..., mode="upstream", seed=0) -> Decision`: what kube-scheduler would do with
  `pod` in `state`: `feasible`, `scored`, `scores` (total per node), `plugin_scores`, `tie_set` (the nodes with the
  top total: what to compare), `node` (a seeded choice among them) and `devices` (per feasible node, the devices
  `dra.allocator` picked). `state` is not changed.
- `apply_binding(state, pod, claims)`: record a bound pod (its node, allocated devices) in `state`.
- `load_scheduler_config(path) -> Profile`, `DEFAULT_PROFILE`: a KubeSchedulerConfiguration read as kube-scheduler
  reads it; the defaults of 1.37.
- `SchedulingQueue`: activeQ / backoffQ / unschedulable pods, as the replay engine uses them.
"""

from .candidates import Candidates, ClassFit, choose, scored_classes
from .config import load_scheduler_config, profile_from_config
from .decide import Decision, decide
from .devices import PlacedClaim, Placer, claim_devices, node_slices
from .evaluate import Devices, class_fit
from .objects import apply_binding, pod_requests, sim_pod, state_from_objects
from .plugins import base_scores, passes_pod_filters, pod_raw
from .profile import DEFAULT_PROFILE, FitScoring, Profile
from .queue import SchedulingQueue
from .selection import num_feasible_nodes_to_find

__all__ = [
    "DEFAULT_PROFILE",
    "Candidates",
    "ClassFit",
    "Decision",
    "Devices",
    "FitScoring",
    "PlacedClaim",
    "Placer",
    "Profile",
    "SchedulingQueue",
    "apply_binding",
    "base_scores",
    "choose",
    "claim_devices",
    "class_fit",
    "decide",
    "load_scheduler_config",
    "node_slices",
    "pod_requests",
    "profile_from_config",
    "sim_pod",
    "state_from_objects",
    "num_feasible_nodes_to_find",
    "passes_pod_filters",
    "pod_raw",
    "scored_classes",
]
