"""The real control plane for the e2e tests: the product's (simulator.verify.controlplane) with the tests' binary
check (stale builds refused) and the built kubectl.

No kubelet runs: a pod bound to a Node object with its ResourceClaims allocated is the observable result.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

from cryptography.hazmat.primitives import serialization

from pki import issue_certificate, new_ca
from simulator.verify.controlplane import (
    CONTROLLERS,
    FEATURE_GATES,
    Component,
    ControlPlaneError,
    free_port,
)
from simulator.verify.controlplane import ControlPlane as _ProductControlPlane
from simulator.verify.controlplane import http_ok as _http_ok
from simulator.verify.pki import Pki
from tests.controlplane import binaries

__all__ = [
    "CONTROLLERS",
    "FEATURE_GATES",
    "Component",
    "ControlPlane",
    "ControlPlaneError",
    "_http_ok",
    "free_port",
    "running",
]


WEBHOOK_CLIENT_DIR = "webhook-client"


def _webhook_client_identity(directory: Path) -> tuple[Path, Path]:
    """A CA of its own and a client certificate it signed, for kube-apiserver to present to admission webhooks (PEM
    files under `directory`: ca.crt, client.crt, client.key); returns the client certificate and key."""
    ca = new_ca("kube-apiserver webhook client CA", validity=dt.timedelta(days=2))
    cert, key = issue_certificate(ca, "kube-apiserver-webhook-client", validity=dt.timedelta(days=2), server=False)
    directory.mkdir(parents=True, exist_ok=True)
    pem = serialization.Encoding.PEM
    (directory / "ca.crt").write_bytes(ca[0].public_bytes(pem))
    (directory / "client.crt").write_bytes(cert.public_bytes(pem))
    (directory / "client.key").write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return directory / "client.crt", directory / "client.key"


def _apiserver_flags(workdir: Path, certs: Pki) -> list[str]:
    """kube-apiserver flags the tests add to the product's (files go under `workdir`): an AdmissionConfiguration whose
    kubeconfig presents a client certificate to every admission webhook (user `*`), as a cluster running
    `gpudra serve --client-ca` needs; a webhook that asks for none is not affected."""
    directory = workdir / WEBHOOK_CLIENT_DIR
    cert, key = _webhook_client_identity(directory)
    kubeconfig = directory / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config",
        "users": [{"name": "*", "user": {"client-certificate": str(cert), "client-key": str(key)}}],
    }))  # fmt: skip
    webhook = {
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "WebhookAdmissionConfiguration",
        "kubeConfigFile": str(kubeconfig),
    }
    admission = directory / "admission-config.json"
    admission.write_text(json.dumps({
        "apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration",
        "plugins": [{"name": name, "configuration": webhook}
                    for name in ("MutatingAdmissionWebhook", "ValidatingAdmissionWebhook")],
    }))  # fmt: skip
    return [f"--admission-control-config-file={admission}"]


class ControlPlane(_ProductControlPlane):
    """A running control plane. Use `ControlPlane.start()`; `stop()` tears it down."""

    @property
    def webhook_client_ca(self) -> Path:
        """The CA (PEM) that signed the client certificate kube-apiserver presents to webhooks (`--client-ca`)."""
        return self.workdir / WEBHOOK_CLIENT_DIR / "ca.crt"

    @classmethod
    def start(cls, workdir: Path | None = None, feature_gates: dict[str, bool] | None = None) -> ControlPlane:
        bins = binaries.require("components")
        return cls.launch(bins, workdir=workdir, feature_gates=feature_gates, apiserver_flags=_apiserver_flags)

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Runs the built kubectl against this cluster."""
        kubectl = binaries.bin_dir() / "kubectl"
        return subprocess.run(
            [str(kubectl), f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            check=check,
            env={**os.environ, "KUBECONFIG": str(self.kubeconfig)},
        )


@contextlib.contextmanager
def running(feature_gates: dict[str, bool] | None = None) -> Iterator[ControlPlane]:
    """Context manager form of ControlPlane.start()/stop()."""
    cp = ControlPlane.start(feature_gates=feature_gates)
    try:
        yield cp
    finally:
        cp.stop()
