"""Smoke tests of the real control plane: claims from templates, KEP-5004 extended resources, dynamic MIG.

There is no kubelet: the observable result is a pod bound to a (fake, Ready) Node with its claim allocated.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane import nvidia
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import Kube, pod, wait_for

pytestmark = [pytest.mark.e2e]

BIND_TIMEOUT = 60.0


def _node_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def _setup_node(kube: Kube, node: str, slices: list[dict[str, Any]]) -> None:
    for cls in nvidia.device_classes():
        kube.apply(cls)
    kube.create_node(node)
    for s in slices:
        kube.create(s)


def _template(name: str, device_class: str, expression: str, count: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": nvidia.RESOURCE,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": device_class,
                                "count": count,
                                "selectors": [{"cel": {"expression": expression}}],
                            },
                        }
                    ]
                }
            }
        },
    }


def _wait_bound(kube: Kube, namespace: str, name: str) -> dict[str, Any]:
    def bound() -> dict[str, Any] | None:
        p = kube.get("Pod", name, namespace)
        return p if p["spec"].get("nodeName") else None

    try:
        return wait_for(bound, timeout=BIND_TIMEOUT, what=f"pod {namespace}/{name} to be bound")
    except TimeoutError as e:
        raise AssertionError(f"{e}; events: {kube.pod_events(namespace, name)}") from e


def _wait_unschedulable(kube: Kube, namespace: str, name: str) -> dict[str, Any]:
    def unschedulable() -> dict[str, Any] | None:
        p = kube.get("Pod", name, namespace)
        for cond in p.get("status", {}).get("conditions", []):
            if cond["type"] == "PodScheduled" and cond["status"] == "False" and cond.get("reason") == "Unschedulable":
                return p
        return None

    p = wait_for(unschedulable, timeout=BIND_TIMEOUT, what=f"pod {namespace}/{name} to be reported unschedulable")
    assert not p["spec"].get("nodeName"), p["spec"]
    return p


def _claim_of(kube: Kube, namespace: str, p: dict[str, Any]) -> dict[str, Any]:
    statuses = p.get("status", {}).get("resourceClaimStatuses", [])
    assert len(statuses) == 1, p.get("status")
    claim = kube.get("ResourceClaim", statuses[0]["resourceClaimName"], namespace)
    assert claim["status"].get("allocation"), claim["status"]
    return claim


def _devices(claim: dict[str, Any]) -> list[str]:
    return [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]]


def test_template_claim_allocated_to_one_large_gpu(kube: Kube, k8s_namespace: str) -> None:
    node = _node_name("h100")
    _setup_node(kube, node, [nvidia.full_gpu_slice(node, nvidia.H100, 8)])
    expr = "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"
    kube.create(_template("one-big-gpu", "gpu.nvidia.com", expr), k8s_namespace)
    spec = pod("trainer", claims=[{"name": "gpu", "resourceClaimTemplateName": "one-big-gpu"}])
    spec["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    kube.create(spec, k8s_namespace)

    bound = _wait_bound(kube, k8s_namespace, "trainer")
    assert bound["spec"]["nodeName"] == node
    claim = _claim_of(kube, k8s_namespace, bound)
    # Created by the resourceclaim controller from the template, owned by the pod, reserved for it.
    assert claim["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"] == "gpu"
    owner = claim["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("Pod", "trainer", bound["metadata"]["uid"])
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["trainer"]
    results = claim["status"]["allocation"]["devices"]["results"]
    assert len(results) == 1
    assert (results[0]["driver"], results[0]["pool"], results[0]["request"]) == ("gpu.nvidia.com", node, "gpu")
    assert results[0]["device"] in {f"gpu-{i}" for i in range(8)}
    terms = claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"]
    assert terms[0]["matchFields"][0]["values"] == [node]


def test_template_claim_with_unsatisfiable_memory_stays_pending(kube: Kube, k8s_namespace: str) -> None:
    node = _node_name("h100")
    _setup_node(kube, node, [nvidia.full_gpu_slice(node, nvidia.H100, 2)])
    expr = "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('100Gi')) >= 0"
    kube.create(_template("huge-gpu", "gpu.nvidia.com", expr), k8s_namespace)
    spec = pod("too-big", claims=[{"name": "gpu", "resourceClaimTemplateName": "huge-gpu"}])
    spec["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    kube.create(spec, k8s_namespace)
    _wait_unschedulable(kube, k8s_namespace, "too-big")


def test_extended_resource_request_is_allocated_through_dra(kube: Kube, k8s_namespace: str) -> None:
    """KEP-5004: `nvidia.com/gpu: 2` with no DRA fields; the node advertises no such extended resource, the
    DeviceClass's extendedResourceName makes the scheduler allocate two devices through its special claim."""
    node = _node_name("h100")
    _setup_node(kube, node, [nvidia.full_gpu_slice(node, nvidia.H100, 8)])
    kube.create(
        pod("legacy", limits={"nvidia.com/gpu": "2"}, node_selector={"kubernetes.io/hostname": node}), k8s_namespace
    )

    bound = _wait_bound(kube, k8s_namespace, "legacy")
    assert bound["spec"]["nodeName"] == node
    assert "resourceClaims" not in bound["spec"]
    status = bound["status"]["extendedResourceClaimStatus"]
    assert status["requestMappings"][0]["resourceName"] == "nvidia.com/gpu"
    claim = kube.get("ResourceClaim", status["resourceClaimName"], k8s_namespace)
    results = claim["status"]["allocation"]["devices"]["results"]
    assert len(results) == 2
    assert len({r["device"] for r in results}) == 2
    assert all(r["driver"] == "gpu.nvidia.com" and r["pool"] == node for r in results)
    assert claim["metadata"]["ownerReferences"][0]["uid"] == bound["metadata"]["uid"]


