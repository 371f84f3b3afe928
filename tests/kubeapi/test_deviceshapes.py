"""kubeapi.deviceshapes: the cluster's device shapes kept by two list+watch loops, through failures, with readiness."""

from __future__ import annotations

import threading
from typing import Any

from dra.gpus import device_classes
from dra.shapes import SatisfiabilityChecker
from kubeapi import ListWatchError
from kubeapi.deviceshapes import DeviceShapeCache
from tests.dra.shapes._clusters import clone, node_slices
from webhook.cluster_view import device_shape_cache
from webhook.metrics import WebhookMetrics

from .fake_listwatch import FakeListWatch, recording_sleep

L40S = node_slices("L40S", "l40s-0")
H100 = node_slices("h100-dynamic", "h100-0")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(
    slices: FakeListWatch, classes: FakeListWatch, **options: Any
) -> tuple[DeviceShapeCache, list[str], list[float], Clock]:
    events: list[str] = []
    sleep, slept = recording_sleep()
    clock = Clock()
    cache = DeviceShapeCache(slices, classes, on_event=events.append, sleep=sleep, clock=clock, **options)
    return cache, events, slept, clock


def listing(*items: list[dict[str, Any]] | ListWatchError) -> FakeListWatch:
    source = FakeListWatch()
    source.lists = list(items)
    return source


