"""`gpudra serve --client-ca`: only a client with a certificate the CA signed gets a review answered; the kubelet's
probes and Prometheus' scrape need none. A real uvicorn process over HTTPS, real TLS handshakes."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import serialization

from pki import issue_certificate, new_ca, write_dev_certificates
from policyengine import shipped_policies_dir
from tests.webhook.test_admission import example, review_body
from tests.webhook.test_serve_https import free_port

DAY = dt.timedelta(days=1)


def _client_pair(directory: Path, ca_name: str) -> tuple[Path, Path, Path]:
    """A CA and a client certificate it signed, as PEM files: (ca, cert, key)."""
    ca = new_ca(ca_name, validity=DAY)
    cert, key = issue_certificate(ca, "kube-apiserver-webhook-client", validity=DAY, server=False)
    directory.mkdir(parents=True)
    paths = directory / "ca.crt", directory / "client.crt", directory / "client.key"
    paths[0].write_bytes(ca[0].public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths


class MutualServer:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.certs = root / "certs"
        policies = root / "policies"
        shutil.copytree(shipped_policies_dir(), policies, ignore=shutil.ignore_patterns("tests"))
        write_dev_certificates(self.certs, ["localhost"], ip_addresses=["127.0.0.1"])
        self.client_ca, self.client_cert, self.client_key = _client_pair(root / "apiserver", "API server client CA")
        self.port = free_port()
        self.log = (root / "serve.log").open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gpudra", "serve", "--policies", str(policies),
             "--cert", str(self.certs / "tls.crt"), "--key", str(self.certs / "tls.key"),
             "--client-ca", str(self.client_ca), "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip

    def client(self, cert: tuple[Path, Path] | None = None) -> httpx.Client:
        ctx = ssl.create_default_context(cafile=str(self.certs / "ca.crt"))
        if cert is not None:
            ctx.load_cert_chain(str(cert[0]), str(cert[1]))
        return httpx.Client(base_url=f"https://localhost:{self.port}", verify=ctx, timeout=10)

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("gpudra serve exited:\n" + (self.root / "serve.log").read_text())
            try:
                with self.client() as c:  # the probe path needs no client certificate
                    if c.get("/readyz").status_code == 200:
                        return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise AssertionError("gpudra serve not ready in 60s:\n" + (self.root / "serve.log").read_text())

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[MutualServer]:
    srv = MutualServer(tmp_path)
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()


def test_a_review_without_a_client_certificate_is_refused_before_admission(server: MutualServer) -> None:
    body = review_body(example("pod-legacy-1gpu.yaml"))
    with server.client() as anonymous:
        for path in ("/mutate", "/validate"):
            refused = anonymous.post(path, content=body)
            assert refused.status_code == 403, refused.text
            assert "client certificate" in refused.json()["error"]
        for probe in ("/healthz", "/readyz", "/metrics"):
            assert anonymous.get(probe).status_code == 200, probe
        # Counted nowhere: the refused reviews never reached admission.
        assert "gpudra_admission_reviews_total{" not in anonymous.get("/metrics").text
    with server.client((server.client_cert, server.client_key)) as apiserver:
        answered = apiserver.post("/mutate", content=body)
    assert answered.status_code == 200
    assert answered.json()["response"]["allowed"] is True and answered.json()["response"]["patch"]
    with server.client() as anonymous:
        assert "gpudra_admission_reviews_total{" in anonymous.get("/metrics").text  # the scrape sees real reviews


def test_a_certificate_from_another_ca_fails_the_handshake(server: MutualServer) -> None:
    _, cert, key = _client_pair(server.root / "other", "someone else's CA")
    with server.client((cert, key)) as forger, pytest.raises(httpx.HTTPError):
        forger.post("/mutate", content=review_body(example("pod-legacy-1gpu.yaml")))


def test_client_ca_without_a_serving_certificate_is_refused() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gpudra", "serve", "--client-ca", "/nonexistent/ca.crt"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 2 and "--client-ca needs --cert and --key" in result.stderr
