"""The admission webhook end to end, through the real kube-apiserver, controller-manager and scheduler.

`gpudra serve` runs locally over HTTPS with a certificate from `gpudra certs`; the webhook configurations of
manifests/base are registered with a URL clientConfig and its caBundle, scoped to this module's namespaces.
Nodes are fake (no kubelet): a pod bound to a node with its claim allocated is the observable result. The nodes
carry a taint and a label so that only this module's pods (which tolerate and select them) land there.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from dra.quantity import Quantity
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import Kube, wait_for
from tests.e2e.harness import (
    A100_NODE,
    ROOT,
    ServeWebhook,
    Webhook,
    WebhookNamespaces,
    bound_with_claim,
    device_attributes,
    label,
    toleration,
    vram,
)

pytestmark = pytest.mark.e2e

LABEL = label("webhook")
TOLERATION = toleration("webhook")


@pytest.fixture(scope="module")
def webhook(serve_webhook: ServeWebhook, gpu_nodes: None) -> Webhook:
    return serve_webhook("webhook")


@pytest.fixture
def namespace(webhook_namespaces: WebhookNamespaces, webhook: Webhook) -> str:
    return webhook_namespaces("webhook", "wh")


def _pod(example: str, namespace: str, name: str | None = None) -> dict[str, Any]:
    pod: dict[str, Any] = yaml.safe_load((ROOT / "examples" / example).read_text())
    pod["metadata"]["namespace"] = namespace
    if name:
        pod["metadata"]["name"] = name
    spec = pod["spec"]
    spec["tolerations"] = [*spec.get("tolerations", []), TOLERATION]
    spec["nodeSelector"] = {**spec.get("nodeSelector", {}), **LABEL}
    spec["terminationGracePeriodSeconds"] = 0
    return pod


def test_legacy_vram_pod_gets_a_right_sized_partition(kube: Kube, namespace: str) -> None:
    kube.create(_pod("pod-legacy-vram.yaml", namespace))
    stored = kube.get("Pod", "notebook", namespace)
    container = stored["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in container["resources"].get("limits", {})
    template = stored["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
    assert kube.get("ResourceClaimTemplate", template, namespace)["metadata"]["name"] == template
    pod, devices = bound_with_claim(kube, namespace, "notebook")
    assert pod["spec"]["nodeName"] == A100_NODE and len(devices) == 1
    attrs = device_attributes(kube, devices[0])
    assert attrs["attributes"]["type"]["string"] == "mig"
    assert vram(attrs) >= Quantity.parse("8Gi") and vram(attrs) < Quantity.parse("20Gi")


def test_deployment_replicas_share_one_template_and_all_bind(kube: Kube, namespace: str) -> None:
    template_pod = _pod("pod-legacy-vram.yaml", namespace)
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "notebooks", "namespace": namespace},
        "spec": {
            "replicas": 5,
            "selector": {"matchLabels": {"app": "notebooks"}},
            "template": {
                "metadata": {"labels": {"app": "notebooks"}, "annotations": template_pod["metadata"]["annotations"]},
                "spec": template_pod["spec"],
            },
        },
    }
    kube.create(deployment)

    def five_bound() -> list[dict[str, Any]] | None:
        pods = kube.list("Pod", namespace, label_selector="app=notebooks")
        return pods if len(pods) == 5 and all(p["spec"].get("nodeName") for p in pods) else None

    try:
        pods = wait_for(five_bound, timeout=90, what="5 replicas bound")
    except TimeoutError as exc:
        pods = kube.list("Pod", namespace, label_selector="app=notebooks")
        events = [kube.pod_events(namespace, p["metadata"]["name"]) for p in pods]
        rs = kube.list("ReplicaSet", namespace)
        rs_events = [kube.pod_events(namespace, r["metadata"]["name"]) for r in rs]
        raise AssertionError(f"{exc}: {len(pods)} pods, events {events}, replicaset events {rs_events}") from exc
    templates = {p["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] for p in pods}
    assert len(templates) == 1 and len(kube.list("ResourceClaimTemplate", namespace)) == 1
    assert all(p["metadata"]["name"].startswith("notebooks-") for p in pods)  # generateName pods


def test_server_dry_run_creates_no_template(control_plane: ControlPlane, kube: Kube, namespace: str) -> None:
    manifest = yaml.safe_dump(_pod("pod-legacy-vram.yaml", namespace))
    out = control_plane.kubectl("create", "--dry-run=server", "-o", "yaml", "-f", "-", input=manifest)
    dry = yaml.safe_load(out.stdout)
    assert dry["spec"]["resourceClaims"][0]["resourceClaimTemplateName"].startswith("gpudra-")
    assert kube.list("ResourceClaimTemplate", namespace) == []


def test_vllm_tensor_parallel_pod_gets_four_gpus_under_one_pcie_root(kube: Kube, namespace: str) -> None:
    """The slices are the driver's exactly (no NVLink attribute): the claim falls back to the PCIe root."""
    kube.create(_pod("pod-vllm-tp4.yaml", namespace))
    _, devices = bound_with_claim(kube, namespace, "vllm-llama-70b")
    assert len(devices) == 4
    attrs = [device_attributes(kube, d)["attributes"] for d in devices]
    assert not any("gpu.gpudra.io/nvlinkGroup" in a for a in attrs)
    assert len({a["resource.kubernetes.io/pcieRoot"]["string"] for a in attrs}) == 1
    assert {d["request"] for d in devices} == {"vllm/same-pcieroot"}
    assert all(a["type"]["string"] == "gpu" for a in attrs)


