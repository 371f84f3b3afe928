"""The admission webhook end to end, through the real kube-apiserver, controller-manager and scheduler.

`gpudra serve` runs locally over HTTPS with a certificate from `gpudra certs`; the webhook configurations of
manifests/base are registered with a URL clientConfig and its caBundle, scoped to this module's namespaces.
Nodes are fake (no kubelet): a pod bound to a node with its claim allocated is the observable result. The nodes
carry a taint and a label so that only this module's pods (which tolerate and select them) land there.
"""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from dra.gpus import catalog, device_classes, node_resource_slices, synthetic_node
from dra.quantity import Quantity
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import Kube, wait_for
from tests.controlplane.webhook_configs import shipped_webhook_configurations

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
LABEL = {"gpudra-e2e": "webhook"}
TAINT = {"key": "gpudra-e2e", "value": "webhook", "effect": "NoSchedule"}
TOLERATION = {"key": "gpudra-e2e", "operator": "Equal", "value": "webhook", "effect": "NoSchedule"}
A100_NODE, H100_NODE = "wh-a100", "wh-h100"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Webhook:
    """`gpudra serve` as a subprocess, restartable on the same port and certificate."""

    def __init__(self, workdir: Path, kubeconfig: Path) -> None:
        self.workdir = workdir
        self.port = _free_port()
        self.certs = workdir / "certs"
        subprocess.run(
            [sys.executable, "-m", "gpudra", "certs", "--out", str(self.certs), "--host", "127.0.0.1"],
            check=True,
            capture_output=True,
            cwd=ROOT,
        )
        self.ca_bundle = base64.b64encode((self.certs / "ca.crt").read_bytes()).decode()
        self.kubeconfig = kubeconfig
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self._log = (self.workdir / "serve.log").open("ab")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gpudra",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--cert",
                str(self.certs / "tls.crt"),
                "--key",
                str(self.certs / "tls.key"),
                "--kubeconfig",
                str(self.kubeconfig),
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.2)
        raise AssertionError("gpudra serve did not start:\n" + self.logs())

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.proc = None
            self._log.close()

    def logs(self) -> str:
        path = self.workdir / "serve.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""


def _webhook_configurations(webhook: Webhook) -> list[dict[str, Any]]:
    # only this module's namespaces: other e2e tests share the control plane
    return shipped_webhook_configurations("gpudra-e2e", webhook.port, webhook.ca_bundle, "webhook")


def _node(kube: Kube, name: str) -> None:
    try:
        kube.create_node(name, labels=LABEL)
    except ApiException as e:
        if e.status != 409:
            raise
    kube.patch("Node", name, {"spec": {"taints": [TAINT]}})


@pytest.fixture(scope="module")
def gpu_nodes(kube: Kube) -> Iterator[None]:
    for cls in device_classes():
        kube.apply(cls)
    _node(kube, A100_NODE)
    _node(kube, H100_NODE)
    a100 = synthetic_node(catalog.get("A100-SXM4-80GB"), A100_NODE, 8)
    h100 = synthetic_node(catalog.get("H100-SXM5-80GB"), H100_NODE, 8)
    slices = node_resource_slices(a100, mig_mode="dynamic", k8s_version="1.35")
    slices += node_resource_slices(h100, mig_mode="none", k8s_version="1.35")
    for s in slices:
        kube.apply(s)
    yield
    for s in slices:
        kube.delete("ResourceSlice", s["metadata"]["name"])
    for name in (A100_NODE, H100_NODE):
        kube.delete("Node", name)


@pytest.fixture(scope="module")
def webhook(
    control_plane: ControlPlane, kube: Kube, gpu_nodes: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Webhook]:
    hook = Webhook(tmp_path_factory.mktemp("webhook"), control_plane.kubeconfig)
    hook.start()
    configs = _webhook_configurations(hook)
    for config in configs:
        kube.apply(config)
    time.sleep(1.5)  # the API server loads webhook configurations from its informer
    try:
        yield hook
    finally:
        for config in configs:
            kube.delete(config["kind"], config["metadata"]["name"])
        hook.stop()


@pytest.fixture
def namespace(kube: Kube, webhook: Webhook) -> Iterator[str]:
    name = kube.create_namespace("wh")
    kube.patch("Namespace", name, {"metadata": {"labels": LABEL}})
    yield name
    kube.delete("Namespace", name)


def _pod(example: str, namespace: str, name: str | None = None) -> dict[str, Any]:
    pod = yaml.safe_load((ROOT / "examples" / example).read_text())
    pod["metadata"]["namespace"] = namespace
    if name:
        pod["metadata"]["name"] = name
    spec = pod["spec"]
    spec["tolerations"] = [*spec.get("tolerations", []), TOLERATION]
    spec["nodeSelector"] = {**spec.get("nodeSelector", {}), **LABEL}
    spec["terminationGracePeriodSeconds"] = 0
    return pod


