"""kubeapi.version: the API server's minor version from /version, bounded; None when it cannot be read."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from kubeapi.version import server_minor


class _Handler(BaseHTTPRequestHandler):
    answer: Any = {}

    def do_GET(self) -> None:
        body = json.dumps(self.answer).encode()
        self.send_response(200 if self.path.rstrip("/") == "/version" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, type[_Handler]]]:
    handler = type("Handler", (_Handler,), {"answer": {}})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    httpd.shutdown()
    httpd.server_close()


def _client(host: str) -> Any:
    from kubernetes import client

    config = client.Configuration()
    config.host = host
    return client.ApiClient(config)


@pytest.mark.parametrize(
    ("answer", "minor"),
    [
        (
            {
                "major": "1",
                "minor": "37",
                "gitVersion": "v1.37.2",
                "gitCommit": "abc",
                "gitTreeState": "clean",
                "buildDate": "2026-11-12T00:00:00Z",
                "goVersion": "go1.25.3",
                "compiler": "gc",
                "platform": "linux/amd64",
            },
            37,
        ),  # fmt: skip
        ({"major": "1", "minor": "36+", "gitVersion": "v1.36.4-eks-1234"}, 36),  # managed clusters add a '+'
        ({"major": "1", "minor": "", "gitVersion": "v1.35.0-gke.1"}, 35),
        ({"major": "1", "minor": "", "gitVersion": "unknown"}, None),
        (["not", "an", "object"], None),
    ],
)
def test_the_minor_is_read_from_version(server: tuple[str, type[_Handler]], answer: Any, minor: int | None) -> None:
    host, handler = server
    handler.answer = answer
    assert server_minor(_client(host)) == minor


def test_an_unreachable_api_server_gives_none() -> None:
    assert server_minor(_client("http://127.0.0.1:9"), timeout=1.0) is None
