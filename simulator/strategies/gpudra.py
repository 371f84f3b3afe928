"""gpudra: pods go through the policy engine, and the claims it builds are placed on the node classes.

Each distinct pod shape is evaluated once by `webhook.policy` (the shipped policies, or `--policies DIR`),
which returns the DRA claim the webhook would create. The claim's request alternatives become device options
tried in order, as the allocator walks `firstAvailable`: a MIG profile (`mig.nvidia.com`; on dynamic-MIG GPUs
the partition is created on the fly, on static ones it must be a free slot), a shared GPU with a memory
capacity request (consumable capacity; MPS or time-slicing), whole GPUs (`gpu.nvidia.com`), with a
`matchAttribute` on gpudra's NVLink-group attribute or the PCIe root keeping all devices in one NVLink group.
A pod the policies deny is never placed (counted); one they leave alone keeps its legacy request (KEP-5004).
In `scored` mode devices inside a node are packed (fullest GPU first, tightest NVLink group); `upstream`
takes them first-fit in device order, as kube-scheduler's allocator does.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from ..state import ClusterState
from ..traces.generator import legacy_pod
from ..traces.jsonl import parse_quantity
from ..workload import SimPod
from .base import Demand, Option, Strategy

__all__ = ["Gpudra", "options_from_claim"]

_PROFILE = re.compile(r"profile\s*==\s*['\"]([^'\"]+)['\"]")
_MEMORY = re.compile(r"memory\.compareTo\(quantity\(['\"]([^'\"]+)['\"]\)\)\s*>=\s*0")
TOPOLOGY = ("gpu.gpudra.io/nvlinkGroup", "resource.kubernetes.io/pcieRoot")


def _selectors(req: dict[str, Any]) -> list[str]:
    return [str((s.get("cel") or {}).get("expression", "")) for s in req.get("selectors") or []]


def _alternative(req: dict[str, Any], pod: SimPod, nvlink: bool) -> Option | None:
    cls = str(req.get("deviceClassName", ""))
    count = int(req.get("count", 1))
    selectors = _selectors(req)
    if cls.startswith("mig"):
        profiles = [m.group(1) for s in selectors for m in [_PROFILE.search(s)] if m]
        return Option("mig", count, 0, pod.vram_mib, tuple(profiles)) if profiles and count == 1 else None
    memory = ((req.get("capacity") or {}).get("requests") or {}).get("memory")
    if memory is not None:
        held = int(parse_quantity(str(memory)) / 2**20)
        return Option("share", count, pod.gpu_milli, held, consumable=True) if count == 1 else None
    floor = max([int(parse_quantity(m.group(1)) / 2**20) for s in selectors for m in [_MEMORY.search(s)] if m] or [0])
    return Option("whole", count, 1000, max(floor, pod.vram_mib), nvlink=nvlink and count > 1)


def options_from_claim(claim: dict[str, Any], pod: SimPod) -> tuple[Option, ...] | None:
    """The device options of a one-request claim (alternatives in order), or None when it has another shape."""
    devices = claim.get("devices") or {}
    requests = devices.get("requests") or []
    if len(requests) != 1:
        return None
    request = requests[0]
    nvlink = any(
        c.get("matchAttribute") in TOPOLOGY and (not c.get("requests") or request.get("name") in c["requests"])
        for c in devices.get("constraints") or []
    )
    alternatives = request.get("firstAvailable") or [request.get("exactly") or {}]
    options = [o for o in (_alternative(a, pod, nvlink) for a in alternatives) if o is not None]
    return tuple(options) if options else None


class Gpudra(Strategy):
    name = "gpudra"

    def __init__(
        self,
        seed: int = 0,
        *,
        policies: str | Path | None = None,
        mode: str = "scored",
        node_score: str | None = None,
    ) -> None:
        super().__init__(seed, node_score=node_score)
        if mode not in ("upstream", "scored"):
            raise ValueError(f"mode must be upstream or scored (got {mode!r})")
        self.mode = mode
        self.device_order = "pack" if mode == "scored" else "first"
        from webhook.policy import load_policies, shipped_policies_dir

        self.policy_dir = Path(policies) if policies else shipped_policies_dir()
        self.policies = load_policies(self.policy_dir)
        if self.policies.errors:
            raise self.policies.errors[0]
        self.outcomes: Counter[str] = Counter()  # per distinct pod shape: which policy / what happened
        self.denied: set[tuple[Any, ...]] = set()

    def prepare(self, state: ClusterState, pods: list[SimPod]) -> None:
        self.outcomes.clear()

    def _demand(self, pod: SimPod) -> tuple[int, Demand | None]:
        key = (
            pod.shape, pod.workload_class, pod.namespace,
            id(pod.pod) if pod.pod is not None else None,
            id(pod.namespace_object) if pod.namespace_object is not None else None,
        )  # fmt: skip
        found = self._demands.get(key)
        if found is None:
            demand = self.demand(pod)
            did = self._ids.setdefault(demand, len(self._ids)) if demand is not None else -1
            found = self._demands[key] = (did, demand)
        return found

    def demand(self, pod: SimPod) -> Demand | None:
        if not pod.is_gpu:
            return Demand(pod.cpu_milli, pod.memory_mib, (), pod.gpu_models)
        spec = pod.pod or legacy_pod(
            pod.name, pod.cpu_milli, pod.memory_mib, pod.num_gpu, pod.workload_class,
            vram_mib=pod.vram_mib if pod.is_shared else None,
        )  # fmt: skip
        decision = self.policies.evaluate(spec, pod.namespace_object)
        if not decision.allowed:
            self.outcomes["denied"] += 1
            return None
        options = options_from_claim(dict(decision.claim), pod) if decision.mutates and decision.claim else None
        if options is None:  # untouched (no policy, audit mode) or a claim shape we do not model: legacy request
            self.outcomes["legacy request"] += 1
            options = (Option("whole", pod.num_gpu, 1000, pod.vram_mib),)
        else:
            self.outcomes[f"policy {decision.policy}"] += 1
        return Demand(pod.cpu_milli, pod.memory_mib, options, pod.gpu_models)

    def describe(self) -> dict[str, Any]:
        return {"mode": self.mode, "policies": str(self.policy_dir), "decisions": dict(self.outcomes)}
