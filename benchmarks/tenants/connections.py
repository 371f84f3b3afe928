"""Rows 3, 6, 8 and 10 of issue 37: idle connections, bytes sent on after a refusal, half-sent bodies, and bad
requests that would flood the log."""

from __future__ import annotations

import concurrent.futures
import os
import select
import socket
import ssl
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.tenants.wire import (
    DATA,
    END_HEADERS,
    END_STREAM,
    HEADERS,
    PREFACE,
    Control,
    Target,
    closed,
    drain,
    frame,
    header_block,
    open_h2,
    post,
    run_threads,
    settings,
)
from tests.controlplane.tenant_stack import legacy_pod
from webhook.review import pod_review


def idle_connections(
    target: Target, control: Control, sources: int = 4, per_source: int = 130, tcp_per_source: int = 32,
    reopen_seconds: float = 13.0, earn_trust: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """Row 3: `sources` x `per_source` TLS handshakes that never send a request, and `tcp_per_source` TCP
    connections per source that never start TLS; all closed and opened again every `reopen_seconds` (under the
    server's idle timeout), until the harness stops the attack. With `earn_trust`, each source first sends one
    well-formed review of a pod without GPUs (allowed, nothing created), as any tenant can when no client certificate
    is asked for: a source with a review answered is one the server trusts."""
    counts: Counter[str] = Counter()
    lock = threading.Lock()
    if earn_trust:
        plain = legacy_pod("plain", "default")
        plain["spec"]["containers"][0]["resources"] = {}
        for source in target.sources[:sources]:
            status, _ = post(target, source, "/mutate", pod_review(plain, uid=f"trust-{source}"))
            counts[f"trust_review_answered_{status}"] += 1
    slots = [
        (src, kind) for src in target.sources[:sources] for kind in ["tls"] * per_source + ["tcp"] * tcp_per_source
    ]
    held: list[socket.socket | None] = [None] * len(slots)
    open_counts: list[int] = []

    def open_slot(i: int) -> None:
        source, kind = slots[i]
        try:
            held[i] = target.tls(source) if kind == "tls" else target.tcp(source)
            outcome = f"{kind}_opened"
        except ssl.SSLError as e:
            outcome = f"{kind}_handshake_failed: {e.reason}"
        except TimeoutError:
            outcome = f"{kind}_timed_out"
        except OSError as e:
            outcome = f"{kind}_refused: {type(e).__name__}"
        with lock:
            counts[outcome] += 1

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        while True:
            started = time.monotonic()
            list(pool.map(open_slot, range(len(slots))))
            counts["rounds"] += 1
            counts["round_open_seconds_max"] = max(counts["round_open_seconds_max"], round(time.monotonic() - started))
            control.armed()
            stop = control.wait(reopen_seconds)
            still_open = sum(1 for s in held if s is not None and not closed(s))
            open_counts.append(still_open)
            counts["closed_by_server_before_reopen"] += sum(1 for s in held if s is not None) - still_open
            for i, sock in enumerate(held):
                if sock is not None:
                    sock.close()
                    held[i] = None
            if stop:
                break
    return {
        "tls_per_round": sources * per_source,
        "tcp_per_round": sources * tcp_per_source,
        "still_open_at_each_reopen": open_counts,
        **counts,
    }


def _push(sock: ssl.SSLSocket, chunk: bytes, seconds: float) -> dict[str, Any]:
    """Send `chunk` again and again for `seconds`; note when the server refused (an answer, or a reset) and what the
    socket still took after the answer, and how it ended."""
    sent, refused_at, answer, ending = 0, None, "", "time limit"
    end = time.monotonic() + seconds
    sock.settimeout(2.0)
    while time.monotonic() < end:
        if refused_at is None:
            readable, _, _ = select.select([sock], [], [], 0)
            if readable or sock.pending():
                try:
                    data = sock.recv(4096)
                except (OSError, ssl.SSLError) as e:
                    refused_at, ending = sent, f"reset: {type(e).__name__}"
                    break
                refused_at = sent
                answer = _first_line(data)
        try:
            sent += sock.send(chunk)
        except TimeoutError:
            ending = "stalled (server stopped reading, connection held)"
            break
        except (OSError, ssl.SSLError) as e:
            refused_at, ending = sent if refused_at is None else refused_at, f"reset: {type(e).__name__}"
            break
    return {
        "sent": sent,
        "after_refusal": sent - refused_at if refused_at is not None else 0,
        "refused": refused_at is not None,
        "answer": answer,
        "ending": ending,
    }


def _first_line(data: bytes) -> str:
    if not data:
        return "closed"
    if data.startswith(b"HTTP/"):
        return data.split(b"\r\n", 1)[0][:60].decode(errors="replace")
    return f"{len(data)} bytes of HTTP/2 frames" if len(data) >= 9 and data[3] == 0x4 else f"{len(data)} other bytes"


def bytes_after_refusal(
    target: Target, control: Control, connections: int = 4, seconds: float = 30.0
) -> dict[str, Any]:
    """Row 6: per way of being refused, `connections` clients send on for `seconds` after the refusal: an HTTP/1.1
    body declared at 6 GiB (over the size bound); without a client certificate where one is required; and HTTP/2
    DATA after the server refused HTTP/2 (or after the stream's refusal where it speaks it). A round of every way a
    second until the harness stops the attack; each way's figures are summed over the rounds."""
    ways = ["http1_body_over_the_size_bound", "http2_after_refusal"]
    if target.client_ca:
        ways.insert(1, "http1_no_client_certificate")
    control.armed()
    rounds: list[dict[str, dict[str, Any]]] = []
    while not rounds or not control.wait(1.0):
        rounds.append({way: _refused_way(target, way, connections, seconds) for way in ways})
    out: dict[str, Any] = {way: _summed([one[way] for one in rounds]) for way in ways}
    out["rounds"] = len(rounds)
    out["kernel_buffer_bytes_per_connection"] = kernel_buffer_bytes()
    return out


def _summed(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One way's figures over its rounds: counts added, `seconds` (each connection's push) kept."""
    out: dict[str, Any] = {"seconds": rounds[0]["seconds"]}
    for key in ("connections", "bytes_sent_after_refusal", "bytes_sent", "refused"):
        out[key] = sum(one[key] for one in rounds)
    for key in ("answers", "endings"):
        out[key] = dict(sum((Counter(one[key]) for one in rounds), Counter()))
    return out


def kernel_buffer_bytes() -> int:
    """What the kernels may hold of one loopback connection whose server reads nothing: the client's send buffer and
    the server's receive buffer at their largest (net.ipv4.tcp_wmem, tcp_rmem), and a MiB of TLS records in flight.
    A refused connection that is aborted takes no more than this; one that is drained takes without end."""
    largest = [int(Path(f"/proc/sys/net/ipv4/{name}").read_text().split()[2]) for name in ("tcp_wmem", "tcp_rmem")]
    return sum(largest) + 2**20


_HUGE_POST = b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 6442450944\r\n\r\n"


def _refused_way(target: Target, way: str, connections: int, seconds: float) -> dict[str, Any]:
    chunk = b"x" * 65536
    results: list[dict[str, Any]] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        source = target.sources[i % len(target.sources)]
        try:
            if way == "http2_after_refusal":
                sock = target.tls(source, alpn=("h2",))
                start = PREFACE + settings(enable_push=0) + frame(HEADERS, END_HEADERS, 1, b"\xff" * 64)
                data = frame(DATA, 0, 1, chunk[:16000])
            else:
                # past the certificate check where one is asked for, unless that is the refusal measured
                cert = way == "http1_body_over_the_size_bound"
                sock = target.tls(source, cert=cert)
                start, data = _HUGE_POST, chunk
            sock.sendall(start)
            result = _push(sock, data, seconds)
            sock.close()
        except (OSError, ssl.SSLError) as e:
            result = {"sent": 0, "after_refusal": 0, "refused": True, "answer": "", "ending": type(e).__name__}
        with lock:
            results.append(result)

    run_threads(connections, one)
    return {
        "connections": connections,
        "seconds": seconds,
        "bytes_sent_after_refusal": sum(r["after_refusal"] for r in results),
        "bytes_sent": sum(r["sent"] for r in results),
        "refused": sum(1 for r in results if r["refused"]),
        "answers": dict(Counter(r["answer"] for r in results)),
        "endings": dict(Counter(r["ending"] for r in results)),
    }


def half_sent_bodies(
    target: Target, control: Control, clients: int = 280, sources: int = 10, body_bytes: int = 2 * 2**20
) -> dict[str, Any]:
    """Row 8: `clients` connections (over `sources` addresses) each send the headers and half of a `body_bytes`
    body, then wait until the harness stops the attack."""
    head = b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    head += f"Content-Length: {body_bytes}\r\n\r\n".encode()
    half = b'{"pad": "' + b"x" * (body_bytes // 2 - 9)
    counts: Counter[str] = Counter()
    lock = threading.Lock()
    held: list[ssl.SSLSocket] = []

    def one(i: int) -> None:
        try:
            sock = target.tls(target.sources[i % sources])
            with lock:
                held.append(sock)
            sock.settimeout(10.0)
            sock.sendall(head + half)
            outcome = "half sent"
        except (OSError, ssl.SSLError) as e:
            outcome = f"refused: {type(e).__name__}"
        with lock:
            counts[outcome] += 1

    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        list(pool.map(one, range(clients)))
    control.armed()
    control.wait(3600)
    for sock in held:
        sock.settimeout(0.05)
        try:
            first = sock.recv(64)
            counts["answer: " + (first.split(b"\r\n", 1)[0].decode(errors="replace") or "closed")] += 1
        except (TimeoutError, ssl.SSLWantReadError):
            counts["answer: none yet"] += 1
        except (OSError, ssl.SSLError):
            counts["answer: reset"] += 1
        sock.close()
    return {"clients": clients, "sources": sources, "body_bytes": body_bytes, **counts}


def log_flood(target: Target, control: Control, clients: int = 32) -> dict[str, Any]:
    """Row 10: `clients` threads sending bad requests back to back, five kinds in turn: bytes that are not TLS, TLS
    then bytes that are not HTTP, a body that is not JSON, a body cut off by a hang-up, and 200 reviews on as many
    HTTP/2 streams at once, the connection closed before their answers (where the server speaks HTTP/2)."""
    counts: Counter[str] = Counter()
    lock = threading.Lock()
    kinds = ["not_tls", "not_http", "not_json", "cut_off", "h2_streams"]
    post = b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
    review = pod_review(legacy_pod("flood", "flood"), uid="flood")
    control.armed()

    def bad(kind: str, source: str) -> None:
        if kind == "not_tls":
            with target.tcp(source) as raw:
                raw.sendall(b"\x16\x03\x01\xff\xff" + os.urandom(512))
                drain(raw, 0.5)
            return
        if kind == "h2_streams":
            h2 = open_h2(target, source, settings(enable_push=0), counts)
            if h2 is None:
                return
            with h2:  # 200 complete reviews at once (past the 128 streams it allows), then gone before the answers
                block = header_block("POST", "/mutate")
                h2.sendall(b"".join(frame(HEADERS, END_HEADERS, 1 + 2 * s, block)
                                    + frame(DATA, END_STREAM, 1 + 2 * s, review) for s in range(200)))  # fmt: skip
            return
        with target.tls(source) as sock:
            if kind == "not_http":
                sock.sendall(b"\x00\x01GARBAGE \xff\xfe HTTP/9.9\r\n\r\n")
            elif kind == "not_json":
                sock.sendall(post % 20 + b"\xff\xfe not json at all")
            else:
                sock.sendall(post % 100_000 + b'{"apiVersion": "admission.k8s.io/v1", "kind": "Adm')
            drain(sock, 0.2)

    def one(i: int) -> None:
        n = i
        while not control.stopping():
            kind = kinds[n % len(kinds)]
            n += 1
            try:
                bad(kind, target.sources[i % len(target.sources)])
                outcome = kind
            except (OSError, ssl.SSLError):
                outcome = f"{kind} (refused)"
            with lock:
                counts[outcome] += 1

    run_threads(clients, one)
    return {"clients": clients, "requests": dict(counts)}
