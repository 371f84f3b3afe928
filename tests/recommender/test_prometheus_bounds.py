"""The Prometheus client's bounds, against a real HTTP server on loopback: one deadline for the whole request (a
server that drips bytes is cut off), bounded memory for a large answer, no redirect to another host."""

from __future__ import annotations

import http.server
import json
import threading
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

from recommender import PrometheusClient, PrometheusError
from recommender.prometheus import MAX_REDIRECTS

from .conftest import Loopback, Respond, send

Start = Callable[[Respond], Loopback]


def _matrix(result: list[Any]) -> bytes:
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}).encode()


def _outcome(call: Callable[[], object], *, within: float = 60.0) -> str:
    """What `call` ended with ("ok" or the PrometheusError's kind), waiting at most `within` seconds for it: far
    past any deadline under test, so only a client without a deadline fails here."""
    result: list[str] = []

    def run() -> None:
        try:
            call()
            result.append("ok")
        except PrometheusError as exc:
            result.append(exc.kind)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(within)
    assert not thread.is_alive(), f"the client was still waiting after {within:g}s"
    return result[0]


def _drip_body(handler: http.server.BaseHTTPRequestHandler, server: Loopback) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", "100000")
    handler.end_headers()
    handler.wfile.flush()
    for _ in range(900):  # at most 900 bytes, one every 0.1 s: each read gets something, the answer never ends
        if server.stopping.wait(0.1):
            return
        handler.wfile.write(b" ")
        handler.wfile.flush()


def _drip_headers(handler: http.server.BaseHTTPRequestHandler, server: Loopback) -> None:
    handler.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    for _ in range(900):
        if server.stopping.wait(0.1):
            return
        handler.wfile.write(b"a")
        handler.wfile.flush()


@pytest.mark.parametrize("drip", [_drip_body, _drip_headers], ids=["body", "headers"])
def test_a_dripping_server_is_cut_off_at_the_deadline(loopback: Start, drip: Respond) -> None:
    server = loopback(drip)
    client = PrometheusClient(server.url, timeout=1)
    assert _outcome(lambda: client.query("x")) == "timeout"


def test_a_large_answer_is_parsed_in_bounded_memory(loopback: Start) -> None:
    points = [[1_700_000_000 + 30 * i, str(1000 + i % 977)] for i in range(800)]
    labels = {"__name__": "DCGM_FI_DEV_FB_USED", "namespace": "team-a", "container": "main", "modelName": "NVIDIA L4"}
    body = _matrix([{"metric": {**labels, "pod": f"p-{n}"}, "values": points} for n in range(400)])
    server = loopback(lambda handler, _: send(handler, 200, body))
    client = PrometheusClient(server.url, timeout=120)
    tracemalloc.start()
    try:
        series = client.query("x")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(series) == 400 and all(s.values.size == 800 for s in series)
    assert series[7].values[5] == 1005 and series[7].timestamps[-1] == 1_700_000_000 + 30 * 799
    # json.loads of this answer peaks at ~30x its size; text + bytes + arrays is ~3x.
    assert peak < 5 * len(body), f"parsing a {len(body) / 2**20:.1f} MiB answer peaked at {peak / 2**20:.1f} MiB"


def test_a_redirect_to_another_host_is_refused(loopback: Start) -> None:
    elsewhere = loopback(lambda handler, _: send(handler, 200, _matrix([])))
    server = loopback(lambda handler, _: send(handler, 302, b"", Location=elsewhere.url + handler.path))
    with pytest.raises(PrometheusError) as err:
        PrometheusClient(server.url, timeout=30).query("x")
    assert err.value.kind == "redirect" and "another host" in str(err.value) and elsewhere.url in str(err.value)
    assert elsewhere.paths == []


def test_a_redirect_on_the_same_host_is_followed_a_bounded_number_of_times(loopback: Start) -> None:
    def moved(handler: http.server.BaseHTTPRequestHandler, _: Loopback) -> None:
        if handler.path.startswith("/prometheus/"):
            send(handler, 200, _matrix([{"metric": {"pod": "p-1"}, "values": [[0, "5"]]}]))
        else:
            send(handler, 308, b"", Location="/prometheus" + handler.path)

    server = loopback(moved)
    (series,) = PrometheusClient(server.url, timeout=30).query("x")
    assert series.values.tolist() == [5.0] and len(server.paths) == 2

    looping = loopback(lambda handler, _: send(handler, 302, b"", Location=handler.path))
    with pytest.raises(PrometheusError) as err:
        PrometheusClient(looping.url, timeout=30).query("x")
    assert err.value.kind == "redirect" and len(looping.paths) == MAX_REDIRECTS + 1
