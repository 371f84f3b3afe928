"""The webhook's recommendation cache end to end, through the real kube-apiserver, controller-manager and scheduler.

1. The cache itself (in this process) against the real API server through a TCP proxy the test can cut: it lists
   and watches GPUSizingRecommendation objects, follows changes, and when the connection is cut it keeps serving the
   last value it had while the object changes behind its back, says so in /readyz terms and metrics, and catches up
   by relisting once the connection is back.
2. `gpudra serve --sizing-recommendations on` with the shipped policies: a recommendation of 6Gi for Deployment
   `embed`, then the Deployment (an unannotated legacy `nvidia.com/gpu: 1` pod template): its pod, owned by the
   ReplicaSet `embed-<pod-template-hash>`, gets a claim sized from the recommendation (a MIG 1g.10gb partition on the
   A100 node), where the same Deployment without a recommendation gets a whole GPU.
3. The whole loop with a real Prometheus: a Deployment's first pod gets a whole GPU; its DCGM series go through
   `gpudra recommend`; the next pod is right-sized from the recommendation (MIG 1g.10gb first); that pod fills its
   partition, the next pass sees the pressure and grows the recommendation, and the pod after that gets the bigger
   size.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import threading
from collections.abc import Callable
from typing import Any

import kubernetes.client
import numpy as np
import pytest

from dra.quantity import Quantity
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import Kube, wait_for
from tests.e2e.harness import (
    A100_NODE,
    ServeWebhook,
    Webhook,
    WebhookNamespaces,
    bound_with_claim,
    device_attributes,
    gsr,
    gsr_path,
    label,
    recommend,
    toleration,
    vram,
)
from tests.prometheus.fixtures import DcgmDevice, PrometheusServer
from webhook.metrics import WebhookMetrics
from webhook.sizing_cache import KubeRecommendationSource, RecommendationCache

pytestmark = pytest.mark.e2e

GiB = 2**30
# The pods land on the `webhook` scope's nodes (the `gpu_nodes` fixture); the webhook serves the `sizing` scope.
LABEL = label("webhook")
TOLERATION = toleration("webhook")


def _recommend(kube: Kube, namespace: str, owner: str, vram: str, peak: str, *, kind: str = "Deployment") -> None:
    """Create (or update) the recommendation for `owner`, status through its subresource as the recommender does."""
    name = f"{kind.lower()}-{owner}"
    body = {
        "apiVersion": "gpudra.io/v1alpha1",
        "kind": "GPUSizingRecommendation",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": kind, "name": owner}},
    }
    with contextlib.suppress(kubernetes.client.ApiException):
        kube.request("POST", gsr_path(namespace), body)
    status = {
        "status": {
            "containers": [{"name": "main", "vram": vram, "peak": peak, "samples": 2016, "window": "168h"}],
            "lastUpdated": "2026-12-03T10:00:00Z",
        }
    }
    kube.request("PATCH", gsr_path(namespace, name, status=True), status, "application/merge-patch+json")


class Proxy:
    """A TCP proxy on loopback in front of the API server; `cut()` drops every connection and refuses new ones
    (the watch breaks, lists fail) until `restore()`."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.open = True
        self.closed = False
        self.conns: list[socket.socket] = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.open:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.conns += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        try:
            while True:
                ready, _, _ = select.select([a, b], [], [], 1.0)
                if not self.open or self.closed:
                    break
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        return
                    (b if sock is a else a).sendall(data)
        except OSError:
            pass
        finally:
            for sock in (a, b):
                with contextlib.suppress(OSError):
                    sock.close()

    def cut(self) -> None:
        self.open = False
        with self.lock:
            conns, self.conns = self.conns, []
        for sock in conns:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
                sock.close()

    def restore(self) -> None:
        self.open = True

    def close(self) -> None:
        self.closed = True
        self.cut()
        self.listener.close()
        self.thread.join(5)


def _sized(cache: RecommendationCache, namespace: str, owner: str) -> int | None:
    found = cache.observed(namespace, "Deployment", owner, "main")
    return None if found is None else found.vram_bytes


