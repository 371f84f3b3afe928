"""kubeapi.listwatch: the one list+watch loop (relists, watches resumed from bookmarks, 410 Gone, backoff, a resource
not served, a bug never ending the loop, the thread) and its status, tested once for every cache."""

from __future__ import annotations

from typing import Any

import pytest

from kubeapi import ListWatch, ListWatchError, LoopEvent

from .fake_listwatch import FakeListWatch, recording_sleep


def obj(name: str, version: str = "1") -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": version}}


class Recorder:
    """A cache that records what the loop told it."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []
        self.fail_replace = 0  # the next lists that raise a bug

    def replace(self, items: list[dict[str, Any]]) -> None:
        if self.fail_replace:
            self.fail_replace -= 1
            raise KeyError("a bug in replace")
        self.seen.append(("replace", [i["metadata"]["name"] for i in items]))

    def apply(self, event: str, obj: dict[str, Any]) -> None:
        self.seen.append((event, obj["metadata"]["name"]))

    def absent(self) -> None:
        self.seen.append(("absent", None))


def make(source: FakeListWatch, **options: Any) -> tuple[ListWatch, Recorder, list[tuple[LoopEvent, str]], list[float]]:
    cache = Recorder()
    told: list[tuple[LoopEvent, str]] = []
    sleep, slept = recording_sleep()
    on_event = lambda e, d: told.append((e, d))  # noqa: E731
    loop = ListWatch(source, cache, "widgets", on_event=on_event, sleep=sleep, clock=lambda: 1000.0, **options)
    return loop, cache, told, slept


def test_a_list_then_events_and_a_closed_watch_resumes_from_the_last_version_seen() -> None:
    source = FakeListWatch()
    source.lists = [[obj("a")]]
    bookmark = {"metadata": {"resourceVersion": "40"}}
    source.watches = [[("ADDED", obj("b", "12")), ("DELETED", obj("a", "13")), ("BOOKMARK", bookmark)], []]
    loop, cache, told, slept = make(source)
    assert loop.status().synced is False and loop.status().served is None
    loop.run(passes=2)
    assert source.calls == ["list", "watch@11", "watch@40"]  # no relist: from the bookmark's version
    assert cache.seen == [("replace", ["a"]), ("ADDED", "b"), ("DELETED", "a")]  # a bookmark is never applied
    assert told == [("list", ""), ("restart", "closed"), ("restart", "closed")] and slept == []
    status = loop.status()
    assert status.synced and status.served and not status.failing and not status.watching
    assert (status.restarts, status.errors, status.last_sync) == (2, 0, 1000.0)


@pytest.mark.parametrize(
    "expired",
    [
        ListWatchError("too old resource version", 410),
        [("ERROR", {"kind": "Status", "code": 410, "message": "too old resource version"})],
    ],
)
def test_an_expired_watch_relists_at_once(expired: Any) -> None:
    source = FakeListWatch()
    source.lists = [[obj("a")], [obj("b")]]
    source.watches = [expired]
    loop, cache, told, slept = make(source)
    loop.run(passes=2)
    assert source.calls == ["list", "watch@11", "list", "watch@12"] and slept == []
    assert cache.seen == [("replace", ["a"]), ("replace", ["b"])]
    assert ("restart", "expired") in told and not any(e == "error" for e, _ in told)
    assert loop.status().errors == 0 and not loop.status().failing


def test_failures_back_off_doubling_jittered_and_a_success_resets() -> None:
    source = FakeListWatch()
    down = ListWatchError("connection refused")
    source.lists = [[obj("a")], down, down, down, [obj("a")], down]
    source.watches = [[("ERROR", {"code": 500, "message": "watch broke"})]]
    loop, cache, told, slept = make(source, backoff=(1.0, 4.0))
    loop.run(passes=4)
    assert all(0.8 * b <= s <= 1.2 * b for s, b in zip(slept, [1, 2, 4, 4], strict=True))
    status = loop.status()
    assert status.failing and status.errors == 4 and status.last_error == "connection refused"
    assert told.count(("error", "list")) == 3 and told.count(("error", "watch")) == 1
    assert ("restart", "error") in told
    loop.run(passes=1)  # back: a list clears the failure; the watch ends cleanly
    assert not loop.status().failing and cache.seen[-1] == ("replace", ["a"])
    slept.clear()
    source.watches = [ListWatchError("broke again")]
    loop.run(passes=1)  # a new run starts its backoff at the first delay
    assert len(slept) == 1 and 0.8 <= slept[0] <= 1.2


def test_a_resource_not_served_is_asked_for_again_later_without_an_error() -> None:
    source = FakeListWatch()
    source.lists = [ListWatchError("404 Not Found", 404), [obj("a")]]
    loop, cache, told, slept = make(source, not_served_seconds=60.0)
    loop.run(passes=1)
    assert slept == [60.0] and cache.seen == [("absent", None)] and told == [("absent", "")]
    status = loop.status()
    assert status.served is False and status.errors == 0 and not status.failing
    loop.run(passes=1)
    assert loop.status().served is True


def test_without_a_not_served_delay_a_404_is_a_failure() -> None:
    source = FakeListWatch()
    source.lists = [ListWatchError("404 Not Found", 404)]
    loop, cache, told, slept = make(source)
    loop.run(passes=1)
    assert cache.seen == [] and told == [("error", "list")] and len(slept) == 1
    assert loop.status().served is None and "404" in loop.status().last_error


def test_a_bug_in_the_source_or_the_cache_never_ends_the_loop() -> None:
    source = FakeListWatch()
    source.lists = [[obj("a")], [obj("a")], [obj("b")]]
    source.watches = [[("ADDED", RuntimeError("bug"))]]
    loop, cache, told, slept = make(source)
    loop.run(passes=1)
    assert loop.status().last_error == "RuntimeError: bug" and told[-2:] == [("error", "watch"), ("restart", "error")]
    cache.fail_replace = 1
    loop.run(passes=2)
    assert source.calls == ["list", "watch@11", "list", "list", "watch@13"] and len(slept) == 2
    assert "KeyError" in loop.status().last_error and cache.seen[-1] == ("replace", ["b"])


def test_the_thread_starts_and_stop_interrupts_the_running_watch() -> None:
    source = FakeListWatch(idle=True)
    source.lists = [[obj("a")]]
    loop = ListWatch(source, Recorder(), "widgets", backoff=(0.01, 0.01))
    loop.start()
    thread = loop._thread
    assert thread is not None and source.watching.wait(10)
    status = loop.status()
    assert status.synced and status.watching
    loop.stop(timeout=10)
    assert not thread.is_alive() and source.calls == ["list", "watch@11"]
    status = loop.status()
    assert status.errors == 0 and not status.watching  # an interrupted watch is no failure
