"""KEP-5004 coexistence: which decisions gpudra leaves to kube-scheduler's own claim.

In Kubernetes 1.37 (KEP-5004 GA) a DeviceClass with `spec.extendedResourceName: nvidia.com/gpu` makes kube-scheduler
build, for an unchanged `nvidia.com/gpu: N` pod, one claim with one `exactly` request per container and resource:
`deviceClassName` the mapped class, `allocationMode: ExactCount`, `count: N`, nothing else (k8s.io/kubernetes
v1.37.2 pkg/scheduler/framework/plugins/dynamicresources/extendeddynamicresources.go, createRequestsAndMappings).
A gpudra decision whose claim is exactly that (every request of the class that maps the resource it replaces,
with that resource's count, no selectors, capacity, tolerations, admin access, alternatives, constraints or driver
config, and no HAMi resources that translation would remove) gives the pod nothing the scheduler does not: the pod
is admitted unchanged, with no template and no API write (in an audited namespace too: audit records what enforce
would do). A policy keeps such pods for gpudra with `spec.extendedResourceMapping: Translate`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .decision import Decision
from .engine import PolicySet
from .facts import HAMI_RESOURCES

__all__ = ["LEAVE", "TRANSLATE", "SchedulerPath", "scheduler_path"]

LEAVE, TRANSLATE = "LeaveToScheduler", "Translate"
# `exactly` fields that, when empty, ask for nothing beyond the scheduler's request.
_EMPTY_OK = frozenset({"selectors", "tolerations", "capacity", "adminAccess"})


@dataclass(frozen=True, slots=True)
class SchedulerPath:
    """Why the pod is left to kube-scheduler's claim: the classes and resources involved, and the reason text."""

    policy: str
    device_classes: tuple[str, ...]
    resources: tuple[tuple[str, int], ...]  # (legacy resource, devices) over the pod's containers
    reason: str


def _policy_setting(policies: PolicySet, name: str | None) -> str:
    """The policy's `extendedResourceMapping`; for a pod whose containers several policies decided (their names
    joined by ','), Translate when any of them says so."""
    names = set((name or "").split(","))
    settings = {p.extended_resource_mapping for p in policies.policies if p.name in names}
    return next((s for s in settings if s != LEAVE), LEAVE)


def _plain_request(exactly: Any, device_class: str, count: int) -> bool:
    """True when `exactly` is what the scheduler would build: the class, ExactCount `count`, nothing else."""
    if not isinstance(exactly, Mapping) or exactly.get("deviceClassName") != device_class:
        return False
    if exactly.get("allocationMode", "ExactCount") != "ExactCount" or exactly.get("count", 1) != count:
        return False
    rest = set(exactly) - {"deviceClassName", "allocationMode", "count"}
    return all(name in _EMPTY_OK and not exactly[name] for name in rest)


def _has_hami(container: Any) -> bool:
    resources = container.get("resources") if isinstance(container, Mapping) else None
    if not isinstance(resources, Mapping):
        return False
    return any(
        isinstance(values, Mapping) and not HAMI_RESOURCES.keys().isdisjoint(values)
        for values in (resources.get("requests"), resources.get("limits"))
    )


def scheduler_path(
    pod: Mapping[str, Any], decision: Decision, mapping: Mapping[str, str] | None, policies: PolicySet
) -> SchedulerPath | None:
    """The reason `pod` is left to kube-scheduler's own claim under the cluster's KEP-5004 `mapping` (extended
    resource -> DeviceClass), or None when gpudra translates it as decided (see the module's rules)."""
    # Audit mode too: what it records must be what enforce would do, and enforce would admit the pod unchanged.
    if not mapping or not decision.allowed or decision.mode not in ("enforce", "audit"):
        return None
    if decision.claim is None or not decision.containers:
        return None
    if _policy_setting(policies, decision.policy) != LEAVE:
        return None
    devices = decision.claim.get("devices") or {}
    if devices.get("constraints") or devices.get("config"):
        return None
    requests = {r.get("name"): r for r in devices.get("requests") or [] if isinstance(r, Mapping)}
    if len(requests) != len(decision.containers) or any(c.request != c.container for c in decision.containers):
        return None
    spec = pod.get("spec") or {}
    classes: dict[str, None] = {}
    totals: dict[str, int] = {}
    for container in decision.containers:
        if len(container.replaces) != 1:
            return None
        ((resource, count),) = container.replaces.items()
        device_class = mapping.get(resource)
        request = requests.get(container.request)
        if device_class is None or request is None or not _plain_request(request.get("exactly"), device_class, count):
            return None
        entries = spec.get(container.kind) or []
        if container.index < len(entries) and _has_hami(entries[container.index]):
            return None
        classes[device_class] = None
        totals[resource] = totals.get(resource, 0) + count
    resources = tuple(sorted(totals.items()))
    asked = ", ".join(f"{resource}: {count}" for resource, count in resources)
    mapped = ", ".join(f"DeviceClass {mapping[r]} maps {r}" for r, _ in resources)
    reason = (
        f"left to kube-scheduler (KEP-5004): {mapped}, and GPUClaimPolicy '{decision.policy}' asks for nothing "
        f"beyond whole devices of it ({asked}), which is the claim the scheduler builds itself; the pod is admitted "
        f"unchanged (the policy's spec.extendedResourceMapping: Translate keeps such pods for gpudra)"
    )
    return SchedulerPath(decision.policy or "", tuple(classes), resources, reason)
