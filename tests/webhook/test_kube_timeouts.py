"""`webhook.kube.KubeSideEffects` against a stalled API server: every call ends within its timeout, once.

The stand-in completes TLS handshakes and then never answers, as a SIGSTOPped kube-apiserver behaves once the
kernel has accepted the connection. urllib3 used to retry a timed-out GET three more times (its default Retry(3)),
so a Namespace read bounded by `timeout` took 4x that: with the webhook's 2 s, 8 s, past the review deadline (4 s).
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from webhook.kube import ApiServerError, KubeSideEffects
from webhook.tls import write_dev_certificates

TIMEOUT = 0.5


@pytest.fixture
def stalled_apiserver(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTPS server that accepts, shakes hands and never answers; yields (URL, CA file)."""
    write_dev_certificates(tmp_path, ["localhost"], ip_addresses=["127.0.0.1"])
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            try:
                held.append(ctx.wrap_socket(conn, server_side=True))
            except (OSError, ssl.SSLError):
                conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{listener.getsockname()[1]}", tmp_path / "ca.crt"
    finally:
        stop.set()
        listener.close()
        thread.join(5)
        for conn in held:
            conn.close()


def _writer(url: str, ca: Path) -> tuple[KubeSideEffects, client.ApiClient]:
    config = client.Configuration()
    config.host = url
    config.ssl_ca_cert = str(ca)
    api = client.ApiClient(config)
    return KubeSideEffects(api, timeout=TIMEOUT), api


CALLS: dict[str, Callable[[KubeSideEffects], Any]] = {
    "read Namespace": lambda w: w.get_namespace("team-a"),
    "read claim": lambda w: w.read_claim_spec("team-a", "claim", "gpus"),
    "read template": lambda w: w.read_claim_spec("team-a", "template", "gpus"),
    "create template": lambda w: w.ensure_template("team-a", {"metadata": {"name": "gpudra-x"}, "spec": {}}),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_each_call_gives_up_within_its_timeout(stalled_apiserver: tuple[str, Path], call: str) -> None:
    writer, api = _writer(*stalled_apiserver)
    try:
        started = time.monotonic()
        with pytest.raises(ApiServerError, match=f"within {TIMEOUT:g}s"):
            CALLS[call](writer)
        took = time.monotonic() - started
    finally:
        api.close()  # type: ignore[no-untyped-call]
    # One attempt: about TIMEOUT (read timeout; the handshake is immediate). Retried, it took 4x.
    assert took < 2 * TIMEOUT, f"{call} took {took:.2f}s with a {TIMEOUT}s timeout"


def test_readiness_check_answers_within_its_timeout(stalled_apiserver: tuple[str, Path]) -> None:
    writer, api = _writer(*stalled_apiserver)
    try:
        started = time.monotonic()
        ok, detail = writer.reachable()
        took = time.monotonic() - started
    finally:
        api.close()  # type: ignore[no-untyped-call]
    assert not ok and "not reachable" in detail
    assert took < 2 * TIMEOUT, f"/readyz's API-server check took {took:.2f}s"
