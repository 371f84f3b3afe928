"""`helm install` of charts/gpudra on the real control plane brings the webhook up, `helm upgrade` keeps (or near
expiry renews) the generated certificates, and `helm uninstall` leaves no webhook configuration behind.

There is no kubelet, so the test plays it for the chart's pods: it runs the webhook Deployment's own arguments as
`gpudra serve` out of process (as test_webhook_e2e does), with the installed Secret's certificate, the installed
policies ConfigMap and a token of the chart's ServiceAccount (so the chart's RBAC is what the webhook gets), listening
on the Service's ClusterIP (added to the loopback interface, since there is no kube-proxy either): the API server
then reaches it through the chart's Service and verifies it with the caBundle the chart wrote. On uninstall it runs
the pre-delete hook Job's command with the real kubectl and the hook's ServiceAccount, then reports the Job Complete
(this control plane runs no job controller).
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from kubernetes.client.exceptions import ApiException

from dra.gpus import device_classes
from tests.controlplane import binaries, packaging_tools
from tests.controlplane.cluster import ControlPlane
from tests.controlplane.kube import Kube, wait_for
from tests.e2e.packaging_helpers import CHART, ROOT, get, list_

pytestmark = pytest.mark.e2e

RELEASE = "gpudra-helm"
WEBHOOK = f"{RELEASE}-webhook"


def _token_kubeconfig(control_plane: ControlPlane, kube: Kube, namespace: str, account: str, path: Path) -> Path:
    """A kubeconfig that authenticates as namespace/account with a TokenRequest token."""
    review = kube.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}},
    )
    config = yaml.safe_load(Path(control_plane.kubeconfig).read_text())
    config["users"] = [{"name": account, "user": {"token": review["status"]["token"]}}]
    for context in config["contexts"]:
        context["context"]["user"] = account
    path.write_text(yaml.safe_dump(config))
    return path


def _helm(control_plane: ControlPlane, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(packaging_tools.require("helm")), f"--kubeconfig={control_plane.kubeconfig}", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def _serve_args(container: dict[str, Any], files: Path, kubeconfig: Path, host: str) -> list[str]:
    """The Deployment's arguments with the pod's mount paths mapped to files here and the pod's API access to ours."""
    mapping = {"/etc/gpudra/tls/": f"{files}/tls/", "/etc/gpudra/policies": f"{files}/policies"}
    args = []
    for arg in container["args"]:
        if arg == "--in-cluster":
            args.append(f"--kubeconfig={kubeconfig}")
            continue
        if arg.startswith("--port="):
            arg = "--port=443"  # the Service's port: the API server dials the ClusterIP with it (no kube-proxy)
        for inside, outside in mapping.items():
            arg = arg.replace(inside, outside)
        args.append(arg)
    return [*args, f"--host={host}"]


@pytest.fixture
def loopback_address() -> Iterator[list[str]]:
    """Addresses added to `lo` during the test, removed after."""
    added: list[str] = []
    yield added
    for address in added:
        subprocess.run(["ip", "addr", "del", f"{address}/32", "dev", "lo"], capture_output=True, check=False)


def _ready(host: str, server_name: str, ca_pem: bytes) -> bool:
    context = ssl.create_default_context(cadata=ca_pem.decode())
    try:
        with (
            socket.create_connection((host, 443), timeout=2) as raw,
            context.wrap_socket(raw, server_hostname=server_name) as tls,
        ):
            tls.sendall(f"GET /readyz HTTP/1.1\r\nHost: {server_name}\r\nConnection: close\r\n\r\n".encode())
            return tls.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def _certificates(pem: bytes) -> set[bytes]:
    """The DER encodings of the certificates in a PEM bundle."""
    return {c.public_bytes(serialization.Encoding.DER) for c in x509.load_pem_x509_certificates(pem)}


def _gpu_pod(namespace: str) -> dict[str, Any]:
    # Right-sized (gpudra.io/vram): a plain whole-GPU pod is left to kube-scheduler's own claim here, since
    # gpu.nvidia.com maps nvidia.com/gpu (KEP-5004, policyengine.scheduler_path).
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "legacy-gpu", "namespace": namespace, "annotations": {"gpudra.io/vram": "10Gi"}},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "cuda", "image": "cuda:12", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
    }


