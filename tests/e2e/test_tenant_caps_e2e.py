"""A tenant with only a namespaced Role, through the real kube-apiserver, cannot exceed its namespace's GPU cap by
any route the attack found (a template or claim created after the pod names it, one claim made by hand, five pods of
two GPUs under a cap of two), and a review forged straight to `gpudra serve` creates and refreshes nothing.

`gpudra serve --client-ca` trusts only the client certificate the control plane's kube-apiserver presents to webhooks
(tests/controlplane/cluster.py, AdmissionConfiguration); `gpudra quota` turns the namespace label gpudra.io/max-gpus
into the ResourceQuota that counts every claim when it is created. No nodes: quota and admission act before
scheduling, so the claims that exist (and the ones refused) are the observable result.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import kubernetes.client
import pytest
from kubernetes.client.exceptions import ApiException

from dra.gpus import device_classes
from kubeapi import LAST_USED_ANNOTATION
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import Kube, wait_for
from tests.e2e.harness import ROOT, ServeWebhook, Webhook, webhook_namespace
from webhook.namespace_quota import QUOTA_NAME
from webhook.review import pod_review

pytestmark = pytest.mark.e2e


def _anonymous(webhook: Webhook) -> httpx.Client:
    """A client with no certificate: anyone who can reach the webhook's Service."""
    ctx = ssl.create_default_context(cafile=str(webhook.certs / "ca.crt"))
    return httpx.Client(base_url=f"https://127.0.0.1:{webhook.port}", verify=ctx, timeout=10)


def _legacy_pod(name: str, gpus: int, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "cuda", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
        },
    }


def _dra_pod(name: str, **entry: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "resourceClaims": [{"name": "gpu", **entry}],
            "containers": [{"name": "cuda", "image": "cuda", "resources": {"claims": [{"name": "gpu"}]}}],
        },
    }


def _claim_spec(count: int) -> dict[str, Any]:
    return {
        "devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": count}}]}
    }


class TenantKube(Kube):
    """The same JSON client, authenticated by a ServiceAccount token instead of the admin certificate."""

    def __init__(self, control_plane: ControlPlane, token: str) -> None:
        config = kubernetes.client.Configuration()
        config.host = control_plane.server
        config.ssl_ca_cert = str(control_plane.ca_bundle)
        super().__init__(kubernetes.client.ApiClient(config))
        self.token = token

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        response = self.api_client.rest_client.pool_manager.request(
            method, self.api_client.configuration.host + path,
            body=None if body is None else json.dumps(body),
            headers={"Content-Type": content_type, "Accept": "application/json",
                     "Authorization": f"Bearer {self.token}"},
            timeout=60.0,
        )  # fmt: skip
        if not 200 <= response.status < 300:
            text = response.data.decode(errors="replace")
            raise ApiException(status=response.status, reason=f"{method} {path}: {response.reason}: {text}", body=text)
        return json.loads(response.data) if response.data else None


@pytest.fixture(scope="module")
def webhook(control_plane: ControlPlane, kube: Kube, serve_webhook: ServeWebhook) -> Webhook:
    """`gpudra serve --client-ca <the API server's webhook client CA>` with side effects through the cluster."""
    for cls in device_classes():
        kube.apply(cls)
    # gpudra's own claims are what these tests count: whole-GPU pods are translated, not left to the scheduler's
    # KEP-5004 claim (tests/e2e/test_kep5004_coexistence_e2e.py covers that path).
    return serve_webhook(
        "tenant", "--client-ca", str(control_plane.webhook_client_ca), "--extended-resource-mapping", "off"
    )


def _tenant_namespace(kube: Kube, control_plane: ControlPlane, labels: dict[str, str]) -> tuple[str, TenantKube]:
    """A namespace with the caps in `labels`, its quota synced by `gpudra quota`, and a ServiceAccount whose Role may
    create pods, ResourceClaims and ResourceClaimTemplates there and nothing else."""
    name = webhook_namespace(kube, "tenant", "tenant", labels)
    synced = subprocess.run(
        [sys.executable, "-m", "gpudra", "quota", "--kubeconfig", str(control_plane.kubeconfig)],
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert f"{name}/{QUOTA_NAME}" in synced.stdout or "gpudra.io/max-gpus" not in labels, synced.stdout + synced.stderr
    kube.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "tenant"}}, name)
    kube.create({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "tenant"},
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "get", "list", "delete"]},
            {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims", "resourceclaimtemplates"],
             "verbs": ["create", "get", "list", "delete"]},
        ],
    }, name)  # fmt: skip
    kube.create({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "tenant"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "tenant"},
        "subjects": [{"kind": "ServiceAccount", "name": "tenant", "namespace": name}],
    }, name)  # fmt: skip
    token = kube.request(
        "POST", kube.path("ServiceAccount", name, "tenant", "token"),
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}},
    )["status"]["token"]  # fmt: skip
    return name, TenantKube(control_plane, token)


