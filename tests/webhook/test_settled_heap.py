"""webhook.settled_heap: a serving worker's start-up heap is frozen and young collections made rarer; stopping
puts the process's collector settings back, however many apps ran in it."""

from __future__ import annotations

import gc
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from policyengine import shipped_policies_dir
from tests.webhook.test_admission import RecordingApiServer
from webhook.server import ServeSettings, build_app
from webhook.settled_heap import YOUNG_THRESHOLD, SettledHeap


@pytest.fixture
def collector_settings() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    gc.unfreeze()
    yield before
    gc.unfreeze()
    gc.set_threshold(*before)


def test_start_freezes_the_heap_and_raises_only_the_young_threshold(collector_settings: tuple[int, int, int]) -> None:
    heap = SettledHeap()
    heap.start()
    assert gc.get_freeze_count() > 1000  # the test process's modules and objects
    assert gc.get_threshold() == (YOUNG_THRESHOLD, *collector_settings[1:])
    heap.stop()
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == collector_settings


def test_the_last_of_several_stops_restores(collector_settings: tuple[int, int, int]) -> None:
    first, second = SettledHeap(), SettledHeap(young_threshold=5000)
    first.start()
    second.start()  # already settled: nothing changes
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD
    first.stop()
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD and gc.get_freeze_count() > 0
    second.stop()
    second.stop()  # stopping twice is a no-op
    assert gc.get_threshold() == collector_settings and gc.get_freeze_count() == 0


def test_a_threshold_must_be_positive() -> None:
    with pytest.raises(ValueError, match="above 0"):
        SettledHeap(young_threshold=0)


def test_a_served_app_settles_its_heap_and_puts_it_back_at_shutdown(
    tmp_path: Path, collector_settings: tuple[int, int, int]
) -> None:
    policies = tmp_path / "policies"
    shutil.copytree(shipped_policies_dir(), policies, ignore=shutil.ignore_patterns("tests"))
    app = build_app(ServeSettings(policies=str(policies)), writer=RecordingApiServer())
    with TestClient(app) as client:  # the lifespan starts the services
        assert client.get("/readyz").status_code == 200
        assert gc.get_freeze_count() > 0 and gc.get_threshold()[0] == YOUNG_THRESHOLD
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == collector_settings


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: freed only by the cyclic collector


def test_resettle_collects_garbage_the_frozen_heap_held(collector_settings: tuple[int, int, int]) -> None:
    import weakref

    node = _Node()
    alive = weakref.ref(node)
    heap = SettledHeap()
    heap.start()  # `node` is frozen with the rest
    del node
    gc.collect()
    assert alive() is not None  # frozen: a collection does not look at it
    heap.resettle()
    assert alive() is None and gc.get_freeze_count() > 0
    heap.stop()
    SettledHeap().resettle()  # not started: nothing to do
    assert gc.get_freeze_count() == 0
