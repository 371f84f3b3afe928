"""kubeapi.deviceclasses: the KEP-5004 mapping read from DeviceClasses, and the list+watch cache that keeps it."""

from __future__ import annotations

import copy
from typing import Any

from kubeapi import ListWatchError
from kubeapi.deviceclasses import DeviceClassCache, extended_resource_mapping
from webhook.cluster_view import device_class_cache
from webhook.metrics import WebhookMetrics

from .fake_listwatch import FakeListWatch, recording_sleep


def device_class(name: str, resource: str | None = None, created: str = "2026-12-01T00:00:00Z") -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}
    if resource is not None:
        spec["extendedResourceName"] = resource
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name, "creationTimestamp": created, "resourceVersion": "7"},
        "spec": spec,
    }


def test_the_mapping_names_each_extended_resource_once() -> None:
    classes = [
        device_class("gpu.nvidia.com", "nvidia.com/gpu"),
        device_class("mig.nvidia.com"),
        device_class("mig-1g10gb", "nvidia.com/mig-1g.10gb"),
        {"metadata": {}},  # no name: ignored
        "not an object",
    ]
    assert extended_resource_mapping(classes) == {  # type: ignore[arg-type]
        "nvidia.com/gpu": "gpu.nvidia.com",
        "nvidia.com/mig-1g.10gb": "mig-1g10gb",
    }


def test_of_two_classes_for_one_resource_the_newer_wins_then_the_lower_name() -> None:
    """As k8s.io/dynamic-resource-allocation v0.37.2 deviceclass/extendedresourcecache decides a clash."""
    old = device_class("gpu.nvidia.com", "nvidia.com/gpu", "2026-01-01T00:00:00Z")
    new = device_class("gpu-migrated", "nvidia.com/gpu", "2026-06-01T00:00:00Z")
    assert extended_resource_mapping([old, new]) == {"nvidia.com/gpu": "gpu-migrated"}
    assert extended_resource_mapping([new, old]) == {"nvidia.com/gpu": "gpu-migrated"}
    tie = device_class("a-gpu", "nvidia.com/gpu", "2026-06-01T00:00:00Z")
    assert extended_resource_mapping([new, tie]) == {"nvidia.com/gpu": "a-gpu"}
    assert extended_resource_mapping([tie, new]) == {"nvidia.com/gpu": "a-gpu"}


def make(source: FakeListWatch, **options: Any) -> tuple[DeviceClassCache, list[str], list[float]]:
    events: list[str] = []
    sleep, slept = recording_sleep()
    cache = DeviceClassCache(source, on_event=events.append, sleep=sleep, clock=lambda: 1000.0, **options)
    return cache, events, slept


def test_never_listed_means_no_mapping_and_still_ready() -> None:
    cache, _, _ = make(FakeListWatch())
    assert dict(cache.mapping()) == {}
    ok, detail = cache.readiness()
    assert ok and detail.startswith("warning: DeviceClasses not listed yet")


def test_list_then_watch_events_change_the_mapping() -> None:
    source = FakeListWatch()
    source.lists = [[device_class("gpu.nvidia.com"), device_class("mig.nvidia.com")]]
    source.watches = [
        [
            ("MODIFIED", device_class("gpu.nvidia.com", "nvidia.com/gpu")),
            ("ADDED", device_class("mig-1g10gb", "nvidia.com/mig-1g.10gb")),
            ("BOOKMARK", {"metadata": {"resourceVersion": "40"}}),
            ("DELETED", device_class("mig-1g10gb", "nvidia.com/mig-1g.10gb")),
            ("ADDED", {"metadata": {}}),  # nameless: ignored, never a crash
        ]
    ]
    seen: list[dict[str, str]] = []
    cache, events, _ = make(source)
    original = cache.apply

    def recording(event: str, obj: dict[str, Any]) -> None:
        original(event, obj)
        seen.append(dict(cache.mapping()))

    cache.apply = recording  # type: ignore[method-assign]
    cache.loop.run(passes=1)
    assert source.calls == ["list", "watch@11"]
    assert seen[0] == {"nvidia.com/gpu": "gpu.nvidia.com"}
    assert seen[1] == {"nvidia.com/gpu": "gpu.nvidia.com", "nvidia.com/mig-1g.10gb": "mig-1g10gb"}
    assert seen[2] == {"nvidia.com/gpu": "gpu.nvidia.com"} and len(seen) == 4  # a bookmark is not an event
    assert dict(cache.mapping()) == {"nvidia.com/gpu": "gpu.nvidia.com"}
    assert events == ["list", "change", "change", "change", "restart"]
    assert cache.readiness() == (True, "2 DeviceClasses; nvidia.com/gpu -> gpu.nvidia.com")


def test_api_server_down_keeps_the_last_good_mapping() -> None:
    source = FakeListWatch()
    down = ListWatchError("connection refused")
    source.lists = [[device_class("gpu.nvidia.com", "nvidia.com/gpu")], down, down, down, [device_class("x")]]
    source.watches = [ListWatchError("watch broke: connection reset")]
    cache, events, _ = make(source, backoff=(1.0, 4.0))
    cache.loop.run(passes=4)
    assert dict(cache.mapping()) == {"nvidia.com/gpu": "gpu.nvidia.com"}
    assert events.count("error") == 4
    ok, detail = cache.readiness()
    assert ok and detail.startswith("warning: serving the last good mapping") and "connection refused" in detail
    cache.loop.run(passes=1)  # back: a whole list replaces the mapping (the class lost its extendedResourceName)
    assert dict(cache.mapping()) == {}
    assert cache.readiness() == (True, "1 DeviceClasses; no extended resource mapped")