def test_the_cache_follows_the_api_server_and_keeps_the_last_value_when_cut_off(
    control_plane: ControlPlane, crd: None, kube: Kube, k8s_namespace: str
) -> None:
    ns = k8s_namespace
    host, port = control_plane.server.removeprefix("https://").rsplit(":", 1)
    proxy = Proxy((host, int(port)))
    config = control_plane.configuration()
    config.host = f"https://127.0.0.1:{proxy.port}"
    source = KubeRecommendationSource(kubernetes.client.ApiClient(config), timeout=3.0, watch_seconds=(30, 30))
    metrics = WebhookMetrics()
    cache = RecommendationCache(source, metrics, mode="on", backoff=(0.2, 1.0))
    cache.start()
    try:
        _recommend(kube, ns, "embed", "6Gi", "5Gi")
        wait_for(lambda: _sized(cache, ns, "embed") == 6 * GiB or None, timeout=30, what="the cache sees 6Gi")
        ok, detail = cache.readiness()
        assert ok and "recommendations" in detail and not detail.startswith("warning"), detail
        _recommend(kube, ns, "embed", "8Gi", "6Gi")  # a watch event, no relist
        wait_for(lambda: _sized(cache, ns, "embed") == 8 * GiB or None, timeout=30, what="the cache sees 8Gi")

        proxy.cut()
        wait_for(lambda: cache.status().failing or None, timeout=30, what="the cache notices the cut")
        _recommend(kube, ns, "embed", "12Gi", "10Gi")  # behind the cache's back
        _recommend(kube, ns, "other", "2Gi", "1Gi")

        def errors() -> float:
            return sum(
                metrics.registry.get_sample_value("gpudra_sizing_cache_errors_total", {"operation": op}) or 0.0
                for op in ("list", "watch")
            )

        # a few failed relists (backoff 0.2 s doubling to 1 s)
        wait_for(lambda: errors() >= 2, timeout=60, what="two failed relists while the connection is cut")
        assert _sized(cache, ns, "embed") == 8 * GiB  # the last good value, still served
        assert _sized(cache, ns, "other") is None
        ok, detail = cache.readiness()
        assert ok and detail.startswith("warning: stale cache") and "last error" in detail

        proxy.restore()
        wait_for(lambda: _sized(cache, ns, "embed") == 12 * GiB or None, timeout=30, what="the relist after restore")
        assert _sized(cache, ns, "other") == 2 * GiB
        assert not cache.status().failing and not cache.readiness()[1].startswith("warning")

        kube.request("DELETE", gsr_path(ns, "deployment-other"))
        wait_for(lambda: _sized(cache, ns, "other") is None or None, timeout=30, what="the delete seen")
        assert _sized(cache, ns, "embed") == 12 * GiB
    finally:
        cache.stop(timeout=10)
        proxy.close()


# -- through gpudra serve ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sizing_webhook(serve_webhook: ServeWebhook, crd: None, gpu_nodes: None) -> Webhook:
    """`gpudra serve --sizing-recommendations on --extended-resource-mapping off` (through their environment
    variables) for the `sizing` scope."""
    # An unsized pod gets gpudra's whole-GPU claim here (--extended-resource-mapping off), not the scheduler's
    # KEP-5004 claim that gpu.nvidia.com's mapping would give it (tests/e2e/test_kep5004_coexistence_e2e.py).
    env = {"GPUDRA_SIZING_RECOMMENDATIONS": "on", "GPUDRA_EXTENDED_RESOURCE_MAPPING": "off"}
    return serve_webhook("sizing", env=env)


@pytest.fixture
def namespace(webhook_namespaces: WebhookNamespaces, sizing_webhook: Webhook) -> str:
    return webhook_namespaces("sizing", "sizing")


def _metrics(hook: Webhook) -> str:
    return hook.get("/metrics").decode()


def _ready(hook: Webhook) -> dict[str, Any]:
    return dict(json.loads(hook.get("/readyz")))


def _deployment(name: str, namespace: str) -> dict[str, Any]:
    """An embedding server as its owners wrote it: `nvidia.com/gpu: 1`, no gpudra annotation."""
    container = {
        "name": "main",
        "image": "ghcr.io/huggingface/text-embeddings-inference:1.5",
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [container],
                    "tolerations": [TOLERATION],
                    "nodeSelector": dict(LABEL),
                    "terminationGracePeriodSeconds": 0,
                },
            },
        },
    }


