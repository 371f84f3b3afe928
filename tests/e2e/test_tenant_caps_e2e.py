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
import yaml
from kubernetes.client.exceptions import ApiException

from dra.gpus import device_classes, get
from housekeeping import QUOTA_NAME
from kubeapi import LAST_USED_ANNOTATION
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import Kube, wait_for
from tests.controlplane.nvidia import full_gpu_slice
from tests.e2e.harness import ROOT, ServeWebhook, Webhook, webhook_namespace
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


# A node of A100 40GB GPUs: under `max-vram: 40Gi` a whole GPU of it holds a 1-GPU claim. The webhook checks every
# claim against the cluster's devices (issue 39): without a device of its own here, what the claims are checked
# against is whatever other modules left in the shared control plane (in a full run, 80 GB GPUs only: the 40Gi
# claim was refused as unsatisfiable, 403). No Node object: the webhook folds slices, and with no node the scheduler
# places nothing on them, so the claims stay unallocated and a tenant may delete them (the swap below).
_NODE = "tenant-caps-a100-40gb"


@pytest.fixture(scope="module")
def webhook(control_plane: ControlPlane, kube: Kube, serve_webhook: ServeWebhook) -> Iterator[Webhook]:
    """`gpudra serve --client-ca <the API server's webhook client CA>` with side effects through the cluster."""
    for cls in device_classes():
        kube.apply(cls)
    published = kube.create(full_gpu_slice(_NODE, get("A100-SXM4-40GB"), 8))
    try:
        # gpudra's own claims are what these tests count: whole-GPU pods are translated, not left to the scheduler's
        # KEP-5004 claim (tests/e2e/test_kep5004_coexistence_e2e.py covers that path).
        yield serve_webhook(
            "tenant", "--client-ca", str(control_plane.webhook_client_ca), "--extended-resource-mapping", "off"
        )
    finally:
        kube.delete("ResourceSlice", published["metadata"]["name"])


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
            # the quota charges a firstAvailable request its largest alternative (multi-gpu's for 2 GPUs)
            options = [request["exactly"]] if request.get("exactly") else request.get("firstAvailable") or []
            total += max((int(o.get("count", 1)) for o in options), default=0)
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


# The shipped admission policies (manifests/base/admission-policies.yaml) and the ClusterRoles of gpudra's accounts,
# applied for the tests below (last in this module: the tests above show the quota's own refusals). The policies name
# the accounts in gpudra-system; kubectl --as impersonates them.
BASE = ROOT / "manifests" / "base"
WEBHOOK_SA = "system:serviceaccount:gpudra-system:gpudra-webhook"
GC_SA = "system:serviceaccount:gpudra-system:gpudra-template-gc"
QUOTA_SA = "system:serviceaccount:gpudra-system:gpudra-namespace-quota"
MANAGED = {"app.kubernetes.io/managed-by": "gpudra"}


def _shipped_policy_objects() -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all((BASE / "admission-policies.yaml").read_text()) if d]
    for name in ("rbac.yaml", "template-gc.yaml", "namespace-quota.yaml"):
        kinds = ("ClusterRole", "ClusterRoleBinding")
        docs += [d for d in yaml.safe_load_all((BASE / name).read_text()) if d and d["kind"] in kinds]
    for doc in docs:
        for subject in doc.get("subjects", []):
            subject["namespace"] = "gpudra-system"  # kustomize's namespace, which the policy names
    return docs


def _as(control_plane: ControlPlane, user: str, *args: str, obj: dict[str, Any] | None = None) -> tuple[bool, str]:
    """kubectl as `user`: (succeeded, stderr + stdout)."""
    out = control_plane.kubectl(
        f"--as={user}", *args, *(["-f", "-"] if obj is not None else []),
        input=json.dumps(obj) if obj is not None else None, check=False,
    )  # fmt: skip
    return out.returncode == 0, out.stderr + out.stdout


def _template(name: str, namespace: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {"spec": _claim_spec(1)},
    }  # fmt: skip


