"""HTTP/2 for clients that ask for it in the TLS handshake (ALPN `h2`): every review over one connection.

kube-apiserver keeps at most 25 idle connections per webhook host (`idleConnsPerHost`, k8s.io/client-go
transport/cache.go), so over HTTP/1.1 a burst of 200 concurrent reviews opens about 175 new TLS connections, each a
handshake on both sides, on every burst. Over HTTP/2 the reviews are streams of one connection. kube-apiserver offers
HTTP/2 only to webhooks at a loopback URL (`https://127.0.0.1:…`, `localhost`, `[::1]`): for a `service` reference
or any other URL it offers HTTP/1.1 alone, so that concurrent reviews spread over a Service's endpoints
(k8s.io/apiserver pkg/util/webhook/client.go, kubernetes#75791). Such clients never reach this module.

The bounds of the HTTP/1.1 path (webhook.connections, uvicorn's `limit_concurrency`, webhook.body) hold here too:

- a connection with no request in progress must complete a request's headers within `timeout_keep_alive` seconds
  of opening or of its last response, or it is closed (GOAWAY, then closed);
- a request's body is read by the app under webhook.body's size and time bounds; what the client may send ahead
  of the app is bounded by flow control: each stream's window (64 KiB) is only re-opened as the app reads;
- at most `MAX_STREAMS` requests run per connection (SETTINGS_MAX_CONCURRENT_STREAMS; a stream reset by the client
  still counts until its request's work has finished, so resets cannot pile up work), and past uvicorn's
  `limit_concurrency` (connections and requests of the whole process) requests are answered 503;
- header blocks are bounded (SETTINGS_MAX_HEADER_LIST_SIZE, and a cap on the bytes a connection may send while no
  request's headers have completed), so a client cannot grow a header block without end.

A connection is served by one worker process. So that a burst spreads over the workers, a connection that has taken
`REQUESTS_PER_CONNECTION` requests tells its client to go on over a new one (a graceful GOAWAY, which graceful
shutdown sends too), answers what it already took, and closes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, cast

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
import hyperframe.frame
from uvicorn._types import ASGI3Application, ASGIReceiveEvent, ASGISendEvent
from uvicorn.protocols.http.flow_control import service_unavailable
from uvicorn.server import ServerState

__all__ = ["ALPN_PROTOCOLS", "MAX_STREAMS", "REQUESTS_PER_CONNECTION", "Http2Protocol", "negotiated_h2", "scope_base"]

ALPN_PROTOCOLS = ["h2", "http/1.1"]
# Go's HTTP/2 client opens a further connection when a connection's streams are all in use.
MAX_STREAMS = 128
# After this many requests a connection asks its client to go on over a new one (GOAWAY, see `_drain`): one
# connection is served by one worker process, and a burst carried by a single connection would leave the other
# workers idle while it queues; each new connection goes to whichever worker accepts it first. A 200-review burst
# then costs about four TLS handshakes instead of two.
REQUESTS_PER_CONNECTION = 48
_LAST_STREAM_ID = 2**31 - 1
_WINDOW = 65_535  # each stream's receive window: what a client may send ahead of the app's reads
_MAX_HEADER_LIST = 64 * 1024
# Bytes a connection may send while no request's headers are complete (header blocks, settings, pings) before it
# is closed: a header block larger than SETTINGS_MAX_HEADER_LIST_SIZE is refused by h2 once complete, but its
# CONTINUATION frames are buffered until then.
_MAX_PENDING_HEADER_BYTES = 4 * _MAX_HEADER_LIST
# Connection-specific header fields: not allowed in HTTP/2 (RFC 9113 section 8.2.2); the app's `Connection: close`
# (a refused or stalled body) becomes a reset of that stream instead.
_HOP_BY_HOP = frozenset({b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade"})

log = logging.getLogger("gpudra.webhook")


def negotiated_h2(transport: asyncio.BaseTransport) -> bool:
    """Whether the TLS handshake of `transport` chose HTTP/2."""
    ssl_object = transport.get_extra_info("ssl_object")
    return ssl_object is not None and ssl_object.selected_alpn_protocol() == "h2"


class _Stream:
    """One request: its body as received, and whether the client still waits for the answer."""

    __slots__ = ("body", "closed", "done", "event", "id", "more_body", "reset", "unacknowledged")

    def __init__(self, stream_id: int) -> None:
        self.id = stream_id
        self.body: list[bytes] = []
        self.unacknowledged = 0  # flow-controlled bytes received and not yet read by the app
        self.more_body = True
        self.reset = False  # the client reset it, or the connection is gone
        self.closed = False  # this side ended or reset it: nothing more is sent
        self.done = False  # the app has returned
        self.event = asyncio.Event()


class Http2Protocol(asyncio.Protocol):
    """Serves `app` over HTTP/2 on a TLS connection whose handshake chose `h2` (see the module's docstring).

    Created by webhook.connections' protocol once the handshake is done, with the connection's scope fields."""

    def __init__(
        self,
        *,
        app: ASGI3Application,
        server_state: ServerState,
        app_state: dict[str, Any],
        scope_base: dict[str, Any],
        timeout_keep_alive: float,
        limit_concurrency: int | None,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.app = app
        self.server_state = server_state
        self.app_state = app_state
        self.scope_base = scope_base
        self.timeout_keep_alive = timeout_keep_alive
        self.limit_concurrency = limit_concurrency
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.streams: dict[int, _Stream] = {}  # requests whose app has not returned (a reset stream included)
        # What the client sends is validated; what the app answers is written as given (names lower-cased and
        # connection-specific fields dropped below; HPACK carries values as length-prefixed bytes).
        self.h2 = h2.connection.H2Connection(
            config=h2.config.H2Configuration(
                client_side=False,
                header_encoding=None,
                validate_outbound_headers=False,
                normalize_outbound_headers=False,
            )
        )
        self._writable = asyncio.Event()
        self._writable.set()
        self._window_open = asyncio.Event()
        self._idle: asyncio.TimerHandle | None = None
        self._pending_header_bytes = 0
        self._draining = False  # told the client to open no more streams here (shutdown, or REQUESTS served)
        self._served = 0

    # -- asyncio.Protocol ----------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's TLS transport is not a subclass of it
        self.server_state.connections.add(self)  # type: ignore[arg-type]  # uvicorn calls shutdown() on each
        self.h2.local_settings = h2.settings.Settings(
            client=False,
            initial_values={
                h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: MAX_STREAMS,
                h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: _MAX_HEADER_LIST,
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: _WINDOW,
                h2.settings.SettingCodes.ENABLE_PUSH: 0,
            },
        )
        self.h2.initiate_connection()
        # The connection's window, apart from the streams': room for every stream to fill its own window, so that
        # a stream whose body waits for the app never blocks the others'.
        self.h2.increment_flow_control_window(_WINDOW * (MAX_STREAMS - 1))
        self._flush()
        self._arm_idle()

    def connection_lost(self, exc: Exception | None) -> None:
        self.server_state.connections.discard(self)
        self._cancel_idle()
        for stream in self.streams.values():
            stream.reset = True
            stream.event.set()
        self._writable.set()
        self._window_open.set()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def data_received(self, data: bytes) -> None:
        try:
            events = self.h2.receive_data(data)
        except h2.exceptions.ProtocolError as exc:
            log.debug("HTTP/2 protocol error, closing the connection: %s", exc)
            self._flush()
            self._abort()
            return
        served = self._served
        for event in events:
            self._handle(event)
        # Bytes that neither completed a request nor belong to one in progress (a header block still growing,
        # settings, pings) are bounded; a chunk that starts requests, however large, is not counted.
        if self._served != served or self.streams:
            self._pending_header_bytes = 0
        else:
            self._pending_header_bytes += len(data)
            if self._pending_header_bytes > _MAX_PENDING_HEADER_BYTES:
                self._close(h2.errors.ErrorCodes.ENHANCE_YOUR_CALM)
                return
        self._flush()

    def eof_received(self) -> bool | None:
        return None

    def shutdown(self) -> None:
        """Graceful shutdown (uvicorn calls this on every connection): the client is told to open no more streams
        here, the streams it has opened are answered, and the connection closes after the last."""
        self._drain()

    def _drain(self) -> None:
        """GOAWAY with the highest stream id (RFC 9113 section 6.8: a graceful shutdown's first GOAWAY): the client
        opens no more streams on this connection, and every stream it opened before it read this one is served. h2
        itself only sends a final GOAWAY, after which it sends nothing more, so this one is written beside it (it
        changes no stream and no header-compression state); h2's GOAWAY follows once the last stream is answered."""
        if self._draining:
            return
        self._draining = True
        self._flush()
        if self.transport is not None and not self.transport.is_closing():
            notice = hyperframe.frame.GoAwayFrame(0)
            notice.last_stream_id = _LAST_STREAM_ID
            notice.error_code = h2.errors.ErrorCodes.NO_ERROR
            self.transport.write(notice.serialize())
        if not self.streams:
            self._close(h2.errors.ErrorCodes.NO_ERROR)

    # -- events --------------------------------------------------------------------------------------
    def _handle(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.RequestReceived):
            self._request(event)
        elif isinstance(event, h2.events.DataReceived):
            stream = self.streams.get(event.stream_id) if event.stream_id is not None else None
            if stream is None or stream.done or stream.closed:
                # Nobody will read it: give the connection's window back at once.
                if event.flow_controlled_length and event.stream_id is not None:
                    self._acknowledge(event.stream_id, event.flow_controlled_length)
                return
            stream.body.append(event.data or b"")
            stream.unacknowledged += event.flow_controlled_length or 0
            stream.event.set()
        elif isinstance(event, h2.events.StreamEnded):
            stream = self.streams.get(event.stream_id) if event.stream_id is not None else None
            if stream is not None:
                stream.more_body = False
                stream.event.set()
        elif isinstance(event, h2.events.StreamReset):
            stream = self.streams.get(event.stream_id) if event.stream_id is not None else None
            if stream is not None:
                stream.reset = stream.closed = True
                stream.event.set()
        elif isinstance(event, h2.events.WindowUpdated | h2.events.RemoteSettingsChanged):
            self._window_open.set()
        elif isinstance(event, h2.events.ConnectionTerminated):
            self._close_transport()

    def _request(self, event: h2.events.RequestReceived) -> None:
        stream_id = event.stream_id
        assert stream_id is not None
        if len(self.streams) >= MAX_STREAMS:
            # Streams the client reset still run their request's work: refuse rather than pile up work.
            self.h2.reset_stream(stream_id, h2.errors.ErrorCodes.REFUSED_STREAM)
            return
        self._cancel_idle()
        pseudo: dict[bytes, bytes] = {}
        headers: list[tuple[bytes, bytes]] = []
        for name, value in event.headers or ():
            name_b = name if isinstance(name, bytes) else name.encode()
            value_b = value if isinstance(value, bytes) else value.encode()
            if name_b.startswith(b":"):
                pseudo[name_b] = value_b
            else:
                headers.append((name_b, value_b))
        if b":authority" in pseudo and not any(n == b"host" for n, _ in headers):
            headers.append((b"host", pseudo[b":authority"]))
        raw_path, _, query = pseudo.get(b":path", b"/").partition(b"?")
        path = raw_path.decode("ascii", "replace")
        if "%" in path:
            import urllib.parse

            path = urllib.parse.unquote(path)
        scope: dict[str, Any] = {
            **self.scope_base,
            "http_version": "2",
            "method": pseudo.get(b":method", b"GET").decode("ascii", "replace"),
            "path": path,
            "raw_path": raw_path,
            "query_string": query,
            "headers": headers,
            "state": self.app_state.copy(),
        }
        stream = _Stream(stream_id)
        self.streams[stream_id] = stream
        limit = self.limit_concurrency
        tasks = self.server_state.tasks
        over = limit is not None and (len(self.server_state.connections) >= limit or len(tasks) >= limit)
        app: ASGI3Application = service_unavailable if over else self.app
        if over:
            log.warning("Exceeded concurrency limit.")
        task = self.loop.create_task(self._run(app, scope, stream))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        self._served += 1
        if self._served >= REQUESTS_PER_CONNECTION:
            self._drain()

    # -- one request ---------------------------------------------------------------------------------
    async def _run(self, app: ASGI3Application, scope: dict[str, Any], stream: _Stream) -> None:
        started = False
        close_stream = False

        async def receive() -> ASGIReceiveEvent:
            while not stream.body and stream.more_body and not stream.reset:
                stream.event.clear()
                await stream.event.wait()
            if stream.reset:
                return {"type": "http.disconnect"}
            body = b"".join(stream.body)
            stream.body.clear()
            if stream.unacknowledged:
                self._acknowledge(stream.id, stream.unacknowledged)
                stream.unacknowledged = 0
                self._flush()
            return {"type": "http.request", "body": body, "more_body": stream.more_body}

        async def send(message: ASGISendEvent) -> None:
            nonlocal started, close_stream
            if stream.closed:
                return
            if message["type"] == "http.response.start":
                status = message["status"]
                out: list[tuple[bytes, bytes]] = [(b":status", str(status).encode())]
                for name, value in (*self.server_state.default_headers, *message.get("headers", ())):
                    lower = bytes(name).lower()
                    if lower in _HOP_BY_HOP:
                        close_stream = close_stream or (lower == b"connection" and b"close" in bytes(value).lower())
                        continue
                    out.append((lower, bytes(value)))
                self.h2.send_headers(stream.id, out)
                started = True
                self._flush()
            elif message["type"] == "http.response.body":
                if not started:
                    raise RuntimeError("http.response.body before http.response.start")
                more = bool(message.get("more_body", False))
                await self._send_data(stream, bytes(message.get("body", b"")), end=not more)
                if not more:
                    stream.closed = True
                    if close_stream and stream.more_body:
                        # The app answered without reading the whole body (refused for size or time): the rest
                        # is not wanted. The stream ends here; its unread data is given back to the connection.
                        self._reset(stream, h2.errors.ErrorCodes.NO_ERROR)

        try:
            await app(scope, receive, send)  # type: ignore[arg-type]
        except Exception:
            log.exception("Exception in ASGI application")
            if not started and not stream.closed:
                self.h2.send_headers(stream.id, [(b":status", b"500"), (b"content-length", b"0")], end_stream=True)
                stream.closed = True
        finally:
            if not stream.closed:
                self._reset(stream, h2.errors.ErrorCodes.INTERNAL_ERROR)
            stream.done = True
            if stream.unacknowledged:
                self._acknowledge(stream.id, stream.unacknowledged)
                stream.unacknowledged = 0
            self.streams.pop(stream.id, None)
            self.server_state.total_requests += 1
            self._flush()
            if not self.streams:
                if self._draining:
                    self._close(h2.errors.ErrorCodes.NO_ERROR)
                else:
                    self._arm_idle()

    async def _send_data(self, stream: _Stream, data: bytes, *, end: bool) -> None:
        """Send `data` as the client's flow control allows; a client that leaves the window shut (or stops reading)
        for `timeout_keep_alive` seconds gets the stream reset, so an answer never holds its request for ever."""
        view = memoryview(data)
        while True:
            if stream.reset or self.transport is None or self.transport.is_closing():
                stream.closed = True
                return
            if not self._writable.is_set() and not await self._wait(self._writable):
                self._reset(stream, h2.errors.ErrorCodes.CANCEL)
                return
            try:
                room = min(self.h2.local_flow_control_window(stream.id), self.h2.max_outbound_frame_size)
            except h2.exceptions.StreamClosedError:
                stream.closed = True
                return
            if room <= 0 and len(view):
                self._window_open.clear()
                if not await self._wait(self._window_open):
                    self._reset(stream, h2.errors.ErrorCodes.FLOW_CONTROL_ERROR)
                    return
                continue
            chunk = view[:room]
            view = view[len(chunk) :]
            last = end and not len(view)
            self.h2.send_data(stream.id, chunk.tobytes(), end_stream=last)
            self._flush()
            if not len(view):
                return

    # -- helpers -------------------------------------------------------------------------------------
    async def _wait(self, event: asyncio.Event) -> bool:
        """Whether `event` was set within `timeout_keep_alive` seconds."""
        try:
            await asyncio.wait_for(event.wait(), timeout=self.timeout_keep_alive)
        except TimeoutError:
            return False
        return True

    def _acknowledge(self, stream_id: int, size: int) -> None:
        try:
            self.h2.acknowledge_received_data(size, stream_id)
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
            self.h2.increment_flow_control_window(size)  # the stream is gone; the connection's window is not

    def _reset(self, stream: _Stream, code: h2.errors.ErrorCodes) -> None:
        stream.closed = True
        try:
            self.h2.reset_stream(stream.id, code)
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
            pass

    def _flush(self) -> None:
        data = self.h2.data_to_send()
        if data and self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def _arm_idle(self) -> None:
        self._cancel_idle()
        self._idle = self.loop.call_later(self.timeout_keep_alive, self._idle_expired)

    def _cancel_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    def _idle_expired(self) -> None:
        self._idle = None
        self._close(h2.errors.ErrorCodes.NO_ERROR)

    def _close(self, code: h2.errors.ErrorCodes) -> None:
        self.h2.close_connection(code)
        self._flush()
        self._close_transport()

    def _close_transport(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def _abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()


def scope_base(root_path: str, server: Any, client: Any, *, asgi_version: str = "3.0") -> dict[str, Any]:
    """The fields of every request's scope on one connection (the same as uvicorn's for HTTP/1.1)."""
    return {
        "type": "http",
        "asgi": {"version": asgi_version, "spec_version": "2.3"},
        "server": server,
        "client": client,
        "scheme": "https",
        "root_path": root_path,
    }
