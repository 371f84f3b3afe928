"""The webhook's recommendation cache: GPUSizingRecommendation objects kept in memory by an informer-style list+watch.

`gpudra recommend` writes one `GPUSizingRecommendation` (gpudra.io/v1alpha1) per workload owner; the webhook needs
them on the admission path, where nothing may block on Prometheus or on the API server. So a background thread
lists every recommendation (paged), then watches from the list's `resourceVersion`, and keeps a map
(namespace, owner kind, owner name) -> {container -> `ObservedSizing`}. Admission only reads that map
(`RecommendationCache.observed`, the `dra.sizing.SizingLookup` the policy engine calls): a dict lookup, never a
network call, and Prometheus is never called by the webhook at all.

Failure behaviour (the rule: an outage of the recommendation path costs right-sizing precision, never admission):

- The API server down, slow or the watch broken: the last good map keeps serving. The loop (`kubeapi.ListWatch`)
  relists with exponential backoff (1 s doubling to 60 s, jittered) and swaps the map only when a whole list
  succeeded, so a half-read list never replaces a good one. A watch the server ends resumes from the last version
  seen; one that expires (410 Gone) relists at once.
- `/readyz` reports the cache as a check that never makes the webhook unready: a stale or never-synced cache means
  pods are sized from annotations and the policies' defaults, which is what the webhook did before recommendations
  existed; refusing all GPU pods (the configurations' `failurePolicy: Fail`) for want of an optimisation would be
  worse. The detail says `warning: stale ...` with the age of the last sync and the last error.
- `/metrics`: `gpudra_sizing_recommendations` (owners cached), `gpudra_sizing_recommendation_containers`,
  `gpudra_sizing_cache_last_sync_timestamp_seconds`, `gpudra_sizing_cache_watch_restarts{reason}`,
  `gpudra_sizing_cache_errors{operation}`, `gpudra_sizing_recommendations_skipped{reason}`,
  `gpudra_sizing_lookups{result}`.
- Malformed objects (no targetRef, bad quantities, vram below peak, negative samples, a bad window, duplicate
  container names, two objects for one owner) are skipped, entry by entry, with a log line and a metric; nothing in
  an object can crash the loop. Of two objects targeting one owner the one named `<kind lower>-<name>` (the CRD's
  rule) wins, else the first seen.
- In `auto` mode (the default of `gpudra serve`) a cluster that does not serve the CRD (404 on the list) is not an
  error: the cache is empty and asks again every `not_served_seconds`.

A recommendation is used whatever its conditions say: the recommender keeps the last computed values when
Prometheus is unreachable (and says so in a condition), and those values are the last good evidence.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any, Unpack, cast

from dra.durations import parse_go_duration
from dra.sizing import ObservedSizing
from dra.sizing.recommendations import (
    GROUP,
    KIND,
    PLURAL,
    VERSION,
    OwnerKey,
    ParsedRecommendation,
    parse_recommendation,
)
from kubeapi import ClusterListWatch, ListWatch, ListWatched, ListWatchOptions, ListWatchSource, LoopEvent
from webhook.metrics import WebhookMetrics
from workloads import pod_owner

__all__ = [
    "GROUP",
    "KIND",
    "PLURAL",
    "VERSION",
    "KubeRecommendationSource",
    "ParsedRecommendation",
    "RecommendationCache",
    "parse_go_duration",
    "parse_recommendation",
]

log = logging.getLogger("gpudra.webhook.sizing")


class KubeRecommendationSource(ClusterListWatch):
    """The recommendations of a `kubernetes.client.ApiClient`, every namespace (`kubeapi.ClusterListWatch`)."""

    def __init__(
        self, api_client: Any, *, timeout: float = 10.0, page: int = 500, watch_seconds: tuple[int, int] = (240, 360)
    ) -> None:
        super().__init__(api_client, GROUP, VERSION, PLURAL, timeout=timeout, page=page, watch_seconds=watch_seconds)


class RecommendationCache(ListWatched):
    """The in-memory map, kept by a `ListWatch` (`loop`); implements `dra.sizing.SizingLookup`.

    `observed` and `version` are safe from any thread and never block on I/O: writers swap or update plain dicts
    under a lock, readers do one `dict.get` (atomic in CPython) on the current map."""

    def __init__(
        self,
        source: ListWatchSource,
        metrics: WebhookMetrics | None = None,
        *,
        mode: str = "auto",
        stale_seconds: float = 600.0,
        **options: Unpack[ListWatchOptions],
    ) -> None:
        if mode not in ("auto", "on"):
            raise ValueError(f"mode must be auto or on (got {mode!r})")
        self.metrics = metrics
        self.mode = mode
        self.stale_seconds = stale_seconds
        self._lock = threading.Lock()
        self._objects: dict[tuple[str, str], ParsedRecommendation] = {}
        self._owners: dict[OwnerKey, ParsedRecommendation] = {}
        # In auto mode a cluster without the CRD is not an error: the cache stays empty and asks again.
        options["not_served_seconds"] = options.get("not_served_seconds", 60.0) if mode == "auto" else None
        self.loop = ListWatch(source, self, f"{PLURAL}.{GROUP}", name="gpudra-sizing-cache", on_event=self._told,
                              **options)  # fmt: skip
        if metrics is not None:
            self._hit = metrics.sizing_lookups.labels("hit")
            self._miss = metrics.sizing_lookups.labels("miss")

    # -- the admission side ------------------------------------------------------------------------------------

    def observed(self, namespace: str, owner_kind: str, owner_name: str, container: str) -> ObservedSizing | None:
        entry = self._owners.get((namespace, owner_kind, owner_name))
        found = entry.containers.get(container) if entry is not None else None
        if self.metrics is not None:
            (self._miss if found is None else self._hit).inc()
        return found

    def version(self, pod: Mapping[str, Any], namespace: str) -> str:
        """What of the cache a decision about `pod` may read: its owner's recommendation's resourceVersion ("" when
        none), for the admission decision cache's key."""
        owner = pod_owner(pod)
        if owner is None:
            return ""
        entry = self._owners.get((namespace, owner[0], owner[1]))
        return "" if entry is None else entry.resource_version or "?"

    def __len__(self) -> int:
        return len(self._owners)

    # -- the writer side ---------------------------------------------------------------------------------------

    def _parse(self, obj: Any) -> ParsedRecommendation | None:
        try:
            parsed = parse_recommendation(obj)
        except ValueError as exc:
            log.warning("skipping a %s: %s", KIND, exc)
            self._skipped("malformed")
            return None
        for reason, detail in parsed.skipped:
            log.warning("skipping part of a recommendation: %s", detail)
            self._skipped(reason)
        return parsed

    def _skipped(self, reason: str) -> None:
        if self.metrics is not None:
            self.metrics.sizing_skipped.labels(reason).inc()

    def _index(self, objects: Mapping[tuple[str, str], ParsedRecommendation]) -> dict[OwnerKey, ParsedRecommendation]:
        """Owner -> recommendation; of two objects for one owner the canonically named one wins, else the first
        (by object name, so the choice does not depend on list order)."""
        owners: dict[OwnerKey, ParsedRecommendation] = {}
        for ref in sorted(objects):
            parsed = objects[ref]
            held = owners.get(parsed.owner)
            if held is None:
                owners[parsed.owner] = parsed
                continue
            keep, drop = (parsed, held) if parsed.canonical and not held.canonical else (held, parsed)
            owners[parsed.owner] = keep
            log.warning(
                "%s %s/%s targets %s %s, which %s/%s already sizes: ignored", KIND, *drop.object_ref,
                parsed.owner[1], parsed.owner[2], *keep.object_ref,
            )  # fmt: skip
            self._skipped("duplicate_owner")
        return owners

    def replace(self, items: list[dict[str, Any]]) -> None:
        """A whole successful list: the new map replaces the old one at once."""
        objects: dict[tuple[str, str], ParsedRecommendation] = {}
        for obj in items:
            parsed = self._parse(obj)
            if parsed is not None:
                objects[parsed.object_ref] = parsed
        self._swap(objects)

    def apply(self, event: str, obj: dict[str, Any]) -> None:
        """One watch event: ADDED, MODIFIED or DELETED."""
        if event not in ("ADDED", "MODIFIED", "DELETED"):
            log.warning("ignoring a %s watch event of type %r", KIND, event)
            return
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        ref = (meta.get("namespace"), meta.get("name")) if isinstance(meta, dict) else (None, None)
        if not isinstance(ref[0], str) or not isinstance(ref[1], str):
            log.warning("ignoring a %s %s event without namespace and name", KIND, event)
            self._skipped("malformed")
            return
        key = cast(tuple[str, str], ref)
        with self._lock:
            objects = dict(self._objects)
        if event == "DELETED":
            objects.pop(key, None)
        else:
            parsed = self._parse(obj)
            if parsed is None:
                objects.pop(key, None)  # what it said before is no longer what the object says
            else:
                objects[key] = parsed
        self._swap(objects)

    def absent(self) -> None:
        """The API server does not serve the CRD (any more): no recommendation exists."""
        self._swap({})

    def _swap(self, objects: dict[tuple[str, str], ParsedRecommendation]) -> None:
        owners = self._index(objects)
        with self._lock:
            self._objects = objects
            self._owners = owners
        self._gauges()

    def _gauges(self) -> None:
        if self.metrics is None:
            return
        owners = self._owners
        self.metrics.sizing_owners.set(len(owners))
        self.metrics.sizing_containers.set(sum(len(p.containers) for p in owners.values()))
        last_sync = self.loop.status().last_sync
        if last_sync is not None:
            self.metrics.sizing_last_sync.set(last_sync)

    def _told(self, event: LoopEvent, detail: str) -> None:
        if self.metrics is None:
            return
        if event == "error":
            self.metrics.sizing_errors.labels(detail).inc()
        elif event == "restart":
            self.metrics.sizing_restarts.labels(detail).inc()

    # -- health ------------------------------------------------------------------------------------------------

    def containers(self) -> int:
        """The containers with a usable recommendation."""
        return sum(len(p.containers) for p in self._owners.values())

    def readiness(self) -> tuple[bool, str]:
        """Always ready (see the module docstring); the detail warns when the cache is stale or never synced."""
        s = self.loop.status()
        if s.served is False:
            return True, "the API server does not serve GPUSizingRecommendation: sizing from annotations and defaults"
        if not s.synced:
            why = f": {s.last_error}" if s.last_error else ""
            return True, f"warning: recommendations not listed yet (sizing from annotations and defaults){why}"
        age = self.loop.clock() - (s.last_sync or 0.0)
        detail = f"{len(self)} recommendations ({self.containers()} containers), last synced {age:.0f}s ago"
        if s.failing or age > self.stale_seconds:
            detail = f"warning: stale cache, serving the last good one; {detail}"
            if s.last_error:
                detail += f"; last error: {s.last_error}"
        return True, detail
