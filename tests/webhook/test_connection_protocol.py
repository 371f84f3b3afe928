"""webhook.connections' protocol on a stand-in transport: the write deadline and the gate's bookkeeping."""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.config import Config
from uvicorn.server import ServerState

from webhook.connections import SETUP_KEY, ConnectionSetup, GatedProtocol
from webhook.gate import ConnectionGate, GateLimits, State


class _Transport(asyncio.Transport):
    def __init__(self, peer: str) -> None:
        super().__init__()
        self.peer = peer
        self.aborted = False
        self.closing = False
        self.written = b""

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": (self.peer, 40000), "sockname": ("127.0.0.1", 8443)}.get(name, default)

    def abort(self) -> None:
        self.aborted = self.closing = True

    def close(self) -> None:
        self.closing = True

    def is_closing(self) -> bool:
        return self.closing

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += bytes(data)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def _app(scope: Any, receive: Any, send: Any) -> None:
    """A request that is being answered for as long as the test runs: its headers are in, its response is not."""
    await asyncio.Event().wait()


_REQUEST = b"GET /slow HTTP/1.1\r\nHost: webhook\r\n\r\n"
_SHORT: Any = 0.05  # seconds (uvicorn types the setting as int, and takes any number)


def _protocol(gate: ConnectionGate) -> GatedProtocol:
    config = Config(app=_app, timeout_keep_alive=_SHORT)  # the idle timeout bounds a paused write too
    config.load()
    setup = ConnectionSetup(gate, tls=None)
    return GatedProtocol(config=config, server_state=ServerState(), app_state={SETUP_KEY: setup})


def test_a_response_the_client_does_not_read_is_reset_after_the_idle_timeout() -> None:
    async def run() -> tuple[bool, int]:
        gate = ConnectionGate()
        protocol = _protocol(gate)
        transport = _Transport("10.0.0.9")
        protocol.connection_made(transport)
        protocol.data_received(_REQUEST)  # busy: the header deadline is off, only the write deadline can fire
        assert len(gate) == 1
        protocol.pause_writing()  # the transport's buffer passed its high-water mark: the client is not reading
        for _ in range(10_000):
            if transport.aborted:
                break
            await asyncio.sleep(0.01)
        protocol.connection_lost(None)
        return transport.aborted, len(gate)

    assert asyncio.run(run()) == (True, 0)


def test_a_resumed_write_cancels_the_deadline() -> None:
    async def run() -> bool:
        protocol = _protocol(ConnectionGate())
        transport = _Transport("10.0.0.9")
        protocol.connection_made(transport)
        protocol.data_received(_REQUEST)
        protocol.pause_writing()
        protocol.resume_writing()
        await asyncio.sleep(0.2)  # four idle timeouts: nothing may fire now
        aborted = transport.aborted
        protocol.connection_lost(None)
        return aborted

    assert asyncio.run(run()) is False


def test_a_refused_source_is_reset_at_accept_and_an_admitted_one_is_idle() -> None:
    async def run() -> tuple[bool, bool, State, bool, bool]:
        gate = ConnectionGate(GateLimits(per_source=1))
        first, second = _Transport("10.0.0.9"), _Transport("10.0.0.9")
        protocol, refused = _protocol(gate), _protocol(gate)
        protocol.connection_made(first)
        refused.connection_made(second)
        refused.connection_lost(None)
        (entry,) = list(gate._entries)
        # uvicorn's per-connection set-up ran for the admitted connection only (a flood reset at accept skips it)
        return first.aborted, second.aborted, entry.state, "loop" in vars(protocol), "loop" in vars(refused)

    assert asyncio.run(run()) == (False, True, State.IDLE, True, False)


async def _answer(scope: Any, receive: Any, send: Any) -> None:
    """200 for /ok (a review answered: its source becomes trusted), 404 for anything else."""
    if scope["type"] != "http":
        return
    status = 200 if scope["path"] == "/ok" else 404
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


def test_between_requests_a_trusted_source_outwaits_the_api_servers_idle_connections(monkeypatch: Any) -> None:
    import webhook.connections

    monkeypatch.setattr(webhook.connections, "TRUSTED_IDLE_SECONDS", 0.6)

    async def run() -> list[tuple[bool, bool]]:
        gate = ConnectionGate()
        config = Config(app=_answer, timeout_keep_alive=_SHORT)
        config.load()
        setup = ConnectionSetup(gate, tls=None)
        seen: list[tuple[bool, bool]] = []
        trusted, untrusted = _Transport("10.0.0.1"), _Transport("10.0.0.2")
        for transport, path in ((trusted, b"/ok"), (untrusted, b"/no")):
            protocol = GatedProtocol(config=config, server_state=ServerState(), app_state={SETUP_KEY: setup})
            protocol.connection_made(transport)
            protocol.data_received(b"POST " + path + b" HTTP/1.1\r\nHost: webhook\r\nContent-Length: 0\r\n\r\n")
        while b"HTTP/1.1" not in trusted.written or b"HTTP/1.1" not in untrusted.written:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.25)  # five idle timeouts
        seen.append((trusted.closing, untrusted.closing))
        await asyncio.sleep(0.6)  # past the trusted wait too
        seen.append((trusted.closing, untrusted.closing))
        return seen

    assert asyncio.run(run()) == [(False, True), (True, True)]


def test_a_source_refused_as_a_tenant_pod_is_reset_at_accept_while_the_refusal_is_remembered() -> None:
    """Issue 37 rows 4 and 10: once a source's review was refused as a tenant pod's, its next connections cost no
    TLS handshake; other sources, and one that is trusted (it had a review answered), are served as before."""
    from webhook.review_sources import ReviewSources

    now = [0.0]
    pods = {"10.244.0.7": [("team-a", "attacker")], "10.0.0.1": [("team-b", "was-a-tenant")]}
    sources = ReviewSources(lambda address: pods.get(address, []), refused_seconds=30, clock=lambda: now[0])

    async def run() -> list[bool]:
        gate = ConnectionGate()
        setup = ConnectionSetup(gate, tls=None, sources=sources)
        for address in ("10.244.0.7", "10.0.0.1", "10.0.0.2"):
            await sources.verdict(address)
        gate.trust("10.0.0.1")
        config = Config(app=_app, timeout_keep_alive=_SHORT)
        config.load()
        transports = [_Transport(peer) for peer in ("10.244.0.7", "10.0.0.1", "10.0.0.2")]
        for transport in transports:
            GatedProtocol(config=config, server_state=ServerState(), app_state={SETUP_KEY: setup}).connection_made(
                transport
            )
        assert gate.stats.refused_tenant_pod == 1 and gate.ended == 1 and len(gate) == 2
        now[0] += 31  # the refusal expired: the next connection is let in (and its review looked up again)
        later = _Transport("10.244.0.7")
        GatedProtocol(config=config, server_state=ServerState(), app_state={SETUP_KEY: setup}).connection_made(later)
        return [t.aborted for t in (*transports, later)]

    assert asyncio.run(run()) == [True, False, False, False]