def _play_the_hook_job(kube: Kube, control_plane: ControlPlane, namespace: str, tmp: Path) -> None:
    """Runs the pre-delete Job's container command with the Job's account, then reports the Job Complete.

    The test control plane runs no job controller and no kubelet, so the test does both of their parts.
    """
    name = f"{RELEASE}-webhook-cleanup"
    job = wait_for(
        lambda: next((j for j in list_(kube, "Job", namespace) if j["metadata"]["name"] == name), None),
        timeout=120,
        what=f"the pre-delete hook Job {name}",
    )
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == ["kubectl"]
    kubeconfig = _token_kubeconfig(control_plane, kube, namespace, pod["serviceAccountName"], tmp / "hook.kubeconfig")
    kubectl = binaries.require("components")["kubectl"]
    out = subprocess.run(
        # The pod's emptyDir at /tmp is a folder here.
        [str(kubectl), f"--kubeconfig={kubeconfig}", *[a.replace("=/tmp/", f"={tmp}/") for a in container["args"]]],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, f"the hook's kubectl failed: {out.stderr}"
    # helm waits for the hook here, so nothing but the hook has deleted the configurations yet.
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        with pytest.raises(ApiException) as gone:
            kube.get(kind, RELEASE)
        assert gone.value.status == 404
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    conditions = [
        {
            "type": kind,
            "status": "True",
            "lastProbeTime": now,
            "lastTransitionTime": now,
            "reason": "CompletionsReached",
        }
        for kind in ("SuccessCriteriaMet", "Complete")
    ]
    status = {"status": {"startTime": now, "completionTime": now, "succeeded": 1, "conditions": conditions}}
    kube.request(
        "PATCH",
        f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}/status",
        status,
        "application/merge-patch+json",
    )


