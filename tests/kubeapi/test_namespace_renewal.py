"""`kubeapi.NamespaceCache` renews a namespace ahead, off the admission path (`kubeapi.refresh.BackgroundRefresh`):
past its ttl it is still handed out while one background read renews it; past ttl + stale_seconds a review reads it."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from kubeapi import ApiServerError, NamespaceCache, TemplateResult
from kubeapi.refresh import BackgroundRefresh


class Clock:
    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


class Namespaces:
    """A TemplateWriter that serves Namespace reads, counting them; `gate` holds a read open until set."""

    def __init__(self) -> None:
        self.reads = 0
        self.labels = {"v": "1"}
        self.fail: str | None = None
        self.gate: threading.Event | None = None
        self.entered = threading.Event()

    def get_namespace(self, name: str) -> dict[str, Any] | None:
        self.reads += 1
        self.entered.set()
        gate = self.gate
        if gate is not None:
            assert gate.wait(30)
        if self.fail:
            raise ApiServerError(self.fail)
        return {"metadata": {"name": name, "labels": dict(self.labels)}}

    def ensure_template(self, namespace: str, template: dict[str, Any]) -> TemplateResult:
        raise AssertionError("not used")

    def reachable(self) -> tuple[bool, str]:
        return True, "in memory"


def labels(found: dict[str, Any] | None) -> dict[str, str]:
    assert found is not None
    return dict(found["metadata"]["labels"])


def test_past_its_ttl_a_namespace_is_served_while_one_read_renews_it() -> None:
    api, clock = Namespaces(), Clock()
    cache = NamespaceCache(api, ttl=10, stale_seconds=10, clock=clock)
    assert labels(cache.get("team-a")) == {"v": "1"} and api.reads == 1
    api.labels = {"v": "2"}
    clock.now += 9
    assert labels(cache.get("team-a")) == {"v": "1"} and api.reads == 1  # within its ttl: no read
    clock.now += 2
    api.gate = threading.Event()  # the renewal hangs until released (a loaded API server)
    for _ in range(10):  # served as it was, none waiting, one read
        assert labels(cache.get("team-a")) == {"v": "1"}
    assert api.entered.wait(30) and cache.waiting == 0
    api.gate.set()
    assert cache.renewals.wait_idle(30)
    assert api.reads == 2
    assert labels(cache.get("team-a")) == {"v": "2"}  # what the renewal read


def test_past_its_stale_bound_a_review_reads_it_and_a_failed_renewal_kept_it_until_then() -> None:
    api, clock = Namespaces(), Clock()
    cache = NamespaceCache(api, ttl=10, stale_seconds=10, clock=clock)
    cache.get("team-a")
    api.fail = "could not read Namespace team-a within 2s"
    clock.now += 15
    assert labels(cache.get("team-a")) == {"v": "1"}
    assert cache.renewals.wait_idle(30) and api.reads == 2
    assert labels(cache.get("team-a")) == {"v": "1"}  # the renewal failed: still served, and renewed again
    assert cache.renewals.wait_idle(30) and api.reads == 3
    clock.now += 5  # 20 s after the last good read: the review reads it, and gets the failure
    with pytest.raises(ApiServerError, match="within 2s"):
        cache.get("team-a")


def test_a_negative_stale_bound_is_refused() -> None:
    with pytest.raises(ValueError, match="stale_seconds"):
        NamespaceCache(Namespaces(), stale_seconds=-1)


def test_one_renewal_per_key_at_a_time() -> None:
    refresh = BackgroundRefresh(2)
    release, ran = threading.Event(), []

    def renew(tag: str) -> None:
        ran.append(tag)
        assert release.wait(30)

    assert refresh.submit("a", lambda: renew("a1"))
    assert not refresh.submit("a", lambda: renew("a2"))  # one queued or running already
    assert refresh.submit("b", lambda: renew("b1"))
    assert refresh.pending("a") and refresh.pending("b")
    release.set()
    assert refresh.wait_idle(30)
    assert sorted(ran) == ["a1", "b1"]
    assert refresh.submit("a", lambda: renew("a3"))  # done: a later one runs
    assert refresh.wait_idle(30) and sorted(ran) == ["a1", "a3", "b1"]


def test_a_failed_renewal_frees_its_key_and_an_api_failure_is_one_line(caplog: pytest.LogCaptureFixture) -> None:
    refresh = BackgroundRefresh(1)

    def fail() -> None:
        raise ApiServerError("could not read Namespace a within 2s")

    def bug() -> None:
        raise KeyError("metadata")

    with caplog.at_level("WARNING", logger="gpudra.kubeapi.refresh"):
        assert refresh.submit("a", fail)
        assert refresh.wait_idle(30)
        assert refresh.submit("b", bug)
        assert refresh.wait_idle(30)
    assert not refresh.pending("a") and not refresh.pending("b")
    api, buggy = caplog.records
    assert "within 2s" in api.getMessage() and api.exc_info is None  # expected under load: no traceback
    assert buggy.exc_info is not None  # a bug keeps its traceback
    with pytest.raises(ValueError, match="at least one thread"):
        BackgroundRefresh(0)


def test_reviews_that_waited_for_a_read_without_answer_ask_once_more() -> None:
    from kubeapi import ApiServerUnanswered

    class OnceUnanswered(Namespaces):
        def get_namespace(self, name: str) -> dict[str, Any] | None:
            first = self.reads == 0
            try:
                found = super().get_namespace(name)
            finally:
                self.gate = None  # the next read is answered at once
            if first:
                raise ApiServerUnanswered("could not read Namespace team-a within 2s")
            return found

    api = OnceUnanswered()
    api.gate = threading.Event()
    cache = NamespaceCache(api)
    outcomes: list[Any] = []
    lock = threading.Lock()

    def get() -> None:
        try:
            found: Any = cache.get("team-a")
        except ApiServerError as exc:
            found = exc
        with lock:
            outcomes.append(found)

    threads = [threading.Thread(target=get) for _ in range(5)]
    threads[0].start()
    assert api.entered.wait(30)
    for thread in threads[1:]:
        thread.start()
    while cache.waiting < 4:
        threading.Event().wait(0.01)
    api.gate.set()
    for thread in threads:
        thread.join(30)
    # The first caller's own read timed out: it is refused; the four that waited read once more, one read for all.
    assert api.reads == 2
    refused = [o for o in outcomes if isinstance(o, ApiServerError)]
    assert len(refused) == 1 and isinstance(refused[0], ApiServerUnanswered)
    assert sum(1 for o in outcomes if isinstance(o, dict)) == 4
