"""`gpudra serve` as users run it: a real uvicorn process over HTTPS, certificate and policy hot reload."""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from pki import issue_certificate, write_dev_certificates
from policyengine import shipped_policies_dir
from tests.webhook.test_admission import example, review_body


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def peer_serial(port: int, ca_file: Path) -> int:
    ctx = ssl.create_default_context(cafile=str(ca_file))
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as sock,
        ctx.wrap_socket(sock, server_hostname="localhost") as tls,
    ):
        cert = tls.getpeercert()
    assert cert is not None
    return int(str(cert["serialNumber"]), 16)


def serial_or_none(port: int, ca_file: Path) -> int | None:
    try:
        return peer_serial(port, ca_file)
    except ssl.SSLError:
        return None


class Server:
    def __init__(self, root: Path, *extra_args: str, write_certificates: bool = True) -> None:
        self.root = root
        self.certs = root / "certs"
        self.policies = root / "policies"
        shutil.copytree(shipped_policies_dir(), self.policies, ignore=shutil.ignore_patterns("tests"))
        if write_certificates:
            write_dev_certificates(self.certs, ["localhost"], ip_addresses=["127.0.0.1"])
        self.port = free_port()
        self.log = (root / "serve.log").open("w")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gpudra",
                "serve",
                "--policies",
                str(self.policies),
                "--cert",
                str(self.certs / "tls.crt"),
                "--key",
                str(self.certs / "tls.key"),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--reload-seconds",
                "0.3",
                *extra_args,
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )

    def client(self, ca: Path | None = None) -> httpx.Client:
        ctx = ssl.create_default_context(cafile=str(ca or self.certs / "ca.crt"))
        return httpx.Client(base_url=f"https://localhost:{self.port}", verify=ctx, timeout=5)

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("gpudra serve exited:\n" + (self.root / "serve.log").read_text())
            try:
                with self.client() as c:
                    if c.get("/readyz").status_code == 200:
                        return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise AssertionError("gpudra serve not ready in 30s:\n" + (self.root / "serve.log").read_text())

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    srv = Server(tmp_path)
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()