def _mig_pod(kube: Kube, namespace: str, name: str, profile: str, node: str) -> None:
    template = f"mig-{profile.replace('.', '-')}"
    try:
        kube.get("ResourceClaimTemplate", template, namespace)
    except Exception:
        expr = f"device.attributes['gpu.nvidia.com'].profile == '{profile}'"
        kube.create(_template(template, "mig.nvidia.com", expr), namespace)
    spec = pod(name, claims=[{"name": "gpu", "resourceClaimTemplateName": template}])
    spec["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    kube.create(spec, namespace)


def _slices_by_device(slices: list[dict[str, Any]]) -> dict[str, set[int]]:
    return {d["name"]: nvidia.memory_slices_of(d) for s in slices for d in s["spec"].get("devices", [])}


def test_dynamic_mig_partitions_do_not_overlap(kube: Kube, k8s_namespace: str) -> None:
    """3g.40gb + 2g.20gb + 1g.10gb fit one partitionable A100-80GB on disjoint memory slices; 4g.40gb (only
    placeable at slice 0) then stays pending."""
    node = _node_name("a100")
    slices = nvidia.dynamic_mig_slices(node, gpus=1)
    _setup_node(kube, node, slices)
    memory_slices = _slices_by_device(slices)

    used: dict[str, set[int]] = {}
    for name, profile in (("big", "3g.40gb"), ("medium", "2g.20gb"), ("small", "1g.10gb")):
        _mig_pod(kube, k8s_namespace, name, profile, node)
        claim = _claim_of(kube, k8s_namespace, _wait_bound(kube, k8s_namespace, name))
        (device,) = _devices(claim)
        assert f"-mig-{profile.replace('.', '')}-" in device
        used[name] = memory_slices[device]
    assert sum(len(s) for s in used.values()) == 4 + 2 + 1
    assert len(set().union(*used.values())) == 7, used

    _mig_pod(kube, k8s_namespace, "blocked", "4g.40gb", node)
    _wait_unschedulable(kube, k8s_namespace, "blocked")


def test_dynamic_mig_two_halves_use_all_memory_slices(kube: Kube, k8s_namespace: str) -> None:
    """Two 3g.40gb take memory slices 0-3 and 4-7, so even a 1g.10gb no longer fits (the counters encode
    the MIG placement rules, not just compute slices: 3 + 3 + 1 compute slices would fit)."""
    node = _node_name("a100")
    slices = nvidia.dynamic_mig_slices(node, gpus=1)
    _setup_node(kube, node, slices)
    memory_slices = _slices_by_device(slices)
    halves = []
    for name in ("left", "right"):
        _mig_pod(kube, k8s_namespace, name, "3g.40gb", node)
        (device,) = _devices(_claim_of(kube, k8s_namespace, _wait_bound(kube, k8s_namespace, name)))
        halves.append(memory_slices[device])
    assert sorted(map(sorted, halves)) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    _mig_pod(kube, k8s_namespace, "tiny", "1g.10gb", node)
    _wait_unschedulable(kube, k8s_namespace, "tiny")


def test_deployment_replicas_each_get_their_own_gpu(kube: Kube, k8s_namespace: str) -> None:
    node = _node_name("h100")
    _setup_node(kube, node, [nvidia.full_gpu_slice(node, nvidia.H100, 8)])
    kube.create(_template("any-gpu", "gpu.nvidia.com", "true"), k8s_namespace)
    template = pod("x", claims=[{"name": "gpu", "resourceClaimTemplateName": "any-gpu"}])
    template["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "workers"},
        "spec": {
            "replicas": 5,
            "selector": {"matchLabels": {"app": "workers"}},
            "template": {"metadata": {"labels": {"app": "workers"}}, "spec": template["spec"]},
        },
    }
    kube.create(deployment, k8s_namespace)

    def all_bound() -> list[dict[str, Any]] | None:
        pods = kube.list("Pod", k8s_namespace, "app=workers")
        return pods if len(pods) == 5 and all(p["spec"].get("nodeName") == node for p in pods) else None

    pods = wait_for(all_bound, timeout=BIND_TIMEOUT, what="5 replicas bound")
    devices = [d for p in pods for d in _devices(_claim_of(kube, k8s_namespace, p))]
    assert len(devices) == 5 and len(set(devices)) == 5, devices


def test_kubectl_kustomize_and_server_side_dry_run(control_plane: ControlPlane, kube: Kube, tmp_path: Path) -> None:
    name = f"dry-run-{uuid.uuid4().hex[:6]}"
    (tmp_path / "class.json").write_text(json.dumps({**nvidia.device_classes()[1], "metadata": {"name": name}}))
    (tmp_path / "kustomization.yaml").write_text("resources: [class.json]\ncommonLabels: {app: gpudra}\n")
    rendered = control_plane.kubectl("kustomize", str(tmp_path)).stdout
    assert f"name: {name}" in rendered and "app: gpudra" in rendered
    applied = control_plane.kubectl(
        "apply", "--server-side", "--dry-run=server", "-o", "json", "-f", "-", input=rendered
    )
    obj = json.loads(applied.stdout)
    assert obj["metadata"]["labels"] == {"app": "gpudra"} and obj["metadata"]["uid"]
    assert name not in {c["metadata"]["name"] for c in kube.list("DeviceClass")}


def test_static_mig_slice_is_accepted_and_allocated(kube: Kube, k8s_namespace: str) -> None:
    node = _node_name("a100")
    _setup_node(kube, node, [nvidia.static_mig_slice(node, [("4g.40gb", 0), ("2g.20gb", 4), ("1g.10gb", 6)])])
    _mig_pod(kube, k8s_namespace, "small", "1g.10gb", node)
    (device,) = _devices(_claim_of(kube, k8s_namespace, _wait_bound(kube, k8s_namespace, "small")))
    assert device == "gpu-0-mig-1g10gb-19-6"
