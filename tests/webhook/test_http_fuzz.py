"""/mutate and /validate fuzzed over HTTP: any JSON anywhere in an AdmissionReview (the review's own fields and the
pod's) is answered with 200 (an AdmissionReview naming the uid) or a 4xx naming the problem, never a 5xx or a
traceback, and the server keeps answering."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from policyengine import shipped_policies_dir
from tests.webhook.test_admission import RecordingApiServer, example, review_body
from webhook.server import ServeSettings, build_app

# Besides arbitrary values, the ones that broke gpudra before (empty or invalid names, huge or odd quantities).
_EDGE_VALUES: list[Any] = ["", "Main", "a" * 64, "1e308", "2Ki", "-1", "0.5", 2**70, -1, 1e308, None, [], {}]
_EDGES = st.sampled_from(_EDGE_VALUES)
_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20) | _EDGES
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
# Where a hostile or broken client can put something unexpected: the review's envelope and the pod's fields.
_PATHS: list[tuple[str | int, ...]] = [
    ("apiVersion",), ("kind",), ("request",), ("request", "uid"), ("request", "kind"), ("request", "operation"),
    ("request", "namespace"), ("request", "dryRun"), ("request", "object"), ("request", "oldObject"),
    ("request", "userInfo"), ("request", "object", "metadata"), ("request", "object", "metadata", "annotations"),
    ("request", "object", "spec"), ("request", "object", "spec", "containers"),
    ("request", "object", "spec", "containers", 0), ("request", "object", "spec", "containers", 0, "name"),
    ("request", "object", "spec", "containers", 0, "resources"),
    ("request", "object", "spec", "containers", 0, "resources", "limits"),
    ("request", "object", "spec", "resourceClaims"),
]  # fmt: skip


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    del tmp_path_factory
    settings_ = ServeSettings(policies=str(shipped_policies_dir()), max_body_bytes=64 * 1024)
    api = RecordingApiServer({"team-a": example("namespace-team-a.yaml")})
    return TestClient(build_app(settings_, writer=api), raise_server_exceptions=False)


def _set(doc: Any, path: tuple[str | int, ...], value: Any) -> Any:
    doc = copy.deepcopy(doc)
    target = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return doc


BASE = json.loads(review_body(example("pod-legacy-vram.yaml"), uid="fuzz"))


def _check(client: TestClient, endpoint: str, body: bytes) -> None:
    response = client.post(endpoint, content=body, headers={"Content-Type": "application/json"})
    assert response.status_code in (200, 400, 413, 422), (response.status_code, response.text[:300])
    answer = response.json()
    if response.status_code == 200:
        assert answer["kind"] == "AdmissionReview" and isinstance(answer["response"]["allowed"], bool)
        status = answer["response"].get("status") or {}
        assert status.get("code", 200) != 500, status
    else:
        assert answer.get("error"), answer


def test_every_known_edge_value_at_every_path(client: TestClient) -> None:
    for path in _PATHS:
        for value in _EDGE_VALUES:
            for endpoint in ("/mutate", "/validate"):
                _check(client, endpoint, json.dumps(_set(BASE, path, value)).encode())


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(_PATHS), value=_JSON, endpoint=st.sampled_from(["/mutate", "/validate"]))
def test_any_value_anywhere_is_a_review_or_a_4xx(client: TestClient, path: tuple[str | int, ...], value: Any,
                                                 endpoint: str) -> None:  # fmt: skip
    _check(client, endpoint, json.dumps(_set(BASE, path, value)).encode())


def test_the_server_still_answers_after_the_fuzz(client: TestClient) -> None:
    assert client.get("/healthz").status_code == 200
    ok = client.post("/mutate", content=review_body(example("pod-legacy-vram.yaml"), uid="after"))
    assert ok.status_code == 200 and ok.json()["response"]["uid"] == "after"