def wait_for(condition: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def test_https_mutate_and_certificate_reload_without_failed_requests(server: Server) -> None:
    first = peer_serial(server.port, server.certs / "ca.crt")
    errors: list[str] = []
    answered = 0
    stop = threading.Event()
    body = review_body(example("pod-legacy-vram.yaml"))

    def hammer() -> None:
        nonlocal answered
        while not stop.is_set():
            # Each request verifies against whichever CA is current; both are trusted by this client.
            ctx = ssl.create_default_context(cafile=str(server.root / "trusted.pem"))
            try:
                with httpx.Client(base_url=f"https://localhost:{server.port}", verify=ctx, timeout=5) as c:
                    r = c.post("/mutate", content=body)
                    if r.status_code != 200 or not r.json()["response"]["allowed"]:
                        errors.append(f"{r.status_code} {r.text[:200]}")
                    answered += 1
            except httpx.HTTPError as exc:
                errors.append(repr(exc))

    old_ca = (server.certs / "ca.crt").read_bytes()
    new_dir = server.root / "new-certs"
    write_dev_certificates(new_dir, ["localhost"], ip_addresses=["127.0.0.1"])
    (server.root / "trusted.pem").write_bytes(old_ca + (new_dir / "ca.crt").read_bytes())
    thread = threading.Thread(target=hammer)
    thread.start()
    try:
        time.sleep(0.5)
        for name in ("tls.key", "tls.crt"):
            os.replace(new_dir / name, server.certs / name)
        wait_for(lambda: serial_or_none(server.port, new_dir / "ca.crt") not in (None, first))
        time.sleep(0.5)
    finally:
        stop.set()
        thread.join(timeout=20)
    assert answered > 0 and errors == []


def test_policy_reload_and_rejected_broken_set(server: Server) -> None:
    with server.client() as c:
        assert "whole-gpu" in c.get("/readyz").json()["checks"]["policies"]["detail"]
        (server.policies / "whole-gpu.yaml").unlink()
        wait_for(lambda: "whole-gpu" not in c.get("/readyz").json()["checks"]["policies"]["detail"])
        (server.policies / "broken.yaml").write_text("apiVersion: gpudra.io/v1alpha1\nkind: GPUClaimPolicy\nspec: [\n")
        wait_for(lambda: "rejected" in c.get("/readyz").json()["checks"]["policies"]["detail"])
        metrics = c.get("/metrics").text
        assert 'gpudra_policy_reloads_total{result="failure"} 1.0' in metrics
        assert 'gpudra_policy_reloads_total{result="success"} 1.0' in metrics
        r = c.post("/mutate", content=review_body(example("pod-legacy-vram.yaml")))
        assert r.status_code == 200 and r.json()["response"]["allowed"] is True  # the previous set still serves


def test_client_disconnect_mid_body_is_one_log_line_and_serving_goes_on(server: Server) -> None:
    ctx = ssl.create_default_context(cafile=str(server.certs / "ca.crt"))
    body = review_body(example("pod-legacy-vram.yaml"))
    head = (
        f"POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with (
        socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock,
        ctx.wrap_socket(sock, server_hostname="localhost") as tls,
    ):
        tls.sendall(head + body[: len(body) // 2])
        time.sleep(0.3)
    log = server.root / "serve.log"
    wait_for(lambda: "client disconnected" in log.read_text())
    with server.client() as c:
        assert c.post("/mutate", content=body).status_code == 200
    assert "Traceback" not in log.read_text()


def _expired_pair(directory: Path) -> tuple[bytes, bytes]:
    """A certificate (and its key) for localhost that expired a minute ago, signed by the CA in `directory`."""
    ca_cert = x509.load_pem_x509_certificate((directory / "ca.crt").read_bytes())
    ca_key = serialization.load_pem_private_key((directory / "ca.key").read_bytes(), password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    sans: list[x509.GeneralName] = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert, key = issue_certificate((ca_cert, ca_key), "localhost", validity=dt.timedelta(minutes=-1), sans=sans)
    pkcs8, none = serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    return cert.public_bytes(serialization.Encoding.PEM), key.private_bytes(serialization.Encoding.PEM, pkcs8, none)


def test_an_expired_certificate_is_refused_at_start_with_its_reason(tmp_path: Path) -> None:
    certs = tmp_path / "certs"
    write_dev_certificates(certs, ["localhost"], ip_addresses=["127.0.0.1"])
    cert_pem, key_pem = _expired_pair(certs)
    (certs / "tls.crt").write_bytes(cert_pem)
    (certs / "tls.key").write_bytes(key_pem)
    srv = Server(tmp_path, write_certificates=False)
    try:
        assert srv.proc.wait(timeout=60) != 0
    finally:
        srv.stop()
    assert "certificate expired at" in (tmp_path / "serve.log").read_text()


def test_an_expired_rotation_keeps_the_old_certificate_is_logged_and_clears_when_fixed(server: Server) -> None:
    serving = peer_serial(server.port, server.certs / "ca.crt")
    good = {name: (server.certs / name).read_bytes() for name in ("tls.crt", "tls.key")}
    cert_pem, key_pem = _expired_pair(server.certs)
    (server.certs / "tls.key").write_bytes(key_pem)
    (server.certs / "tls.crt").write_bytes(cert_pem)
    with server.client() as c:

        def detail() -> str:
            return str(c.get("/readyz").json()["checks"]["certificate"]["detail"])

        wait_for(lambda: "certificate expired at" in detail())
        assert peer_serial(server.port, server.certs / "ca.crt") == serving
        log = server.root / "serve.log"
        wait_for(lambda: "certificate expired at" in log.read_text())

        def failed_reloads() -> float:
            for line in c.get("/metrics").text.splitlines():
                if line.startswith('gpudra_certificate_reloads_total{result="failure"}'):
                    return float(line.split()[-1])
            return 0.0

        seen = failed_reloads()
        wait_for(lambda: failed_reloads() >= seen + 2)  # polled twice more: logged once, not once per poll
        assert log.read_text().count("certificate expired at") == 1
        for name, data in good.items():  # the rotation is undone: the files hold the pair that serves
            (server.certs / name).write_bytes(data)
        wait_for(lambda: "last reload failed" not in detail())
        assert c.get("/readyz").status_code == 200


def _tls(port: int, ca_file: Path) -> ssl.SSLSocket:
    ctx = ssl.create_default_context(cafile=str(ca_file))
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    return ctx.wrap_socket(sock, server_hostname="localhost")


def _closed_by_server(tls: ssl.SSLSocket) -> bool:
    """Block (up to the socket's timeout) until the server sends something; True if that was the end."""
    try:
        return tls.recv(1024) == b""
    except (ConnectionResetError, ssl.SSLEOFError):
        return True


def _answer_then_close(tls: ssl.SSLSocket) -> bytes:
    """Everything the server sends until it closes the connection (the socket's timeout bounds each read)."""
    data = b""
    while True:
        try:
            chunk = tls.recv(4096)
        except (ConnectionResetError, ssl.SSLEOFError):
            return data
        if not chunk:
            return data
        data += chunk


def test_idle_and_trickling_connections_are_closed(tmp_path: Path) -> None:
    srv = Server(tmp_path, "--idle-seconds", "1")
    try:
        srv.wait_ready()
        with _tls(srv.port, srv.certs / "ca.crt") as idle:  # handshake, then nothing
            assert _closed_by_server(idle)
        with _tls(srv.port, srv.certs / "ca.crt") as trickle:  # headers one byte at a time, never complete
            head = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + b"a" * 10_000
            sent = 0
            try:
                for byte in head:
                    trickle.sendall(bytes([byte]))
                    sent += 1
                    time.sleep(0.05)
            except OSError:
                pass
            assert sent < len(head) or _closed_by_server(trickle)
        with srv.client() as c:
            assert c.get("/healthz").status_code == 200
    finally:
        srv.stop()


def test_a_half_sent_body_is_408_and_a_declared_oversize_is_413(tmp_path: Path) -> None:
    srv = Server(tmp_path, "--body-seconds", "1")
    try:
        srv.wait_ready()
        body = review_body(example("pod-legacy-vram.yaml"))
        head = f"POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        with _tls(srv.port, srv.certs / "ca.crt") as tls:
            tls.sendall(head + body[: len(body) // 2])
            answer = _answer_then_close(tls)
            assert answer.startswith(b"HTTP/1.1 408") and b"not received within 1 s" in answer
        big = b"POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Length: 209715200\r\n\r\n"
        with _tls(srv.port, srv.certs / "ca.crt") as tls:
            tls.sendall(big)
            answer = _answer_then_close(tls)
            assert answer.startswith(b"HTTP/1.1 413") and b"209715200 bytes exceeds the limit" in answer
        assert "Traceback" not in (tmp_path / "serve.log").read_text()
    finally:
        srv.stop()
