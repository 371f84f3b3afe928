"""webhook.http2: reviews as streams of one HTTP/2 connection, with the bounds of the HTTP/1.1 path.

The protocol is driven in process by h2's client side over a fake transport (each test waits for states, never for
durations); `gpudra serve` itself is driven by httpx's HTTP/2 client, the way kube-apiserver reaches a webhook at a
loopback URL.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.settings
import httpx
from uvicorn.server import ServerState

from tests.webhook.test_admission import example, review_body
from tests.webhook.test_serve_https import Server, server  # noqa: F401  (the fixture)
from webhook.http2 import MAX_STREAMS, REQUESTS_PER_CONNECTION, Http2Protocol, scope_base

App = Callable[[dict[str, Any], Any, Any], Awaitable[None]]
_NOTICE = bytes.fromhex("000008070000000000") + bytes.fromhex("7fffffff00000000")  # GOAWAY, last stream 2**31-1


class FakeTransport:
    """What Http2Protocol needs of a transport: bytes written go to `written`; closing it tells the protocol soon
    after, as asyncio's transports do."""

    def __init__(self) -> None:
        self.written = bytearray()
        self.notices = 0  # graceful GOAWAY notices (last stream id 2**31-1) the server wrote
        self.closed = False
        self.aborted = False
        self.protocol: asyncio.Protocol | None = None

    def write(self, data: bytes) -> None:
        if data == _NOTICE:  # h2's client state machine would close on it: counted here instead
            self.notices += 1
            return
        self.written += data

    def is_closing(self) -> bool:
        return self.closed or self.aborted

    def _lost(self) -> None:
        if self.protocol is not None and not self.is_closing():
            asyncio.get_running_loop().call_soon(self.protocol.connection_lost, None)

    def close(self) -> None:
        self._lost()
        self.closed = True

    def abort(self) -> None:
        self._lost()
        self.aborted = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default


class Peer:
    """A client (h2's client side) talking to an Http2Protocol over a FakeTransport."""

    def __init__(
        self,
        app: App,
        *,
        timeout: float = 15.0,
        limit_concurrency: int | None = None,
        settings: dict[int, int] | None = None,
    ) -> None:
        self.state = ServerState()
        self.transport = FakeTransport()
        self.server = Http2Protocol(
            app=app,  # type: ignore[arg-type]
            server_state=self.state,
            app_state={},
            scope_base=scope_base("", ("127.0.0.1", 8443), ("127.0.0.1", 50000)),
            timeout_keep_alive=timeout,
            limit_concurrency=limit_concurrency,
            loop=asyncio.get_running_loop(),
        )
        self.client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
        self.client.initiate_connection()
        if settings:
            self.client.update_settings(settings)
        self.events: list[h2.events.Event] = []
        self.transport.protocol = self.server
        self.server.connection_made(self.transport)  # type: ignore[arg-type]
        self.pump()

    def pump(self) -> None:
        """Hand what each side wrote to the other until neither has anything to say."""
        while True:
            to_server = self.client.data_to_send()
            if to_server and not self.transport.is_closing():
                self.server.data_received(to_server)
            to_client = bytes(self.transport.written)
            self.transport.written.clear()
            if to_client:
                self.events += self.client.receive_data(to_client)
            if not to_server and not to_client:
                return

    def request(self, path: str = "/", body: bytes = b"", *, end: bool = True) -> int:
        stream_id = self.client.get_next_available_stream_id()
        headers = [(b":method", b"POST"), (b":path", path.encode()), (b":scheme", b"https"), (b":authority", b"x")]
        self.client.send_headers(stream_id, headers, end_stream=not body and end)
        if body:
            self.client.send_data(stream_id, body, end_stream=end)
        self.pump()
        return stream_id

    def responses(self) -> dict[int, tuple[int, dict[bytes, bytes], bytes]]:
        """Every stream answered whole so far: status, headers and body."""
        heads: dict[int, dict[bytes, bytes]] = {}
        bodies: dict[int, bytes] = {}
        ended: set[int] = set()
        for event in self.events:
            if isinstance(event, h2.events.ResponseReceived):
                heads[event.stream_id] = dict(event.headers)
            elif isinstance(event, h2.events.DataReceived):
                bodies[event.stream_id] = bodies.get(event.stream_id, b"") + (event.data or b"")
                self.client.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                ended.add(event.stream_id)
        return {sid: (int(heads[sid][b":status"]), heads[sid], bodies.get(sid, b"")) for sid in ended if sid in heads}

    def resets(self) -> dict[int, int]:
        return {e.stream_id: int(e.error_code) for e in self.events if isinstance(e, h2.events.StreamReset)}

    async def until(self, condition: Callable[[], bool], limit: float = 30.0) -> None:
        """Run the loop (and pump) until `condition` holds; fails after `limit` seconds (a hang, not a timing)."""
        loop = asyncio.get_running_loop()
        end = loop.time() + limit
        while not condition():
            assert loop.time() < end, "condition not reached"
            await asyncio.sleep(0.005)
            self.pump()


