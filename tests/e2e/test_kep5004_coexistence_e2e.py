"""gpudra beside KEP-5004 on the real control plane (v1.37.2: DRAExtendedResource is GA and locked on in
kube-apiserver, kube-scheduler and kube-controller-manager, simulator.verify.controlplane.FEATURE_GATES).

The NVIDIA driver's `gpu.nvidia.com` DeviceClass maps `nvidia.com/gpu` (`extendedResourceName`), as its chart sets
it; the nodes advertise no `nvidia.com/gpu` (no device plugin), so an untouched legacy pod is served by the
scheduler's own claim. `gpudra serve` reads the DeviceClasses and leaves such a pod alone (no template, no patch):
the scheduler creates its claim at PreBind, records it in `pod.status.extendedResourceClaimStatus` and the pod binds.
A right-sized pod (`gpudra.io/vram`) gets gpudra's template and claim. The namespace cap counts both.
No kubelet runs: a pod bound with its claim allocated is the observable result.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from dra.gpus import device_classes
from tests.controlplane.kube import Kube, wait_for
from tests.e2e.harness import ServeWebhook, Webhook, WebhookNamespaces, fake_gpu_nodes, label, toleration

pytestmark = pytest.mark.e2e

LABEL = label("kep5004")
TOLERATION = toleration("kep5004")
NODE = "kep5004-h100"


def _pod(name: str, gpus: int, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "tolerations": [TOLERATION],
            "nodeSelector": dict(LABEL),
            "containers": [{"name": "cuda", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
        },
    }


def _right_sized(name: str) -> dict[str, Any]:
    return _pod(name, 1, {"gpudra.io/vram": "40Gi"})


@pytest.fixture(scope="module")
def gpu_node(kube: Kube) -> Iterator[None]:
    mapped = [c for c in device_classes() if c["spec"].get("extendedResourceName") == "nvidia.com/gpu"]
    assert [c["metadata"]["name"] for c in mapped] == ["gpu.nvidia.com"]  # as the driver's chart sets it
    with fake_gpu_nodes(kube, "kep5004", {NODE: ("H100-SXM5-80GB", "none")}):
        yield


@pytest.fixture(scope="module")
def webhook(serve_webhook: ServeWebhook, gpu_node: None) -> Webhook:
    # the default, said here: the behaviour under test
    hook = serve_webhook("kep5004", env={"GPUDRA_EXTENDED_RESOURCE_MAPPING": "auto"})

    def mapping_read() -> bool:
        checks = json.loads(hook.get("/readyz"))["checks"]
        return "nvidia.com/gpu -> gpu.nvidia.com" in checks.get("deviceClasses", {}).get("detail", "")

    try:
        wait_for(mapping_read, timeout=60, what="gpudra serve's DeviceClass cache listing the mapping")
    except TimeoutError as exc:
        raise AssertionError(f"{exc}\n{hook.logs()}") from exc
    return hook


@pytest.fixture
def namespace(webhook_namespaces: WebhookNamespaces, webhook: Webhook) -> str:
    # waited for when deleted: a terminating namespace labelled with a cap would meet another module's `gpudra quota`
    return webhook_namespaces("kep5004", "kep5004", wait_gone=True)


def _bound(kube: Kube, namespace: str, name: str, ready: Any) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        pod = kube.get("Pod", name, namespace)
        return pod if pod["spec"].get("nodeName") and ready(pod) else None

    try:
        return wait_for(check, timeout=90, what=f"pod {namespace}/{name} bound with its claim")
    except TimeoutError as exc:
        raise AssertionError(f"{exc}; events: {kube.pod_events(namespace, name)}") from exc


def _allocated(kube: Kube, namespace: str, claim: str) -> list[dict[str, Any]]:
    found = kube.get("ResourceClaim", claim, namespace)
    allocation = (found.get("status") or {}).get("allocation") or {}
    return list((allocation.get("devices") or {}).get("results") or [])


def _left_to_scheduler_total(hook: Webhook) -> float:
    for line in hook.get("/metrics").decode().splitlines():
        if line.startswith("gpudra_admission_left_to_scheduler_total{") and 'device_class="gpu.nvidia.com"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_an_untouched_whole_gpu_pod_takes_the_schedulers_claim(kube: Kube, namespace: str, webhook: Webhook) -> None:
    before = _left_to_scheduler_total(webhook)
    kube.create(_pod("whole", 2), namespace)
    stored = kube.get("Pod", "whole", namespace)
    # Admitted unchanged: no claim of gpudra's, the legacy request kept, no template written.
    assert "resourceClaims" not in stored["spec"]
    assert stored["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "2"}
    assert "gpudra.io/translated" not in (stored["metadata"].get("annotations") or {})
    assert kube.list("ResourceClaimTemplate", namespace) == []
    assert _left_to_scheduler_total(webhook) == before + 1

    def scheduler_claim(pod: dict[str, Any]) -> bool:
        status = (pod.get("status") or {}).get("extendedResourceClaimStatus")
        return isinstance(status, dict) and len(_allocated(kube, namespace, status["resourceClaimName"])) == 2

    bound = _bound(kube, namespace, "whole", scheduler_claim)
    status = bound["status"]["extendedResourceClaimStatus"]
    assert status["requestMappings"][0]["resourceName"] == "nvidia.com/gpu"
    claim = kube.get("ResourceClaim", status["resourceClaimName"], namespace)
    assert claim["metadata"]["ownerReferences"][0]["uid"] == bound["metadata"]["uid"]
    results = claim["status"]["allocation"]["devices"]["results"]
    assert {r["pool"] for r in results} == {NODE} and len({r["device"] for r in results}) == 2
    (request,) = claim["spec"]["devices"]["requests"]
    assert request["exactly"]["deviceClassName"] == "gpu.nvidia.com" and request["exactly"]["count"] == 2


def test_a_right_sized_pod_gets_gpudras_claim(kube: Kube, namespace: str) -> None:
    kube.create(_right_sized("sized"), namespace)
    stored = kube.get("Pod", "sized", namespace)
    assert "nvidia.com/gpu" not in stored["spec"]["containers"][0]["resources"].get("limits", {})
    (entry,) = stored["spec"]["resourceClaims"]
    template = kube.get("ResourceClaimTemplate", entry["resourceClaimTemplateName"], namespace)
    assert template["metadata"]["name"].startswith("gpudra-")

    def gpudra_claim(pod: dict[str, Any]) -> bool:
        statuses = (pod.get("status") or {}).get("resourceClaimStatuses") or []
        return bool(statuses) and bool(_allocated(kube, namespace, statuses[0]["resourceClaimName"]))

    bound = _bound(kube, namespace, "sized", gpudra_claim)
    assert not (bound.get("status") or {}).get("extendedResourceClaimStatus")
    (status,) = bound["status"]["resourceClaimStatuses"]
    (result,) = _allocated(kube, namespace, status["resourceClaimName"])
    assert result["pool"] == NODE


def _mapped_to(hook: Webhook) -> str:
    detail: str = json.loads(hook.get("/readyz"))["checks"]["deviceClasses"]["detail"]
    return detail


def _left_alone_on_dry_run(kube: Kube, namespace: str) -> bool:
    answer = kube.request("POST", kube.path("Pod", namespace) + "?dryRun=All", _pod("dry", 1))
    return "resourceClaims" not in answer["spec"]


def test_the_webhook_follows_the_device_classes_as_they_change(kube: Kube, namespace: str, webhook: Webhook) -> None:
    """A newer class mapping nvidia.com/gpu takes the mapping over (as in the scheduler's own cache): gpudra's
    whole-GPU claim names gpu.nvidia.com, which no longer maps it, so the pod is translated. Deleting that class
    unmaps nvidia.com/gpu in kube-scheduler 1.37.2 although gpu.nvidia.com still names it
    (extendedresourcecache.go removeResourceName2class), so gpudra keeps translating; once gpu.nvidia.com changes,
    both map it again and the pod is left to the scheduler. Server-side dry runs: nothing is created; the last step
    leaves the scheduler mapping nvidia.com/gpu for the tests after this one."""
    assert _left_alone_on_dry_run(kube, namespace)
    (mapped,) = [c for c in device_classes() if c["metadata"]["name"] == "gpu.nvidia.com"]
    # Named below gpu.nvidia.com so that it wins even if both were created within the same second.
    newer = {**mapped, "metadata": {"name": "a-kep5004-whole-gpus"}}
    kube.create(newer)
    try:
        wait_for(lambda: "nvidia.com/gpu -> a-kep5004-whole-gpus" in _mapped_to(webhook), timeout=60,
                 what="the webhook's cache seeing the newer class")  # fmt: skip
        assert not _left_alone_on_dry_run(kube, namespace)
    finally:
        kube.delete("DeviceClass", "a-kep5004-whole-gpus")
        wait_for(lambda: "nvidia.com/gpu" not in _mapped_to(webhook), timeout=60,
                 what="the webhook's cache seeing nvidia.com/gpu unmapped")  # fmt: skip
        assert not _left_alone_on_dry_run(kube, namespace)
        # a change to the remaining class maps it again, in the scheduler and in gpudra
        kube.patch("DeviceClass", "gpu.nvidia.com", {"metadata": {"annotations": {"gpudra.io/e2e-touch": "1"}}})
    wait_for(lambda: "nvidia.com/gpu -> gpu.nvidia.com" in _mapped_to(webhook), timeout=60,
             what="the webhook's cache seeing gpu.nvidia.com map nvidia.com/gpu again")  # fmt: skip
    assert _left_alone_on_dry_run(kube, namespace)


def test_the_namespace_cap_counts_pods_left_to_the_scheduler(
    kube: Kube, webhook: Webhook, webhook_namespaces: WebhookNamespaces
) -> None:
    name = webhook_namespaces("kep5004", "kep5004", {"gpudra.io/max-gpus": "2"}, wait_gone=True)
    kube.create(_pod("two", 2), name)
    assert "resourceClaims" not in kube.get("Pod", "two", name)["spec"]
    with pytest.raises(ApiException) as denied:
        kube.create(_pod("three", 3), name)
    body = str(denied.value.body)
    assert denied.value.status == 403 and "asks for 3 GPU devices" in body and "gpudra.io/max-gpus" in body
    assert kube.list("ResourceClaimTemplate", name) == []
