"""Kyverno's admission controller run out of cluster against a test control plane (issue 41's Kyverno peer).

The binary is the opt-in build of tests/controlplane/build_kyverno.sh (the release pinned in kyverno/go.mod); its
CRDs come from the same release's sources in the Go module cache (config/crds). It runs as the chart's
admission-controller Deployment runs it (the chart's arguments and environment, Kyverno's own TLS: it generates its CA
and serving pair into Secrets and registers its webhooks with that CA), except that it is out of cluster:
`--kubeconfig`, and `--serverIP <address>:<port>` so that its webhook configurations name that URL instead of its
Service. Its resource webhooks only see namespaces labelled `namespace_label=true` (Kyverno's ConfigMap `webhooks`
key), so that it stays out of every other load through the same API server.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException

from simulator.verify.controlplane import free_port
from tests.controlplane.binaries import MissingBinaries
from tests.controlplane.kube import Kube, wait_for

__all__ = ["BUILD_HINT", "CLUSTER_POLICIES", "Kyverno", "binary", "crd_directory", "running", "version"]

MODULE = Path(__file__).resolve().parent / "kyverno"
BUILD_HINT = (
    "run `bash tests/controlplane/build_kyverno.sh` (opt-in, not in CI: Go >= 1.26.6, network, ~36 min on a loaded "
    "2-core machine)"
)
NAMESPACE = "kyverno"
CLUSTER_POLICIES = "/apis/kyverno.io/v1/clusterpolicies"
# The chart's names (release `kyverno`): secrets, service, deployment, config maps.
_SERVICE = "kyverno-svc"
_CA_SECRET = f"{_SERVICE}.{NAMESPACE}.svc.kyverno-tls-ca"
_TLS_SECRET = f"{_SERVICE}.{NAMESPACE}.svc.kyverno-tls-pair"
_CONFIG_MAP = "kyverno"
_ENV = {
    "KYVERNO_NAMESPACE": NAMESPACE,
    "KYVERNO_POD_NAME": "kyverno-admission-controller-local",
    "KYVERNO_SERVICEACCOUNT_NAME": "kyverno-admission-controller",
    "KYVERNO_ROLE_NAME": "kyverno:admission-controller",
    "KYVERNO_SVC": _SERVICE,
    "KYVERNO_DEPLOYMENT": "kyverno-admission-controller",
    "INIT_CONFIG": _CONFIG_MAP,
    "METRICS_CONFIG": "kyverno-metrics",
}
# The webhook configuration Kyverno registers for policies; it must answer before a ClusterPolicy can be created.
_POLICY_WEBHOOK = "kyverno-policy-mutating-webhook-cfg"
# The one it registers for the resources its policies match, once a policy is Ready.
_RESOURCE_WEBHOOK = "kyverno-resource-mutating-webhook-cfg"


def version() -> str:
    """The Kyverno release kyverno/go.mod pins (e.g. v1.19.1)."""
    found = re.search(r"github\.com/kyverno/kyverno (v[0-9][0-9A-Za-z.+-]*)", (MODULE / "go.mod").read_text())
    if found is None:
        raise ValueError(f"{MODULE / 'go.mod'}: requires no github.com/kyverno/kyverno release")
    return found[1]


def binary() -> Path:
    """The kyverno binary build_kyverno.sh made; raises MissingBinaries (naming the build command) if absent."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    path = base / "gpudra" / "kyverno" / version() / "bin" / "kyverno"
    if not os.access(path, os.X_OK):
        raise MissingBinaries(f"kyverno {version()} not found at {path}: {BUILD_HINT}")
    return path


def crd_directory() -> Path:
    """config/crds of the pinned release in the Go module cache (build_kyverno.sh downloads it)."""
    try:
        cache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        raise MissingBinaries(f"no Go to find Kyverno's CRDs in the module cache ({exc}): {BUILD_HINT}") from exc
    path = Path(cache) / "github.com" / "kyverno" / f"kyverno@{version()}" / "config" / "crds"
    if not path.is_dir():
        raise MissingBinaries(f"Kyverno's CRDs not found at {path}: {BUILD_HINT}")
    return path