def test_not_ready_until_both_lists_then_the_shapes_serve() -> None:
    slices = listing(L40S + clone(L40S, "l40s-1") + H100)
    classes = listing(device_classes())
    cache, events, _, _ = make(slices, classes)
    cache._started = 1000.0  # as `start` records it; the loops are run by hand below
    ok, detail = cache.readiness()
    assert not ok and detail == "waiting for the first list of ResourceSlices and DeviceClasses"
    assert cache.shapes().shapes == ()
    cache.slice_loop.run(passes=1)
    ok, detail = cache.readiness()
    assert not ok and detail == "waiting for the first list of DeviceClasses"
    cache.class_loop.run(passes=1)
    shapes = cache.shapes()
    assert sorted(s.nodes for s in shapes.shapes) == [1, 2] and len(shapes.classes) == 2
    assert cache.readiness() == (
        True,
        f"2 device shape(s) on 3 node(s), 2 DeviceClasses, generation {shapes.generation}",
    )
    assert events.count("change") == 2 and events.count("list") == 2
    # A claim checked against them: 4 L40S fit, 8 fit the H100 node only.
    whole = {"metadata": {"name": "c"}, "spec": {"devices": {"requests": [
        {"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 8}}]}}}  # fmt: skip
    verdict = SatisfiabilityChecker().check(whole, shapes)
    assert len(verdict.together) == 1 and shapes.shape(verdict.together[0]).example == "h100-0"


def test_watch_events_fold_one_slice_at_a_time() -> None:
    t4 = node_slices("T4", "t4-0")
    slices = listing(L40S)
    slices.watches = [
        [
            ("ADDED", t4[0]),
            ("BOOKMARK", {"metadata": {"resourceVersion": "40"}}),
            ("ADDED", clone(L40S, "l40s-1")[0]),
            ("DELETED", L40S[0]),
            ("MODIFIED", {"metadata": {}}),  # nameless: ignored, never a crash
        ]
    ]
    cache, events, _, _ = make(slices, listing(device_classes()))
    seen: list[tuple[int, list[int]]] = []
    original = cache._apply

    def recording(kind: bool, event: str, obj: dict[str, Any]) -> None:
        original(kind, event, obj)
        s = cache.shapes()
        seen.append((s.generation, sorted(x.nodes for x in s.shapes)))

    cache._apply = recording  # type: ignore[method-assign,assignment]
    cache.slice_loop.run(passes=1)
    assert slices.calls == ["list", "watch@11"]
    first = seen[0][0]
    assert seen == [(first, [1, 1]), (first, [1, 2]), (first, [1, 1]), (first, [1, 1])]
    assert events == ["change", "list", "change", "restart"]
    assert {s.example for s in cache.shapes().shapes} == {"l40s-1", "t4-0"}


def test_api_errors_keep_the_last_good_shapes() -> None:
    down = ListWatchError("connection refused")
    slices = listing(L40S, down, down, H100)
    slices.watches = [ListWatchError("watch broke: connection reset")]
    cache, events, slept, _ = make(slices, listing(device_classes()), backoff=(1.0, 4.0))
    cache.class_loop.run(passes=1)
    cache.slice_loop.run(passes=3)
    (shape,) = cache.shapes().shapes
    assert shape.example == "l40s-0" and events.count("error") == 3
    assert len(slept) == 3 and slept[0] < slept[2]  # backing off (with jitter)
    ok, detail = cache.readiness()
    assert ok and detail.startswith("warning: serving the last good shapes") and "connection refused" in detail
    cache.slice_loop.run(passes=1)  # back: the whole list replaces what was folded
    (shape,) = cache.shapes().shapes
    assert shape.example == "h100-0" and not cache.readiness()[1].startswith("warning")


def test_a_watch_too_old_relists_and_an_unchanged_relist_keeps_the_generation() -> None:
    slices = listing(L40S, L40S)
    slices.watches = [ListWatchError("too old", 410)]
    cache, events, _, _ = make(slices, listing(device_classes()))
    cache.slice_loop.run(passes=1)
    generation = cache.shapes().generation
    cache.slice_loop.run(passes=1)
    assert slices.calls[:3] == ["list", "watch@11", "list"]
    assert cache.shapes().generation == generation and events.count("change") == 1


def test_a_cluster_without_resource_slices_has_no_shapes_and_says_so() -> None:
    slices = listing(L40S, ListWatchError("404 Not Found", 404))
    slices.watches = [ListWatchError("the resource went away")]
    cache, events, slept, _ = make(slices, listing(device_classes()))
    cache.slice_loop.run(passes=2)
    assert cache.shapes().shapes == () and "absent" in events and slept[-1] == 60.0
    ok, detail = cache.readiness()
    assert ok and detail == "the API server does not serve resource.k8s.io/v1: claims are not checked against devices"


def test_ready_after_the_grace_even_if_never_listed() -> None:
    slices = listing(ListWatchError("connection refused"))
    cache, _, _, clock = make(slices, listing(device_classes()), ready_after=30.0)
    cache._started = clock.now
    cache.class_loop.run(passes=1)
    cache.slice_loop.run(passes=1)
    ok, detail = cache.readiness()
    assert (
        not ok
        and detail == "waiting for the first list of ResourceSlices (last error: ResourceSlices: connection refused)"
    )
    clock.now += 31
    ok, detail = cache.readiness()
    assert ok and detail.startswith("warning: ResourceSlices not listed 30s after start: claims are not checked")


def test_malformed_slices_are_skipped_and_the_view_is_bounded() -> None:
    bad = {"metadata": {"name": "bad"}, "spec": ["not", "a", "spec"]}
    slices = listing([bad, *L40S, *H100, *node_slices("T4", "t4-0")])
    cache, _, _, _ = make(slices, listing(device_classes()), max_shapes=2)
    cache.slice_loop.run(passes=1)
    cache.class_loop.run(passes=1)
    shapes = cache.shapes()
    assert len(shapes.shapes) == 2 and shapes.overflow == 1
    ok, detail = cache.readiness()
    assert ok and detail.startswith("warning: a partial view (more distinct device shapes than the cap of 2")


def test_the_webhook_constructor_counts_events_and_shapes() -> None:
    metrics = WebhookMetrics()
    slices = listing(L40S + clone(L40S, "l40s-1") + H100)
    cache = device_shape_cache(None, metrics, slices=slices, classes=listing(device_classes()))
    cache.slice_loop.run(passes=1)
    value = metrics.registry.get_sample_value
    assert value("gpudra_device_shape_cache_events_total", {"event": "list"}) == 1
    assert value("gpudra_device_shape_cache_events_total", {"event": "change"}) == 1
    assert value("gpudra_device_shapes", {"what": "shapes"}) == 2
    assert value("gpudra_device_shapes", {"what": "nodes"}) == 3
    assert device_shape_cache(None, slices=listing(), classes=listing()).shapes().shapes == ()


def test_readers_see_the_old_shapes_or_the_new_never_a_half_relist() -> None:
    old = [s for n in range(40) for s in clone(L40S, f"old-{n}")]
    new = [s for n in range(40) for s in clone(H100, f"new-{n}")]
    slices = listing(old, new)
    slices.watches = [ListWatchError("too old", 410)]
    cache, _, _, _ = make(slices, listing(device_classes()))
    cache.slice_loop.run(passes=1)
    seen: set[tuple[tuple[str, int], ...]] = set()
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            seen.add(tuple((s.example.split("-")[0], s.nodes) for s in cache.shapes().shapes))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        cache.slice_loop.run(passes=1)  # the relist: 360 slices folded off to the side, then swapped in
    finally:
        done.set()
        reader.join()
    seen.add(tuple((s.example.split("-")[0], s.nodes) for s in cache.shapes().shapes))
    assert seen <= {(("old", 40),), (("new", 40),)} and (("new", 40),) in seen
