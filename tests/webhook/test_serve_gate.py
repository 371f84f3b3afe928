"""`gpudra serve` behind its connection gate, over real sockets: what a tenant pod can and cannot hold.

Several tenants are several loopback source addresses (127.0.0.2, ...). Every wait is for a state (the server
resets or answers), bounded by a socket timeout far above what it takes.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.webhook.test_admission import example, review_body
from tests.webhook.test_serve_https import Server, wait_for

_TIMEOUT = 60.0


def _tcp(port: int, source: str = "127.0.0.1") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=_TIMEOUT, source_address=(source, 0))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _tls(srv: Server, source: str = "127.0.0.1", alpn: list[str] | None = None) -> ssl.SSLSocket:
    ctx = ssl.create_default_context(cafile=str(srv.certs / "ca.crt"))
    if alpn is not None:
        ctx.set_alpn_protocols(alpn)
    return ctx.wrap_socket(_tcp(srv.port, source), server_hostname="localhost")


def _ended_by_server(sock: socket.socket) -> bool:
    """Block until the server sends something or ends the connection; True if it ended it."""
    try:
        return sock.recv(65536) == b""
    except (ConnectionResetError, ssl.SSLEOFError, ssl.SSLZeroReturnError):
        return True


def _metric(srv: Server, sample: str) -> float:
    """The value of one sample (name and labels, as /metrics writes them), 0 when absent."""
    with srv.client() as c:
        for line in c.get("/metrics").text.splitlines():
            name, _, value = line.rpartition(" ")
            if name == sample:
                return float(value)
    return 0.0


@pytest.fixture
def gated(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Server]:
    marker = request.node.get_closest_marker("serve_args")
    srv = Server(tmp_path, *(marker.args if marker else ()))
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()


pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


@pytest.mark.serve_args("--tls-handshake-seconds", "0.5")
def test_a_connection_that_never_starts_tls_is_reset_at_the_handshake_deadline(gated: Server) -> None:
    with _tcp(gated.port) as silent:
        assert _ended_by_server(silent)
    with _tcp(gated.port) as partial:  # half a ClientHello, then nothing
        partial.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
        assert _ended_by_server(partial)
    with gated.client() as c:
        assert c.get("/healthz").status_code == 200


@pytest.mark.serve_args("--max-connections", "4")
def test_at_the_limit_a_new_connection_evicts_the_oldest_idle_untrusted_one(gated: Server) -> None:
    held = [_tls(gated, "127.0.0.2") for _ in range(4)]
    try:
        with gated.client() as c:  # from 127.0.0.1: served, where uvicorn's cap used to answer 503
            assert c.get("/healthz").status_code == 200
        assert _ended_by_server(held[0])
        assert _metric(gated, 'gpudra_connections_evicted_total{kind="untrusted-idle"}') >= 1
    finally:
        for sock in held:
            sock.close()


@pytest.mark.serve_args("--per-source-connections", "2")
def test_an_untrusted_source_is_capped_until_it_has_a_review_answered(gated: Server) -> None:
    held = [_tls(gated, "127.0.0.3") for _ in range(2)]
    try:
        with pytest.raises((ConnectionResetError, ssl.SSLError, OSError)):
            _tls(gated, "127.0.0.3")  # reset at accept, before any TLS work
        other = _tls(gated, "127.0.0.4")  # another source is not affected
        other.close()
        body = review_body(example("pod-legacy-vram.yaml"))
        head = f"POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        held[0].sendall(head + body)
        assert held[0].recv(65536).startswith(b"HTTP/1.1 200")  # a review answered: the source is trusted now
        more = [_tls(gated, "127.0.0.3") for _ in range(3)]
        for sock in more:
            sock.close()
    finally:
        for sock in held:
            sock.close()
    assert _metric(gated, 'gpudra_connections_refused_total{reason="per-source"}') == 1
    # the two held, the other source's, the three after trust, and the scrape's own; not the one refused
    assert _metric(gated, "gpudra_connections_opened_total") >= 7


def test_http2_is_not_offered_and_an_http2_preface_is_refused(gated: Server) -> None:
    with _tls(gated, alpn=["h2"]) as h2_only:
        assert h2_only.selected_alpn_protocol() is None
        h2_only.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        answer = b""
        try:
            while chunk := h2_only.recv(65536):
                answer += chunk
        except (ConnectionResetError, ssl.SSLError):
            pass
        assert answer.startswith(b"HTTP/1.1 400")
    with _tls(gated, alpn=["h2", "http/1.1"]) as both:
        assert both.selected_alpn_protocol() == "http/1.1"
    with httpx.Client(http2=False, verify=False) as c:  # the server still answers HTTP/1.1 as before
        assert c.get(f"https://127.0.0.1:{gated.port}/healthz").status_code == 200


def test_a_refused_body_is_not_read_on(gated: Server) -> None:
    """After a 413 the connection is reset: a client that keeps sending finds it gone long before 64 MiB."""
    head = b"POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Length: 209715200\r\n\r\n"
    chunk = b"x" * 65536
    sent = 0
    with _tls(gated) as tls:
        tls.sendall(head)
        with pytest.raises((ConnectionResetError, BrokenPipeError, ssl.SSLError, OSError)):
            for _ in range(1024):
                tls.sendall(chunk)
                sent += len(chunk)
    assert sent < 64 * 2**20
    with gated.client() as c:
        wait_for(lambda: c.get("/healthz").status_code == 200)


def test_headers_past_their_byte_cap_are_431_and_reset(gated: Server) -> None:
    with _tls(gated) as tls:
        tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")
        answer = b""
        with pytest.raises((ConnectionResetError, BrokenPipeError, ssl.SSLError, OSError)):
            for i in range(10_000):  # 10,000 headers of 100 bytes: 1 MB, never ending the head
                tls.sendall(f"X-Pad-{i}: {'a' * 90}\r\n".encode())
            while chunk := tls.recv(65536):
                answer += chunk
            raise ConnectionResetError("closed")
    assert answer == b"" or answer.startswith(b"HTTP/1.1 431")
    with gated.client() as c:
        assert c.get("/healthz").status_code == 200


def test_a_connection_pipelining_past_the_cap_is_reset(gated: Server) -> None:
    """uvicorn would queue pipelined requests without bound (1.7 GB in 20 s from one connection)."""
    with _tls(gated) as tls:
        tls.sendall(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n" * 64)
        answer = b""
        try:
            while chunk := tls.recv(65536):
                answer += chunk
        except (ConnectionResetError, ssl.SSLError):
            pass
    assert answer.count(b"HTTP/1.1 200") < 64  # reset before it answered them all
    with gated.client() as c:
        assert c.get("/healthz").status_code == 200
