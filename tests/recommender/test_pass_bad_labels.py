"""A pass over series with bad labels: they are skipped and counted (report and metric, by reason), the other
namespaces still get their recommendations, and no bad label value reaches the API server."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from recommender import OwnerResolver, PrometheusClient, Recommender, RecommenderConfig

from .conftest import Loopback, Respond, send


class _Objects:
    """A Deployment `embed` in every namespace; records what the API server would have been asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str, str]] = []

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        self.asked.append((kind, namespace, name))
        if kind == "ReplicaSet" and name == "embed-6d9f7":
            refs = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "embed", "controller": True}]
            return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "ownerReferences": refs}}
        if kind == "Deployment" and name == "embed":
            return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "uid": f"d-{namespace}"}}
        return None

    def list_pods(self, namespace: str) -> list[dict[str, Any]]:
        self.asked.append(("PodList", namespace, ""))
        return []


def test_bad_series_are_skipped_and_counted_and_the_rest_recommended(loopback: Callable[[Respond], Loopback]) -> None:
    def labels(namespace: str, container: str, uuid: str) -> dict[str, str]:
        return {"__name__": "DCGM_FI_DEV_FB_USED", "namespace": namespace, "pod": "embed-6d9f7-abcde",
                "container": container, "UUID": uuid, "modelName": "NVIDIA L40S"}  # fmt: skip

    values = [[i * 30, "2048"] for i in range(150)]
    result = [
        {"metric": labels("team-a", "c" * 100, "GPU-1"), "values": values},
        {"metric": labels("team-a", "", "GPU-2"), "values": values},
        {"metric": labels("../kube-system", "server", "GPU-3"), "values": values},
        {"metric": labels("team-b", "server", "GPU-4"), "values": values},
        {"metric": labels("team-c", "server", "GPU-5"), "values": values},
    ]
    matrix = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}).encode()
    empty = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()
    server = loopback(lambda handler, _: send(handler, 200, matrix if "query_range" in handler.path else empty))
    objects = _Objects()
    recommender = Recommender(
        PrometheusClient(server.url, timeout=30), lambda: OwnerResolver(objects), None, RecommenderConfig(dry_run=True)
    )
    report = recommender.run_pass()
    assert report is not None
    assert [o["metadata"]["namespace"] for o in report.objects] == ["team-b", "team-c"]
    assert report.dropped_series == {"invalid container label": 1, "no container label": 1,
                                     "invalid namespace label": 1}  # fmt: skip
    summary = report.as_dict()
    assert summary["droppedSeries"] == report.dropped_series
    assert "'../kube-system'" in summary["droppedSeriesExamples"]["invalid namespace label"][0]
    registry = recommender.metrics.registry
    for reason, count in report.dropped_series.items():
        assert registry.get_sample_value("gpudra_recommender_dropped_series_total", {"reason": reason}) == count
    assert {ns for _, ns, _ in objects.asked} == {"team-b", "team-c"}
