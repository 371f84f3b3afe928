"""The Kubernetes objects a verification creates: Nodes and the NVIDIA driver's ResourceSlices and DeviceClasses for a
simulated cluster, and each simulated pod as the gpudra webhook would have admitted it (claim template and all)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dra.gpus import device_classes

from ..cluster import NodeSpec
from ..workload import SimPod

if TYPE_CHECKING:
    from policyengine import PolicySet

__all__ = ["RESOURCE_API", "Admitted", "admit", "device_class_objects", "extended_resource_claim", "node_object"]

RESOURCE_API = "resource.k8s.io/v1"
KUBELET_VERSION = "v1.37.2"  # what the fake Nodes say runs on them; nothing reads it but `kubectl get nodes`


def device_class_objects() -> list[dict[str, Any]]:
    """`gpu.nvidia.com` (with KEP-5004's `extendedResourceName: nvidia.com/gpu`) and `mig.nvidia.com`, as the NVIDIA
    chart creates them."""
    return device_classes(RESOURCE_API)


def node_object(spec: NodeSpec, now: str) -> dict[str, Any]:
    """A Ready Node for `spec` (capacity = allocatable: cpu, memory, pods), with no kubelet behind it. `now` is the
    condition's timestamp (RFC 3339)."""
    resources = {"cpu": f"{spec.cpu_milli}m", "memory": f"{spec.memory_mib}Mi", "pods": "110"}
    info = {k: "" for k in ("machineID", "systemUUID", "bootID", "kernelVersion", "osImage", "kubeProxyVersion")}
    info |= {"kubeletVersion": KUBELET_VERSION, "architecture": "amd64", "operatingSystem": "linux"}
    info["containerRuntimeVersion"] = "fake://1"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": spec.name, "labels": {"kubernetes.io/hostname": spec.name, "gpudra.io/pool": spec.pool}},
        "spec": {},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "a node of gpudra's scheduler verification (no kubelet)",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
            "nodeInfo": info,
        },
    }


@dataclass(frozen=True, slots=True)
class Admitted:
    """A simulated pod as the API server would store it after gpudra's webhook: the Pod, the templates it points at,
    and the claim specs its pod will get (what the model is asked to place)."""

    pod: dict[str, Any]
    templates: tuple[dict[str, Any], ...]
    claims: tuple[dict[str, Any], ...]
    policy: str


def extended_resource_claim(pod: Mapping[str, Any], classes: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The claim kube-scheduler makes for a pod's extended resources that a DeviceClass serves (KEP-5004): one
    `exactly` request per resource, named after the DeviceClass; None when the pod asks for none."""
    served = {
        c["spec"]["extendedResourceName"]: c["metadata"]["name"]
        for c in classes
        if c["spec"].get("extendedResourceName")
    }
    counts: dict[str, int] = {}
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        for key in ("limits", "requests"):
            for name, value in (resources.get(key) or {}).items():
                if name in served:
                    counts[name] = max(counts.get(name, 0), int(value))
    if not counts:
        return None
    requests = [
        {"name": f"container-0-request-{i}", "exactly": {"deviceClassName": served[name], "count": count}}
        for i, (name, count) in enumerate(sorted(counts.items()))
    ]
    return {"devices": {"requests": requests}}


def admit(sim: SimPod, policies: PolicySet, name: str, namespace: str) -> Admitted | None:
    """`sim`'s Pod named `name` in `namespace`, translated by `policies` as the webhook
    translates it; None when the policies deny it. The workload owner references go (no owner objects exist here: the
    garbage collector would delete the pods), and the grace period is 0 (no kubelet confirms a graceful delete)."""
    from policyengine.translate import translate

    source = copy.deepcopy(sim.as_pod())
    meta = source.setdefault("metadata", {})
    meta["name"], meta["namespace"] = name, namespace
    meta.pop("ownerReferences", None)
    meta.pop("generateName", None)
    decision = policies.evaluate(source, sim.namespace_object)
    if not decision.allowed:
        return None
    translation = translate(source, decision)
    pod = copy.deepcopy(translation.pod)
    pod["spec"]["terminationGracePeriodSeconds"] = 0
    claims: list[dict[str, Any]] = []
    if translation.templates:
        claims = [copy.deepcopy(t["spec"]["spec"]) for t in translation.templates]
    else:
        legacy = extended_resource_claim(pod, device_class_objects())
        claims = [legacy] if legacy is not None else []
    policy = str(decision.policy) if translation.templates else ("legacy request" if claims else "no GPU")
    return Admitted(pod, tuple(translation.templates), tuple(claims), policy)
