"""HTTP connections that cannot sit idle: each request's headers must arrive within the idle timeout.

uvicorn closes a keep-alive connection idle for `timeout_keep_alive` seconds after a response, but arms nothing when a
connection opens, and any byte cancels its timer: a client that completes the TLS handshake and sends nothing, or
sends its headers a byte at a time, holds a connection (and its TLS buffers) for ever. Here a timer started when
the connection opens and again after each response closes it unless a request's headers are complete by then.
A connection whose TLS handshake chose HTTP/2 (ALPN `h2`, offered when `gpudra serve` enables it) is handed to
webhook.http2, which keeps the same bounds per stream.
A connection closed before its request's body was read whole (a stalled body, or this deadline while uvicorn drops
the rest of a refused one) is aborted, not shut down: a graceful TLS shutdown reads on for the peer's close_notify
and buffers whatever body still arrives (measured: 100 clients refused mid-way through 4 MB bodies held 72 MB,
aborted 1 MB; benchmarks/webhook_reliability.py --only half-sent).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.utils import get_local_addr, get_remote_addr

from webhook.http2 import Http2Protocol, negotiated_h2, scope_base

__all__ = ["IdleBoundedProtocol"]


class IdleBoundedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a header deadline of `config.timeout_keep_alive` seconds."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_deadline: asyncio.TimerHandle | None = None

    def _arm_header_deadline(self) -> None:
        self._cancel_header_deadline()
        self._header_deadline = self.loop.call_later(self.timeout_keep_alive, self._headers_overdue)

    def _cancel_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _headers_overdue(self) -> None:
        self._header_deadline = None
        if self.cycle is not None and self.cycle.more_body:
            self.transport.abort()
        elif not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if negotiated_h2(transport):  # the TLS handshake chose HTTP/2: webhook.http2 serves this connection
            self._serve_http2(transport)
            return
        super().connection_made(transport)
        self._arm_header_deadline()

    def _serve_http2(self, transport: asyncio.Transport) -> None:
        protocol = Http2Protocol(
            app=self.app,
            server_state=self.server_state,
            app_state=self.app_state,
            scope_base=scope_base(
                self.root_path, get_local_addr(transport), get_remote_addr(transport), asgi_version=self.asgi_version
            ),
            timeout_keep_alive=self.timeout_keep_alive,
            limit_concurrency=self.limit_concurrency,
            loop=self.loop,
        )
        transport.set_protocol(protocol)
        protocol.connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_deadline()
        super().connection_lost(exc)

    def on_headers_complete(self) -> None:
        self._cancel_header_deadline()  # from here the app's body deadline (webhook.body) bounds the request
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        # uvicorn has closed the transport (Connection: close) with the response written to the socket already.
        unread = self.cycle is not None and self.cycle.more_body and self.transport.is_closing()
        super().on_response_complete()
        if unread:
            self.transport.abort()
        if not self.transport.is_closing() and not self.pipeline:  # a pipelined request already has its headers
            self._arm_header_deadline()