def _bound(kube: Kube, namespace: str, name: str, timeout: float = 60) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        pod = kube.get("Pod", name, namespace)
        return pod if pod["spec"].get("nodeName") else None

    try:
        return wait_for(check, timeout=timeout, what=f"pod {namespace}/{name} bound")
    except TimeoutError as exc:
        raise AssertionError(f"{exc}; events: {kube.pod_events(namespace, name)}") from exc


def _allocated_devices(kube: Kube, namespace: str, pod: dict[str, Any]) -> list[dict[str, Any]]:
    statuses = pod.get("status", {}).get("resourceClaimStatuses") or []
    devices: list[dict[str, Any]] = []
    for status in statuses:
        claim = kube.get("ResourceClaim", status["resourceClaimName"], namespace)
        allocation = claim["status"]["allocation"]
        devices.extend(allocation["devices"]["results"])
    extended = pod.get("status", {}).get("extendedResourceClaimStatus")
    if extended:
        claim = kube.get("ResourceClaim", extended["resourceClaimName"], namespace)
        devices.extend(claim["status"]["allocation"]["devices"]["results"])
    return devices


def _device_attrs(kube: Kube, result: dict[str, Any]) -> dict[str, Any]:
    for s in kube.list("ResourceSlice"):
        if s["spec"]["pool"]["name"] == result["pool"] and s["spec"]["driver"] == result["driver"]:
            for device in s["spec"].get("devices", []):
                if device["name"] == result["device"]:
                    return dict(device)
    raise AssertionError(f"device {result} not published")


def _bound_with_claim(kube: Kube, namespace: str, name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    def check() -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        pod = kube.get("Pod", name, namespace)
        if not pod["spec"].get("nodeName"):
            return None
        devices = _allocated_devices(kube, namespace, pod)
        return (pod, devices) if devices else None

    try:
        return wait_for(check, timeout=60, what=f"pod {namespace}/{name} bound with its claim allocated")
    except TimeoutError as exc:
        raise AssertionError(f"{exc}; events: {kube.pod_events(namespace, name)}") from exc


def _vram(attrs: dict[str, Any]) -> Quantity:
    return Quantity.parse(attrs["capacity"]["memory"]["value"])


def test_legacy_vram_pod_gets_a_right_sized_partition(kube: Kube, namespace: str) -> None:
    kube.create(_pod("pod-legacy-vram.yaml", namespace))
    stored = kube.get("Pod", "notebook", namespace)
    container = stored["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in container["resources"].get("limits", {})
    template = stored["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
    assert kube.get("ResourceClaimTemplate", template, namespace)["metadata"]["name"] == template
    pod, devices = _bound_with_claim(kube, namespace, "notebook")
    assert pod["spec"]["nodeName"] == A100_NODE and len(devices) == 1
    attrs = _device_attrs(kube, devices[0])
    assert attrs["attributes"]["type"]["string"] == "mig"
    assert _vram(attrs) >= Quantity.parse("8Gi") and _vram(attrs) < Quantity.parse("20Gi")


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
    _, devices = _bound_with_claim(kube, namespace, "vllm-llama-70b")
    assert len(devices) == 4
    attrs = [_device_attrs(kube, d)["attributes"] for d in devices]
    assert not any("gpu.gpudra.io/nvlinkGroup" in a for a in attrs)
    assert len({a["resource.kubernetes.io/pcieRoot"]["string"] for a in attrs}) == 1
    assert {d["request"] for d in devices} == {"vllm/same-pcieroot"}
    assert all(a["type"]["string"] == "gpu" for a in attrs)


def test_guardrail_denial_and_dra_pod_left_alone(kube: Kube, namespace: str) -> None:
    kube.patch("Namespace", namespace, {"metadata": {"labels": {"gpudra.io/max-gpus": "2"}}})
    time.sleep(11)  # the webhook caches Namespace objects for 10 s
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
    _, devices = _bound_with_claim(kube, namespace, "dra-native")
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
        for label, ns in (("without_webhook", plain_ns), ("with_webhook", namespace)):
            names = []
            for i in range(3):
                pod = _pod("pod-legacy-vram.yaml", ns, name=f"nb-{i}")
                kube.create(pod)
                names.append(pod["metadata"]["name"])
            devices = []
            for name in names:
                _, allocated = _bound_with_claim(kube, ns, name)
                devices.extend(allocated)
            attrs = [_device_attrs(kube, d) for d in devices]
            whole = sum(1 for a in attrs if a["attributes"]["type"]["string"] == "gpu")
            vram = sum((_vram(a) for a in attrs), Quantity.parse("0"))
            results[label] = {"devices": len(devices), "whole_gpus": whole, "vram": str(vram)}
        print("side by side:", results)
        assert results["without_webhook"]["whole_gpus"] == 3
        assert results["with_webhook"]["whole_gpus"] == 0
        with_vram, without_vram = (
            Quantity.parse(results[k]["vram"]).value for k in ("with_webhook", "without_webhook")
        )
        assert with_vram * 4 < without_vram
    finally:
        kube.delete("Namespace", plain_ns)
