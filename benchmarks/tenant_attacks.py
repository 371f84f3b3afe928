"""A tenant's attacks on the webhook (issue 37), with ordinary GPU pods created through the real API server meanwhile.

    python benchmarks/tenant_attacks.py [--smoke] [--only NAME] [--direct]

A tenant is a pod that can open connections to the webhook's Service and has no credentials. Each attack runs in a
process of its own (so its threads do not take the measuring process' GIL) from loopback addresses 127.0.0.2 and up,
against a `gpudra serve` started as manifests/base/deployment.yaml runs it (`--workers 2`, its environment; see
tests/controlplane/tenant_stack.py) and registered with the shipped webhook configurations on a kube-apiserver built
by tests/controlplane/build.sh, which reaches it from 127.0.0.1. For every attack, in one run: ordinary legacy GPU
pods created through the API server without the attack (the baseline) and again during it; prints JSON with, per
attack, `ordinary_pods`, `admitted`, `translated`, `p99_ms_baseline`, `p99_ms_under_attack`, `p99_ratio`, the
server's RSS (`rss_mib_peak`, `rss_mib_after_30s`: polled until back near its level before the attack, at most 30 s)
and the attack's own counts. `--direct` posts the ordinary reviews straight to the webhook instead (no control plane;
for working on the attacks, not for figures).

The attacks (issue 37's table, protocol rows):
1. `h2_control_flood`: PING and SETTINGS frames as fast as they go over HTTP/2 (ALPN h2, else prior knowledge),
   beside a held stream and a GET /healthz every 100 ms.
2. `continuation_flood`: a stream held by a zero window (GET /metrics), then one header block that never ends.
3. `idle_connections`: 4 sources x 130 TLS handshakes that send nothing, closed and re-opened every 13 s, and TCP
   connections that never start TLS.
4. `forged_reviews`: AdmissionReviews with no client certificate naming a victim namespace; counts the
   ResourceClaimTemplates created there. Run with `--client-ca` and without.
6. `bytes_after_refusal`: a body sent on after the server refused the request or the connection: the bytes its
   socket still took and the server's CPU seconds.
7. `large_reviews`: valid ~2.5 MB reviews from 32 clients at once with the API server's client certificate: how many
   got 503.
8. `half_sent_bodies`: clients that send half of a 2 MiB body and wait: the RSS they add.
10. `log_flood`: concurrent bad requests (not TLS, not HTTP, not JSON, cut off, many HTTP/2 streams): log bytes/s.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import http.client
import json
import os
import select
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.controlplane.tenant_stack import (  # noqa: E402
    Load,
    Stack,
    Webhook,
    legacy_pod,
    memory_limit_mib,
    ordinary_load,
    tenant_sources,
    translated,
)
from webhook.review import pod_review  # noqa: E402

# -- HTTP/2 on the wire (RFC 9113), written by hand: an attacker does not use a conforming client ----------------------
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, CONTINUATION = 0x0, 0x1, 0x3, 0x4, 0x6, 0x9
END_STREAM, END_HEADERS = 0x1, 0x4
INITIAL_WINDOW_SIZE, ENABLE_PUSH = 0x4, 0x2


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


def settings(**values: int) -> bytes:
    ids = {"initial_window_size": INITIAL_WINDOW_SIZE, "enable_push": ENABLE_PUSH}
    return frame(SETTINGS, 0, 0, b"".join(ids[k].to_bytes(2, "big") + v.to_bytes(4, "big") for k, v in values.items()))


def header_block(method: str, path: str) -> bytes:
    import hpack

    fields = [(":method", method), (":scheme", "https"), (":path", path), (":authority", "127.0.0.1")]
    if method == "POST":
        fields.append(("content-type", "application/json"))
    return bytes(hpack.Encoder().encode(fields))


# -- connections from a tenant's address -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Target:
    """Where the attack process connects, and what it may present."""

    port: int
    ca: str
    sources: tuple[str, ...]
    client_ca: bool  # whether the server asks for client certificates
    legit_cert: tuple[str, str] | None  # the API server's webhook client certificate (cert, key), for valid reviews

    def context(self, alpn: tuple[str, ...] = (), cert: bool = False) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.ca)
        if alpn:
            ctx.set_alpn_protocols(list(alpn))
        if cert and self.legit_cert is not None:
            ctx.load_cert_chain(*self.legit_cert)
        return ctx

    def tcp(self, source: str, timeout: float = 5.0) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout, source_address=(source, 0))

    def tls(self, source: str, alpn: tuple[str, ...] = (), cert: bool = False, timeout: float = 5.0) -> ssl.SSLSocket:
        raw = self.tcp(source, timeout)
        try:
            return self.context(alpn, cert).wrap_socket(raw, server_hostname="127.0.0.1")
        except BaseException:
            raw.close()
            raise


def _closed(sock: socket.socket) -> bool:
    """Whether the peer closed or reset `sock` (nothing pending to read counts as open)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        if not readable:
            return False
        sock.settimeout(0.05)
        return sock.recv(1) == b""
    except (TimeoutError, ssl.SSLWantReadError):
        return False
    except (OSError, ValueError):
        return True