def _quota(name: str, namespace: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {"hard": {"gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "1"}},
    }  # fmt: skip


@pytest.fixture(scope="module")
def shipped_policies(control_plane: ControlPlane, kube: Kube) -> Iterator[None]:
    docs = _shipped_policy_objects()
    control_plane.kubectl("apply", "--server-side", "--field-manager=gpudra-e2e", "-f", "-",
                          input=yaml.safe_dump_all(docs))  # fmt: skip
    probe = kube.create_namespace("probe")
    kube.patch("Namespace", probe, {"metadata": {"labels": {"gpudra-e2e": "tenant-probe", "gpudra.io/max-gpus": "1"}}})
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "probe"},
             "spec": _claim_spec(2)}  # fmt: skip

    def in_force() -> bool:
        try:
            kube.request("POST", kube.path("ResourceClaim", probe) + "?dryRun=All", claim)
        except ApiException as exc:
            return exc.status == 403 and "gpudra.io/max-gpus" in str(exc.body)
        return False

    try:
        wait_for(in_force, timeout=60, what="the shipped admission policies in force")

        def held() -> bool:
            ok, said = _as(control_plane, WEBHOOK_SA, "create", "--dry-run=server", obj=_template("probe", probe))
            return not ok and "gpudra-managed-objects" in said

        wait_for(held, timeout=60, what="the managed-objects policy in force")
        yield
    finally:
        kube.delete("Namespace", probe)
        control_plane.kubectl("delete", "--ignore-not-found", "-f", "-", input=yaml.safe_dump_all(docs), check=False)


def test_gpudras_accounts_write_only_objects_gpudra_manages(
    control_plane: ControlPlane, kube: Kube, shipped_policies: None
) -> None:
    ns = kube.create_namespace("managed")
    try:
        # The webhook's account: its own (labelled) templates, annotated, never another's nor a spec change.
        ok, said = _as(control_plane, WEBHOOK_SA, "create", obj=_template("theirs", ns))
        assert not ok and "gpudra-managed-objects" in said and "app.kubernetes.io/managed-by=gpudra" in said, said
        ok, said = _as(control_plane, WEBHOOK_SA, "create", obj=_template("ours", ns, MANAGED))
        assert ok, said
        stamp = json.dumps({"metadata": {"annotations": {LAST_USED_ANNOTATION: "2026-01-01T00:00:00Z"}}})
        ok, said = _as(control_plane, WEBHOOK_SA, "patch", "-n", ns, "resourceclaimtemplate/ours", "--type=merge",
                       "-p", stamp)  # fmt: skip
        assert ok, said
        unlabel = json.dumps({"metadata": {"labels": {"app.kubernetes.io/managed-by": None}}})
        ok, said = _as(control_plane, WEBHOOK_SA, "patch", "-n", ns, "resourceclaimtemplate/ours", "--type=merge",
                       "-p", unlabel)  # fmt: skip
        assert not ok and "gpudra-managed-objects" in said, said
        kube.create(_template("theirs", ns), ns)  # an admin (or a tenant) is not held by the policy
        ok, said = _as(control_plane, WEBHOOK_SA, "patch", "-n", ns, "resourceclaimtemplate/theirs", "--type=merge",
                       "-p", stamp)  # fmt: skip
        assert not ok and "gpudra-managed-objects" in said, said
        # The collector's account deletes only gpudra's templates.
        ok, said = _as(control_plane, GC_SA, "delete", "-n", ns, "resourceclaimtemplate/theirs")
        assert not ok and "gpudra-managed-objects" in said, said
        ok, said = _as(control_plane, GC_SA, "delete", "-n", ns, "resourceclaimtemplate/ours")
        assert ok, said
        assert {t["metadata"]["name"] for t in kube.list("ResourceClaimTemplate", ns)} == {"theirs"}
        # The quota job's account: only gpudra-gpu-cap, only labelled; another quota is out of its RBAC too.
        ok, said = _as(control_plane, QUOTA_SA, "create", obj=_quota("other", ns, MANAGED))
        assert not ok and "may write only the ResourceQuota gpudra-gpu-cap" in said, said
        ok, said = _as(control_plane, QUOTA_SA, "create", obj=_quota(QUOTA_NAME, ns))
        assert not ok and "gpudra-managed-objects" in said, said
        ok, said = _as(control_plane, QUOTA_SA, "create", obj=_quota(QUOTA_NAME, ns, MANAGED))
        assert ok, said
        kube.create(_quota("foreign", ns), ns)
        ok, said = _as(control_plane, QUOTA_SA, "delete", "-n", ns, "resourcequota/foreign")
        assert not ok and "forbidden" in said.lower(), said
        ok, said = _as(
            control_plane, QUOTA_SA, "get", "resourcequotas", "-A", f"--field-selector=metadata.name={QUOTA_NAME}"
        )
        assert ok and ns in said, said  # the job's list, by name, is allowed
        ok, said = _as(control_plane, QUOTA_SA, "delete", "-n", ns, f"resourcequota/{QUOTA_NAME}")
        assert ok, said
    finally:
        kube.delete("Namespace", ns)


