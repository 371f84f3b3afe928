"""A client that reads while it writes, as kube-apiserver's Go client does.

`gpudra serve` answers a request it refuses (a body too large, a budget spent) at once and resets the connection
rather than read the rest of the body: a client that first writes everything never sees that answer. This one stops
writing as soon as an answer arrives, and reads it.
"""

from __future__ import annotations

import http.client
import io
import select
import ssl

__all__ = ["post_reading_early"]


class _Received:
    """What a connection sent back, for http.client to parse as a response."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def makefile(self, mode: str) -> io.BytesIO:
        return io.BytesIO(self.data)


def _response_complete(data: bytes) -> bool:
    head, sep, rest = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(rest) >= int(value)
    return False


def _early_answer(tls: ssl.SSLSocket, timeout: float) -> bytes:
    """Application data the server has sent already, without blocking (TLS session tickets are not data)."""
    if not (select.select([tls], [], [], 0)[0] or tls.pending()):
        return b""
    tls.setblocking(False)
    try:
        return tls.recv(65536)
    except ssl.SSLWantReadError:
        return b""
    finally:
        tls.settimeout(timeout)


def post_reading_early(tls: ssl.SSLSocket, path: str, body: bytes, timeout: float) -> tuple[int, bytes]:
    """POST `body` on `tls`; (status, payload). Raises TimeoutError when nothing comes back in `timeout`."""
    tls.settimeout(timeout)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    tls.sendall(head)
    view, sent, answer = memoryview(body), 0, b""
    try:
        while sent < len(body) and not (answer := _early_answer(tls, timeout)):
            sent += tls.send(view[sent : sent + 65536])
    except OSError:
        pass  # reset by the server after its answer: read that answer
    while not _response_complete(answer):
        try:
            chunk = tls.recv(65536)
        except (ConnectionResetError, ssl.SSLEOFError, ssl.SSLZeroReturnError):
            break
        if not chunk:
            break
        answer += chunk
    response = http.client.HTTPResponse(_Received(answer))  # type: ignore[arg-type]
    response.begin()
    return response.status, response.read()
