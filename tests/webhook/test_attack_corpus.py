"""The attack corpus (tests/webhook/attack_corpus.py) against a real `gpudra serve` over HTTPS.

Every hostile input must be answered without a 5xx (nor a review denied as an internal error) and before the deadline
(or, half sent, be refused or closed by the body deadline); the process must stay within a memory bound; and a
pristine GPU pod sent after each input must still be translated.
"""

from __future__ import annotations

import json
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.webhook.attack_corpus import Attack, corpus, pristine_review
from tests.webhook.early_answer import post_reading_early
from tests.webhook.test_serve_https import Server

BODY_SECONDS = 3.0
# Past this an input is a hang: the review deadline (4 s) and the body deadline, with room for a loaded machine.
HANG_SECONDS = 30.0
RSS_BOUND_MIB = 150.0  # generous: a loaded machine, glibc keeping freed arenas


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


def _tls(server: Server) -> ssl.SSLSocket:
    ctx = ssl.create_default_context(cafile=str(server.certs / "ca.crt"))
    raw = socket.create_connection(("127.0.0.1", server.port), timeout=HANG_SECONDS)
    return ctx.wrap_socket(raw, server_hostname="localhost")


def post(server: Server, body: bytes, path: str = "/mutate") -> tuple[int, Any]:
    """POST over a fresh HTTPS connection; (status, parsed JSON or None). A timeout raises: that is a hang."""
    with _tls(server) as tls:
        status, payload = post_reading_early(tls, path, body, HANG_SECONDS)
    try:
        return status, json.loads(payload)
    except ValueError:
        return status, None


def send_half(server: Server, body: bytes) -> bytes:
    """Headers with the whole Content-Length, half the body, then wait: what comes back before the server closes."""
    head = f"POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    with _tls(server) as tls:
        try:
            tls.sendall(head + body[: len(body) // 2])
        except OSError:
            return b""  # refused while sending: closed, not held
        answer = b""
        while True:
            try:
                chunk = tls.recv(4096)
            except (ConnectionResetError, ssl.SSLEOFError):
                return answer
            if not chunk:
                return answer
            answer += chunk


def translated(server: Server) -> bool:
    status, answer = post(server, pristine_review())
    response = (answer or {}).get("response") or {}
    return status == 200 and response.get("allowed") is True and bool(response.get("patch"))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("attack"), "--body-seconds", str(BODY_SECONDS))
    try:
        srv.wait_ready()
        assert translated(srv)
        yield srv
    finally:
        srv.stop()


def _answer_status(raw: bytes) -> int | None:
    if not raw.startswith(b"HTTP/1.1 "):
        return None
    return int(raw[9:12])


def test_every_attack_is_answered_in_time_within_memory_and_pristine_pods_still_translate(server: Server) -> None:
    baseline = rss_mib(server.proc.pid)
    failures: list[str] = []
    peak = baseline
    for attack in corpus(seed=22):
        failures += _attack_once(server, attack)
        peak = max(peak, rss_mib(server.proc.pid))
        assert server.proc.poll() is None, f"gpudra serve exited after {attack.name}"
        if not translated(server):
            failures.append(f"{attack.name}: a pristine GPU pod sent after it was not translated")
    assert failures == [], "\n".join(failures)
    assert peak - baseline < RSS_BOUND_MIB, f"RSS grew {peak - baseline:.0f} MiB over {baseline:.0f}"
    assert "Traceback" not in (server.root / "serve.log").read_text()


def _attack_once(server: Server, attack: Attack) -> list[str]:
    started = time.monotonic()
    if attack.half_sent:
        status = _answer_status(send_half(server, attack.body))
        if status is not None and status != 408:
            return [f"{attack.name}: answered {status}, not 408 or a closed connection"]
        return []
    status, answer = post(server, attack.body)
    took = time.monotonic() - started
    problems = []
    if status >= 500:
        problems.append(f"{attack.name}: HTTP {status} {str(answer)[:200]}")
    verdict = ((answer or {}).get("response") or {}).get("status") or {} if isinstance(answer, dict) else {}
    if verdict.get("reason") == "InternalError":  # a 500 inside the review: the input was not checked before use
        problems.append(f"{attack.name}: {str(verdict.get('message'))[:200]}")
    if took >= HANG_SECONDS:
        problems.append(f"{attack.name}: answered after {took:.1f} s")
    return problems


def test_a_hundred_half_sent_2mb_bodies_add_under_100mb(server: Server) -> None:
    """Issue 22's acceptance: 100 clients holding half-sent 2 MB bodies add < 100 MB; pristine pods still pass."""
    before = rss_mib(server.proc.pid)
    body = b'{"pad": "' + b"x" * (2 * 2**20 - 11) + b'"}'
    head = f"POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    held: list[ssl.SSLSocket] = []
    peak = before
    try:
        for _ in range(100):
            tls = _tls(server)
            held.append(tls)
            try:
                tls.sendall(head + body[: len(body) // 2])
            except OSError:
                pass  # refused and closed while sending
            peak = max(peak, rss_mib(server.proc.pid))
        assert translated(server)
        peak = max(peak, rss_mib(server.proc.pid))
    finally:
        for tls in held:
            tls.close()
    assert peak - before < 100, f"100 half-sent bodies added {peak - before:.0f} MiB"
