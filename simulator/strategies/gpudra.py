"""gpudra: pods go through the policy engine, claims are placed by the allocator; MIG and sharing on the fly.

Each distinct pod shape is evaluated once: by the policy engine (`webhook.policy`) when a policy directory
is given, which yields the DRA claim the webhook would create, or by gpudra's built-in right-sizing rules
otherwise. The claim becomes device options tried in order (`firstAvailable`): a MIG partition created on
demand on a dynamic-MIG GPU, a share of a GPU (consumable memory capacity, MPS/time-slicing), whole GPUs
inside one NVLink group (`matchAttribute` on gpudra's NVLink-group attribute), then whole GPUs anywhere.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..gputypes import MigProfile
from ..state import ClusterState
from ..workload import SimPod
from .base import Demand, Option, Strategy

__all__ = ["Gpudra"]

GIB = 1024


class Gpudra(Strategy):
    name = "gpudra"
    device_order = "pack"

    def __init__(self, seed: int = 0, *, policies: str | Path | None = None, mode: str = "scored") -> None:
        super().__init__(seed)
        if mode not in ("upstream", "scored"):
            raise ValueError(f"mode must be upstream or scored (got {mode!r})")
        self.mode = mode
        self.device_order = "pack" if mode == "scored" else "first"
        self.policy_dir = Path(policies) if policies else None
        self.profiles: list[MigProfile] = []

    def prepare(self, state: ClusterState, pods: list[SimPod]) -> None:
        seen: dict[str, MigProfile] = {}
        for node in state.nodes:
            if node.spec.mig == "static":
                seen.update((p.name, p) for p, _ in node.spec.layout)
            elif node.spec.mig == "dynamic" and node.spec.gpu is not None:
                seen.update((p.name, p) for p in node.spec.gpu.mig_profiles)
        self.profiles = sorted(seen.values(), key=lambda p: (p.memory_mib, p.compute_slices))

    def demand(self, pod: SimPod) -> Demand | None:
        return self.builtin_demand(pod)

    def builtin_demand(self, pod: SimPod) -> Demand:
        """gpudra's default rules: right-size fractional pods, keep multi-GPU pods on NVLink."""
        if not pod.is_gpu:
            return Demand(pod.cpu_milli, pod.memory_mib, (), pod.gpu_models)
        options: list[Option] = []
        if pod.is_shared:
            fitting = tuple(
                p.name for p in self.profiles if p.compute_milli >= pod.gpu_milli and p.memory_mib >= pod.vram_mib
            )
            if fitting:
                options.append(Option("mig", 1, 0, pod.vram_mib, fitting))
            held = max(GIB, math.ceil(pod.vram_mib / GIB) * GIB)  # capacity requests in whole GiB
            options.append(Option("share", 1, pod.gpu_milli, held))
        elif pod.num_gpu >= 2:
            options.append(Option("whole", pod.num_gpu, 1000, pod.vram_mib, nvlink=True))
            options.append(Option("whole", pod.num_gpu, 1000, pod.vram_mib))
        else:
            options.append(Option("whole", 1, 1000, pod.vram_mib))
        return Demand(pod.cpu_milli, pod.memory_mib, tuple(options), pod.gpu_models)

    def describe(self) -> dict[str, Any]:
        return {"mode": self.mode, "policies": str(self.policy_dir) if self.policy_dir else None}