async def echo_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Reads the whole body and answers it, with the request's path as a header."""
    body = b""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    headers = [(b"content-type", b"application/octet-stream"), (b"x-path", scope["path"].encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def test_many_requests_share_one_connection_and_each_gets_its_own_answer() -> None:
    async def scenario() -> None:
        peer = Peer(echo_app)
        bodies = {peer.request(f"/r{i}", f"body-{i}".encode() * (i + 1)): i for i in range(40)}
        await peer.until(lambda: len(peer.responses()) == len(bodies))
        for stream_id, (status, headers, body) in peer.responses().items():
            i = bodies[stream_id]
            assert status == 200 and headers[b"x-path"] == f"/r{i}".encode()
            assert body == f"body-{i}".encode() * (i + 1)
        assert peer.state.total_requests == 40 and not peer.state.tasks

    asyncio.run(scenario())


def test_a_body_larger_than_the_window_is_read_as_the_app_reads() -> None:
    async def scenario() -> None:
        peer = Peer(echo_app)
        big = bytes(range(256)) * 1024  # 256 KiB: four times a stream's window
        stream_id = peer.client.get_next_available_stream_id()
        peer.client.send_headers(stream_id, [(b":method", b"POST"), (b":path", b"/"), (b":scheme", b"https"),
                                             (b":authority", b"x")])  # fmt: skip
        sent = 0

        def send_more() -> bool:
            nonlocal sent
            room = min(peer.client.local_flow_control_window(stream_id), len(big) - sent, 16_384)
            if room > 0:
                peer.client.send_data(stream_id, big[sent : sent + room], end_stream=sent + room == len(big))
                sent += room
            return sent == len(big)

        await peer.until(send_more)
        await peer.until(lambda: stream_id in peer.responses())
        assert peer.responses()[stream_id][2] == big

    asyncio.run(scenario())


def test_streams_past_the_limit_are_refused_while_their_work_runs_even_when_reset() -> None:
    release = asyncio.Event()

    async def stuck_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await release.wait()  # a decision still running

    async def scenario() -> None:
        peer = Peer(stuck_app)
        first = [peer.request("/", b"x") for _ in range(MAX_STREAMS)]
        for stream_id in first:  # reset by the client: closed for h2, still running here
            peer.client.reset_stream(stream_id, h2.errors.ErrorCodes.CANCEL)
        peer.pump()
        extra = peer.request("/", b"x")
        await peer.until(lambda: extra in peer.resets())
        assert peer.resets()[extra] == h2.errors.ErrorCodes.REFUSED_STREAM
        assert len(peer.state.tasks) == MAX_STREAMS
        release.set()
        await peer.until(lambda: not peer.state.tasks)
        # The client was told to go elsewhere after its share of requests (and ignored it): once the work is done
        # the connection closes.
        assert peer.transport.notices == 1
        await peer.until(lambda: peer.transport.closed)

    asyncio.run(scenario())


def test_past_the_process_wide_limit_a_request_is_answered_503() -> None:
    release = asyncio.Event()

    async def stuck_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await release.wait()
        await echo_app(scope, receive, send)

    async def scenario() -> None:
        peer = Peer(stuck_app, limit_concurrency=2)  # uvicorn's bound: connections or running requests
        held = [peer.request("/", b"x") for _ in range(2)]
        refused = peer.request("/", b"y")
        await peer.until(lambda: refused in peer.responses())
        status, headers, _ = peer.responses()[refused]
        assert status == 503 and b"connection" not in headers  # HTTP/2 forbids connection-specific fields
        release.set()
        await peer.until(lambda: all(stream_id in peer.responses() for stream_id in held))

    asyncio.run(scenario())


def test_a_connection_without_a_request_is_closed_after_the_idle_timeout() -> None:
    async def scenario() -> None:
        peer = Peer(echo_app, timeout=0.05)
        await peer.until(lambda: peer.transport.closed and not peer.state.connections)
        assert any(isinstance(e, h2.events.ConnectionTerminated) for e in peer.events)

    asyncio.run(scenario())


def test_idle_timeout_waits_for_running_requests_and_restarts_after_the_last_answer() -> None:
    release = asyncio.Event()

    async def slow_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await release.wait()
        await echo_app(scope, receive, send)

    async def scenario() -> None:
        peer = Peer(slow_app, timeout=0.05)
        stream_id = peer.request("/", b"x")
        await asyncio.sleep(0.2)  # several idle timeouts pass while the request runs
        peer.pump()
        assert not peer.transport.closed
        release.set()
        await peer.until(lambda: stream_id in peer.responses())
        await peer.until(lambda: peer.transport.closed)

    asyncio.run(scenario())


def test_an_answer_before_the_whole_body_resets_the_stream_and_keeps_the_connection() -> None:
    async def refusing_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()  # the first chunk only, then refused the way webhook.body refuses (Connection: close)
        headers = [(b"content-type", b"text/plain"), (b"connection", b"close"), (b"content-length", b"7")]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": b"too big"})

    async def scenario() -> None:
        peer = Peer(refusing_app)
        stream_id = peer.request("/", b"part", end=False)
        await peer.until(lambda: stream_id in peer.responses())
        status, headers, body = peer.responses()[stream_id]
        assert status == 413 and body == b"too big" and b"connection" not in headers
        # The response ended the stream for the client; what it still sends on it is given back to the connection.
        assert not peer.transport.closed
        peer.server.app = echo_app  # type: ignore[assignment]
        after = peer.request("/", b"next")
        await peer.until(lambda: after in peer.responses())
        assert peer.responses()[after][2] == b"next"

    asyncio.run(scenario())


def test_a_client_that_never_opens_its_window_gets_the_stream_reset_not_held() -> None:
    async def scenario() -> None:
        peer = Peer(echo_app, timeout=0.05, settings={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
        stream_id = peer.request("/", b"an answer that cannot be sent")
        await peer.until(lambda: stream_id in peer.resets())
        assert not peer.state.tasks

    asyncio.run(scenario())


def test_after_its_share_of_requests_a_connection_asks_for_another_and_answers_what_it_took() -> None:
    async def scenario() -> None:
        peer = Peer(echo_app)
        sent = [peer.request("/", str(i).encode()) for i in range(REQUESTS_PER_CONNECTION + 5)]
        # Streams the client opened before it read the notice are still served, every one of them.
        await peer.until(lambda: len(peer.responses()) == len(sent))
        assert peer.transport.notices == 1
        assert all(peer.responses()[sid][2] == str(i).encode() for i, sid in enumerate(sent))
        await peer.until(lambda: peer.transport.closed)  # after the last answer: the final GOAWAY, then closed
        assert any(isinstance(e, h2.events.ConnectionTerminated) for e in peer.events)

    asyncio.run(scenario())


def test_graceful_shutdown_answers_the_requests_in_flight_then_closes() -> None:
    release = asyncio.Event()

    async def slow_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await release.wait()
        await echo_app(scope, receive, send)

    async def scenario() -> None:
        peer = Peer(slow_app)
        running = [peer.request("/", b"in flight") for _ in range(3)]
        peer.server.shutdown()
        peer.pump()
        assert peer.transport.notices == 1 and not peer.transport.closed
        release.set()
        await peer.until(lambda: all(sid in peer.responses() for sid in running))
        assert {peer.responses()[sid][0] for sid in running} == {200}
        await peer.until(lambda: peer.transport.closed and not peer.state.connections)

    asyncio.run(scenario())


def test_a_chunk_carrying_many_whole_requests_is_served_however_large() -> None:
    async def scenario() -> None:
        peer = Peer(echo_app)
        bodies = {}
        for i in range(40):  # one pump: about 330 KB in a single data_received, no request open before it
            stream_id = peer.client.get_next_available_stream_id()
            peer.client.send_headers(stream_id, [(b":method", b"POST"), (b":path", b"/"), (b":scheme", b"https"),
                                                 (b":authority", b"x")])  # fmt: skip
            bodies[stream_id] = bytes([i]) * 8_192
            peer.client.send_data(stream_id, bodies[stream_id], end_stream=True)
        peer.pump()
        await peer.until(lambda: len(peer.responses()) == len(bodies))
        assert all(peer.responses()[sid][2] == body for sid, body in bodies.items())

    asyncio.run(scenario())


def test_bytes_that_start_no_request_are_bounded() -> None:
    async def scenario() -> None:
        peer = Peer(echo_app)
        for i in range(20_000):  # 17-byte PINGs: 340 KB, and never a request
            if peer.transport.closed:
                break
            peer.client.ping(i.to_bytes(8, "big"))
            peer.pump()
        assert peer.transport.closed
        terminated = [e for e in peer.events if isinstance(e, h2.events.ConnectionTerminated)]
        assert terminated and terminated[0].error_code == h2.errors.ErrorCodes.ENHANCE_YOUR_CALM

    asyncio.run(scenario())


def test_a_protocol_error_aborts_the_connection() -> None:
    async def scenario() -> None:
        peer = Peer(echo_app)
        peer.server.data_received(b"\x00\x00\x04\x08\x00\x00\x00\x00\x00" + b"\x00" * 4)  # WINDOW_UPDATE by 0
        await peer.until(lambda: peer.transport.aborted)

    asyncio.run(scenario())


def _h2_client(srv: Server) -> httpx.Client:
    ctx = ssl.create_default_context(cafile=str(srv.certs / "ca.crt"))
    return httpx.Client(base_url=f"https://localhost:{srv.port}", verify=ctx, http2=True, timeout=10)


def test_serve_answers_http2_clients_as_it_answers_http11_ones(server: Server) -> None:  # noqa: F811
    body = review_body(example("pod-legacy-vram.yaml"))
    headers = {"Content-Type": "application/json"}
    with server.client() as http11:
        expected = http11.post("/mutate", content=body, headers=headers)
    with _h2_client(server) as h2c:
        answers = [h2c.post("/mutate", content=body, headers=headers) for _ in range(3)]
        probe = h2c.get("/readyz")
    assert expected.http_version == "HTTP/1.1"
    for answer in answers:
        assert answer.http_version == "HTTP/2" and answer.status_code == 200
        assert answer.json() == expected.json()
    assert probe.http_version == "HTTP/2" and probe.status_code == 200


def test_client_certificates_are_required_over_http2_too(tmp_path: Path) -> None:
    from tests.webhook.test_client_auth import _client_pair

    ca, cert, key = _client_pair(tmp_path / "apiserver", "API server client CA")
    srv = Server(tmp_path / "serve", "--client-ca", str(ca))
    try:
        srv.wait_ready()
        body = review_body(example("pod-legacy-vram.yaml"))
        with _h2_client(srv) as anonymous:
            refused = anonymous.post("/mutate", content=body, headers={"Content-Type": "application/json"})
            probe = anonymous.get("/healthz")
        assert refused.http_version == "HTTP/2" and refused.status_code == 403
        assert probe.status_code == 200
        ctx = ssl.create_default_context(cafile=str(srv.certs / "ca.crt"))
        ctx.load_cert_chain(str(cert), str(key))
        with httpx.Client(base_url=f"https://localhost:{srv.port}", verify=ctx, http2=True, timeout=10) as client:
            answered = client.post("/mutate", content=body, headers={"Content-Type": "application/json"})
        assert answered.http_version == "HTTP/2" and answered.status_code == 200
    finally:
        srv.stop()


def test_no_http2_serves_http11_to_a_client_offering_http2(tmp_path: Path) -> None:
    srv = Server(tmp_path, "--no-http2")
    try:
        srv.wait_ready()
        body = review_body(example("pod-legacy-vram.yaml"))
        with _h2_client(srv) as client:
            answer = client.post("/mutate", content=body, headers={"Content-Type": "application/json"})
        assert answer.http_version == "HTTP/1.1" and answer.status_code == 200
        assert answer.json()["response"]["allowed"] is True
    finally:
        srv.stop()
