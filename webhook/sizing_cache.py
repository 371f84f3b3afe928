"""The webhook's recommendation cache: GPUSizingRecommendation objects kept in memory by an informer-style list+watch.

`gpudra recommend` writes one `GPUSizingRecommendation` (gpudra.io/v1alpha1) per workload owner; the webhook needs
them on the admission path, where nothing may block on Prometheus or on the API server. So a background thread
lists every recommendation (paged), then watches from the list's `resourceVersion`, and keeps a map
(namespace, owner kind, owner name) -> {container -> `ObservedSizing`}. Admission only reads that map
(`RecommendationCache.observed`, the `dra.sizing.SizingLookup` the policy engine calls): a dict lookup, never a
network call, and Prometheus is never called by the webhook at all.

Failure behaviour (the rule: an outage of the recommendation path costs right-sizing precision, never admission):

- The API server down, slow or the watch broken: the last good map keeps serving. The loop relists with
  exponential backoff (1 s doubling to 60 s, jittered) and swaps the map only when a whole list succeeded, so a
  half-read list never replaces a good one. A watch that expires (410 Gone) relists at once.
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
  error: the cache stays empty and asks again every `not_served_seconds`.

A recommendation is used whatever its conditions say: the recommender keeps the last computed values when
Prometheus is unreachable (and says so in a condition), and those values are the last good evidence.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast

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
from kubeapi import Backoff, ClusterListWatch, ListWatchError, ListWatchThread
from webhook.metrics import WebhookMetrics
from workloads import pod_owner

__all__ = [
    "GROUP",
    "KIND",
    "PLURAL",
    "VERSION",
    "CacheStatus",
    "KubeRecommendationSource",
    "ParsedRecommendation",
    "RecommendationCache",
    "RecommendationSource",
    "SourceError",
    "parse_go_duration",
    "parse_recommendation",
]

log = logging.getLogger("gpudra.webhook.sizing")


SourceError = ListWatchError  # the API server could not list or watch recommendations


class RecommendationSource(Protocol):
    """Where recommendations come from: a paged list (items, resourceVersion) and a watch from a resourceVersion.

    Both raise `SourceError`; `watch` yields (type, object) with type ADDED, MODIFIED, DELETED or BOOKMARK, and
    returns when the server ends the watch (its timeout)."""

    def list(self) -> tuple[list[dict[str, Any]], str]: ...

    def watch(self, resource_version: str) -> Iterator[tuple[str, dict[str, Any]]]: ...


class KubeRecommendationSource(ClusterListWatch):
    """`RecommendationSource` over a `kubernetes.client.ApiClient`, every namespace (`kubeapi.listwatch`)."""

    def __init__(
        self, api_client: Any, *, timeout: float = 10.0, page: int = 500, watch_seconds: tuple[int, int] = (240, 360)
    ) -> None:
        super().__init__(api_client, GROUP, VERSION, PLURAL, timeout=timeout, page=page, watch_seconds=watch_seconds)


@dataclass(frozen=True, slots=True)
class CacheStatus:
    mode: str  # "auto" | "on"
    synced: bool  # a list has succeeded at least once
    served: bool | None  # whether the API server serves the CRD (None: not known yet)
    owners: int
    containers: int
    last_sync: float | None  # wall-clock time of the last successful list or watch event
    watching: bool
    failing: bool  # the last list or watch failed and no list has succeeded since
    restarts: int
    errors: int
    last_error: str


class RecommendationCache(ListWatchThread):
    """The in-memory map and the list+watch loop that fills it; implements `dra.sizing.SizingLookup`.

    `observed` and `version` are safe from any thread and never block on I/O: writers swap or update plain dicts
    under a lock, readers do one `dict.get` (atomic in CPython) on the current map."""

    thread_name = "gpudra-sizing-cache"

    def __init__(
        self,
        source: RecommendationSource,
        metrics: WebhookMetrics | None = None,
        *,
        mode: str = "auto",
        backoff: tuple[float, float] = (1.0, 60.0),
        not_served_seconds: float = 60.0,
        stale_seconds: float = 600.0,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[threading.Event, float], bool] = lambda stop, s: stop.wait(s),
    ) -> None:
        if mode not in ("auto", "on"):
            raise ValueError(f"mode must be auto or on (got {mode!r})")
        self.source = source
        self.metrics = metrics
        self.mode = mode
        self.backoff = backoff
        self.not_served_seconds = not_served_seconds
        self.stale_seconds = stale_seconds
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._objects: dict[tuple[str, str], ParsedRecommendation] = {}
        self._owners: dict[OwnerKey, ParsedRecommendation] = {}
        self._synced = False
        self._served: bool | None = None
        self._last_sync: float | None = None
        self._watching = False
        self._failing = False
        self._restarts = 0
        self._errors = 0
        self._last_error = ""
        super().__init__()
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
        owners = self._index(objects)
        with self._lock:
            self._objects = objects
            self._owners = owners
            self._synced = True
            self._served = True
            self._failing = False
            self._last_sync = self._clock()
        self._gauges()

    def apply(self, event: str, obj: dict[str, Any]) -> None:
        """One watch event (ADDED, MODIFIED, DELETED; BOOKMARK only proves the watch is alive)."""
        if event == "BOOKMARK":
            with self._lock:
                self._last_sync = self._clock()
            return
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
        owners = self._index(objects)
        with self._lock:
            self._objects = objects
            self._owners = owners
            self._last_sync = self._clock()
        self._gauges()

    def _gauges(self) -> None:
        if self.metrics is None:
            return
        owners = self._owners
        self.metrics.sizing_owners.set(len(owners))
        self.metrics.sizing_containers.set(sum(len(p.containers) for p in owners.values()))
        if self._last_sync is not None:
            self.metrics.sizing_last_sync.set(self._last_sync)

    def _error(self, operation: str, exc: SourceError) -> None:
        with self._lock:
            self._errors += 1
            self._failing = True
            self._last_error = str(exc)
            self._watching = False
        if self.metrics is not None:
            self.metrics.sizing_errors.labels(operation).inc()

    def _restart(self, reason: str) -> None:
        with self._lock:
            self._restarts += 1
            self._watching = False
        if self.metrics is not None:
            self.metrics.sizing_restarts.labels(reason).inc()

    # -- the loop ----------------------------------------------------------------------------------------------

    def run(self, stop: threading.Event | None = None, *, passes: int | None = None) -> None:
        """List, then watch until the watch ends or breaks; relist. Failures back off exponentially (jittered) and
        keep the last good map. Returns when `stop` is set (or after `passes` lists, for tests)."""
        stop = stop or self._stop
        backoff = Backoff(*self.backoff, jitter=0.2)
        done = 0
        while not stop.is_set() and (passes is None or done < passes):
            done += 1
            try:
                items, rv = self.source.list()
            except SourceError as exc:
                if exc.status == 404 and self.mode == "auto":
                    with self._lock:
                        self._served = False
                        self._last_error = ""
                    log.info("the API server does not serve %s.%s: no recommendations (asking again)", PLURAL, GROUP)
                    self._sleep(stop, self.not_served_seconds)
                    continue
                self._error("list", exc)
                delay = backoff.next()
                log.warning("listing recommendations failed (serving the last good cache, retry in %.0fs): %s",
                            delay, exc)  # fmt: skip
                self._sleep(stop, delay)
                continue
            self.replace(items)
            with self._lock:
                self._watching = True
            try:
                for event, obj in self.source.watch(rv):
                    if stop.is_set():
                        return
                    if event == "BOOKMARK":
                        bookmark_rv = (obj.get("metadata") or {}).get("resourceVersion")
                        rv = bookmark_rv if isinstance(bookmark_rv, str) and bookmark_rv else rv
                    else:
                        new_rv = (obj.get("metadata") or {}).get("resourceVersion") if isinstance(obj, dict) else None
                        rv = new_rv if isinstance(new_rv, str) and new_rv else rv
                    self.apply(event, obj)
                self._restart("closed")  # the server's watch timeout: relist (cheap at this size) and watch again
                backoff.reset()
            except SourceError as exc:
                if exc.status == 410:  # too old a resourceVersion: relist now
                    self._restart("expired")
                    backoff.reset()
                    continue
                self._error("watch", exc)
                self._restart("error")
                delay = backoff.next()
                log.warning("the recommendation watch broke (serving the last good cache, relisting in %.0fs): %s",
                            delay, exc)  # fmt: skip
                self._sleep(stop, delay)
            except Exception as exc:  # never let the loop die: log, count, relist
                log.exception("the recommendation watch failed unexpectedly")
                self._error("watch", SourceError(f"{type(exc).__name__}: {exc}"))
                self._restart("error")
                self._sleep(stop, backoff.next())

    # -- health ------------------------------------------------------------------------------------------------

    def status(self) -> CacheStatus:
        with self._lock:
            owners = self._owners
            return CacheStatus(
                mode=self.mode, synced=self._synced, served=self._served, owners=len(owners),
                containers=sum(len(p.containers) for p in owners.values()), last_sync=self._last_sync,
                watching=self._watching, failing=self._failing, restarts=self._restarts, errors=self._errors,
                last_error=self._last_error,
            )  # fmt: skip

    def readiness(self) -> tuple[bool, str]:
        """Always ready (see the module docstring); the detail warns when the cache is stale or never synced."""
        s = self.status()
        if s.served is False:
            return True, "the API server does not serve GPUSizingRecommendation: sizing from annotations and defaults"
        if not s.synced:
            why = f": {s.last_error}" if s.last_error else ""
            return True, f"warning: recommendations not listed yet (sizing from annotations and defaults){why}"
        age = self._clock() - (s.last_sync or 0.0)
        detail = f"{s.owners} recommendations ({s.containers} containers), last synced {age:.0f}s ago"
        if s.failing or age > self.stale_seconds:
            detail = f"warning: stale cache, serving the last good one; {detail}"
            if s.last_error:
                detail += f"; last error: {s.last_error}"
        return True, detail
