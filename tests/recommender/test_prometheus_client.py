"""The Prometheus client: against a real Prometheus (query_range over backfilled DCGM series, chunked past the
11,000-point limit), and against a tiny fake HTTP server answering garbage, errors, huge bodies, NaN/Inf samples,
series without pod labels and duplicates: each a clear error kind or a counted drop, never a crash."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from recommender import (
    OwnerResolver,
    PrometheusClient,
    PrometheusError,
    Recommender,
    RecommenderConfig,
    fb_selector,
)
from tests.prometheus.fixtures import DcgmDevice, PrometheusServer
from tests.prometheus.fixtures import prometheus_factory as prometheus_factory  # noqa: F401 (a fixture)


def test_query_range_over_backfilled_dcgm_series(prometheus_factory: Callable[..., PrometheusServer]) -> None:  # noqa: F811
    end = float(int(time.time()) - 60)
    ramp = DcgmDevice("team-a", "embed-6d9f7-abcde", "server", lambda t: 1000 + (t - t[0]) / 600)
    flat = lambda t: np.full(t.shape, 5120.0)  # noqa: E731
    steady = DcgmDevice("team-a", "embed-6d9f7-fghij", "server", flat, gpu=1, uuid="GPU-2")
    prom = prometheus_factory([ramp, steady], end=end)
    problems: list[tuple[str, str, int]] = []
    client = PrometheusClient(prom.url, on_problem=lambda *p: problems.append(p))
    assert client.ready()[0]
    series = client.query_range(fb_selector(namespace="team-a"), start=end - 7 * 86400, end=end, step=30)
    by_pod = {s.labels["pod"]: s for s in series}
    assert set(by_pod) == {"embed-6d9f7-abcde", "embed-6d9f7-fghij"}
    for s in series:  # 20,161 points in three requests, none lost or doubled at the seams
        assert s.values.size == 20161 and np.all(np.diff(s.timestamps) == 30)
        assert s.labels["__name__"] == "DCGM_FI_DEV_FB_USED" and s.labels["modelName"] == "NVIDIA H100 80GB HBM3"
    assert by_pod["embed-6d9f7-fghij"].values.max() == 5120
    assert by_pod["embed-6d9f7-abcde"].values[-1] == pytest.approx(1000 + 7 * 86400 / 600, abs=1)
    # An instant query of a range selector answers raw samples; last_over_time a vector.
    (last,) = client.query('last_over_time(DCGM_FI_DEV_FB_FREE{pod="embed-6d9f7-fghij"}[1h])', at=end)
    assert last.values.tolist() == [81559 - 500 - 5120]
    assert problems == []
    with pytest.raises(PrometheusError) as bad:
        client.query("sum(")
    assert bad.value.kind == "error_status" and "bad_data" in str(bad.value)


class _Fake(http.server.BaseHTTPRequestHandler):
    answer: Callable[[str], tuple[int, bytes]] = staticmethod(lambda path: (200, b""))

    def do_GET(self) -> None:  # noqa: N802
        status, body = type(self).answer(self.path)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        del format, args


@pytest.fixture
def fake() -> Iterator[tuple[str, Callable[[Callable[[str], tuple[int, bytes]]], None]]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Fake)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def set_answer(fn: Callable[[str], tuple[int, bytes]]) -> None:
        _Fake.answer = staticmethod(fn)

    yield f"http://127.0.0.1:{server.server_address[1]}", set_answer
    server.shutdown()
    server.server_close()


def _matrix(result: list[Any]) -> bytes:
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}).encode()


LABELS = {"__name__": "DCGM_FI_DEV_FB_USED", "namespace": "a", "pod": "p-1", "container": "c", "UUID": "GPU-1"}


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (200, b"<html>not json</html>", "bad_json"),
        (200, b"\xff\xfe\x00garbage", "bad_json"),
        (200, b"[1, 2, 3]", "bad_shape"),
        (200, b'{"status": "success", "data": {"resultType": "matrix"}}', "bad_shape"),
        (200, b'{"status": "success", "data": {"resultType": "scalar", "result": [1, "2"]}}', "bad_shape"),
        (422, b'{"status": "error", "errorType": "execution", "error": "query timed out"}', "error_status"),
        (503, b"Service Unavailable", "bad_json"),
        (502, b'{"status": "success", "data": {"resultType": "matrix", "result": []}}', "http"),
    ],
)
def test_bad_answers_are_named_errors(
    fake: tuple[str, Callable[..., None]], status: int, body: bytes, kind: str
) -> None:
    url, answer = fake
    answer(lambda path: (status, body))
    with pytest.raises(PrometheusError) as err:
        PrometheusClient(url).query_range("x", start=0, end=60, step=30)
    assert err.value.kind == kind and url in str(err.value)


def test_a_huge_answer_is_cut_off(fake: tuple[str, Callable[..., None]]) -> None:
    url, answer = fake
    answer(lambda path: (200, _matrix([{"metric": LABELS, "values": [[i, "1"] for i in range(200_000)]}])))
    with pytest.raises(PrometheusError) as err:
        PrometheusClient(url, max_bytes=1_000_000).query("x")
    assert err.value.kind == "too_large"


def test_unreachable_and_slow_servers_are_named(fake: tuple[str, Callable[..., None]]) -> None:
    url, answer = fake

    def slow(path: str) -> tuple[int, bytes]:
        time.sleep(2)
        return 200, _matrix([])

    answer(slow)
    with pytest.raises(PrometheusError) as err:
        PrometheusClient(url, timeout=0.3).query("x")
    assert err.value.kind == "timeout"
    with pytest.raises(PrometheusError) as err:
        PrometheusClient("http://127.0.0.1:9", timeout=2).query("x")
    assert err.value.kind == "unreachable"
    with pytest.raises(ValueError, match="expected http"):
        PrometheusClient("prometheus:9090")


def test_bad_samples_and_series_are_dropped_and_counted(fake: tuple[str, Callable[..., None]]) -> None:
    url, answer = fake
    result = [
        {"metric": LABELS, "values": [[0, "100"], [30, "NaN"], [60, "+Inf"], [90, "-Inf"], [120, "-5"], [150, "200"]]},
        {"metric": {**LABELS, "UUID": "GPU-2"}, "values": [[0, "x"], [30, 7], [60, "300"], [90]]},
        {"metric": {"a": 1}, "values": []},
        {"metric": LABELS, "values": "nope"},
        "not a series",
    ]
    answer(lambda path: (200, _matrix(result)))
    problems: dict[tuple[str, str], int] = {}

    def count(what: str, reason: str, n: int) -> None:
        problems[(what, reason)] = problems.get((what, reason), 0) + n

    series = PrometheusClient(url, on_problem=count).query("x")
    assert [s.values.tolist() for s in series] == [[100.0, 200.0], [300.0]]
    assert problems == {
        ("sample", "nan"): 1,
        ("sample", "inf"): 2,
        ("sample", "negative"): 1,
        ("sample", "unparseable"): 3,
        ("series", "bad labels"): 2,
        ("series", "bad samples"): 1,
    }


class _NoPods:
    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        if kind == "ReplicaSet" and name == "embed-6d9f7":
            return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name, "uid": "rs",
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "embed",
                                         "controller": True}]}}  # fmt: skip
        if kind == "Deployment" and name == "embed":
            return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "uid": "d-1"}}
        return None

    def list_pods(self, namespace: str) -> list[dict[str, Any]]:
        return []


def test_a_pass_over_bad_series_counts_them_and_recommends_from_the_rest(fake: tuple[str, Callable[..., None]]) -> None:
    url, answer = fake
    good = {**LABELS, "pod": "embed-6d9f7-abcde", "modelName": "NVIDIA L40S"}
    values = [[i * 30, "2048"] for i in range(150)] + [[4500, "NaN"]]
    result = [
        {"metric": good, "values": values},
        {"metric": {**good, "instance": "exporter-b:9400"}, "values": values},  # the same device scraped twice
        {"metric": {k: v for k, v in good.items() if k != "pod"}, "values": values},  # no pod label
        {"metric": {k: v for k, v in good.items() if k != "namespace"}, "values": values},
    ]
    answer(lambda path: (200, _matrix(result)) if "query_range" in path else (200, _matrix([])))
    recommender = Recommender(
        PrometheusClient(url), lambda: OwnerResolver(_NoPods()), None, RecommenderConfig(dry_run=True)
    )
    report = recommender.run_pass()
    assert report is not None and report.dropped_series == {"duplicate": 1, "no pod label": 1, "no namespace label": 1}
    (obj,) = report.objects
    assert obj["metadata"]["name"] == "deployment-embed" and obj["spec"]["targetRef"]["kind"] == "Deployment"
    (entry,) = obj["status"]["containers"]
    assert entry["samples"] == 150 and entry["peak"] == "2Gi" and entry["device"] == "shared NVIDIA L40S with 2458Mi"
    m = recommender.metrics.registry
    assert m.get_sample_value("gpudra_recommender_dropped_series_total", {"reason": "duplicate"}) == 1
    # 7 days at 30 s is three range requests; the fake answers each with all four series (one NaN each), and the
    # seams are put back together without doubling (150 samples above).
    assert m.get_sample_value("gpudra_recommender_dropped_samples_total", {"reason": "nan"}) == 12
    assert m.get_sample_value("gpudra_recommender_runs_total", {"result": "success"}) == 1
    ok = recommender.health.ready()
    assert ok[0]

    answer(lambda path: (200, b"garbage"))
    assert recommender.run_pass() is None
    assert m.get_sample_value("gpudra_recommender_errors_total", {"kind": "prometheus_bad_json"}) == 1
    assert not recommender.health.ready()[0] and "not JSON" in recommender.health.ready()[1]