def _drain(sock: socket.socket, seconds: float) -> bytes:
    """What arrives within `seconds`, until the peer closes."""
    got = b""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sock.settimeout(max(0.01, end - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except (TimeoutError, ssl.SSLWantReadError):
            break
        except OSError:
            break
        if not chunk:
            break
        got += chunk
    return got


def open_h2(target: Target, source: str, first: bytes, counts: Counter[str]) -> ssl.SSLSocket | None:
    """An HTTP/2 connection if the server will speak it to this source: ALPN h2 first, then the connection preface
    over TLS without ALPN (prior knowledge). `first` (SETTINGS) follows the preface. Counts each way's outcome;
    `refusal_ms` holds how long a refused attempt took to be closed."""
    started = time.perf_counter()
    try:
        sock = target.tls(source, alpn=("h2",))
    except (OSError, ssl.SSLError):
        counts["alpn_h2_handshake_refused"] += 1
        sock = None
    if sock is not None:
        if sock.selected_alpn_protocol() == "h2":
            counts["served_h2_alpn"] += 1
            sock.sendall(PREFACE + first)
            return sock
        counts["alpn_h2_not_selected"] += 1
        sock.close()
    try:
        sock = target.tls(source)
        sock.sendall(PREFACE + first)
        answer = _drain(sock, 2.0)
    except (OSError, ssl.SSLError):
        counts["prior_knowledge_refused"] += 1
        return None
    if len(answer) >= 9 and answer[3] == SETTINGS:
        counts["served_h2_prior_knowledge"] += 1
        return sock
    counts["prior_knowledge_refused"] += 1
    counts["refusal_ms_max"] = max(counts["refusal_ms_max"], round((time.perf_counter() - started) * 1000))
    if answer:
        first_line = answer.split(b"\r\n", 1)[0][:40].decode(errors="replace")
        counts[f"prior_knowledge_answer: {first_line}"] += 1
    sock.close()
    return None


@dataclass
class Control:
    """The attack process' side of the harness: `armed()` once the attack is in full swing, `stopping()` once the
    harness has measured what it needed (or the attack's own time limit passed)."""

    stop: threading.Event
    deadline: float
    _armed: threading.Event

    def armed(self) -> None:
        self._armed.set()

    def stopping(self) -> bool:
        return self.stop.is_set() or time.monotonic() > self.deadline

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True when the attack should stop."""
        self.stop.wait(max(0.0, min(seconds, self.deadline - time.monotonic())))
        return self.stopping()


def _threads(count: int, body: Callable[[int], None]) -> None:
    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


# -- the attacks ------------------------------------------------------------------------------------------------------
def h2_control_flood(target: Target, control: Control, connections: int = 8) -> dict[str, Any]:
    """Row 1: PING and SETTINGS frames as fast as they go, a request stream held open, GET /healthz every 100 ms."""
    counts: Counter[str] = Counter()
    lock = threading.Lock()
    first_round = threading.Barrier(connections, action=control.armed)
    pings = frame(PING, 0, 0, b"\0" * 8) * 40 + settings(enable_push=0) * 10
    healthz = header_block("GET", "/healthz")

    def reader(sock: ssl.SSLSocket) -> None:
        import hpack

        decoder, buffer = hpack.Decoder(), b""
        while True:
            try:
                sock.settimeout(1.0)
                chunk = sock.recv(65536)
            except TimeoutError:
                if control.stopping():
                    return
                continue
            except (OSError, ValueError):
                return
            if not chunk:
                return
            buffer += chunk
            while len(buffer) >= 9 and len(buffer) >= 9 + int.from_bytes(buffer[:3], "big"):
                length, kind, stream = int.from_bytes(buffer[:3], "big"), buffer[3], buffer[5:9]
                payload, buffer = buffer[9 : 9 + length], buffer[9 + length :]
                with lock:
                    counts[f"frames_received_type_{kind}"] += 1
                if kind == HEADERS and int.from_bytes(stream, "big") > 1:
                    with contextlib.suppress(Exception):
                        fields: list[tuple[Any, Any]] = list(decoder.decode(payload))
                        status = next((str(v) for k, v in fields if k in (":status", b":status")), None)
                        with lock:
                            counts[f"healthz_answered_{status}"] += 1

    def one(i: int) -> None:
        source = target.sources[i % len(target.sources)]
        waited = False
        while not control.stopping() and counts["attempts"] < 1000:
            with lock:
                counts["attempts"] += 1
            sock = open_h2(target, source, settings(enable_push=0), counts)
            if not waited:
                waited = True
                with contextlib.suppress(threading.BrokenBarrierError):
                    first_round.wait(timeout=30)
            if sock is None:
                control.wait(0.2)
                continue
            threading.Thread(target=reader, args=(sock,), daemon=True).start()
            stream, next_healthz = 3, time.monotonic()
            try:
                sock.settimeout(2.0)
                sock.sendall(frame(HEADERS, END_HEADERS, 1, header_block("POST", "/mutate")))  # held: no END_STREAM
                while not control.stopping():
                    batch = pings
                    if time.monotonic() >= next_healthz:
                        batch += frame(HEADERS, END_HEADERS | END_STREAM, stream, healthz)
                        stream, next_healthz = stream + 2, next_healthz + 0.1
                        with lock:
                            counts["healthz_sent"] += 1
                    sock.sendall(batch)
                    with lock:
                        counts["control_frames_sent"] += 50
                        counts["bytes_sent"] += len(batch)
            except (OSError, ssl.SSLError) as e:
                with lock:
                    counts[f"closed_by_server: {type(e).__name__}"] += 1
            finally:
                sock.close()

    _threads(connections, one)
    return {"connections": connections, **counts}


def continuation_flood(target: Target, control: Control, connections: int = 8) -> dict[str, Any]:
    """Row 2: a stream held by a zero receive window (GET /metrics), then CONTINUATION frames of one header block
    that never ends, on `connections` connections."""
    counts: Counter[str] = Counter()
    lock = threading.Lock()
    first_round = threading.Barrier(connections, action=control.armed)
    junk = frame(CONTINUATION, 0, 3, b"\x40\x0ax-junk-hdr\x7f" + b"a" * 16_000) * 8

    def one(i: int) -> None:
        source = target.sources[i % len(target.sources)]
        waited = False
        while not control.stopping() and counts["attempts"] < 1000:
            with lock:
                counts["attempts"] += 1
            sock = open_h2(target, source, settings(initial_window_size=0, enable_push=0), counts)
            if not waited:
                waited = True
                with contextlib.suppress(threading.BrokenBarrierError):
                    first_round.wait(timeout=30)
            if sock is None:
                control.wait(0.2)
                continue
            try:
                sock.settimeout(2.0)
                sock.sendall(frame(HEADERS, END_HEADERS | END_STREAM, 1, header_block("GET", "/metrics")))
                sock.sendall(frame(HEADERS, 0, 3, header_block("POST", "/mutate")))  # no END_HEADERS
                while not control.stopping():
                    try:
                        sock.sendall(junk)
                    except TimeoutError:  # the server stopped reading but holds the connection (and what it read)
                        with lock:
                            counts["send_stalled_2s"] += 1
                        continue
                    with lock:
                        counts["continuation_bytes_sent"] += len(junk)
            except (OSError, ssl.SSLError) as e:
                with lock:
                    counts[f"closed_by_server: {type(e).__name__}"] += 1
            finally:
                sock.close()

    _threads(connections, one)
    return {"connections": connections, **counts}


def idle_connections(
    target: Target, control: Control, sources: int = 4, per_source: int = 130, tcp_per_source: int = 32,
    reopen_seconds: float = 13.0,
) -> dict[str, Any]:  # fmt: skip
    """Row 3: `sources` x `per_source` TLS handshakes that never send a request, and `tcp_per_source` TCP
    connections per source that never start TLS; all closed and opened again every `reopen_seconds` (under the
    server's idle timeout), until the harness stops the attack."""
    counts: Counter[str] = Counter()
    lock = threading.Lock()
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
            still_open = sum(1 for s in held if s is not None and not _closed(s))
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


def forged_pod(i: int, namespace: str) -> dict[str, Any]:
    """A legacy GPU pod of a shape of its own (GPU count and memory), so that each asks for a template of its own."""
    pod = legacy_pod(f"forged-{i}", namespace)
    pod["metadata"]["labels"] = {"forged": "true"}
    pod["metadata"]["annotations"] = {"gpudra.io/vram": f"{1 + i // 4}Gi"}
    pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 1 + i % 4
    return pod


def _post(
    target: Target, source: str, path: str, body: bytes, cert: bool = False, timeout: float = 30.0
) -> tuple[str, bytes]:
    """One request on a connection of its own: (status or failure kind, answer)."""
    conn = http.client.HTTPSConnection(
        "127.0.0.1", target.port, context=target.context(cert=cert), timeout=timeout, source_address=(source, 0)
    )
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        return str(response.status), response.read()
    except TimeoutError:
        return "timeout", b""
    except (OSError, http.client.HTTPException) as e:
        return f"connection error: {type(e).__name__}", b""
    finally:
        conn.close()


def _patched(answer: bytes) -> bool:
    try:
        response = json.loads(answer).get("response") or {}
    except (ValueError, AttributeError):
        return False
    return bool(response.get("allowed")) and bool(response.get("patch"))


def forged_reviews(target: Target, control: Control, namespace: str, count: int = 50) -> dict[str, Any]:
    """Row 4: `count` AdmissionReviews of distinct GPU pods in `namespace`, sent with no client certificate."""
    answers: Counter[str] = Counter()
    patched = 0
    lock = threading.Lock()
    control.armed()

    def one(i: int) -> None:
        nonlocal patched
        body = pod_review(forged_pod(i, namespace), uid=f"forged-{i}")
        status, answer = _post(target, target.sources[i % len(target.sources)], "/mutate", body)
        with lock:
            answers[status] += 1
            patched += _patched(answer)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(one, range(count)))
    return {"forged_reviews": count, "answers": dict(answers), "answered_with_a_patch": patched}


def _push(sock: ssl.SSLSocket, chunk: bytes, seconds: float) -> dict[str, Any]:
    """Send `chunk` again and again for `seconds`; note when the server answered (refused) and what the socket
    still took after that, and how it ended."""
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
                    ending = f"reset: {type(e).__name__}"
                    break
                refused_at = sent
                answer = data.split(b"\r\n", 1)[0][:60].decode(errors="replace") or "closed"
        try:
            sent += sock.send(chunk)
        except TimeoutError:
            ending = "stalled (server stopped reading, connection held)"
            break
        except (OSError, ssl.SSLError) as e:
            ending = f"reset: {type(e).__name__}"
            break
    return {
        "sent": sent,
        "after_refusal": sent - refused_at if refused_at is not None else 0,
        "refused": refused_at is not None,
        "answer": answer,
        "ending": ending,
    }


def bytes_after_refusal(
    target: Target, control: Control, connections: int = 4, seconds: float = 30.0
) -> dict[str, Any]:
    """Row 6: per way of being refused, `connections` clients send on for `seconds` after the refusal: an HTTP/1.1
    body declared at 6 GiB (over the size bound); without a client certificate where one is required; and HTTP/2
    DATA after the server refused HTTP/2 (or after the stream's refusal where it speaks it)."""
    ways = ["http1_body_over_the_size_bound", "http2_after_refusal"]
    if target.client_ca:
        ways.insert(1, "http1_no_client_certificate")
    control.armed()
    out: dict[str, Any] = {way: _refused_way(target, way, connections, seconds) for way in ways}
    out["kernel_buffer_bytes_per_connection"] = kernel_buffer_bytes()
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

    _threads(connections, one)
    return {
        "connections": connections,
        "seconds": seconds,
        "bytes_sent_after_refusal": sum(r["after_refusal"] for r in results),
        "bytes_sent": sum(r["sent"] for r in results),
        "refused": sum(1 for r in results if r["refused"]),
        "answers": dict(Counter(r["answer"] for r in results)),
        "endings": dict(Counter(r["ending"] for r in results)),
    }


def large_pod(mb: float) -> bytes:
    """A valid legacy GPU pod of about `mb` MB (its container's environment), as review bytes with the name and uid
    left as placeholders."""
    pod = legacy_pod("LARGE-NAME", "LARGE-NS")
    value = "v" * 1000
    count = int(mb * 1_000_000 / 1030)
    pod["spec"]["containers"][0]["env"] = [{"name": f"SETTING_{i}", "value": value} for i in range(count)]
    return pod_review(pod, uid="LARGE-UID")


def large_reviews(
    target: Target, control: Control, namespace: str, count: int = 550, clients: int = 32, mb: float = 2.5
) -> dict[str, Any]:
    """Row 7: `count` valid ~`mb` MB reviews from `clients` clients at once, each with the API server's client
    certificate (from 127.0.0.1, the API server's address): the answers by status."""
    body = large_pod(mb).replace(b"LARGE-NS", namespace.encode())
    answers: Counter[str] = Counter()
    patched = 0
    lock = threading.Lock()
    control.armed()
    started = time.perf_counter()

    def one(i: int) -> None:
        nonlocal patched
        review = body.replace(b"LARGE-NAME", f"large-{i}".encode()).replace(b"LARGE-UID", f"large-{i}".encode())
        status, answer = _post(target, "127.0.0.1", "/mutate", review, cert=True, timeout=60)
        with lock:
            answers[status] += 1
            patched += _patched(answer)

    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        list(pool.map(one, range(count)))
    return {
        "reviews": count,
        "clients": clients,
        "review_bytes": len(body),
        "answers": dict(answers),
        "refused_503": answers["503"],
        "translated": patched,
        "seconds": round(time.perf_counter() - started, 1),
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
                _drain(raw, 0.5)
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
            _drain(sock, 0.2)

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

    _threads(clients, one)
    return {"clients": clients, "requests": dict(counts)}


ATTACKS: dict[str, Callable[..., dict[str, Any]]] = {
    "h2_control_flood": h2_control_flood,
    "continuation_flood": continuation_flood,
    "idle_connections": idle_connections,
    "forged_reviews": forged_reviews,
    "bytes_after_refusal": bytes_after_refusal,
    "large_reviews": large_reviews,
    "half_sent_bodies": half_sent_bodies,
    "log_flood": log_flood,
}
# Issue 37's row of each attack.
ROWS = {"h2_control_flood": 1, "continuation_flood": 2, "idle_connections": 3, "forged_reviews": 4,
        "bytes_after_refusal": 6, "large_reviews": 7, "half_sent_bodies": 8, "log_flood": 10}  # fmt: skip
# Smaller sizes for --smoke; the bounds that make an attack an attack (4 x 130 handshakes past 512 connections, 280
# half-sent clients, 32 clients of large reviews) stay.
SMOKE_PARAMS: dict[str, dict[str, Any]] = {
    "h2_control_flood": {"connections": 4},
    "continuation_flood": {"connections": 4},
    "forged_reviews": {"count": 20},
    "bytes_after_refusal": {"connections": 2, "seconds": 5.0},
    "large_reviews": {"count": 64},
    "log_flood": {"clients": 16},
}


# -- the attack process -----------------------------------------------------------------------------------------------
def attack_process(spec: dict[str, Any]) -> None:
    """Runs one attack (in a process of its own): prints `armed` once it is in full swing, stops when stdin says
    `stop` (or closes, or `limit_s` passes), then prints its counts as one JSON line."""
    target = Target(
        port=spec["port"], ca=spec["ca"], sources=tuple(spec["sources"]), client_ca=spec["client_ca"],
        legit_cert=tuple(spec["legit_cert"]) if spec.get("legit_cert") else None,
    )  # fmt: skip
    stop, armed = threading.Event(), threading.Event()
    control = Control(stop, time.monotonic() + spec["limit_s"], armed)

    def announce() -> None:
        armed.wait(spec["limit_s"])
        print("armed", flush=True)

    def listen() -> None:
        sys.stdin.readline()
        stop.set()

    threading.Thread(target=announce, daemon=True).start()
    threading.Thread(target=listen, daemon=True).start()
    result = ATTACKS[spec["attack"]](target, control, **spec["params"])
    armed.set()
    print(json.dumps(result), flush=True)


@contextlib.contextmanager
def attacking(spec: dict[str, Any]) -> Iterator[Callable[[], dict[str, Any]]]:
    """Starts the attack process and waits until it is armed; the callable stops it and returns its counts."""
    proc = subprocess.Popen(
        [sys.executable, __file__, "--attack-process", json.dumps(spec)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    result: dict[str, Any] = {}

    def finish() -> dict[str, Any]:
        if not result:
            with contextlib.suppress(BrokenPipeError, OSError):
                proc.stdin.write("stop\n")  # type: ignore[union-attr]
                proc.stdin.flush()  # type: ignore[union-attr]
            try:
                out, _ = proc.communicate(timeout=spec["limit_s"] + 60)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
            lines = [line for line in out.splitlines() if line.startswith("{")]
            result.update(json.loads(lines[-1]) if lines else {"error": f"attack process exited {proc.returncode}"})
        return result

    try:
        line = proc.stdout.readline()
        if line.strip() != "armed":
            raise RuntimeError(f"the attack process did not arm: {line!r}")
        yield finish
    finally:
        finish()


# -- the harness ------------------------------------------------------------------------------------------------------
class Ordinary:
    """Ordinary GPU pods through the API server (or, `--direct`, their reviews straight to the webhook)."""

    def __init__(self, stack: Stack | None, webhook: Webhook, legit_cert: tuple[Path, Path] | None) -> None:
        self.stack, self.webhook, self.legit_cert = stack, webhook, legit_cert
        self._patched: set[str] = set()

    def run(self, count: int, concurrency: int, rate: float, prefix: str) -> Load:
        if self.stack is not None:
            return ordinary_load(self.stack.kube, self.stack.namespace, count, concurrency, rate, prefix)
        return self._direct(count, concurrency, rate, prefix)

    def translated(self, load: Load) -> int:
        if self.stack is not None:
            return translated(self.stack.kube, self.stack.namespace, load.names)
        return sum(1 for name in load.names if name in self._patched)

    def _direct(self, count: int, concurrency: int, rate: float, prefix: str) -> Load:
        load, lock = Load(), threading.Lock()
        ctx = self.webhook.client_context(self.legit_cert)
        began = time.perf_counter()

        def one(i: int) -> None:
            due = began + i / rate
            time.sleep(max(0.0, due - time.perf_counter()))
            name = f"{prefix}-{i}"
            conn = http.client.HTTPSConnection("127.0.0.1", self.webhook.port, context=ctx, timeout=10)
            try:
                conn.request("POST", "/mutate", body=pod_review(legacy_pod(name, "ordinary"), uid=name))
                response = conn.getresponse()
                answer, status = response.read(), response.status
            except (OSError, http.client.HTTPException) as e:
                with lock:
                    load.failures.append(f"client: {e}")
                return
            finally:
                conn.close()
            with lock:
                if status != 200 or b'"allowed":true' not in answer.replace(b" ", b""):
                    load.failures.append(f"{status}: {answer[:200]!r}")
                    return
                load.latencies.append(time.perf_counter() - due)
                load.names.append(name)
                if _patched(answer):
                    self._patched.add(name)

        with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
            list(pool.map(one, range(count)))
        return load


@dataclass(frozen=True)
class Sizes:
    pods: int  # ordinary pods per phase (baseline, under attack)
    rate: float  # ordinary pods a second
    concurrency: int
    limit_s: float  # the longest an attack process runs
    settle_s: float = 30.0  # how long RSS may take to come back after an attack


FULL = Sizes(pods=200, rate=4.0, concurrency=8, limit_s=600)
SMOKE = Sizes(pods=24, rate=1.5, concurrency=4, limit_s=300)


def _rss_back(webhook: Webhook, before: float, seconds: float) -> tuple[float, float | None]:
    """Polls RSS until it is back within `rss_margin_mib(before)` of `before` (or `seconds` pass): the last reading
    and the seconds it took (None if it did not come back)."""
    started = time.monotonic()
    while True:
        now = webhook.rss_mib()
        if now <= before + rss_margin_mib(before):
            return now, round(time.monotonic() - started, 1)
        if time.monotonic() - started > seconds:
            return now, None
        time.sleep(0.5)


def rss_margin_mib(before: float) -> float:
    """How far above its level before an attack the server's RSS may stay and count as back: allocator slack
    (a fifth of the level, at least 48 MiB), far below any attack's measured cost."""
    return max(48.0, before * 0.2)


def run_attack(
    name: str, webhook: Webhook, ordinary: Ordinary, spec: dict[str, Any], sizes: Sizes, after: Callable[[], Any]
) -> dict[str, Any]:
    """Baseline ordinary pods, then the same during the attack; RSS sampled throughout and polled afterwards."""
    prefix = f"{name.replace('_', '-')}-{int(time.time())}"
    ordinary.run(4, 2, 10.0, f"{prefix}-warm")
    log_before, cpu_before, t0 = webhook.log_bytes(), webhook.cpu_seconds(), time.monotonic()
    baseline = ordinary.run(sizes.pods, sizes.concurrency, sizes.rate, f"{prefix}-base")
    baseline_log_rate = (webhook.log_bytes() - log_before) / (time.monotonic() - t0)
    baseline_cpu = webhook.cpu_seconds() - cpu_before
    rss_before = webhook.rss_mib()
    peak = [rss_before]
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.wait(0.2):
            peak[0] = max(peak[0], webhook.rss_mib())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    log_before, cpu_before, t0 = webhook.log_bytes(), webhook.cpu_seconds(), time.monotonic()
    log_offset = log_before
    with attacking({**spec, "attack": name, "limit_s": sizes.limit_s}) as finish:
        under = ordinary.run(sizes.pods, sizes.concurrency, sizes.rate, f"{prefix}-under")
        counts = finish()
    seconds = time.monotonic() - t0
    log_rate = (webhook.log_bytes() - log_before) / seconds
    tracebacks = webhook.log_since(log_offset).count(b"Traceback (most recent call last)")
    cpu = webhook.cpu_seconds() - cpu_before
    sampling.set()
    sampler.join()
    alive = webhook.proc.poll() is None and webhook.healthy()
    rss_after, back_s = _rss_back(webhook, rss_before, sizes.settle_s)
    row: dict[str, Any] = {
        "row": ROWS[name],
        "ordinary_pods": sizes.pods,
        "admitted": under.created,
        "translated": ordinary.translated(under),
        "baseline_admitted": baseline.created,
        "baseline_translated": ordinary.translated(baseline),
        "p99_ms_baseline": baseline.p99_ms(),
        "p99_ms_under_attack": under.p99_ms(),
        "p99_ratio": round(under.p99_ms() / baseline.p99_ms(), 2) if baseline.p99_ms() else None,
        "failures_under_attack": dict(Counter(f[:120] for f in under.failures).most_common(5)),
        "rss_mib_before": rss_before,
        "rss_mib_peak": peak[0],
        "rss_mib_after_30s": rss_after,
        "rss_back_s": back_s,
        "rss_limit_mib": memory_limit_mib(),
        "server_alive": alive,
        "attack_seconds": round(seconds, 1),
        "server_cpu_s_baseline": round(baseline_cpu, 2),
        "server_cpu_s_under_attack": round(cpu, 2),
        "log_bytes_per_s_baseline": round(baseline_log_rate),
        "log_bytes_per_s_under_attack": round(log_rate),
        "log_tracebacks_under_attack": tracebacks,
        "client_ca": webhook.client_ca,
        "attack": counts,
    }
    extra = after()
    if extra:
        row["attack"].update(extra)
    return row


@contextlib.contextmanager
def _webhook(
    cp: Any, kube: Any, workdir: Path, client_ca: bool | None
) -> Iterator[tuple[Webhook, Stack | None, tuple[Path, Path] | None]]:
    """The webhook for one attack: on the control plane (`cp`), or alone (`--direct`) with a client CA of its own."""
    if cp is not None:
        with Stack.up(cp, kube, workdir, client_ca=client_ca) as stack:
            client = cp.workdir / "webhook-client"
            yield stack.webhook, stack, (client / "client.crt", client / "client.key")
        return
    from tests.controlplane.cluster import _webhook_client_identity

    cert = _webhook_client_identity(workdir / "client")
    webhook = Webhook(workdir, None, workdir / "client" / "ca.crt", client_ca=client_ca)
    try:
        yield webhook, None, cert
    finally:
        webhook.stop()


def run(names: list[str], smoke: bool, cp: Any, kube: Any, workdir: Path) -> dict[str, Any]:
    sizes = SMOKE if smoke else FULL
    out: dict[str, Any] = {}
    for name in names:
        variants: list[tuple[str, bool | None]] = [("", None)]
        if name == "forged_reviews":
            variants = [("with_client_ca", True), ("without_client_ca", False)]
        rows: dict[str, Any] = {}
        for label, client_ca in variants:
            with _webhook(cp, kube, workdir / f"{name}{label}", client_ca) as (webhook, stack, cert):
                params = dict(SMOKE_PARAMS.get(name, {}) if smoke else {})
                after: Callable[[], Any] = dict
                if name in ("forged_reviews", "large_reviews"):
                    namespace = stack.victim_namespace() if stack is not None else "victim"
                    params["namespace"] = namespace
                    if name == "forged_reviews" and stack is not None:

                        def after(stack: Stack = stack, namespace: str = namespace) -> dict[str, Any]:
                            made = stack.kube.list("ResourceClaimTemplate", namespace)
                            return {"templates_created_in_victim_namespace": len(made)}

                spec = {
                    "port": webhook.port, "ca": str(webhook.certs / "ca.crt"), "sources": tenant_sources(10),
                    "client_ca": webhook.client_ca, "legit_cert": [str(p) for p in cert] if cert else None,
                    "params": params,
                }  # fmt: skip
                ordinary = Ordinary(stack, webhook, cert if webhook.client_ca else None)
                row = run_attack(name, webhook, ordinary, spec, sizes, after)
                row["through_apiserver"] = stack is not None
                rows[label] = row
        out[name] = rows[""] if "" in rows else rows
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="small sizes (the suite runs this)")
    parser.add_argument("--only", choices=sorted(ATTACKS), action="append", help="run this attack (repeatable)")
    parser.add_argument("--direct", action="store_true", help="no control plane: ordinary reviews posted directly")
    parser.add_argument("--attack-process", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.attack_process:
        attack_process(json.loads(args.attack_process))
        return
    names = args.only or list(ATTACKS)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        if args.direct:
            result = run(names, args.smoke, None, None, Path(tmp))
        else:
            import kubernetes.client

            from tests.controlplane.cluster import running
            from tests.controlplane.kube import Kube

            with running() as cp:
                config = cp.configuration()
                config.connection_pool_maxsize = 16
                kube = Kube(kubernetes.client.ApiClient(config))
                result = run(names, args.smoke, cp, kube, Path(tmp))
    out = {
        "machine": {"cpus": os.cpu_count()},
        "smoke": args.smoke,
        "through_apiserver": not args.direct,
        "seconds": round(time.monotonic() - started, 1),
        "attacks": result,
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
