"""What the e2e modules share beside their fixtures (tests/e2e/conftest.py): `gpudra serve` run against the test
control plane, the fake GPU nodes a module's pods land on, and the namespaces the webhook is called for.

Modules share one control plane, so everything is scoped: a module's webhook configurations reach only namespaces
labelled `gpudra-e2e: <scope>`, and its nodes carry that label and a taint that only its pods tolerate.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from kubernetes.client.exceptions import ApiException

from dra.gpus import MigMode, catalog, device_classes, node_resource_slices, synthetic_node
from dra.quantity import Quantity
from tests.controlplane.cluster import ControlPlane, free_port
from tests.controlplane.kube import Kube, wait_for
from tests.controlplane.webhook_configs import shipped_webhook_configurations

__all__ = [
    "A100_NODE",
    "H100_NODE",
    "ROOT",
    "ServeWebhook",
    "WebhookNamespaces",
    "GpuNode",
    "Webhook",
    "allocated_devices",
    "bound_with_claim",
    "delete_namespace",
    "device_attributes",
    "fake_gpu_nodes",
    "flat",
    "gsr",
    "gsr_path",
    "label",
    "legacy_deployment",
    "recommend",
    "registered",
    "taint",
    "toleration",
    "vram",
    "wait_until_called",
    "webhook_namespace",
]

ROOT = Path(__file__).resolve().parents[2]
# The `webhook` scope's nodes (the `gpu_nodes` fixture of test_webhook_e2e.py and test_sizing_e2e.py): 8 A100-80GB
# with dynamic MIG, 8 H100-80GB whole.
A100_NODE, H100_NODE = "wh-a100", "wh-h100"
# Whatever a module's flags (--extended-resource-mapping, sizing), gpudra translates a right-sized legacy pod.
_PROBE_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "probe", "annotations": {"gpudra.io/vram": "40Gi"}},
    "spec": {"containers": [{"name": "cuda", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
}


def label(scope: str) -> dict[str, str]:
    """The label of a scope's namespaces (what its webhook configurations select) and nodes."""
    return {"gpudra-e2e": scope}


def taint(scope: str) -> dict[str, str]:
    return {"key": "gpudra-e2e", "value": scope, "effect": "NoSchedule"}


def toleration(scope: str) -> dict[str, str]:
    return {"key": "gpudra-e2e", "operator": "Equal", "value": scope, "effect": "NoSchedule"}