def _the_pod(kube: Kube, namespace: str, app: str) -> dict[str, Any]:
    def one() -> dict[str, Any] | None:
        pods = kube.list("Pod", namespace, label_selector=f"app={app}")
        return pods[0] if pods else None

    return wait_for(one, timeout=60, what=f"a pod of Deployment {app}")


def test_a_deployments_pod_is_sized_from_its_recommendation(
    kube: Kube, sizing_webhook: Webhook, namespace: str
) -> None:
    ns = namespace
    _recommend(kube, ns, "embed", "6Gi", "5Gi")

    def cached() -> bool | None:
        lines = [
            line for line in _metrics(sizing_webhook).splitlines() if line.startswith("gpudra_sizing_recommendations ")
        ]
        return True if lines and float(lines[0].split()[1]) >= 1 else None

    wait_for(cached, timeout=30, what="the webhook's cache holds the recommendation")
    sizing = _ready(sizing_webhook)["checks"]["sizing"]
    assert sizing["ok"] and "recommendations" in sizing["detail"] and not sizing["detail"].startswith("warning")

    kube.create(_deployment("embed", ns))
    pod = _the_pod(kube, ns, "embed")
    owner = pod["metadata"]["ownerReferences"][0]
    assert owner["kind"] == "ReplicaSet" and owner["name"] == f"embed-{pod['metadata']['labels']['pod-template-hash']}"
    template = kube.get("ResourceClaimTemplate", pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"], ns)
    request = template["spec"]["spec"]["devices"]["requests"][0]
    assert request["firstAvailable"][0]["name"] == "mig-1g-10gb"  # 6Gi observed: the smallest slice holds it
    # This cluster publishes no shareable device, so the share alternative is dropped (claims shaped by the cluster).
    assert all(r["name"] != "shared" for r in request["firstAvailable"])
    bound, devices = bound_with_claim(kube, ns, pod["metadata"]["name"])
    assert bound["spec"]["nodeName"] == A100_NODE and len(devices) == 1
    attrs = device_attributes(kube, devices[0])
    assert attrs["attributes"]["type"]["string"] == "mig" and attrs["attributes"]["profile"]["string"] == "1g.10gb"
    assert Quantity.parse("6Gi") <= vram(attrs) < Quantity.parse("20Gi")

    # The same Deployment without a recommendation: a whole GPU, as before issue 10.
    kube.create(_deployment("plain", ns))
    plain = _the_pod(kube, ns, "plain")
    plain_template = kube.get(
        "ResourceClaimTemplate", plain["spec"]["resourceClaims"][0]["resourceClaimTemplateName"], ns
    )
    exactly = plain_template["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly["deviceClassName"] == "gpu.nvidia.com" and exactly["count"] == 1 and "selectors" not in exactly
    hits = [line for line in _metrics(sizing_webhook).splitlines() if line.startswith("gpudra_sizing_lookups_total")]
    assert any('result="hit"' in line and not line.endswith(" 0.0") for line in hits), hits


# -- the whole loop: whole GPU -> observed -> recommendation -> right-sized -> pressure -> grown back -----------------


def _pods(kube: Kube, namespace: str, app: str) -> list[dict[str, Any]]:
    return sorted(kube.list("Pod", namespace, label_selector=f"app={app}"), key=lambda p: p["metadata"]["name"])


def _scale_to(kube: Kube, namespace: str, app: str, replicas: int) -> dict[str, Any]:
    """Scale the Deployment up by one and return the new pod (admitted now, with what the cache holds now)."""
    before = {p["metadata"]["name"] for p in _pods(kube, namespace, app)}
    kube.patch("Deployment", app, {"spec": {"replicas": replicas}}, namespace)

    def new() -> dict[str, Any] | None:
        fresh = [p for p in _pods(kube, namespace, app) if p["metadata"]["name"] not in before]
        return fresh[0] if fresh else None

    return wait_for(new, timeout=60, what=f"pod {replicas} of Deployment {app}")


def _first_request(kube: Kube, pod: dict[str, Any], namespace: str) -> dict[str, Any]:
    name = pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
    return dict(kube.get("ResourceClaimTemplate", name, namespace)["spec"]["spec"]["devices"]["requests"][0])


def _wait_for_another_size(kube: Kube, namespace: str, pod: dict[str, Any]) -> None:
    """Until the webhook sizes `pod`'s next sibling otherwise than `pod` (its cache holds a new recommendation): a
    server-side dry run of a pod as the ReplicaSet makes them (same template, owner and labels) names another claim
    template than `pod` got (templates are named from a hash of their spec; a dry run creates none)."""
    template = pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
    app = pod["metadata"]["labels"]["app"]
    spec = _deployment(app, namespace)["spec"]["template"]["spec"]
    metadata = {"name": f"{app}-probe", "labels": pod["metadata"]["labels"],
                "ownerReferences": pod["metadata"]["ownerReferences"]}  # fmt: skip

    def resized() -> bool:
        probe = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
        answer = kube.request("POST", kube.path("Pod", namespace) + "?dryRun=All", probe)
        return bool(answer["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] != template)

    wait_for(resized, timeout=60, what=f"the webhook sizing Deployment {app}'s pods from the new recommendation")


def test_observed_usage_right_sizes_the_next_pods_and_grows_back_under_pressure(
    control_plane: ControlPlane,
    kube: Kube,
    sizing_webhook: Webhook,
    namespace: str,
    prometheus_factory: Callable[..., PrometheusServer],
) -> None:
    ns = namespace
    kube.create(_deployment("loop", ns))
    first = _the_pod(kube, ns, "loop")
    # 1. Nothing observed yet: the legacy request is a whole GPU.
    exactly = _first_request(kube, first, ns)["exactly"]
    assert exactly["deviceClassName"] == "gpu.nvidia.com" and "selectors" not in exactly

    # 2. A week of DCGM samples of that pod on a whole H100 at 5 GiB -> gpudra recommend -> 6Gi (5Gi x 1.2).
    used = DcgmDevice(ns, first["metadata"]["name"], "main", lambda t: np.full(t.shape, 5 * 1024.0))
    report = recommend(control_plane, prometheus_factory([used]).url, ns)
    assert report["writes"] == {"created": 1}
    (server,) = gsr(kube, ns, "deployment-loop")["status"]["containers"]
    assert server["vram"] == "6Gi" and server["pressure"] is False
    _wait_for_another_size(kube, ns, first)  # the webhook's watch delivers the new object

    # 3. The next pod of the same Deployment is right-sized from it: a MIG 1g.10gb first, a 6Gi share, a whole GPU.
    second = _scale_to(kube, ns, "loop", 2)
    request = _first_request(kube, second, ns)
    assert request["firstAvailable"][0]["name"] == "mig-1g-10gb"
    # This cluster publishes no shareable device: the share alternative is dropped (claims shaped by the cluster).
    assert all(r["name"] != "shared" for r in request["firstAvailable"])

    # 4. On the MIG 1g.10gb it fills its 9984 MiB: pressure after a shrink -> the recommendation grows (max, x 1.2).
    cramped = DcgmDevice(
        ns, second["metadata"]["name"], "main", lambda t: np.full(t.shape, 9984.0), total_mib=9984, reserved_mib=0,
        mig_profile="1g.10gb", mig_instance="9", gpu=1, uuid="GPU-aaaaaaaa-0000-0000-0000-00000000000b",
    )  # fmt: skip
    report = recommend(control_plane, prometheus_factory([used, cramped]).url, ns)
    assert report["writes"] == {"updated": 1}, report["writes"]
    (grown,) = gsr(kube, ns, "deployment-loop")["status"]["containers"]
    assert grown["pressure"] is True and Quantity.parse(grown["vram"]) > Quantity.parse("9984Mi")
    _wait_for_another_size(kube, ns, second)

    # The ceiling hit was the MIG's 9984 MiB: the size grows to 9984Mi x 1.2, not to the whole H100 the first pod
    # ran on without filling it.
    assert grown["vram"] == "11981Mi", grown

    # 5. The pod after that gets the bigger size: the A100's 20 GB profile first, no 10 GB profile any more.
    third = _scale_to(kube, ns, "loop", 3)
    names = [r["name"] for r in _first_request(kube, third, ns)["firstAvailable"]]
    # (a 2g.20gb would never be taken: wherever one is free on the dynamic-MIG A100, a 1g.20gb is too)
    assert names == ["mig-1g-20gb", "whole"], names
