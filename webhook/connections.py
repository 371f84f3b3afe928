"""Each connection from its accept to its close: the gate first, then TLS with a deadline, then bounded HTTP/1.1.

uvicorn accepts plain TCP; this protocol asks the gate (webhook.gate) whether the source may hold one more
connection before any TLS work, starts TLS itself with a handshake deadline, and only then serves HTTP/1.1 through
uvicorn's httptools protocol. Whatever is refused is aborted, never drained:

- a source over its budget, or a table that is full, gets its TCP connection reset at accept; so does a source
  whose review was refused as a tenant pod's (webhook.review_sources), for as long as that refusal is remembered;
- a handshake not done within the deadline is aborted (asyncio would wait 60 s);
- a request's headers must arrive within the idle timeout of the connection's TLS set-up or of its previous
  response, and any byte does not restart the clock; they may take at most `MAX_HEADER_BYTES` (431, reset). Between
  requests of a trusted source the wait is `TRUSTED_IDLE_SECONDS` instead, longer than kube-apiserver keeps an idle
  connection, so that it is the one to close it;
- a response the client does not read within the idle timeout (its writes paused that long) is reset;
- at most `MAX_PIPELINED` requests may wait behind the one being answered (uvicorn queues them without bound:
  measured, one connection pipelining `GET /metrics` grew a worker by 1.7 GB in 20 s); past that, reset. No
  Kubernetes client pipelines;
- a connection closed before its request's body was read whole (a refusal, a stalled body) is aborted, since a
  graceful TLS shutdown reads on for the peer's close_notify and buffers whatever still arrives (measured: 100
  clients refused mid-way through 4 MB bodies held 72 MB, aborted 1 MB; benchmarks/webhook_reliability.py);
- a request that is not HTTP/1.1 (an HTTP/2 preface: the server offers only `http/1.1` in ALPN) gets a 400 and is
  aborted.
A source becomes trusted (webhook.gate) by a verified client certificate or by a review answered 200; before its
first review is decided, a source without a certificate is checked (webhook.review_sources): a tenant pod's address
is answered 403 and closed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
from asyncio.sslproto import SSLProtocol
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from webhook._uvicorn import HttpToolsProtocol
from webhook.client_auth import RequireClientCertificate
from webhook.gate import ConnectionGate, Entry, State
from webhook.review_sources import ReviewSources

__all__ = ["ALPN_PROTOCOLS", "SETUP_KEY", "TRUSTED_IDLE_SECONDS", "ConnectionSetup", "GatedProtocol"]

# Offered in the TLS handshake: kube-apiserver takes HTTP/2 only for a loopback URL and speaks HTTP/1.1 to a Service.
ALPN_PROTOCOLS = ["http/1.1"]
# The key under which the app's lifespan state carries the ConnectionSetup to every connection of its process.
SETUP_KEY = "gpudra.connections"
log = logging.getLogger("gpudra.webhook.connections")
DEFAULT_HANDSHAKE_SECONDS = 5.0
# kube-apiserver's webhook client keeps an idle connection for 90 s (client-go's transport takes Go's default
# IdleConnTimeout). A server that closes one first races the client's next request on it, and a POST is not retried:
# at a steady 150 pods/s, 5 of 4,500 pods were refused "write: broken pipe" (500) when connections opened in a stall
# were closed at the 15 s idle timeout. Between requests of a trusted source (webhook.gate) the server waits longer.
TRUSTED_IDLE_SECONDS = 120.0
MAX_PIPELINED = 4
# The request line and headers of one request (Go's client sends a few hundred bytes; its server allows 1 MB).
MAX_HEADER_BYTES = 64 * 1024
_HEADERS_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: 41\r\n\r\nrequest line and headers above 65536 bytes"
)


@dataclass(frozen=True)
class ConnectionSetup:
    """What every connection of a server process shares: the gate, and TLS (None: plain HTTP, tests only)."""

    gate: ConnectionGate
    tls: Callable[[], ssl.SSLContext] | None
    handshake_seconds: float = DEFAULT_HANDSHAKE_SECONDS
    client_ca: bool = False
    sources: ReviewSources | None = None  # None: any source may send reviews (--review-sources any)


class _TLS(SSLProtocol):
    """asyncio's TLS protocol with a 64 KiB read buffer instead of 256 KiB: a connection's fixed cost is what a
    table of hundreds of idle or half-sent connections multiplies (webhook.heap_trim has the measurement)."""

    max_size = 64 * 1024


class _TrustOnAnswer:
    """ASGI wrapper for one untrusted connection: a POST from a tenant pod's address (`sources`) is answered 403 and
    the connection closed; one answered 200 (a review) makes its source trusted."""

    def __init__(self, app: ASGIApp, gate: ConnectionGate, source: str, sources: ReviewSources | None) -> None:
        self.app = app
        self.gate = gate
        self.source = source
        self.sources = sources

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or self.gate.trusted(self.source):
            await self.app(scope, receive, send)
            return
        if self.sources is not None:
            verdict = await self.sources.verdict(self.source)
            if not verdict.allowed:
                await _refuse(send, verdict.reason)
                return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 200:
                self.gate.trust(self.source)
            await send(message)

        await self.app(scope, receive, sending)


async def _refuse(send: Send, reason: str) -> None:
    body = json.dumps({"error": reason}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 403, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class GatedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol behind the gate, with TLS started here and a header deadline."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # uvicorn's own set-up (its parser, loggers, per-connection state) waits until the gate lets the connection
        # in: under a flood of tenant pods' connections reset at accept it was a fifth of a worker's CPU (row 10).
        self._uvicorn_args: tuple[tuple[Any, ...], dict[str, Any]] | None = (args, kwargs)
        self._header_deadline: asyncio.TimerHandle | None = None
        self._write_deadline: asyncio.TimerHandle | None = None
        self._awaiting_headers = True
        self._header_bytes = 0
        self._tcp: asyncio.Transport | None = None
        self._entry: Entry | None = None
        self._serving = False
        state = kwargs.get("app_state")
        setup = state.get(SETUP_KEY) if isinstance(state, dict) else None
        self._setup: ConnectionSetup | None = setup if isinstance(setup, ConnectionSetup) else None

    def _set_up_http(self) -> None:
        if self._uvicorn_args is not None:
            args, kwargs = self._uvicorn_args
            self._uvicorn_args = None
            super().__init__(*args, **kwargs)

    # The connection's life: accept, the gate, TLS, HTTP/1.1.

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if self._tcp is not None:  # the second call, from TLS, with the connection's decrypted transport
            self._tls_established(transport)
            return
        setup = self._setup
        if setup is None:  # an app without a gate (in-process tests): plain HTTP/1.1 with the header deadline
            self._set_up_http()
            self._serve_http(transport)
            return
        self._tcp = transport
        peer = transport.get_extra_info("peername")
        source = str(peer[0]) if isinstance(peer, tuple) and peer else "unknown"
        if setup.sources is not None and not setup.gate.trusted(source) and setup.sources.refused(source):
            setup.gate.refuse_tenant_pod()  # its review was refused as a tenant pod's: no TLS work for it
            transport.abort()
            return
        entry = setup.gate.open(source, self._abort)
        if entry is None:
            transport.abort()
            return
        self._entry = entry
        self._set_up_http()
        if setup.tls is None:
            if not setup.gate.trusted(source):
                self.app = _TrustOnAnswer(self.app, setup.gate, source, setup.sources)
            setup.gate.set_state(entry, State.IDLE)
            self._serve_http(transport)
            return
        # TLS takes the transport over here, before the loop reads from it again, so the ClientHello goes to it (a
        # task calling loop.start_tls would race uvloop, which starts reading as soon as this method returns). It
        # calls connection_made again once the handshake is done, or fails `handshake` and never calls it.
        handshake = self.loop.create_future()
        seconds: Any = setup.handshake_seconds  # typeshed says int; asyncio takes any number of seconds
        tls = _TLS(self.loop, self, setup.tls(), handshake, server_side=True, ssl_handshake_timeout=seconds)
        transport.set_protocol(tls)
        tls.connection_made(transport)
        handshake.add_done_callback(self._handshake_ended)

    def _handshake_ended(self, handshake: asyncio.Future[None]) -> None:
        error = None if handshake.cancelled() else handshake.exception()
        if handshake.cancelled() or error is not None:  # failed, overdue, or the peer left: nothing to answer
            log.debug("TLS handshake with %s not completed: %r", self._entry.source if self._entry else "?", error)
            self._abort()

    def _tls_established(self, tls: asyncio.Transport) -> None:
        entry, setup = self._entry, self._setup
        if entry is None or setup is None or entry.closed:
            tls.abort()
            return
        if tls.get_extra_info("peercert"):  # a dict only for a certificate the --client-ca verified
            setup.gate.verify(entry)
        if setup.client_ca:
            self.app = RequireClientCertificate(self.app, verified=entry.verified)
        if not setup.gate.trusted(entry.source):
            self.app = _TrustOnAnswer(self.app, setup.gate, entry.source, setup.sources)
        setup.gate.set_state(entry, State.IDLE)
        self._serve_http(tls)

    def _serve_http(self, transport: asyncio.Transport) -> None:
        super().connection_made(transport)
        self._serving = True
        self._arm_header_deadline()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._awaiting_headers and not self.transport.is_closing():  # all of `data` went to the request's head
            self._header_bytes += len(data)
            if self._header_bytes > MAX_HEADER_BYTES:
                self.transport.write(_HEADERS_TOO_LARGE)
                self._abort()

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._write_deadline is None:
            self._write_deadline = self.loop.call_later(self.timeout_keep_alive, self._abort)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._write_deadline is not None:
            self._write_deadline.cancel()
            self._write_deadline = None

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_deadline()
        if self._write_deadline is not None:
            self._write_deadline.cancel()
            self._write_deadline = None
        self._release()
        if self._serving:
            super().connection_lost(exc)

    def _release(self) -> None:
        if self._entry is not None and self._setup is not None:
            self._setup.gate.close(self._entry)

    def _abort(self) -> None:
        """Reset the connection now: nothing more is read from it or written to it."""
        self._release()
        self._cancel_header_deadline()
        transport = self._tcp if self._tcp is not None else (self.transport if self._serving else None)
        if transport is not None:
            transport.abort()

    # HTTP/1.1 requests.

    def _arm_header_deadline(self, between_requests: bool = False) -> float:
        """Arm the deadline of the next request's headers; its seconds."""
        self._cancel_header_deadline()
        seconds: float = self.timeout_keep_alive
        entry, setup = self._entry, self._setup
        if between_requests and entry is not None and setup is not None and setup.gate.trusted(entry.source):
            seconds = max(seconds, TRUSTED_IDLE_SECONDS)
        self._header_deadline = self.loop.call_later(seconds, self._headers_overdue)
        return seconds

    def _cancel_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _headers_overdue(self) -> None:
        self._header_deadline = None
        if self._tcp is not None or (self.cycle is not None and self.cycle.more_body):
            self._abort()  # behind TLS a close would read on for the peer's close_notify: reset instead
        elif not self.transport.is_closing():
            self.transport.close()

    def on_message_begin(self) -> None:
        self._awaiting_headers = True  # also for a request pipelined behind one still being answered
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._cancel_header_deadline()  # from here the app's body deadline (webhook.body) bounds the request
        self._awaiting_headers = False
        self._header_bytes = 0
        if self._entry is not None and self._setup is not None:
            self._setup.gate.set_state(self._entry, State.BUSY)
        super().on_headers_complete()
        if len(self.pipeline) > MAX_PIPELINED:
            self._abort()

    def on_response_complete(self) -> None:
        # uvicorn has closed the transport (Connection: close) with the response written to the socket already.
        unread = self.cycle is not None and self.cycle.more_body and self.transport.is_closing()
        super().on_response_complete()
        if unread:
            self._abort()
            return
        if self.transport.is_closing():
            return
        if self._entry is not None and self._setup is not None and not self.pipeline:
            self._setup.gate.set_state(self._entry, State.IDLE)
        if not self.pipeline:  # a pipelined request already has its headers
            self._awaiting_headers = True
            if self._arm_header_deadline(between_requests=True) > self.timeout_keep_alive:
                # uvicorn's own keep-alive timer would close it at the shorter idle timeout: ours bounds it instead
                task = self.timeout_keep_alive_task
                if task is not None:
                    task.cancel()
                    self.timeout_keep_alive_task = None

    def send_400_response(self, msg: str) -> None:
        """Not HTTP/1.1 (garbage, an HTTP/2 preface): answer 400 and reset, rather than read on for a TLS close."""
        super().send_400_response(msg)
        self._abort()
