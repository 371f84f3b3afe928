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
import os
import ssl
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from dra.gpus import catalog, device_classes, node_resource_slices, synthetic_node
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import Kube, wait_for
from tests.controlplane.webhook_configs import shipped_webhook_configurations
from tests.e2e.test_webhook_e2e import Webhook

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
LABEL = {"gpudra-e2e": "kep5004"}
TAINT = {"key": "gpudra-e2e", "value": "kep5004", "effect": "NoSchedule"}
TOLERATION = {"key": "gpudra-e2e", "operator": "Equal", "value": "kep5004", "effect": "NoSchedule"}
NODE = "kep5004-h100"


def _https(hook: Webhook, path: str) -> bytes:
    ctx = ssl.create_default_context(cafile=str(hook.certs / "ca.crt"))
    with urllib.request.urlopen(f"https://127.0.0.1:{hook.port}{path}", context=ctx, timeout=5) as resp:
        return bytes(resp.read())


def _configurations(hook: Webhook) -> list[dict[str, Any]]:
    # only this module's namespaces: other e2e tests share the control plane
    return shipped_webhook_configurations("gpudra-e2e-kep5004", hook.port, hook.ca_bundle, "kep5004")


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
    classes = device_classes()
    mapped = [c for c in classes if c["spec"].get("extendedResourceName") == "nvidia.com/gpu"]
    assert [c["metadata"]["name"] for c in mapped] == ["gpu.nvidia.com"]  # as the driver's chart sets it
    for cls in classes:
        kube.apply(cls)
    try:
        kube.create_node(NODE, labels=LABEL)
    except ApiException as e:
        if e.status != 409:
            raise
    kube.patch("Node", NODE, {"spec": {"taints": [TAINT]}})
    slices = node_resource_slices(synthetic_node(catalog.get("H100-SXM5-80GB"), NODE, 8), mig_mode="none")
    for s in slices:
        kube.apply(s)
    yield
    for s in slices:
        kube.delete("ResourceSlice", s["metadata"]["name"])
    kube.delete("Node", NODE)


@pytest.fixture(scope="module")
def webhook(
    control_plane: ControlPlane, kube: Kube, gpu_node: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Webhook]:
    hook = Webhook(tmp_path_factory.mktemp("kep5004"), control_plane.kubeconfig)
    previous = os.environ.get("GPUDRA_EXTENDED_RESOURCE_MAPPING")
    os.environ["GPUDRA_EXTENDED_RESOURCE_MAPPING"] = "auto"  # the default, said here: the behaviour under test
    try:
        hook.start()
    finally:
        if previous is None:
            os.environ.pop("GPUDRA_EXTENDED_RESOURCE_MAPPING", None)
        else:
            os.environ["GPUDRA_EXTENDED_RESOURCE_MAPPING"] = previous
    configs = _configurations(hook)
    try:
        for config in configs:
            kube.apply(config)

        def mapping_read() -> bool:
            checks = json.loads(_https(hook, "/readyz"))["checks"]
            return "nvidia.com/gpu -> gpu.nvidia.com" in checks.get("deviceClasses", {}).get("detail", "")

        try:
            wait_for(mapping_read, timeout=60, what="gpudra serve's DeviceClass cache listing the mapping")
        except TimeoutError as exc:
            raise AssertionError(f"{exc}\n{hook.logs()}") from exc
        yield hook
    finally:
        for config in configs:
            kube.delete(config["kind"], config["metadata"]["name"])
        hook.stop()


def _namespace(kube: Kube, labels: dict[str, str] | None = None) -> str:
    name = kube.create_namespace("kep5004")
    kube.patch("Namespace", name, {"metadata": {"labels": {**LABEL, **(labels or {})}}})

    def webhook_called() -> bool:
        """The API server calls gpudra for this namespace (it loads configurations from an informer): a server-side
        dry run of a right-sized pod comes back translated."""
        answer = kube.request("POST", kube.path("Pod", name) + "?dryRun=All", _right_sized("probe"))
        return "resourceClaims" in answer["spec"]

    wait_for(webhook_called, timeout=60, what=f"the API server calling gpudra for {name}")
    return name


def _delete_namespace(kube: Kube, name: str) -> None:
    """Delete it and wait until it is gone: a terminating namespace labelled with a cap would make another module's
    `gpudra quota` pass meet it."""
    kube.delete("Namespace", name)
    wait_for(
        lambda: name not in {n["metadata"]["name"] for n in kube.list("Namespace")}, timeout=120, what=f"{name} gone"
    )


@pytest.fixture
def namespace(kube: Kube, webhook: Webhook) -> Iterator[str]:
    name = _namespace(kube)
    yield name
    _delete_namespace(kube, name)


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
    for line in _https(hook, "/metrics").decode().splitlines():
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
    detail: str = json.loads(_https(hook, "/readyz"))["checks"]["deviceClasses"]["detail"]
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


def test_the_namespace_cap_counts_pods_left_to_the_scheduler(kube: Kube, webhook: Webhook) -> None:
    name = _namespace(kube, {"gpudra.io/max-gpus": "2"})
    try:
        kube.create(_pod("two", 2), name)
        assert "resourceClaims" not in kube.get("Pod", "two", name)["spec"]
        with pytest.raises(ApiException) as denied:
            kube.create(_pod("three", 3), name)
        body = str(denied.value.body)
        assert denied.value.status == 403 and "asks for 3 GPU devices" in body and "gpudra.io/max-gpus" in body
        assert kube.list("ResourceClaimTemplate", name) == []
    finally:
        _delete_namespace(kube, name)