class Webhook:
    """`gpudra serve *args` as a subprocess, with a certificate from `gpudra certs`, restartable on the same port."""

    def __init__(self, workdir: Path, kubeconfig: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.workdir = workdir
        self.kubeconfig = kubeconfig
        self.args = args
        self.env = env or {}
        self.port = free_port()
        self.certs = workdir / "certs"
        subprocess.run(
            [sys.executable, "-m", "gpudra", "certs", "--out", str(self.certs), "--host", "127.0.0.1"],
            check=True,
            capture_output=True,
            cwd=ROOT,
        )
        self.ca_bundle = base64.b64encode((self.certs / "ca.crt").read_bytes()).decode()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Starts the server and waits until it answers /readyz with 200."""
        with (self.workdir / "serve.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "gpudra", "serve", "--host", "127.0.0.1", "--port", str(self.port),
                 "--cert", str(self.certs / "tls.crt"), "--key", str(self.certs / "tls.key"),
                 "--kubeconfig", str(self.kubeconfig), *self.args],
                stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
            )  # fmt: skip
        try:
            wait_for(self._ready, timeout=60, what="gpudra serve ready")
        except TimeoutError as exc:
            raise AssertionError(f"{exc}:\n{self.logs()}") from exc

    def _ready(self) -> bool:
        if self.proc is None or self.proc.poll() is not None:
            raise AssertionError("gpudra serve exited:\n" + self.logs())
        try:
            return self.request("/readyz")[0] == 200
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
            self.proc = None

    def logs(self) -> str:
        path = self.workdir / "serve.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def request(self, path: str) -> tuple[int, bytes]:
        """GET `path` over HTTPS, trusting the server's CA: (HTTP status, body)."""
        ctx = ssl.create_default_context(cafile=str(self.certs / "ca.crt"))
        try:
            with urllib.request.urlopen(f"https://127.0.0.1:{self.port}{path}", context=ctx, timeout=5) as resp:
                return int(resp.status), bytes(resp.read())
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def get(self, path: str) -> bytes:
        """The body of GET `path`, which must answer 200."""
        status, body = self.request(path)
        assert status == 200, f"GET {path}: {status} {body[:500]!r}"
        return body

    def configurations(self, name: str, scope: str) -> list[dict[str, Any]]:
        """The shipped webhook configurations, named `name`, calling this server for `scope`'s namespaces only."""
        return shipped_webhook_configurations(name, self.port, self.ca_bundle, scope)


class ServeWebhook(Protocol):
    """The `serve_webhook` fixture (tests/e2e/conftest.py)."""

    def __call__(self, scope: str, *args: str, env: dict[str, str] | None = None) -> Webhook: ...


class WebhookNamespaces(Protocol):
    """The `webhook_namespaces` fixture (tests/e2e/conftest.py)."""

    def __call__(
        self, scope: str, prefix: str, labels: dict[str, str] | None = None, *, wait_gone: bool = False
    ) -> str: ...


@contextmanager
def registered(kube: Kube, webhook: Webhook, name: str, scope: str) -> Iterator[list[dict[str, Any]]]:
    """`webhook`'s configurations for `scope` applied, deleted on exit. The API server loads them from an informer:
    `webhook_namespace` waits until it calls the webhook for a namespace."""
    configs = webhook.configurations(name, scope)
    try:
        for config in configs:
            kube.apply(config)
        yield configs
    finally:
        for config in configs:
            kube.delete(config["kind"], config["metadata"]["name"])


def wait_until_called(kube: Kube, namespace: str, timeout: float = 60) -> None:
    """Until the API server calls gpudra for `namespace`: a server-side dry run of a right-sized pod there comes back
    translated (nothing is created: the configurations say sideEffects NoneOnDryRun)."""

    def translated() -> bool:
        answer = kube.request("POST", kube.path("Pod", namespace) + "?dryRun=All", _PROBE_POD)
        return "resourceClaims" in answer["spec"]

    wait_for(translated, timeout=timeout, what=f"the API server calling gpudra for {namespace}")


def webhook_namespace(kube: Kube, scope: str, prefix: str, labels: dict[str, str] | None = None) -> str:
    """A fresh namespace labelled for `scope` (and `labels`), once the API server calls the webhook for it."""
    name = kube.create_namespace(prefix)
    try:
        kube.patch("Namespace", name, {"metadata": {"labels": {**label(scope), **(labels or {})}}})
        wait_until_called(kube, name)
    except BaseException:
        kube.delete("Namespace", name)
        raise
    return name


def delete_namespace(kube: Kube, name: str, *, wait: bool = False) -> None:
    """Deletes it; with `wait`, until it is gone (a terminating namespace still counts where its labels are read)."""
    kube.delete("Namespace", name)
    if wait:
        wait_for(
            lambda: name not in {n["metadata"]["name"] for n in kube.list("Namespace")},
            timeout=120,
            what=f"{name} gone",
        )


# (catalog model, MIG mode of its slices)
GpuNode = tuple[str, MigMode]


@contextmanager
def fake_gpu_nodes(kube: Kube, scope: str, nodes: dict[str, GpuNode]) -> Iterator[None]:
    """The NVIDIA driver's DeviceClasses applied, and a Node of 8 GPUs per entry with the driver's ResourceSlices,
    labelled and tainted for `scope`; the nodes and slices are deleted on exit."""
    for cls in device_classes():
        kube.apply(cls)
    slices: list[dict[str, Any]] = []
    for name, (model, mig_mode) in nodes.items():
        try:
            kube.create_node(name, labels=label(scope))
        except ApiException as e:
            if e.status != 409:
                raise
        kube.patch("Node", name, {"spec": {"taints": [taint(scope)]}})
        slices += node_resource_slices(synthetic_node(catalog.get(model), name, 8), mig_mode=mig_mode)
    for s in slices:
        kube.apply(s)
    try:
        yield
    finally:
        for s in slices:
            kube.delete("ResourceSlice", s["metadata"]["name"])
        for name in nodes:
            kube.delete("Node", name)


# -- what the scheduler allocated ------------------------------------------------------------------------------------
def allocated_devices(kube: Kube, namespace: str, pod: dict[str, Any]) -> list[dict[str, Any]]:
    """The allocation results of the pod's claims, gpudra's and the scheduler's KEP-5004 claim alike."""
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


def device_attributes(kube: Kube, result: dict[str, Any]) -> dict[str, Any]:
    """The published device (attributes, capacity) an allocation result names."""
    for s in kube.list("ResourceSlice"):
        if s["spec"]["pool"]["name"] == result["pool"] and s["spec"]["driver"] == result["driver"]:
            for device in s["spec"].get("devices", []):
                if device["name"] == result["device"]:
                    return dict(device)
    raise AssertionError(f"device {result} not published")


def bound_with_claim(kube: Kube, namespace: str, name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Waits until the pod is bound with its claims allocated: (the pod, its allocated devices)."""

    def check() -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        pod = kube.get("Pod", name, namespace)
        if not pod["spec"].get("nodeName"):
            return None
        devices = allocated_devices(kube, namespace, pod)
        return (pod, devices) if devices else None

    try:
        return wait_for(check, timeout=60, what=f"pod {namespace}/{name} bound with its claim allocated")
    except TimeoutError as exc:
        raise AssertionError(f"{exc}; events: {kube.pod_events(namespace, name)}") from exc


def vram(device: dict[str, Any]) -> Quantity:
    """A published device's `memory` capacity."""
    return Quantity.parse(device["capacity"]["memory"]["value"])


# -- recommendations (the `crd` fixture applies their CRD) -----------------------------------------------------------
def gsr_path(namespace: str, name: str | None = None, status: bool = False) -> str:
    """The API path of a namespace's GPUSizingRecommendations, of one, or of its status."""
    path = f"/apis/gpudra.io/v1alpha1/namespaces/{namespace}/gpusizingrecommendations"
    return path + (f"/{name}" if name else "") + ("/status" if status else "")


def gsr(kube: Kube, namespace: str, name: str) -> dict[str, Any]:
    return dict(kube.request("GET", gsr_path(namespace, name)))


def recommend(control_plane: ControlPlane, url: str, namespace: str, *extra: str) -> dict[str, Any]:
    """`gpudra recommend` over the Prometheus at `url` for `namespace`: its JSON report."""
    out = subprocess.run(
        [sys.executable, "-m", "gpudra", "recommend", "--prometheus", url, "--kubeconfig",
         str(control_plane.kubeconfig), "--namespace", namespace, "-o", "json", *extra],
        capture_output=True, text=True, cwd=ROOT, check=False, timeout=180,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout))


def legacy_deployment(kube: Kube, namespace: str, name: str, replicas: int) -> list[str]:
    """A Deployment with a legacy GPU request; kube-controller-manager makes its ReplicaSet and pods (no node runs
    them). Returns the pods' names."""
    kube.create({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{
                "name": "server", "image": "ghcr.io/huggingface/text-embeddings-inference:1.5",
                "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}},
        },
    })  # fmt: skip
    pods = wait_for(
        lambda: (lambda names: names if len(names) == replicas else None)(
            sorted(p["metadata"]["name"] for p in kube.list("Pod", namespace, label_selector=f"app={name}"))
        ),
        timeout=60,
        what=f"{replicas} pods of Deployment {name}",
    )
    return list(pods)


def flat(mib: float, spike: float = 0.0) -> Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]]:
    """A framebuffer series at `mib`, with 0.1 % of the samples at `spike` (above p99, so p99 ignores them and max
    does not)."""

    def used(t: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        out = np.full(t.shape, mib)
        if spike:
            out[::997] = spike
        return out

    return used
