"""`gpudra serve` checks every claim against the cluster's own devices (its ResourceSlices and DeviceClasses, by
list+watch): a claim no device can satisfy is refused naming the evidence, instead of a pod Pending for ever, and
the claims it admits keep only alternatives some device can satisfy. Through the real API server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from tests.controlplane.kube import Kube, wait_for
from tests.e2e.harness import ServeWebhook, Webhook, fake_gpu_nodes, label, toleration

pytestmark = pytest.mark.e2e

SCOPE = "shapes"


def _pod(name: str, annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "tolerations": [toleration(SCOPE)],
            "nodeSelector": label(SCOPE),
            "containers": [{"name": "cuda", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
    }


def _shapes_seen(hook: Webhook) -> int:
    for line in hook.get("/metrics").decode().splitlines():
        name, _, value = line.rpartition(" ")
        if name == 'gpudra_device_shapes{what="shapes"}':
            return int(float(value))
    return 0


@pytest.fixture(scope="module")
def webhook(kube: Kube, serve_webhook: ServeWebhook) -> Iterator[Webhook]:
    with fake_gpu_nodes(kube, SCOPE, {"shapes-h100": ("H100-SXM5-80GB", "none")}):
        hook = serve_webhook(SCOPE, "--extended-resource-mapping", "off")
        ready = json.loads(hook.get("/readyz"))["checks"]["deviceShapes"]
        assert ready["ok"], ready
        wait_for(lambda: _shapes_seen(hook) >= 1, timeout=60, what="the webhook's device shapes")
        yield hook


def test_a_claim_no_device_can_satisfy_is_refused_naming_the_evidence(
    kube: Kube, webhook: Webhook, webhook_namespaces: Any
) -> None:
    namespace = webhook_namespaces(SCOPE, "shapes")
    with pytest.raises(ApiException) as refused:
        kube.request("POST", kube.path("Pod", namespace) + "?dryRun=All", _pod("huge", {"gpudra.io/vram": "600Gi"}))
    body = str(refused.value.body)
    assert "no device can satisfy this claim" in body and "largest device memory" in body, body


def test_an_admitted_claim_keeps_only_alternatives_the_cluster_can_satisfy(
    kube: Kube, webhook: Webhook, webhook_namespaces: Any
) -> None:
    namespace = webhook_namespaces(SCOPE, "shapes")
    kube.create(_pod("small", {"gpudra.io/vram": "10Gi"}), namespace)
    pod = kube.get("Pod", "small", namespace)
    (reference,) = pod["spec"]["resourceClaims"]
    template = kube.get("ResourceClaimTemplate", reference["resourceClaimTemplateName"], namespace)
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    names = [alternative["name"] for alternative in request.get("firstAvailable", [])]
    assert names, request
    # The driver's H100 slices publish no shareable devices (allowMultipleAllocations): a share can never be had.
    assert not any("share" in name for name in names), names