def test_guardrail_denial_and_dra_pod_left_alone(kube: Kube, namespace: str) -> None:
    kube.patch("Namespace", namespace, {"metadata": {"labels": {"gpudra.io/max-gpus": "2"}}})

    def cap_read() -> bool:
        """The webhook has read the new label (it caches Namespace objects for 10 s): a dry run is refused."""
        try:
            kube.request("POST", kube.path("Pod", namespace) + "?dryRun=All", _pod("pod-vllm-tp4.yaml", namespace))
        except ApiException as e:
            return e.status == 403 and "gpudra.io/max-gpus" in str(e.body)
        return False

    wait_for(cap_read, timeout=60, what=f"the webhook reading {namespace}'s gpudra.io/max-gpus")
    with pytest.raises(ApiException) as denied:
        kube.create(_pod("pod-vllm-tp4.yaml", namespace))
    assert denied.value.status == 403 and "gpudra.io/max-gpus" in str(denied.value.body)
    # The pod's own label is no opt-out: its creator sets it (the opt-out is a Namespace label only).
    labelled = _pod("pod-vllm-tp4.yaml", namespace, name="vllm-tp4-opting-out")
    labelled["metadata"]["labels"] = {**labelled["metadata"].get("labels", {}), "gpudra.io/webhook": "disabled"}
    with pytest.raises(ApiException) as bypass:
        kube.create(labelled)
    assert bypass.value.status == 403 and "gpudra.io/max-gpus" in str(bypass.value.body)
    kube.create(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "single-gpu", "namespace": namespace},
            "spec": {
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}
            },
        }
    )
    dra_pod = _pod("pod-already-dra.yaml", namespace)
    created = kube.create(dra_pod)
    assert created["spec"]["resourceClaims"] == dra_pod["spec"]["resourceClaims"]
    assert "gpudra.io/translated" not in (created["metadata"].get("annotations") or {})
    _, devices = bound_with_claim(kube, namespace, "dra-native")
    assert len(devices) == 1
    # A user's own template for 8 GPUs is counted against the cap too (it used to be admitted).
    kube.create(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "eight-gpus", "namespace": namespace},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 8}}]
                    }
                }
            },
        }
    )
    greedy = _pod("pod-already-dra.yaml", namespace, name="dra-eight")
    greedy["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": "eight-gpus"}]
    for container in greedy["spec"]["containers"]:
        container["resources"] = {"claims": [{"name": "gpus"}]}
    with pytest.raises(ApiException) as capped:
        kube.create(greedy)
    assert capped.value.status == 403 and "asks for 8 GPU devices" in str(capped.value.body)


def test_webhook_down_fails_closed_and_recovers(kube: Kube, namespace: str, webhook: Webhook) -> None:
    webhook.stop()
    try:
        with pytest.raises(ApiException) as failed:
            kube.create(_pod("pod-legacy-1gpu.yaml", namespace))
        body = str(failed.value.body)
        assert failed.value.status == 500 and "failed calling webhook" in body and "mutate.gpudra.io" in body
        # A pod that asks for no GPU never reaches the webhook (matchConditions), so it is not blocked.
        plain = _pod("pod-legacy-1gpu.yaml", namespace, name="no-gpu")
        for c in plain["spec"]["containers"]:
            c["resources"] = {}
        kube.create(plain)
    finally:
        webhook.start()
    wait_for(lambda: _try_create(kube, _pod("pod-legacy-1gpu.yaml", namespace)), timeout=30, what="webhook back")


def _try_create(kube: Kube, pod: dict[str, Any]) -> bool | None:
    try:
        kube.create(pod)
    except ApiException as e:
        if e.status == 409:
            return True
        return None
    return True


def test_side_by_side_with_and_without_the_webhook(kube: Kube, namespace: str) -> None:
    """The same pods, KEP-5004 whole-GPU path (no webhook) vs gpudra's right-sizing; GPUs and VRAM allocated."""
    plain_ns = kube.create_namespace("plain")  # not labelled: the webhook does not see it
    try:
        results = {}
        for side, ns in (("without_webhook", plain_ns), ("with_webhook", namespace)):
            names = []
            for i in range(3):
                pod = _pod("pod-legacy-vram.yaml", ns, name=f"nb-{i}")
                kube.create(pod)
                names.append(pod["metadata"]["name"])
            devices = []
            for name in names:
                _, allocated = bound_with_claim(kube, ns, name)
                devices.extend(allocated)
            attrs = [device_attributes(kube, d) for d in devices]
            whole = sum(1 for a in attrs if a["attributes"]["type"]["string"] == "gpu")
            total = sum((vram(a) for a in attrs), Quantity.parse("0"))
            results[side] = {"devices": len(devices), "whole_gpus": whole, "vram": str(total)}
        print("side by side:", results)
        assert results["without_webhook"]["whole_gpus"] == 3
        assert results["with_webhook"]["whole_gpus"] == 0
        with_vram, without_vram = (
            Quantity.parse(str(results[k]["vram"])).value for k in ("with_webhook", "without_webhook")
        )
        assert with_vram * 4 < without_vram
    finally:
        kube.delete("Namespace", plain_ns)
