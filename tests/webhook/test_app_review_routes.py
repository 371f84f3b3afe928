"""The review endpoints answered before FastAPI (`webhook.app.WebhookApp`) behave as routed ones did: other methods
get 405, other paths 404, the probes and metrics still go through FastAPI, and a review answered on the fast path is
counted in the latency histogram."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from policyengine import shipped_policies_dir
from tests.webhook.test_admission import RecordingApiServer, example, review_body
from webhook.app import WebhookApp
from webhook.server import ServeSettings, build_app


@pytest.fixture
def app(tmp_path: Path) -> WebhookApp:
    policies = tmp_path / "policies"
    shutil.copytree(shipped_policies_dir(), policies, ignore=shutil.ignore_patterns("tests"))
    built = build_app(ServeSettings(policies=str(policies), enable_echo=True), writer=RecordingApiServer())
    assert isinstance(built, WebhookApp)
    return built


def test_only_post_reaches_the_review_paths(app: WebhookApp) -> None:
    assert set(app.reviews) == {"/mutate", "/validate", "/echo", "/echo-patch"}
    with TestClient(app) as client:
        for path in app.reviews:
            assert client.get(path).status_code == 405
            assert client.put(path, content=b"{}").status_code == 405
        assert client.post("/mutate/extra", content=b"{}").status_code == 404
        assert client.get("/healthz").json() == {"status": "ok"}


def test_fast_path_reviews_are_answered_and_measured(app: WebhookApp) -> None:
    with TestClient(app) as client:
        resp = client.post("/mutate", content=review_body(example("pod-legacy-vram.yaml"), uid="fast"))
        assert resp.status_code == 200 and resp.headers["content-type"] == "application/json"
        assert resp.json()["response"]["uid"] == "fast" and resp.json()["response"]["allowed"] is True
        client.post("/echo", content=review_body(example("pod-legacy-vram.yaml"), uid="e"))
        metrics = client.get("/metrics").text
    counts = [line for line in metrics.splitlines() if "_count{" in line and 'endpoint="mutate"' in line]
    assert counts and float(counts[0].rsplit(" ", 1)[1]) == 1.0, counts
    assert any('endpoint="echo"' in line and "_count{" in line for line in metrics.splitlines())