def _pod_claim(kube: Kube, namespace: str) -> dict[str, Any]:
    claims: list[dict[str, Any]] = wait_for(
        lambda: kube.list("ResourceClaim", namespace), timeout=60, what="the resourceclaim controller's claim"
    )
    (claim,) = claims
    return claim


def _swap(kube: Kube, tenant: TenantKube, namespace: str, old: dict[str, Any], spec: dict[str, Any]) -> None:
    """Delete the pod's claim and create one of the same name, owner and a new spec, as a tenant would."""
    name = old["metadata"]["name"]
    tenant.request("DELETE", kube.path("ResourceClaim", namespace, name))
    wait_for(lambda: not [c for c in kube.list("ResourceClaim", namespace) if c["metadata"]["name"] == name],
             timeout=30, what="the claim gone")  # fmt: skip
    tenant.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                   "metadata": {"name": name, "ownerReferences": old["metadata"].get("ownerReferences", [])},
                   "spec": spec}, namespace)  # fmt: skip


def test_the_webhooks_account_may_make_the_reads_its_caches_and_the_review_source_check_make(
    control_plane: ControlPlane, shipped_policies: None
) -> None:
    """The shipped ClusterRole grants what `gpudra serve` reads: the device-shape cache lists and watches
    ResourceSlices, the review-source check lists pods by address (kubeapi/pods.py's field selector)."""
    for verb, resource in (("list", "resourceslices.resource.k8s.io"), ("watch", "resourceslices.resource.k8s.io"),
                           ("list", "deviceclasses.resource.k8s.io"), ("list", "pods")):  # fmt: skip
        ok, said = _as(control_plane, WEBHOOK_SA, "auth", "can-i", verb, resource, "--all-namespaces")
        assert ok and said.strip() == "yes", (verb, resource, said)
    selector = "status.podIP=127.0.0.9,spec.hostNetwork=false,status.phase!=Succeeded,status.phase!=Failed"
    ok, said = _as(control_plane, WEBHOOK_SA, "get", "pods", "--all-namespaces", "--field-selector", selector)
    assert ok, said
    ok, said = _as(control_plane, WEBHOOK_SA, "get", "secrets", "--all-namespaces")
    assert not ok and "forbidden" in said.lower(), said


