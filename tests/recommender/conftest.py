"""A real HTTP server on loopback for the Prometheus client's tests: each test says how it answers (drip, huge,
redirect); daemon threads, stopped and joined at teardown."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

Respond = Callable[[http.server.BaseHTTPRequestHandler, "Loopback"], None]


@dataclass
class Loopback:
    """One server: `url`, the paths it was asked for, and `stopping`, set at teardown so that a slow answer ends."""

    url: str = ""
    answer: Respond = staticmethod(lambda handler, server: None)
    paths: list[str] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)


def start_loopback(state: Loopback) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            state.paths.append(self.path)
            try:
                state.answer(self, state)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the stdlib's name)
            del format, args

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, name="loopback-prometheus", daemon=True).start()
    return server


@pytest.fixture
def loopback() -> Iterator[Callable[[Respond], Loopback]]:
    """Start as many loopback servers as a test needs, each with its own answer."""
    servers: list[tuple[http.server.ThreadingHTTPServer, Loopback]] = []

    def make(answer: Respond) -> Loopback:
        state = Loopback(answer=answer)
        servers.append((start_loopback(state), state))
        return state

    yield make
    for server, state in servers:
        state.stopping.set()
        server.shutdown()
        server.server_close()


def send(handler: http.server.BaseHTTPRequestHandler, status: int, body: bytes, **headers: str) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)