def test_a_cluster_without_deviceclasses_maps_nothing_and_says_so() -> None:
    source = FakeListWatch()
    gpu = device_class("gpu.nvidia.com", "nvidia.com/gpu")
    source.lists = [[gpu], ListWatchError("404 Not Found", 404), [gpu]]
    source.watches = [ListWatchError("the resource went away")]
    cache, events, slept = make(source)
    cache.loop.run(passes=2)
    assert dict(cache.mapping()) == {} and events[-2:] == ["change", "absent"] and slept[-1] == 60.0
    ok, detail = cache.readiness()
    assert (
        ok and detail == "the API server does not serve deviceclasses.resource.k8s.io/v1: every GPU pod is translated"
    )
    cache.loop.run(passes=1)  # served again: mapped as a starting scheduler maps
    assert dict(cache.mapping()) == {"nvidia.com/gpu": "gpu.nvidia.com"}


def test_the_number_of_classes_kept_is_bounded() -> None:
    source = FakeListWatch()
    source.lists = [[device_class(f"c{i:03}", f"example.com/r{i}") for i in range(50)]]
    source.watches = [[("ADDED", device_class("late", "nvidia.com/gpu"))]]
    cache, _, _ = make(source, max_classes=10)
    cache.loop.run(passes=1)
    assert len(cache) == 10 and "nvidia.com/gpu" not in cache.mapping()


def test_the_webhook_counts_events_and_mapped_legacy_resources() -> None:
    metrics = WebhookMetrics()
    source = FakeListWatch()
    source.lists = [[device_class("gpu.nvidia.com", "nvidia.com/gpu"), device_class("o", "example.com/fpga")]]
    cache = device_class_cache(None, metrics, source=source)
    cache.loop.run(passes=1)
    value = metrics.registry.get_sample_value
    mapped = {"resource": "nvidia.com/gpu", "device_class": "gpu.nvidia.com"}
    assert value("gpudra_extended_resource_mapping", mapped) == 1
    assert value("gpudra_extended_resource_mapping", {"resource": "example.com/fpga", "device_class": "o"}) is None
    assert value("gpudra_deviceclass_cache_events_total", {"event": "list"}) == 1
    assert value("gpudra_deviceclass_cache_events_total", {"event": "change"}) == 1
    assert value("gpudra_deviceclass_cache_events_total", {"event": "restart"}) == 1
    cache.apply("MODIFIED", device_class("gpu.nvidia.com"))  # the class no longer maps it: the series goes
    assert value("gpudra_extended_resource_mapping", mapped) is None


def _versioned(obj: dict[str, Any], version: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"]["resourceVersion"] = version
    return out


OLD = device_class("gpu.nvidia.com", "nvidia.com/gpu", created="2026-12-01T00:00:00Z")
NEW = device_class("whole-gpus-v2", "nvidia.com/gpu", created="2026-12-02T00:00:00Z")


def test_deleting_the_class_holding_a_resource_unmaps_it_as_the_scheduler_does() -> None:
    """extendedresourcecache.go removeResourceName2class: the scheduler forgets nvidia.com/gpu when the newer class
    goes, though gpu.nvidia.com still names it; gpudra must not leave pods to it then (they would stay Pending)."""
    cache, _, _ = make(FakeListWatch())
    cache.replace([OLD])
    cache.apply("ADDED", NEW)
    assert dict(cache.mapping()) == {"nvidia.com/gpu": "whole-gpus-v2"}
    cache.apply("DELETED", NEW)
    assert dict(cache.mapping()) == {}
    # an unchanged relist does not remap it (the scheduler, which did not relist, still has no mapping) ...
    cache.replace([OLD])
    assert dict(cache.mapping()) == {}
    # ... a change to the remaining class does, for both
    cache.apply("MODIFIED", _versioned(OLD, "8"))
    assert dict(cache.mapping()) == {"nvidia.com/gpu": "gpu.nvidia.com"}


def test_deleting_an_older_class_naming_the_same_resource_unmaps_it_too() -> None:
    cache, _, _ = make(FakeListWatch())
    cache.replace([OLD, NEW])
    assert dict(cache.mapping()) == {"nvidia.com/gpu": "whole-gpus-v2"}
    cache.apply("DELETED", OLD)  # upstream deletes the resource's entry whoever holds it
    assert dict(cache.mapping()) == {}


def test_an_older_class_changing_changes_nothing_and_a_relist_applies_what_changed() -> None:
    cache, _, _ = make(FakeListWatch())
    cache.replace([OLD, NEW])
    cache.apply("MODIFIED", _versioned(OLD, "9"))  # older than the holder: returns before touching anything
    assert dict(cache.mapping()) == {"nvidia.com/gpu": "whole-gpus-v2"}
    cache.replace([_versioned(OLD, "9")])  # NEW vanished while the watch was down: deleted, as its event would
    assert dict(cache.mapping()) == {}
    renamed = _versioned(device_class("gpu.nvidia.com", "example.com/gpu"), "12")
    cache.replace([renamed])  # changed: its old mapping goes, the new one is set
    assert dict(cache.mapping()) == {"example.com/gpu": "gpu.nvidia.com"}


def test_a_first_list_maps_as_a_starting_scheduler_whatever_the_order() -> None:
    for items in ([OLD, NEW], [NEW, OLD]):
        cache, _, _ = make(FakeListWatch())
        cache.replace(items)
        assert dict(cache.mapping()) == {"nvidia.com/gpu": "whole-gpus-v2"}
