"""What every attack speaks with: HTTP/2 frames written by hand (an attacker does not use a conforming client),
connections from a tenant's loopback address, one-shot requests, and the harness' controls of an attack."""

from __future__ import annotations

import http.client
import json
import select
import socket
import ssl
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

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
    """A request's header block in HPACK (RFC 7541): each field a literal without indexing, no Huffman coding."""
    fields = [(":method", method), (":scheme", "https"), (":path", path), (":authority", "127.0.0.1")]
    if method == "POST":
        fields.append(("content-type", "application/json"))
    return b"".join(b"\x00" + _hpack_string(name) + _hpack_string(value) for name, value in fields)


def _hpack_string(text: str) -> bytes:
    data, length, prefix = text.encode(), len(text.encode()), b""
    if length < 127:
        return bytes([length]) + data
    length -= 127
    while length >= 128:
        prefix += bytes([length % 128 + 128])
        length //= 128
    return b"\x7f" + prefix + bytes([length]) + data


_CONTEXTS: dict[tuple[object, tuple[str, ...], bool], ssl.SSLContext] = {}


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
        key = (self, alpn, cert)
        if key not in _CONTEXTS:  # loading the CA for every connection would cost the attacker more than the server
            ctx = ssl.create_default_context(cafile=self.ca)
            if alpn:
                ctx.set_alpn_protocols(list(alpn))
            if cert and self.legit_cert is not None:
                ctx.load_cert_chain(*self.legit_cert)
            _CONTEXTS[key] = ctx
        return _CONTEXTS[key]

    def tcp(self, source: str, timeout: float = 5.0) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout, source_address=(source, 0))

    def tls(self, source: str, alpn: tuple[str, ...] = (), cert: bool = False, timeout: float = 5.0) -> ssl.SSLSocket:
        raw = self.tcp(source, timeout)
        try:
            return self.context(alpn, cert).wrap_socket(raw, server_hostname="127.0.0.1")
        except BaseException:
            raw.close()
            raise


def closed(sock: socket.socket) -> bool:
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


def drain(sock: socket.socket, seconds: float) -> bytes:
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
        answer = drain(sock, 2.0)
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


def run_threads(count: int, body: Callable[[int], None]) -> None:
    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def post(
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


def patched(answer: bytes) -> bool:
    try:
        response = json.loads(answer).get("response") or {}
    except (ValueError, AttributeError):
        return False
    return bool(response.get("allowed")) and bool(response.get("patch"))
