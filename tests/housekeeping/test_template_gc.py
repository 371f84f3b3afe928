"""Template collection: which of gpudra's templates may go, and how a pass and the controller loop behave."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from housekeeping import MANAGED_SELECTOR, collect, run_forever, unused_templates
from kubeapi import LAST_USED_ANNOTATION, ApiServerError

NOW = dt.datetime(2026, 12, 3, 12, 0, tzinfo=dt.UTC)
IDLE = dt.timedelta(minutes=10)


def _stamp(minutes_ago: float) -> str:
    return (NOW - dt.timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def template(name: str, namespace: str = "team-a", *, created: float = 60, used: float | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "resourceVersion": f"rv-{name}",
        "creationTimestamp": _stamp(created),
    }
    if used is not None:
        metadata["annotations"] = {LAST_USED_ANNOTATION: _stamp(used)}
    return {"metadata": metadata}


def pod(namespace: str, *templates: str) -> dict[str, Any]:
    claims = [{"name": f"c{i}", "resourceClaimTemplateName": t} for i, t in enumerate(templates)]
    return {"metadata": {"namespace": namespace}, "spec": {"resourceClaims": claims}}


class Store:
    """An in-memory API server for the three calls collection makes; records their order."""

    def __init__(self, templates: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
        self.templates = {(t["metadata"]["namespace"], t["metadata"]["name"]): t for t in templates}
        self.pods = pods
        self.calls: list[str] = []
        self.fail_lists = 0

    def list_templates(self, label_selector: str) -> list[dict[str, Any]]:
        self.calls.append(f"list templates {label_selector}")
        if self.fail_lists:
            self.fail_lists -= 1
            raise ApiServerError("could not list ResourceClaimTemplates: connection refused")
        return list(self.templates.values())

    def list_pods(self) -> list[dict[str, Any]]:
        self.calls.append("list pods")
        return self.pods

    def delete_template(self, namespace: str, name: str, resource_version: str) -> bool:
        self.calls.append(f"delete {namespace}/{name}")
        current = self.templates.get((namespace, name))
        if current is None or current["metadata"]["resourceVersion"] != resource_version:
            return False
        del self.templates[(namespace, name)]
        return True


def test_in_use_recent_and_undated_templates_stay() -> None:
    templates = [
        template("used"),
        template("fresh", created=2),
        template("reused", created=600, used=3),
        template("idle", created=600, used=30),
        {"metadata": {"name": "undated", "namespace": "team-a"}},
        template("used", namespace="team-b"),  # same name, but no pod in team-b names it
    ]
    gone, report = unused_templates(templates, [pod("team-a", "used")], now=NOW, min_idle=IDLE)
    assert [(t["metadata"]["namespace"], t["metadata"]["name"]) for t in gone] == [
        ("team-a", "idle"),
        ("team-b", "used"),
    ]
    assert report.in_use == 1 and report.recently_used == 3


def test_a_pass_lists_templates_before_pods_and_deletes_with_the_listed_version() -> None:
    store = Store([template("a"), template("b")], [pod("team-a", "a")])
    report = collect(store, min_idle=IDLE, now=lambda: NOW)
    assert store.calls == [f"list templates {MANAGED_SELECTOR}", "list pods", "delete team-a/b"]
    assert report.deleted == ["team-a/b"] and report.in_use == 1 and set(store.templates) == {("team-a", "a")}
    assert MANAGED_SELECTOR == "app.kubernetes.io/managed-by=gpudra"


def test_a_template_changed_since_the_list_stays() -> None:
    store = Store([template("b")], [])

    def stamped_meanwhile(label_selector: str) -> list[dict[str, Any]]:
        listed = [dict(t, metadata=dict(t["metadata"])) for t in Store.list_templates(store, label_selector)]
        store.templates[("team-a", "b")]["metadata"]["resourceVersion"] = "rv-after-stamp"
        return listed

    store.list_templates = stamped_meanwhile  # type: ignore[method-assign]
    report = collect(store, min_idle=IDLE, now=lambda: NOW)
    assert report.deleted == [] and report.changed_since_listed == ["team-a/b"]
    assert ("team-a", "b") in store.templates


def test_dry_run_deletes_nothing() -> None:
    store = Store([template("b")], [])
    report = collect(store, min_idle=IDLE, dry_run=True, now=lambda: NOW)
    assert report.deleted == ["team-a/b"] and ("team-a", "b") in store.templates
    assert not any(c.startswith("delete") for c in store.calls)


def test_the_loop_backs_off_on_api_errors_and_recovers() -> None:
    store = Store([template("b", created=60 * 24 * 365)], [])  # the loop reads the real clock
    store.fail_lists = 3
    sleeps: list[float] = []
    passes: list[tuple[bool, str | None]] = []
    run_forever(
        store,
        interval_seconds=30,
        min_idle=IDLE,
        on_pass=lambda report, error: passes.append((report is not None, error)),
        sleep=sleeps.append,
        passes=5,
    )
    assert sleeps == [5.0, 10.0, 20.0, 30.0, 30.0]  # doubling up to the interval, then the interval after success
    assert [ok for ok, _ in passes] == [False, False, False, True, True]
    assert passes[0][1] is not None and "connection refused" in passes[0][1]
    assert store.templates == {}


def test_an_unexpected_error_is_not_swallowed() -> None:
    class Broken(Store):
        def list_pods(self) -> list[dict[str, Any]]:
            raise RuntimeError("bug")

    with pytest.raises(RuntimeError):
        run_forever(Broken([], []), interval_seconds=1, min_idle=IDLE, sleep=lambda s: None, passes=1)


def test_a_timestamp_without_a_zone_reads_as_utc_and_garbage_as_none() -> None:
    naive = template("naive", created=600)
    naive["metadata"]["annotations"] = {LAST_USED_ANNOTATION: "2026-12-03T11:58:00"}  # 2 min before NOW, no zone
    garbage = template("garbage", created=600)
    garbage["metadata"]["annotations"] = {LAST_USED_ANNOTATION: "yesterday"}
    gone, report = unused_templates([naive, garbage], [], now=NOW, min_idle=IDLE)
    assert [t["metadata"]["name"] for t in gone] == ["garbage"] and report.recently_used == 1


@pytest.mark.parametrize("seconds", [0, 30, 59, 89])
def test_an_idle_bound_below_the_stamp_resolution_is_refused(seconds: int) -> None:
    # A template reused 59 s ago carries a 59 s old stamp (re-stamped once a minute): a 30 s bound would delete it
    # while the pod it was just handed to is being persisted.
    store = Store([template("fresh", created=1, used=seconds / 60 - 0.01)], [])
    with pytest.raises(ValueError, match="min_idle must be at least 90 s"):
        collect(store, min_idle=dt.timedelta(seconds=seconds), now=lambda: NOW)
    with pytest.raises(ValueError, match="min_idle must be at least 90 s"):
        run_forever(store, interval_seconds=30, min_idle=dt.timedelta(seconds=seconds), sleep=lambda s: None, passes=1)
    assert "fresh" in {name for _, name in store.templates}