def test_helm_install_brings_the_webhook_up_and_uninstall_leaves_no_webhook(
    control_plane: ControlPlane, kube: Kube, loopback_address: list[str], tmp_path: Path
) -> None:
    if shutil.which("ip") is None:
        pytest.fail(
            "the `ip` command (iproute2) is needed to give the Service's ClusterIP to the webhook", pytrace=False
        )
    for cls in device_classes():
        kube.apply(cls)
    # Other tests apply the CRD too, so the release does not own it (crds.install=false).
    control_plane.kubectl("apply", "-f", str(ROOT / "manifests" / "base" / "crd-gpusizingrecommendation.yaml"))
    namespace = kube.create_namespace("gpudra-helm")
    apps = kube.create_namespace("helm-apps")
    serve: subprocess.Popen[bytes] | None = None
    installed = False
    try:
        out = _helm(
            control_plane, "install", RELEASE, str(CHART), "--namespace", namespace, "--set", "crds.install=false"
        )
        assert out.returncode == 0, out.stderr
        installed = True
        # What the chart created.
        deployment = kube.get("Deployment", WEBHOOK, namespace)
        assert deployment["spec"]["replicas"] == 2
        wait_for(
            lambda: len(kube.list("Pod", namespace, label_selector="app.kubernetes.io/component=webhook")) == 2,
            timeout=60,
            what="the ReplicaSet's two webhook pods",
        )
        get(kube, "PodDisruptionBudget", WEBHOOK, namespace)
        mutating = kube.get("MutatingWebhookConfiguration", RELEASE)
        ca_pem = base64.b64decode(mutating["webhooks"][0]["clientConfig"]["caBundle"])
        secret = get(kube, "Secret", f"{WEBHOOK}-tls", namespace)
        assert base64.b64decode(secret["data"]["ca.crt"]) == ca_pem

        # Play kubelet for one webhook pod: its own arguments, its Secret, its ConfigMap, its ServiceAccount.
        files = tmp_path / "pod"
        (files / "tls").mkdir(parents=True)
        (files / "policies").mkdir()
        for key in ("tls.crt", "tls.key"):
            (files / "tls" / key).write_bytes(base64.b64decode(secret["data"][key]))
        for name, text in get(kube, "ConfigMap", f"{RELEASE}-policies", namespace)["data"].items():
            (files / "policies" / name).write_text(text)
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
        kubeconfig = _token_kubeconfig(control_plane, kube, namespace, account, tmp_path / "webhook.kubeconfig")
        cluster_ip = get(kube, "Service", WEBHOOK, namespace)["spec"]["clusterIP"]
        added = subprocess.run(["ip", "addr", "add", f"{cluster_ip}/32", "dev", "lo"], capture_output=True, text=True)
        assert added.returncode == 0, f"could not add {cluster_ip} to lo (needs CAP_NET_ADMIN): {added.stderr}"
        loopback_address.append(cluster_ip)
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "POD_NAMESPACE": namespace}
        env.update({e["name"]: e["value"] for e in container["env"] if "value" in e})
        with (tmp_path / "serve.log").open("wb") as log:  # the child keeps its own descriptor
            serve = subprocess.Popen(
                [sys.executable, "-m", "gpudra", *_serve_args(container, files, kubeconfig, cluster_ip)],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                env=env,
            )
        server_name = f"{WEBHOOK}.{namespace}.svc"
        try:
            wait_for(
                lambda: serve.poll() is None and _ready(cluster_ip, server_name, ca_pem), timeout=60, what="/readyz"
            )
        except TimeoutError:
            raise AssertionError((tmp_path / "serve.log").read_text()[-4000:]) from None

        # Through the API server, the chart's Service and caBundle: a legacy GPU pod comes back translated.
        created = wait_for(
            lambda: _create_translated(kube, apps), timeout=60, what="a legacy GPU pod translated by the webhook"
        )
        claims = created["spec"]["resourceClaims"]
        assert claims and all("resourceClaimTemplateName" in c for c in claims), created["spec"]
        assert "nvidia.com/gpu" not in created["spec"]["containers"][0]["resources"].get("limits", {})

        # An upgrade keeps the generated certificates (lookup); one within renewBeforeDays of expiry renews them.
        upgrade = ("upgrade", RELEASE, str(CHART), "--namespace", namespace, "--reuse-values")
        out = _helm(control_plane, *upgrade)
        assert out.returncode == 0, out.stderr
        assert get(kube, "Secret", f"{WEBHOOK}-tls", namespace)["data"] == secret["data"]
        # 3650-day certificates are within 4000 days of expiry.
        out = _helm(control_plane, *upgrade, "--set", "selfSigned.renewBeforeDays=4000")
        assert out.returncode == 0, out.stderr
        renewed = get(kube, "Secret", f"{WEBHOOK}-tls", namespace)
        assert renewed["data"]["ca.crt"] != secret["data"]["ca.crt"]
        assert int(renewed["metadata"]["annotations"]["gpudra.io/not-after"]) > time.time() + 3000 * 86400
        # Until the pods' Secret volumes update, they serve the old certificate: the webhooks trust both CAs.
        new_ca = base64.b64decode(renewed["data"]["ca.crt"])
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            bundle = base64.b64decode(kube.get(kind, RELEASE)["webhooks"][0]["clientConfig"]["caBundle"])
            assert _certificates(bundle) == _certificates(new_ca) | _certificates(ca_pem)
        assert _ready(cluster_ip, server_name, bundle)  # the running webhook still serves the old certificate

        # Uninstall: helm runs the pre-delete hook first and waits for it.
        uninstall = subprocess.Popen(
            [
                str(packaging_tools.require("helm")),
                f"--kubeconfig={control_plane.kubeconfig}",
                "uninstall",
                RELEASE,
                "--namespace",
                namespace,
                "--timeout=3m",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            _play_the_hook_job(kube, control_plane, namespace, tmp_path)
            stdout, stderr = uninstall.communicate(timeout=240)
        except (TimeoutError, subprocess.TimeoutExpired) as exc:
            uninstall.kill()
            stdout, stderr = uninstall.communicate()
            jobs = [(j["metadata"]["name"], j.get("status")) for j in list_(kube, "Job", namespace)]
            raise AssertionError(f"{exc}\nhelm uninstall: {stdout}\n{stderr}\njobs: {jobs}") from None
        assert uninstall.returncode == 0, stderr
        installed = False
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            leftovers = kube.list(kind, label_selector=f"app.kubernetes.io/instance={RELEASE}")
            assert not leftovers and not [c for c in kube.list(kind) if c["metadata"]["name"] == RELEASE]
        assert not list_(kube, "ClusterRole", label_selector=f"app.kubernetes.io/instance={RELEASE}")
    finally:
        if serve is not None:
            serve.terminate()
            try:
                serve.wait(timeout=10)
            except subprocess.TimeoutExpired:
                serve.kill()
        if installed:
            _helm(control_plane, "uninstall", RELEASE, "--namespace", namespace, "--no-hooks")
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            kube.delete(kind, RELEASE)
        kube.delete("Namespace", apps)
        kube.delete("Namespace", namespace)


def _create_translated(kube: Kube, namespace: str) -> dict[str, Any] | None:
    """Creates the GPU pod; None while the API server still refuses it or has not loaded the webhooks yet."""
    try:
        created = kube.create(_gpu_pod(namespace))
    except ApiException as e:
        if e.status in (500, 503) or "failed calling webhook" in str(e.body):
            return None
        raise
    if not created["spec"].get("resourceClaims"):
        # Admitted before the API server's informer had the new webhook configurations: try again.
        kube.delete("Pod", created["metadata"]["name"], namespace)
        wait_for(lambda: not kube.list("Pod", namespace), timeout=30, what=f"pod {namespace}/legacy-gpu deleted")
        return None
    return created
