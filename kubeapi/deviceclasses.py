"""DeviceClasses as admission needs them: which extended resource each class maps (KEP-5004), kept in memory by a
list+watch so that no admission ever calls the API server for them.

Kubernetes 1.37 (KEP-5004 GA): a DeviceClass with `spec.extendedResourceName: nvidia.com/gpu` makes kube-scheduler
build a claim of N whole devices of that class for an unchanged `nvidia.com/gpu: N` pod, at PreBind, owned by the
pod and recorded in `pod.status.extendedResourceClaimStatus`. The NVIDIA driver's chart sets that mapping on its
`gpu.nvidia.com` class. The mapping is kept as kube-scheduler keeps it, event by event
(k8s.io/dynamic-resource-allocation v0.37.2 deviceclass/extendedresourcecache/extendedresourcecache.go): where two
classes name one resource the newer wins, the lower name on a tie; and deleting a class that names a resource drops
that resource's mapping even when another class still names it (`removeResourceName2class`), until a class naming
it is added or changed. Folding the current classes instead would, after such a delete, leave pods to a scheduler
that no longer maps their resource: they would stay Pending. The asymmetry left is safe: a scheduler restarted
since maps the resource again while gpudra, not told, translates those pods itself.

The loop lists every DeviceClass (paged), watches from the list's resourceVersion, and keeps one small record per
class (its name, extendedResourceName and creation time), never the objects. Failure behaviour: the last good
mapping keeps serving; a failed list or a broken watch relists with exponential backoff (jittered); a watch that
expires (410 Gone) relists at once; a cache that never listed serves no mapping (the webhook then translates as it
always did). At most `max_classes` records are kept (a cluster has a handful; beyond the bound new classes are
ignored with a log line, so a flood of objects cannot grow the process).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

from .backoff import Backoff
from .listwatch import ClusterListWatch, ListWatchError, ListWatchThread
from .paging import PAGE

__all__ = [
    "DeviceClassCache",
    "DeviceClassCacheStatus",
    "DeviceClassSource",
    "DeviceClassSourceError",
    "KubeDeviceClassSource",
    "extended_resource_mapping",
]

log = logging.getLogger("gpudra.kubeapi.deviceclasses")

GROUP, VERSION, PLURAL = "resource.k8s.io", "v1", "deviceclasses"


DeviceClassSourceError = ListWatchError  # the API server could not list or watch DeviceClasses


class DeviceClassSource(Protocol):
    """A paged list (items, resourceVersion) and a watch from a resourceVersion; both raise
    `DeviceClassSourceError`. `watch` yields (type, object) and returns when the server ends it."""

    def list(self) -> tuple[list[dict[str, Any]], str]: ...

    def watch(self, resource_version: str) -> Iterator[tuple[str, dict[str, Any]]]: ...


class KubeDeviceClassSource(ClusterListWatch):
    """`DeviceClassSource` over a `kubernetes.client.ApiClient` (`kubeapi.listwatch`)."""

    def __init__(
        self, api_client: Any, *, timeout: float = 10.0, page: int = PAGE, watch_seconds: tuple[int, int] = (240, 360)
    ) -> None:
        super().__init__(api_client, GROUP, VERSION, PLURAL, timeout=timeout, page=page, watch_seconds=watch_seconds)


@dataclass(frozen=True, slots=True)
class _Record:
    """What the cache keeps of one DeviceClass."""

    name: str
    extended_resource: str  # "" when the class maps none
    created: str  # metadata.creationTimestamp (RFC 3339, second resolution: compares as text)
    version: str = ""  # metadata.resourceVersion: a relist applies only what changed


def _record(obj: Any) -> _Record | None:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        return None
    spec = obj.get("spec")
    resource = spec.get("extendedResourceName") if isinstance(spec, dict) else None
    created = meta.get("creationTimestamp") if isinstance(meta, dict) else None
    version = meta.get("resourceVersion") if isinstance(meta, dict) else None
    return _Record(
        name,
        resource if isinstance(resource, str) else "",
        created if isinstance(created, str) else "",
        version if isinstance(version, str) else "",
    )


def _newer(record: _Record, held: _Record) -> bool:
    """Whether `record` takes a resource from `held`: the newer class, the lower name on equal creation times."""
    return (record.created, held.name) > (held.created, record.name)


def _added(holders: dict[str, _Record], new: _Record, old: _Record | None) -> None:
    """`updateResourceName2class(new, old)` on the explicit mappings: a class older than the one holding its
    resource changes nothing (not even its own old mapping); else its old mapping goes and its new one is set."""
    held = holders.get(new.extended_resource) if new.extended_resource else None
    if held is not None and not _newer(new, held):
        return
    if old is not None and old.extended_resource:
        holders.pop(old.extended_resource, None)
    if new.extended_resource:
        holders[new.extended_resource] = new


def _deleted(holders: dict[str, _Record], gone: _Record) -> None:
    """`removeResourceName2class`: the resource the deleted class names is unmapped, whoever held it."""
    if gone.extended_resource:
        holders.pop(gone.extended_resource, None)


def _mapping(records: Iterable[_Record]) -> dict[str, str]:
    """The mapping of a scheduler that saw `records` added (as at its start: the order does not matter)."""
    holders: dict[str, _Record] = {}
    for record in records:
        _added(holders, record, None)
    return _named(holders)


def _named(holders: Mapping[str, _Record]) -> dict[str, str]:
    return {resource: record.name for resource, record in sorted(holders.items())}


def extended_resource_mapping(classes: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Extended resource name -> the DeviceClass that maps it, from DeviceClass objects (Kubernetes JSON)."""
    return _mapping(r for r in (_record(c) for c in classes) if r is not None)


