"""webhook.warm_up: each worker decides once before serving, with no side effect, and a failure never stops it."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from policyengine import PolicySet, load_policies, shipped_policies_dir
from policyengine.translate import translate
from tests.webhook.test_admission import RecordingApiServer
from webhook.server import ServeSettings, build_app
from webhook.warm_up import DecisionWarmUp, warm_up_pod


def test_the_warm_up_pod_takes_the_claim_path_of_a_legacy_gpu_pod() -> None:
    policies = load_policies()
    pod = warm_up_pod()
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": pod["metadata"]["namespace"]}}
    translation = translate(pod, policies.evaluate(pod, namespace, {"operation": "CREATE"}))
    assert translation.templates, "the warm-up pod must reach the claim (the costly first-use path)"
    warm = DecisionWarmUp(lambda: policies)
    warm.start()
    assert warm.done


def test_a_failed_warm_up_is_logged_and_does_not_stop_the_worker(caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> PolicySet:
        raise RuntimeError("no policies")

    warm = DecisionWarmUp(broken)
    with caplog.at_level(logging.WARNING, logger="gpudra.webhook"):
        warm.start()
    assert not warm.done and "start-up decision failed" in caplog.text


def test_the_app_warms_up_at_start_without_api_calls_or_counted_reviews(tmp_path: Path) -> None:
    policies = tmp_path / "policies"
    shutil.copytree(shipped_policies_dir(), policies, ignore=shutil.ignore_patterns("tests"))
    api = RecordingApiServer()
    app = build_app(ServeSettings(policies=str(policies)), writer=api)
    with TestClient(app) as client:  # runs the lifespan: the warm-up decides here
        metrics = client.get("/metrics").text
    assert api.templates == {} and api.namespace_reads == 0
    assert not [line for line in metrics.splitlines() if line.startswith("gpudra_admission_reviews_total{")]
