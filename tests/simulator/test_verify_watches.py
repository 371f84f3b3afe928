"""simulator.verify: the control plane's pods and claims kept by the one list+watch loop (`PathListWatch` over the
API server's JSON lines into a `Collection`), and the replay waiting on them for a state."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kubeapi import ListWatch, ListWatchError
from simulator.verify.api import Api, Collection, PathListWatch
from simulator.verify.replay import LiveCluster, ReplayError

from ..kubeapi.fake_listwatch import FakeListWatch, recording_sleep

PODS = "/api/v1/namespaces/default/pods"


def pod(name: str, version: str = "1", node: str = "") -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": version}, "spec": {"nodeName": node}}


class Response:
    """An HTTP answer as urllib3 gives it: `data` for a list, the JSON lines of a watch when iterated."""

    def __init__(self, status: int, body: Any = None, lines: list[dict[str, Any]] | None = None) -> None:
        self.status = status
        self.data = json.dumps(body).encode() if body is not None else b""
        self.lines = [json.dumps(line).encode() + b"\n" for line in lines or []]

    def read(self) -> bytes:
        return self.data

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.lines)

    def release_conn(self) -> None:
        pass


class Pool:
    """Answers each request with the next `Response`, recording the URLs asked."""

    def __init__(self, *answers: Response) -> None:
        self.answers = list(answers)
        self.urls: list[str] = []

    def request(self, method: str, url: str, **_: Any) -> Response:
        self.urls.append(url)
        return self.answers.pop(0)


def api_with(pool: Pool) -> Api:
    api = Api("https://cp", ca=Path("ca.crt"), cert=Path("admin.crt"), key=Path("admin.key"))
    api.pool = pool  # type: ignore[assignment]
    return api


def listed(*items: dict[str, Any], version: str) -> Response:
    return Response(200, {"items": list(items), "metadata": {"resourceVersion": version}})


def test_a_collection_follows_the_api_server_through_an_expired_watch() -> None:
    gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old resource version"}}
    pool = Pool(
        listed(pod("a"), version="5"),
        Response(200, lines=[{"type": "ADDED", "object": pod("b", "6")}, gone]),
        listed(pod("a"), pod("b"), pod("c"), version="9"),
        Response(
            200,
            lines=[
                {"type": "DELETED", "object": pod("a", "10")},
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "12"}}},
            ],
        ),
        Response(200, lines=[]),
    )
    pods = Collection(threading.Condition())
    sleep, slept = recording_sleep()
    loop = ListWatch(PathListWatch(api_with(pool), PODS), pods, "pods", sleep=sleep)
    loop.run(passes=3)
    assert sorted(pods) == ["b", "c"] and slept == [] and loop.status().errors == 0
    watched = [url.split("resourceVersion=")[1].split("&")[0] for url in pool.urls if "watch=1" in url]
    assert watched == ["5", "9", "12"]  # from each list, then from the bookmark without a relist


def test_a_refused_list_or_watch_carries_the_http_status() -> None:
    source = PathListWatch(api_with(Pool(Response(403, {"message": "forbidden"}), Response(500, {"m": "x"}))), PODS)
    with pytest.raises(ListWatchError) as refused:
        source.list()
    assert refused.value.status == 403 and "forbidden" in str(refused.value)
    with pytest.raises(ListWatchError) as broken:
        list(source.watch("7"))
    assert broken.value.status == 500 and "HTTP 500" in str(broken.value)


def live(sources: dict[str, FakeListWatch], timeout: float = 30.0) -> LiveCluster:
    cp = SimpleNamespace(
        server="https://cp", ca_bundle=Path("ca.crt"), client_cert=Path("a.crt"), client_key=Path("a.key"),
        logs=lambda lines: "(the components' logs)",
    )  # fmt: skip
    return LiveCluster(cp, timeout=timeout, source=lambda path: sources[path.rsplit("/", 1)[1]])  # type: ignore[arg-type]


def test_the_replay_waits_for_a_state_the_watches_bring() -> None:
    sources = {"pods": FakeListWatch(idle=True), "resourceclaims": FakeListWatch(idle=True)}
    sources["pods"].lists = [[pod("q")]]
    sources["pods"].watches = [[("ADDED", pod("p", "12")), ("MODIFIED", pod("p", "13", node="n1"))]]
    sources["resourceclaims"].lists = [[]]
    cluster = live(sources)
    try:
        cluster.follow()
        node = cluster.wait(lambda: cluster.pods.get("p", {}).get("spec", {}).get("nodeName") or None, "p bound")
        assert node == "n1" and sorted(cluster.pods) == ["p", "q"] and len(cluster.claims) == 0
    finally:
        cluster.close()


def test_a_failed_watch_ends_the_wait_at_once_naming_the_error() -> None:
    sources = {"pods": FakeListWatch(idle=True), "resourceclaims": FakeListWatch(idle=True)}
    sources["pods"].lists = [[]]
    sources["resourceclaims"].lists = [[]]
    sources["resourceclaims"].watches = [[], ListWatchError("resourceclaims is forbidden", 403)]
    cluster = live(sources, timeout=600.0)
    try:
        cluster.follow()
        with pytest.raises(ReplayError, match="watch on resourceclaims failed: resourceclaims is forbidden"):
            cluster.wait(lambda: None, "a state that never comes")
    finally:
        cluster.close()
