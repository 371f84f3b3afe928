"""Policy reloads off the certificate path: a refused set (an alias bomb, a file over the size cap) keeps the last
good set serving, `/readyz` stays ready and says the reload failed, `/metrics` counts it and shows it in a gauge;
a set that translates nothing is logged and shown; a policy load in progress never holds up the periodic
certificate reload."""

from __future__ import annotations

import asyncio
import logging
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from policyengine import PolicySet, load_policies, shipped_policies_dir
from tests.dra.test_yamlio import BOMB
from tests.webhook.test_admission import RecordingApiServer, example, review_body
from webhook.app import create_app
from webhook.metrics import WebhookMetrics
from webhook.policy_reloader import PolicyReloader
from webhook.policy_store import PolicyStore
from webhook.server import ServeSettings, build_app

ROOT = Path(__file__).resolve().parents[2]


def wait_for(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


@pytest.fixture
def policy_dir(tmp_path: Path) -> Path:
    target = tmp_path / "policies"
    shutil.copytree(shipped_policies_dir(), target, ignore=shutil.ignore_patterns("tests"))
    return target


def test_a_bomb_is_refused_the_last_good_set_serves_and_readyz_and_metrics_say_so(policy_dir: Path) -> None:
    settings = ServeSettings(policies=str(policy_dir), reload_seconds=0.05)
    api = RecordingApiServer({"team-a": example("namespace-team-a.yaml")})
    with TestClient(build_app(settings, writer=api)) as client:
        ready = client.get("/readyz")
        assert ready.status_code == 200 and ready.json()["checks"]["policyReload"]["ok"] is True
        assert "gpudra_policy_reload_failing 0.0" in client.get("/metrics").text

        (policy_dir / "bomb.yaml").write_text(BOMB)

        def refused() -> bool:
            return "were refused" in client.get("/readyz").json()["checks"]["policyReload"]["detail"]

        wait_for(refused)
        ready = client.get("/readyz")
        assert ready.status_code == 200 and ready.json()["ready"] is True
        detail = ready.json()["checks"]["policyReload"]["detail"]
        assert "the last good set serves" in detail and "aliases expand to more than" in detail
        metrics = client.get("/metrics").text
        assert "gpudra_policy_reload_failing 1.0" in metrics
        assert 'gpudra_policy_reloads_total{result="failure"} 1.0' in metrics
        assert "gpudra_policies_loaded 6.0" in metrics
        mutated = client.post("/mutate", content=review_body(example("pod-legacy-vram.yaml")))
        assert mutated.json()["response"]["allowed"] is True and mutated.json()["response"]["patch"]

        (policy_dir / "bomb.yaml").unlink()
        wait_for(lambda: "gpudra_policy_reload_failing 0.0" in client.get("/metrics").text)
        assert client.get("/readyz").json()["checks"]["policyReload"]["detail"].startswith("policy set loaded at")


def test_a_set_that_translates_nothing_is_logged_and_shown(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "guardrails.yaml").write_text((ROOT / "policies" / "guardrails.yaml").read_text())
    store: PolicyStore[PolicySet] = PolicyStore(tmp_path, load_policies)
    metrics = WebhookMetrics()
    with caplog.at_level(logging.WARNING, logger="gpudra.webhook.policies"):
        reloader = PolicyReloader(store, 60, metrics)
    assert any("translates nothing" in record.getMessage() for record in caplog.records)
    ok, detail = reloader.readiness()
    assert ok is True and "no policy has a claim" in detail
    assert reloader.idle._value.get() == 1

    (tmp_path / "whole-gpu.yaml").write_text((ROOT / "policies" / "whole-gpu.yaml").read_text())
    assert reloader.reload_once() is True
    assert reloader.idle._value.get() == 0 and "translates nothing" not in reloader.readiness()[1]


def test_a_policy_load_in_progress_does_not_hold_up_the_certificate_reload(policy_dir: Path) -> None:
    loading = threading.Event()
    release = threading.Event()
    loads = 0

    def slow_load(directory: Path) -> PolicySet:
        nonlocal loads
        loads += 1
        if loads > 1:  # every reload after the first load blocks until released
            loading.set()
            release.wait(120)
        return load_policies(directory)

    store: PolicyStore[PolicySet] = PolicyStore(policy_dir, slow_load)
    reloader = PolicyReloader(store, 0.02, WebhookMetrics())
    ticks = 0

    def certificate_reload() -> None:
        nonlocal ticks
        ticks += 1

    app = create_app(
        _Unused(), metrics=WebhookMetrics(), periodic=[certificate_reload], period_seconds=0.02, services=[reloader]
    )
    try:
        with TestClient(app):
            (policy_dir / "extra.yaml").write_text(
                (ROOT / "policies" / "whole-gpu.yaml").read_text().replace("name: whole-gpu", "name: whole-gpu-copy")
            )
            assert loading.wait(60), "the reloader started loading the changed directory"
            seen = ticks
            wait_for(lambda: ticks >= seen + 3)  # the certificate task runs on while the policy load is stuck
            release.set()  # before the shutdown, which would otherwise wait out its bound on the stuck load
    finally:
        release.set()


class _Unused:
    def mutate(self, request: object) -> dict[str, object]:
        raise AssertionError("no review is sent")

    validate = mutate


def test_reloader_stops_with_the_server(policy_dir: Path) -> None:
    store: PolicyStore[PolicySet] = PolicyStore(policy_dir, load_policies)
    reloader = PolicyReloader(store, 0.02, WebhookMetrics())
    reloader.start()
    assert any(t.name == "gpudra-policy-reload" for t in threading.enumerate())
    asyncio.run(asyncio.to_thread(reloader.stop))
    assert reloader._thread is None


def test_after_replaced_runs_on_the_poll_after_a_replacement_only(tmp_path: Path) -> None:
    (tmp_path / "whole-gpu.yaml").write_text((ROOT / "policies" / "whole-gpu.yaml").read_text())
    store: PolicyStore[PolicySet] = PolicyStore(tmp_path, load_policies)
    calls: list[int] = []
    reloader = PolicyReloader(store, 60, WebhookMetrics(), after_replaced=lambda: calls.append(1))
    assert reloader.reload_once() is False and calls == []  # nothing changed
    (tmp_path / "guardrails.yaml").write_text((ROOT / "policies" / "guardrails.yaml").read_text())
    assert reloader.reload_once() is True and calls == []  # not while the old set may still be deciding
    assert reloader.reload_once() is False and calls == [1]
    assert reloader.reload_once() is False and calls == [1]


def test_a_failing_after_replaced_is_logged_and_reloading_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "whole-gpu.yaml").write_text((ROOT / "policies" / "whole-gpu.yaml").read_text())
    store: PolicyStore[PolicySet] = PolicyStore(tmp_path, load_policies)

    def broken() -> None:
        raise RuntimeError("boom")

    reloader = PolicyReloader(store, 60, WebhookMetrics(), after_replaced=broken)
    (tmp_path / "guardrails.yaml").write_text((ROOT / "policies" / "guardrails.yaml").read_text())
    assert reloader.reload_once() is True
    (tmp_path / "gpu-share.yaml").write_text(
        (ROOT / "policies" / "whole-gpu.yaml").read_text().replace("whole-gpu", "w2")
    )
    with caplog.at_level(logging.ERROR, logger="gpudra.webhook.policies"):
        assert reloader.reload_once() is True  # the next set still loads
    assert "after a policy reload" in caplog.text