def _refused(call: Any, *args: Any) -> str:
    with pytest.raises(ApiException) as refused:
        call(*args)
    assert refused.value.status == 403, refused.value.body
    return str(refused.value.body)


def _devices_claimed(kube: Kube, namespace: str) -> int:
    total = 0
    for claim in kube.list("ResourceClaim", namespace):
        for request in claim["spec"]["devices"]["requests"]:
            total += int((request.get("exactly") or {}).get("count", 0))
    return total


@pytest.fixture
def capped(kube: Kube, control_plane: ControlPlane, webhook: Webhook) -> Iterator[tuple[str, TenantKube]]:
    name, tenant = _tenant_namespace(kube, control_plane, {"gpudra.io/max-gpus": "2"})
    yield name, tenant
    kube.delete("Namespace", name)


def test_a_template_or_claim_created_after_the_pod_names_it_cannot_lift_the_cap(
    kube: Kube, capped: tuple[str, TenantKube]
) -> None:
    namespace, tenant = capped
    for entry in ({"resourceClaimTemplateName": "later"}, {"resourceClaimName": "later"}):
        message = _refused(tenant.create, _dra_pod("early", **entry), namespace)
        assert "'later' does not exist yet" in message and "gpudra.io/max-gpus" in message
    # Created first, an 8-GPU template is counted when the pod names it...
    tenant.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                   "metadata": {"name": "later"}, "spec": {"spec": _claim_spec(8)}}, namespace)  # fmt: skip
    message = _refused(tenant.create, _dra_pod("late", resourceClaimTemplateName="later"), namespace)
    assert "asks for 8 GPU devices" in message
    # ...and an 8-GPU claim is refused by the quota itself, whoever creates it and whatever admission said.
    message = _refused(tenant.create, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                       "metadata": {"name": "later"}, "spec": _claim_spec(8)}, namespace)  # fmt: skip
    assert "exceeded quota" in message and "gpu.nvidia.com.deviceclass.resource.k8s.io/devices" in message
    assert kube.list("Pod", namespace) == [] and _devices_claimed(kube, namespace) == 0


def test_five_pods_of_two_gpus_get_two_gpus_in_all(
    kube: Kube, control_plane: ControlPlane, capped: tuple[str, TenantKube]
) -> None:
    namespace, tenant = capped
    for i in range(5):  # each fits the cap alone, so admission lets each through...
        tenant.create(_legacy_pod(f"two-{i}", 2), namespace)
    # ...and the resourceclaim controller creates one claim per pod, each charged to the quota when created.
    wait_for(lambda: _devices_claimed(kube, namespace) == 2, timeout=60, what="the first pod's claim")
    log = control_plane.log_path("kube-controller-manager")

    def refused_pods() -> set[str]:
        lines = [line for line in log.read_text(errors="replace").splitlines() if "exceeded quota" in line]
        return {f"two-{i}" for i in range(5) for line in lines if f"{namespace}/two-{i}" in line}

    wait_for(lambda: len(refused_pods()) >= 4, timeout=120, what="the other four pods' claims refused by the quota")
    quota = kube.get("ResourceQuota", QUOTA_NAME, namespace)
    assert quota["status"]["used"]["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] == "2"
    assert _devices_claimed(kube, namespace) == 2 and len(kube.list("ResourceClaim", namespace)) == 1


def test_a_forged_review_creates_and_refreshes_nothing(
    kube: Kube, webhook: Webhook, capped: tuple[str, TenantKube]
) -> None:
    namespace, tenant = capped
    # Through the API server (which presents its client certificate) a legacy pod is translated as usual.
    tenant.create(_legacy_pod("real", 1), namespace)
    (template,) = kube.list("ResourceClaimTemplate", namespace)
    before = kube.get("ResourceClaimTemplate", template["metadata"]["name"], namespace)
    # Stamp it as long unused, so that a reuse would re-stamp it at once.
    kube.patch("ResourceClaimTemplate", template["metadata"]["name"],
               {"metadata": {"annotations": {LAST_USED_ANNOTATION: "2020-01-01T00:00:00Z"}}}, namespace)  # fmt: skip
    before = kube.get("ResourceClaimTemplate", template["metadata"]["name"], namespace)
    other = kube.create_namespace("forged")
    try:
        with _anonymous(webhook) as forger:
            for i in range(20):
                replay = forger.post(
                    "/mutate", content=pod_review(_legacy_pod("real", 1), uid=f"r{i}", namespace=namespace)
                )
                assert replay.status_code == 403
                fresh = forger.post("/mutate", content=pod_review(_legacy_pod("x", 3), uid=f"f{i}", namespace=other))
                assert fresh.status_code == 403 and "client certificate" in fresh.json()["error"]
        after = kube.get("ResourceClaimTemplate", template["metadata"]["name"], namespace)
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
        assert after["metadata"]["annotations"][LAST_USED_ANNOTATION] == "2020-01-01T00:00:00Z"
        assert kube.list("ResourceClaimTemplate", other) == []
    finally:
        kube.delete("Namespace", other)
