"""`kubeapi.KubeSideEffects` against a stalled API server: every call ends within its timeout, once.

The stand-in completes TLS handshakes and then never answers, as a SIGSTOPped kube-apiserver behaves once the
kernel has accepted the connection. urllib3 used to retry a timed-out GET three more times (its default Retry(3)),
so a Namespace read bounded by `timeout` took 4x that: with the webhook's 2 s, 8 s, past the review deadline (4 s).
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kubeapi import ApiServerError, KubeSideEffects
from pki import write_dev_certificates

TIMEOUT = 0.5


@pytest.fixture
def stalled_apiserver(tmp_path: Path) -> Iterator[tuple[str, Path, list[int]]]:
    """An HTTPS server that accepts, shakes hands and never answers; yields (URL, CA file, [connections accepted]).

    Each attempt of a call is one connection (a timed-out connection is never reused), and a client gets past the
    handshake only once the server has accepted it: when a call has failed, the count is its attempts."""
    write_dev_certificates(tmp_path, ["localhost"], ip_addresses=["127.0.0.1"])
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    accepted = [0]
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted[0] += 1
            try:
                held.append(ctx.wrap_socket(conn, server_side=True))
            except (OSError, ssl.SSLError):
                conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{listener.getsockname()[1]}", tmp_path / "ca.crt", accepted
    finally:
        stop.set()
        listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() (close alone leaves it blocked on Linux)
        listener.close()
        thread.join(5)
        assert not thread.is_alive()
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
def test_each_call_gives_up_after_one_attempt(stalled_apiserver: tuple[str, Path, list[int]], call: str) -> None:
    url, ca, accepted = stalled_apiserver
    writer, api = _writer(url, ca)
    try:
        with pytest.raises(ApiServerError, match=f"within {TIMEOUT:g}s"):
            CALLS[call](writer)
    finally:
        api.close()  # type: ignore[no-untyped-call]
    # One attempt of TIMEOUT bounds the call (counted, not timed: a loaded machine stretches any duration).
    # Retried, it made 4 connections and took 4x TIMEOUT.
    assert accepted[0] == 1, f"{call} made {accepted[0]} attempts"


def test_readiness_check_gives_up_after_one_attempt(stalled_apiserver: tuple[str, Path, list[int]]) -> None:
    url, ca, accepted = stalled_apiserver
    writer, api = _writer(url, ca)
    try:
        ok, detail = writer.reachable()
    finally:
        api.close()  # type: ignore[no-untyped-call]
    assert not ok and "not reachable" in detail
    assert accepted[0] == 1, f"/readyz's API-server check made {accepted[0]} attempts"