@dataclass(frozen=True, slots=True)
class DeviceClassCacheStatus:
    synced: bool  # a list has succeeded at least once
    classes: int
    mapping: Mapping[str, str]
    last_sync: float | None  # wall-clock time of the last successful list or watch event
    failing: bool  # the last list or watch failed and nothing succeeded since
    restarts: int
    errors: int
    last_error: str


class DeviceClassCache(ListWatchThread):
    """The extended-resource mapping of the cluster's DeviceClasses, and the list+watch loop that keeps it.

    `mapping()` is safe from any thread and never blocks on I/O: writers swap an immutable mapping, readers read one
    attribute. `on_event(kind)` is told of each list ("list"), change of the mapping ("change"), failure ("error")
    and watch restart ("restart")."""

    thread_name = "gpudra-deviceclass-cache"

    def __init__(
        self,
        source: DeviceClassSource,
        *,
        max_classes: int = 10_000,
        backoff: tuple[float, float] = (1.0, 60.0),
        on_event: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[threading.Event, float], bool] = lambda stop, s: stop.wait(s),
    ) -> None:
        if max_classes < 1:
            raise ValueError(f"max_classes must be above 0 (got {max_classes})")
        self.source = source
        self.max_classes = max_classes
        self.backoff = backoff
        self._on_event = on_event
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._records: dict[str, _Record] = {}
        self._holders: dict[str, _Record] = {}  # extended resource -> the class holding it, as the scheduler's
        self._mapping: Mapping[str, str] = MappingProxyType({})
        self._synced = False
        self._last_sync: float | None = None
        self._failing = False
        self._restarts = 0
        self._errors = 0
        self._last_error = ""
        super().__init__()

    # -- the admission side ------------------------------------------------------------------------------------

    def mapping(self) -> Mapping[str, str]:
        """Extended resource name -> DeviceClass name (empty until a list succeeded)."""
        return self._mapping

    # -- the writer side ---------------------------------------------------------------------------------------

    def _event(self, kind: str) -> None:
        if self._on_event is not None:
            self._on_event(kind)

    def _bounded(self, records: dict[str, _Record], record: _Record) -> bool:
        if record.name in records or len(records) < self.max_classes:
            return True
        log.warning("more than %d DeviceClasses: %s is not read", self.max_classes, record.name)
        return False

    def _publish(self, records: dict[str, _Record], holders: dict[str, _Record]) -> None:
        mapping = MappingProxyType(_named(holders))
        with self._lock:
            changed = dict(mapping) != dict(self._mapping)
            self._records = records
            self._holders = holders
            self._mapping = mapping
            self._last_sync = self._clock()
        if changed:
            log.info("DeviceClass extended resources: %s", dict(mapping) or "none mapped")
            self._event("change")

    def replace(self, items: list[dict[str, Any]]) -> None:
        """A whole successful list. The first one maps as a starting scheduler does; a relist applies only the
        differences (new classes added, changed ones updated, vanished ones deleted), as the watch events the
        scheduler saw meanwhile would: unchanged classes do not remap a resource a delete unmapped."""
        records: dict[str, _Record] = {}
        for obj in items:
            record = _record(obj)
            if record is not None and self._bounded(records, record):
                records[record.name] = record
        with self._lock:
            before, holders, synced = self._records, dict(self._holders), self._synced
        if not synced:
            holders = {}
            for record in records.values():
                _added(holders, record, None)
        else:
            for name, gone in before.items():
                if name not in records:
                    _deleted(holders, gone)
            for name, record in records.items():
                old = before.get(name)
                if old is None or old.version != record.version or not record.version:
                    _added(holders, record, old)
        self._publish(records, holders)
        with self._lock:
            self._synced = True
            self._failing = False
        self._event("list")

    def apply(self, event: str, obj: dict[str, Any]) -> None:
        """One watch event (ADDED, MODIFIED, DELETED; BOOKMARK only proves the watch is alive)."""
        if event == "BOOKMARK":
            with self._lock:
                self._last_sync = self._clock()
            return
        record = _record(obj)
        if event not in ("ADDED", "MODIFIED", "DELETED") or record is None:
            log.warning("ignoring a DeviceClass watch event %r without a name", event)
            return
        with self._lock:
            records, holders = dict(self._records), dict(self._holders)
        if event == "DELETED":
            records.pop(record.name, None)
            _deleted(holders, record)
        elif self._bounded(records, record):
            _added(holders, record, records.get(record.name))
            records[record.name] = record
        self._publish(records, holders)

    def _error(self, exc: Exception) -> None:
        with self._lock:
            self._errors += 1
            self._failing = True
            self._last_error = str(exc)
        self._event("error")

    def _restart(self) -> None:
        with self._lock:
            self._restarts += 1
        self._event("restart")

    # -- the loop ----------------------------------------------------------------------------------------------

    def run(self, stop: threading.Event | None = None, *, passes: int | None = None) -> None:
        """List, then watch until the watch ends or breaks; relist. Failures back off (jittered) and keep the last
        good mapping. Returns when `stop` is set (or after `passes` lists, for tests)."""
        stop = stop or self._stop
        backoff = Backoff(*self.backoff, jitter=0.2)
        done = 0
        while not stop.is_set() and (passes is None or done < passes):
            done += 1
            try:
                items, rv = self.source.list()
            except DeviceClassSourceError as exc:
                self._error(exc)
                delay = backoff.next()
                log.warning("listing DeviceClasses failed (keeping the last mapping, retry in %.0fs): %s", delay, exc)
                self._sleep(stop, delay)
                continue
            self.replace(items)
            try:
                for event, obj in self.source.watch(rv):
                    if stop.is_set():
                        return
                    meta = obj.get("metadata") if isinstance(obj, dict) else None
                    new_rv = meta.get("resourceVersion") if isinstance(meta, dict) else None
                    rv = new_rv if isinstance(new_rv, str) and new_rv else rv
                    self.apply(event, obj)
                self._restart()  # the server's watch timeout: relist and watch again
                backoff.reset()
            except DeviceClassSourceError as exc:
                self._restart()
                if exc.status == 410:  # too old a resourceVersion: relist now
                    backoff.reset()
                    continue
                self._error(exc)
                delay = backoff.next()
                log.warning("the DeviceClass watch broke (keeping the last mapping, relisting in %.0fs): %s",
                            delay, exc)  # fmt: skip
                self._sleep(stop, delay)
            except Exception as exc:  # never let the loop die: log, count, relist
                log.exception("the DeviceClass watch failed unexpectedly")
                self._error(exc)
                self._restart()
                self._sleep(stop, backoff.next())

    # -- health ------------------------------------------------------------------------------------------------

    def status(self) -> DeviceClassCacheStatus:
        with self._lock:
            return DeviceClassCacheStatus(
                synced=self._synced, classes=len(self._records), mapping=self._mapping, last_sync=self._last_sync,
                failing=self._failing, restarts=self._restarts, errors=self._errors, last_error=self._last_error,
            )  # fmt: skip

    def readiness(self) -> tuple[bool, str]:
        """Always ready: without the mapping gpudra translates every GPU pod, as it did before KEP-5004."""
        s = self.status()
        if not s.synced:
            why = f": {s.last_error}" if s.last_error else ""
            return True, f"warning: DeviceClasses not listed yet (every GPU pod is translated){why}"
        shown = ", ".join(f"{r} -> {c}" for r, c in s.mapping.items()) or "no extended resource mapped"
        detail = f"{s.classes} DeviceClasses; {shown}"
        if s.failing:
            detail = f"warning: serving the last good mapping; {detail}; last error: {s.last_error}"
        return True, detail