def test_the_claim_swap_is_refused(
    kube: Kube, control_plane: ControlPlane, webhook: Webhook, shipped_policies: None
) -> None:
    namespace, tenant = _tenant_namespace(kube, control_plane, {"gpudra.io/max-gpus": "2"})
    try:
        pending = _legacy_pod("one", 1)
        # Kept from scheduling: a claim reserved for a running pod cannot be deleted (delete-protection), and the
        # swap this test is about is made while the pod waits.
        pending["spec"]["nodeSelector"] = {"gpudra-e2e/no-such-node": "true"}
        tenant.create(pending, namespace)  # admitted on a 1-GPU claim
        claim = _pod_claim(kube, namespace)
        assert claim["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1
        eight = _claim_spec(8)
        message = _refused(_swap, kube, tenant, namespace, claim, eight)
        assert "asks for 8 GPU devices" in message and "gpudra.io/max-gpus" in message, message
        every = {"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                                                         "allocationMode": "All"}}]}}  # fmt: skip
        assert "asks for 32 GPU devices" in _refused(tenant.create, {"apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim", "metadata": {"name": "every"}, "spec": every}, namespace)  # fmt: skip
        alternatives = {"devices": {"requests": [{"name": "gpus", "firstAvailable": [
            {"name": "small", "deviceClassName": "gpu.nvidia.com", "count": 1},
            {"name": "big", "deviceClassName": "mig.nvidia.com", "count": 4}]}]}}  # fmt: skip
        assert "asks for 4 GPU devices" in _refused(tenant.create, {"apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim", "metadata": {"name": "alt"}, "spec": alternatives}, namespace)  # fmt: skip
        # Within the cap a claim of that name goes through (the policy holds the cap, nothing more).
        name = claim["metadata"]["name"]
        tenant.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
                       "spec": _claim_spec(1)}, namespace)  # fmt: skip
        assert kube.get("ResourceClaim", name, namespace)["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1
    finally:
        kube.delete("Namespace", namespace)


def _vram_claim(name: str, count: int, selector: str | None = None, memory: str | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu.nvidia.com", "count": count}
    if selector is not None:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    if memory is not None:
        exactly["capacity"] = {"requests": {"memory": memory}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": [{"name": "gpus", "exactly": exactly}]}}}  # fmt: skip


def _bound(gib: int) -> str:
    return f"device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('{gib * 2**30}')) <= 0"


def test_a_vram_cap_holds_on_every_claim(
    kube: Kube, control_plane: ControlPlane, webhook: Webhook, shipped_policies: None
) -> None:
    namespace, tenant = _tenant_namespace(kube, control_plane, {"gpudra.io/max-vram": "40Gi"})
    try:
        tenant.create(_legacy_pod("one", 1), namespace)  # gpudra's own claim carries the bound, and is created
        claim = _pod_claim(kube, namespace)
        assert claim["spec"]["devices"]["requests"][0]["exactly"]["selectors"]
        for refused in (_vram_claim("bare", 1), _vram_claim("big", 1, _bound(80)), _vram_claim("two", 2, _bound(40)),
                        _vram_claim("loose", 1, _bound(40) + " || true")):  # fmt: skip
            message = _refused(tenant.create, refused, namespace)
            assert "gpudra.io/max-vram" in message and "40Gi" in message, message
        message = _refused(_swap, kube, tenant, namespace, claim, _vram_claim("x", 1)["spec"])
        assert "gpudra.io/max-vram" in message
        for allowed in (_vram_claim("half", 2, _bound(20)), _vram_claim("shared", 1, memory="10Gi")):
            tenant.create(allowed, namespace)
        other = _vram_claim("nic", 4)
        other["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "nic.example.com"
        tenant.create(other, namespace)  # not a GPU: not capped
    finally:
        kube.delete("Namespace", namespace)


def test_doctor_reads_the_protections_back_from_the_api_server(
    control_plane: ControlPlane, shipped_policies: None
) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "gpudra", "doctor", "--kubeconfig", str(control_plane.kubeconfig), "--json"],
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert out.returncode == 4, out.stdout + out.stderr
    found = {row["name"]: row for row in json.loads(out.stdout)}
    assert found["managed-objects-policy"]["on"] and found["namespace-caps-policy"]["on"], found
    # No Deployment, NetworkPolicy or CronJob here: those read back as missing, not as an error.
    assert found["client-auth"]["detail"] == "no Deployment gpudra-system/gpudra-webhook"
    assert not found["namespace-quota"]["on"] and not found["replica-spread"]["on"]
