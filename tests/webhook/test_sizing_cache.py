"""The webhook's recommendation cache: parsing GPUSizingRecommendation objects, the lookup, the list+watch loop's
failure behaviour (last good cache kept, relists, backoff), metrics, readiness and the admission wiring."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import generate_latest

from kubeapi import ListWatchError
from policyengine import PolicySet, load_policies, shipped_policies_dir
from webhook.admission import Admission
from webhook.metrics import WebhookMetrics
from webhook.policy_store import PolicyStore
from webhook.review import parse_review, pod_review
from webhook.sizing_cache import RecommendationCache, parse_go_duration, parse_recommendation

from ..kubeapi.fake_listwatch import FakeListWatch, recording_sleep

GiB = 2**30


def rec(
    name: str = "embed",
    namespace: str = "team-a",
    kind: str = "Deployment",
    *,
    containers: list[Any] | None = None,
    rv: str = "1",
    object_name: str | None = None,
) -> dict[str, Any]:
    entries = containers if containers is not None else [
        {"name": "main", "vram": "6Gi", "peak": "5Gi", "samples": 2016, "window": "168h", "pressure": False}
    ]  # fmt: skip
    return {
        "apiVersion": "gpudra.io/v1alpha1",
        "kind": "GPUSizingRecommendation",
        "metadata": {
            "name": object_name or f"{kind.lower()}-{name}",
            "namespace": namespace,
            "resourceVersion": rv,
        },
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": kind, "name": name}},
        "status": {"containers": entries, "lastUpdated": "2026-12-03T10:00:00Z"},
    }


def metric(metrics: WebhookMetrics, name: str, labels: dict[str, str] | None = None) -> float:
    value = metrics.registry.get_sample_value(name, labels or {})
    return 0.0 if value is None else value


# -- parsing -------------------------------------------------------------------------------------------------------


def test_go_durations() -> None:
    assert parse_go_duration("168h") == 168 * 3600
    assert parse_go_duration("1h30m") == 5400
    assert parse_go_duration("1.5s") == 1.5
    assert parse_go_duration("250ms") == 0.25
    for bad in ("", "7d", "h", "10", "1h 30m"):
        with pytest.raises(ValueError, match="not a Go duration"):
            parse_go_duration(bad)


def test_a_recommendation_parses_into_observed_sizing() -> None:
    parsed = parse_recommendation(rec())
    assert parsed.owner == ("team-a", "Deployment", "embed")
    assert parsed.canonical and parsed.resource_version == "1" and parsed.skipped == ()
    sizing = parsed.containers["main"]
    assert sizing.vram_bytes == 6 * GiB and sizing.peak_bytes == 5 * GiB
    assert sizing.samples == 2016 and sizing.window_seconds == 168 * 3600
    assert sizing.updated == "2026-12-03T10:00:00Z" and sizing.pressure is False
    assert sizing.source_ref == "GPUSizingRecommendation team-a/deployment-embed"


def test_decimal_and_fractional_quantities_round_up_to_bytes() -> None:
    parsed = parse_recommendation(
        rec(containers=[{"name": "main", "vram": "1.5Gi", "peak": "1000000001", "samples": 5, "window": "1h"}])
    )
    assert parsed.containers["main"].vram_bytes == 3 * GiB // 2
    assert parsed.containers["main"].peak_bytes == 1_000_000_001
    half = parse_recommendation(
        rec(containers=[{"name": "main", "vram": "1500m", "peak": "1", "samples": 5, "window": "1h"}])
    )
    assert half.containers["main"].vram_bytes == 2  # 1.5 bytes -> 2


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ({"name": "main", "vram": "six", "peak": "5Gi", "samples": 1, "window": "1h"}, "bad_quantity"),
        ({"name": "main", "vram": "6Gi", "peak": "-1", "samples": 1, "window": "1h"}, "bad_quantity"),
        ({"name": "main", "vram": "0", "peak": "0", "samples": 1, "window": "1h"}, "bad_quantity"),
        ({"name": "main", "vram": 6.5, "peak": "1", "samples": 1, "window": "1h"}, "bad_quantity"),
        ({"name": "main", "vram": "4Gi", "peak": "5Gi", "samples": 1, "window": "1h"}, "vram_below_peak"),
        ({"name": "main", "vram": "6Gi", "peak": "5Gi", "samples": -3, "window": "1h"}, "bad_samples"),
        ({"name": "main", "vram": "6Gi", "peak": "5Gi", "samples": True, "window": "1h"}, "bad_samples"),
        ({"name": "main", "vram": "6Gi", "peak": "5Gi", "samples": 1, "window": "7d"}, "bad_window"),
        ({"name": "main", "vram": "6Gi", "peak": "5Gi", "samples": 1, "window": "-1h"}, "bad_window"),
        ({"name": "main", "vram": "6Gi", "peak": "5Gi", "samples": 1}, "missing_field"),
        ({"vram": "6Gi", "peak": "5Gi", "samples": 1, "window": "1h"}, "missing_field"),
        ("main", "malformed"),
    ],
)
def test_a_bad_container_entry_is_skipped_with_its_reason(entry: Any, reason: str) -> None:
    good = {"name": "sidecar", "vram": "2Gi", "peak": "1Gi", "samples": 9, "window": "1h"}
    parsed = parse_recommendation(rec(containers=[entry, good]))
    assert list(parsed.containers) == ["sidecar"]
    assert [r for r, _ in parsed.skipped] == [reason]
    assert "team-a/deployment-embed" in parsed.skipped[0][1]


def test_duplicate_container_names_keep_the_first() -> None:
    entries = [
        {"name": "main", "vram": "6Gi", "peak": "5Gi", "samples": 1, "window": "1h"},
        {"name": "main", "vram": "60Gi", "peak": "50Gi", "samples": 1, "window": "1h"},
    ]
    parsed = parse_recommendation(rec(containers=entries))
    assert parsed.containers["main"].vram_bytes == 6 * GiB
    assert [r for r, _ in parsed.skipped] == ["duplicate_container"]


@pytest.mark.parametrize(
    "mutate",
    [
        lambda o: o.pop("spec"),
        lambda o: o["spec"]["targetRef"].pop("name"),
        lambda o: o["spec"].update(targetRef="deployment/embed"),
        lambda o: o["metadata"].pop("namespace"),
        lambda o: o.update(metadata=None),
    ],
)
def test_an_object_without_target_or_identity_is_refused_by_name(mutate: Any) -> None:
    obj = rec()
    mutate(obj)
    with pytest.raises(ValueError, match="targetRef|metadata"):
        parse_recommendation(obj)
    with pytest.raises(ValueError, match="not an object"):
        parse_recommendation(["a", "list"])


def test_no_status_yet_means_no_containers() -> None:
    obj = rec()
    del obj["status"]
    assert parse_recommendation(obj).containers == {}
    obj["status"] = {"containers": "main=6Gi"}
    assert [r for r, _ in parse_recommendation(obj).skipped] == ["malformed"]


# -- the map ---------------------------------------------------------------------------------------------------


def make(source: FakeListWatch, **options: Any) -> tuple[RecommendationCache, WebhookMetrics, list[float]]:
    metrics = WebhookMetrics()
    sleep, slept = recording_sleep()
    cache = RecommendationCache(source, metrics, sleep=sleep, clock=lambda: 1000.0, **options)
    return cache, metrics, slept


def test_lookup_answers_by_namespace_kind_owner_and_container() -> None:
    source = FakeListWatch()
    source.lists = [[rec(), rec("train", kind="StatefulSet"), rec(namespace="team-b")]]
    cache, metrics, _ = make(source)
    cache.loop.run(passes=1)
    assert len(cache) == 3
    found = cache.observed("team-a", "Deployment", "embed", "main")
    assert found is not None and found.vram_bytes == 6 * GiB
    assert cache.observed("team-a", "Deployment", "embed", "sidecar") is None
    assert cache.observed("team-a", "StatefulSet", "embed", "main") is None
    assert cache.observed("team-c", "Deployment", "embed", "main") is None
    assert cache.observed("team-a", "StatefulSet", "train", "main") is not None
    assert metric(metrics, "gpudra_sizing_lookups_total", {"result": "hit"}) == 2
    assert metric(metrics, "gpudra_sizing_lookups_total", {"result": "miss"}) == 3
    assert metric(metrics, "gpudra_sizing_recommendations") == 3
    assert metric(metrics, "gpudra_sizing_recommendation_containers") == 3
    assert metric(metrics, "gpudra_sizing_cache_last_sync_timestamp_seconds") == 1000.0


def test_version_follows_the_pods_owner() -> None:
    cache, _, _ = make(FakeListWatch())
    cache.replace([rec(rv="41")])
    pod = {
        "metadata": {
            "labels": {"pod-template-hash": "5d4f8"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "embed-5d4f8", "controller": True}],
        }
    }
    assert cache.version(pod, "team-a") == "41"
    assert cache.version(pod, "team-b") == ""
    assert cache.version({"metadata": {}}, "team-a") == ""


def test_two_objects_for_one_owner_keep_the_canonical_one() -> None:
    cache, metrics, _ = make(FakeListWatch())
    stray = rec(object_name="aaa-embed", containers=[{"name": "main", "vram": "70Gi", "peak": "60Gi",
                                                       "samples": 1, "window": "1h"}])  # fmt: skip
    cache.replace([stray, rec()])
    found = cache.observed("team-a", "Deployment", "embed", "main")
    assert found is not None and found.vram_bytes == 6 * GiB
    assert metric(metrics, "gpudra_sizing_recommendations_skipped_total", {"reason": "duplicate_owner"}) == 1


def test_watch_events_add_modify_and_delete() -> None:
    cache, metrics, _ = make(FakeListWatch())
    cache.replace([])
    cache.apply("ADDED", rec(rv="2"))
    assert cache.observed("team-a", "Deployment", "embed", "main") is not None
    grown = rec(rv="3", containers=[{"name": "main", "vram": "12Gi", "peak": "11Gi", "samples": 9, "window": "1h",
                                     "pressure": True}])  # fmt: skip
    cache.apply("MODIFIED", grown)
    found = cache.observed("team-a", "Deployment", "embed", "main")
    assert found is not None and found.vram_bytes == 12 * GiB and found.pressure
    # A modification that makes the object unusable removes what it said before: it no longer says it.
    cache.apply("MODIFIED", {"metadata": {"namespace": "team-a", "name": "deployment-embed"}, "spec": {}})
    assert cache.observed("team-a", "Deployment", "embed", "main") is None
    cache.apply("ADDED", rec(rv="5"))
    cache.apply("DELETED", rec(rv="6"))
    assert len(cache) == 0
    cache.apply("ADDED", {"metadata": "garbage"})
    cache.apply("SURPRISE", rec())
    assert len(cache) == 0
    assert metric(metrics, "gpudra_sizing_recommendations_skipped_total", {"reason": "malformed"}) == 2


# -- the loop ----------------------------------------------------------------------------------------------------


def test_a_watch_resumes_after_its_end_and_an_expired_one_relists() -> None:
    source = FakeListWatch()
    source.lists = [[rec()], [rec(), rec("other")]]
    bookmark = {"metadata": {"resourceVersion": "13"}}
    source.watches = [[("ADDED", rec("late", rv="12")), ("BOOKMARK", bookmark)], ListWatchError("too old", 410)]
    cache, metrics, slept = make(source)
    cache.loop.run(passes=2)
    assert source.calls == ["list", "watch@11", "watch@13"] and len(cache) == 2 and slept == []
    cache.loop.run(passes=1)
    assert source.calls[3:] == ["list", "watch@12"]
    assert len(cache) == 2  # the second list replaced the map: "late" is gone, "other" is there
    assert cache.observed("team-a", "Deployment", "other", "main") is not None
    assert metric(metrics, "gpudra_sizing_cache_watch_restarts_total", {"reason": "closed"}) == 2
    assert metric(metrics, "gpudra_sizing_cache_watch_restarts_total", {"reason": "expired"}) == 1
    assert metric(metrics, "gpudra_sizing_cache_errors_total", {"operation": "watch"}) == 0


def test_api_server_down_keeps_the_last_good_cache_and_backs_off() -> None:
    source = FakeListWatch()
    down = ListWatchError("connection refused")
    source.lists = [[rec()], down, down, down, down, [rec(), rec("other")]]
    source.watches = [ListWatchError("watch broke: connection reset")]
    cache, metrics, slept = make(source, backoff=(1.0, 4.0))
    cache.loop.run(passes=5)
    # the watch broke, then four failed lists: the map is the one listed first, all along
    found = cache.observed("team-a", "Deployment", "embed", "main")
    assert found is not None and found.vram_bytes == 6 * GiB and len(cache) == 1
    # doubling up to the bound, each jittered by +-20 %
    assert all(0.8 * b <= s <= 1.2 * b for s, b in zip(slept, [1, 2, 4, 4, 4], strict=True))
    assert metric(metrics, "gpudra_sizing_cache_errors_total", {"operation": "list"}) == 4
    assert metric(metrics, "gpudra_sizing_cache_errors_total", {"operation": "watch"}) == 1
    assert metric(metrics, "gpudra_sizing_cache_watch_restarts_total", {"reason": "error"}) == 1
    ok, detail = cache.readiness()
    assert ok and detail.startswith("warning: stale cache") and "connection refused" in detail
    cache.loop.run(passes=1)  # the API server is back
    assert len(cache) == 2
    assert cache.readiness() == (True, "2 recommendations (2 containers), last synced 0s ago")


def test_a_cluster_without_the_crd_is_not_an_error_in_auto_mode() -> None:
    source = FakeListWatch()
    source.lists = [ListWatchError("404 Not Found", 404)]
    cache, metrics, slept = make(source, not_served_seconds=60.0)
    cache.loop.run(passes=1)
    assert slept == [60.0] and metric(metrics, "gpudra_sizing_cache_errors_total", {"operation": "list"}) == 0
    ok, detail = cache.readiness()
    assert ok and "does not serve GPUSizingRecommendation" in detail
    strict = FakeListWatch()
    strict.lists = [ListWatchError("404 Not Found", 404)]
    on, on_metrics, _ = make(strict, mode="on")
    on.loop.run(passes=1)
    assert metric(on_metrics, "gpudra_sizing_cache_errors_total", {"operation": "list"}) == 1
    ok, detail = on.readiness()
    assert ok and detail.startswith("warning: recommendations not listed yet") and "404" in detail


def test_garbage_objects_in_a_list_never_stop_the_loop() -> None:
    source = FakeListWatch()
    garbage: list[Any] = [
        {"metadata": {"namespace": "x", "name": "y"}, "spec": {"targetRef": {"kind": 3, "name": None}}},
        rec(containers=[{"name": "main", "vram": "1e400", "peak": "NaN", "samples": "many", "window": 7}]),
        rec("ok"),
    ]
    source.lists = [garbage]
    cache, metrics, _ = make(source)
    cache.loop.run(passes=1)
    assert len(cache) == 2 and cache.observed("team-a", "Deployment", "ok", "main") is not None
    assert cache.observed("team-a", "Deployment", "embed", "main") is None
    text = generate_latest(metrics.registry).decode()
    assert 'gpudra_sizing_recommendations_skipped_total{reason="malformed"} 1.0' in text
    assert 'gpudra_sizing_recommendations_skipped_total{reason="bad_quantity"} 1.0' in text


def test_the_loop_thread_starts_and_stops() -> None:
    source = FakeListWatch(idle=True)
    source.lists = [[rec()]]
    cache = RecommendationCache(source, WebhookMetrics())
    cache.start()
    try:
        assert source.watching.wait(10)  # the list before the watch is applied
        assert cache.observed("team-a", "Deployment", "embed", "main") is not None
    finally:
        cache.stop(timeout=10)
    assert cache.loop._thread is None and cache.loop.status().errors == 0


# -- admission -----------------------------------------------------------------------------------------------------


def _pod(name: str = "embed-5d4f8-abcde") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "labels": {"pod-template-hash": "5d4f8"},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "embed-5d4f8", "uid": "u1", "controller": True}
            ],  # fmt: skip
        },
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "ghcr.io/huggingface/text-embeddings-inference:1.5",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ],  # fmt: skip
        },
    }


SEEN: list[Any] = []


class Recorder(PolicySet):
    """The shipped policies, recording the `sizing` each evaluation was given (in SEEN)."""

    def evaluate(
        self,
        pod: Any,
        namespace: Any = None,
        request: Any = None,
        *,
        dra_devices: int = 0,
        sizing: Any = None,
        extended_resources: Any = None,
        with_variables: bool = True,
        memoize_facts: bool = True,
    ) -> Any:
        SEEN.append(sizing)
        return super().evaluate(
            pod,
            namespace,
            request,
            dra_devices=dra_devices,
            sizing=sizing,
            extended_resources=extended_resources,
            with_variables=with_variables,
            memoize_facts=memoize_facts,
        )


def _admission(cache: RecommendationCache) -> tuple[Admission, list[Any]]:
    loaded = load_policies(shipped_policies_dir())
    policies = Recorder(loaded.policies, loaded.errors)
    SEEN.clear()
    store: PolicyStore[PolicySet] = PolicyStore(shipped_policies_dir(), lambda _: policies)
    return Admission(store, WebhookMetrics(), sizing=cache), SEEN


def test_admission_passes_the_cache_and_keys_decisions_by_the_recommendation() -> None:
    cache, _, _ = make(FakeListWatch())
    cache.replace([rec(rv="1")])
    admission, seen = _admission(cache)
    review = parse_review(pod_review(_pod(), uid="u-1"))
    admission.mutate(review)
    admission.mutate(parse_review(pod_review(_pod(), uid="u-2")))
    assert seen == [cache]  # the second, identical pod came from the decision cache
    grown = rec(rv="2", containers=[{"name": "main", "vram": "20Gi", "peak": "16Gi", "samples": 9, "window": "1h"}])
    cache.apply("MODIFIED", grown)
    admission.mutate(parse_review(pod_review(_pod(), uid="u-3")))
    assert seen == [cache, cache]  # a new recommendation version: decided again


def test_admission_sizes_an_unannotated_pod_from_the_cache() -> None:
    """With the engine's observed-usage facts (issue 10, dra.sizing) the claim asks for the recommended memory."""
    cache, _, _ = make(FakeListWatch())
    cache.replace([rec()])
    admission, _ = _admission(cache)
    with_cache = admission.mutate(parse_review(pod_review(_pod(), uid="u-1")))
    cache.replace([])
    without = admission.mutate(parse_review(pod_review(_pod(), uid="u-2")))
    assert with_cache["response"]["allowed"] and without["response"]["allowed"]
    assert with_cache["response"]["patch"] != without["response"]["patch"]