class Kyverno:
    """A running admission controller: its process, its webhook URL and its log."""

    def __init__(self, process: subprocess.Popen[bytes], url: str, log: Path) -> None:
        self.process = process
        self.url = url
        self.log = log

    def log_tail(self, lines: int = 20) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def _policy_ready(kube: Kube, name: str) -> bool:
    policy = kube.request("GET", f"{CLUSTER_POLICIES}/{name}")
    conditions = policy.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _create_policy(kube: Kube, policy: dict[str, Any]) -> bool:
    """Creates `policy`; False while Kyverno's policy webhook does not answer yet (500 from the API server)."""
    try:
        kube.request("POST", CLUSTER_POLICIES, policy)
    except ApiException as exc:
        if exc.status == 500 and "failed calling webhook" in str(exc.body):
            return False
        raise
    return True


@contextmanager
def running(
    cp: Any,
    kube: Kube,
    address: str,
    namespace_label: str,
    policies: list[dict[str, Any]],
    workdir: Path,
    timeout: float = 300.0,
) -> Iterator[Kyverno]:
    """Kyverno's admission controller against `cp` (a tests.controlplane ControlPlane), serving at `address` (an IP
    of this machine) on a free port, with `policies` (ClusterPolicies) created and Ready. On exit it is stopped and
    what it and this made is deleted (its webhook configurations, the policies, its namespace); the CRDs stay."""
    kyverno, crds = binary(), crd_directory()
    cp.kubectl("apply", "--server-side", "-R", "-f", str(crds))
    cp.kubectl("wait", "--for=condition=Established", "--timeout=120s", "-R", "-f", str(crds))
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    selector = {"namespaceSelector": {"matchLabels": {namespace_label: "true"}}}
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": _CONFIG_MAP, "namespace": NAMESPACE},
        "data": {"webhooks": json.dumps(selector)},
    }
    kube.request("POST", f"/api/v1/namespaces/{NAMESPACE}/configmaps", config_map)
    port = free_port()
    server = f"{address}:{port}"
    args = [
        str(kyverno),
        f"--kubeconfig={cp.kubeconfig}",
        f"--serverIP={server}",
        f"--webhookServerPort={port}",
        f"--caSecretName={_CA_SECRET}",
        f"--tlsSecretName={_TLS_SECRET}",
        "--tlsKeyAlgorithm=RSA",
        "--servicePort=443",
        "--admissionReports=false",  # reports need the reports controller, which is not run
        f"--metricsPort={free_port()}",
        "--controllerRuntimeMetricsAddress=0",
    ]
    log = workdir / "kyverno.log"
    with log.open("wb") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **_ENV})
    running_kyverno = Kyverno(process, f"https://{server}", log)
    try:

        def alive() -> None:
            if process.poll() is not None:
                raise RuntimeError(f"kyverno exited ({process.returncode}):\n{running_kyverno.log_tail()}")

        def webhook_registered() -> bool:
            alive()
            hooks = kube.list("MutatingWebhookConfiguration")
            return any(h["metadata"]["name"] == _POLICY_WEBHOOK for h in hooks)

        wait_for(webhook_registered, timeout=timeout, interval=0.5, what="Kyverno's policy webhook registered")
        for policy in policies:
            name = policy["metadata"]["name"]
            created = functools.partial(_create_policy, kube, policy)
            wait_for(created, timeout=timeout, interval=0.5, what=f"policy {name} created")
            ready = functools.partial(_policy_ready, kube, name)
            wait_for(ready, timeout=timeout, interval=0.5, what=f"policy {name} Ready")

        def resource_webhook() -> bool:
            alive()
            hooks = kube.list("MutatingWebhookConfiguration")
            return any(h["metadata"]["name"] == _RESOURCE_WEBHOOK and h.get("webhooks") for h in hooks)

        wait_for(resource_webhook, timeout=timeout, interval=0.5, what="Kyverno's resource webhook serving pods")
        yield running_kyverno
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        # What it registered would call a webhook no longer there: gone, so that the control plane serves on.
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            for hook in kube.list(kind, label_selector="webhook.kyverno.io/managed-by=kyverno"):
                kube.delete(kind, hook["metadata"]["name"])
        for policy in policies:
            kube.request("DELETE", f"{CLUSTER_POLICIES}/{policy['metadata']['name']}")
        kube.delete("Namespace", NAMESPACE)
