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

The cache keeps one small record per class (its name, extendedResourceName and creation time), never the objects,
and is kept by the one list+watch loop (`kubeapi.listwatch`: relists, 410 Gone, backoff). The last good mapping keeps
serving through failures; a cache that never listed, or a cluster that serves no DeviceClasses, maps nothing (the
webhook then translates as it always did). At most `max_classes` records are kept (a cluster has a handful; beyond
the bound new classes are ignored with a log line, so a flood of objects cannot grow the process).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Unpack

from .clusterlistwatch import ClusterListWatch
from .listwatch import ListWatch, ListWatched, ListWatchOptions, ListWatchSource, LoopEvent
from .paging import PAGE

__all__ = ["DeviceClassCache", "KubeDeviceClassSource", "extended_resource_mapping"]

log = logging.getLogger("gpudra.kubeapi.deviceclasses")

GROUP, VERSION, PLURAL = "resource.k8s.io", "v1", "deviceclasses"


class KubeDeviceClassSource(ClusterListWatch):
    """The DeviceClasses of a `kubernetes.client.ApiClient` (`kubeapi.clusterlistwatch`)."""

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


class DeviceClassCache(ListWatched):
    """The extended-resource mapping of the cluster's DeviceClasses, kept by a `ListWatch` (`loop`).

    `mapping()` is safe from any thread and never blocks on I/O: writers swap an immutable mapping, readers read one
    attribute. `on_event(kind)` is told of each `LoopEvent` and of each change of the mapping ("change")."""

    def __init__(
        self,
        source: ListWatchSource,
        *,
        max_classes: int = 10_000,
        on_event: Callable[[str], None] | None = None,
        **options: Unpack[ListWatchOptions],
    ) -> None:
        if max_classes < 1:
            raise ValueError(f"max_classes must be above 0 (got {max_classes})")
        self.max_classes = max_classes
        self._on_event = on_event
        self._lock = threading.Lock()
        self._records: dict[str, _Record] = {}
        self._holders: dict[str, _Record] = {}  # extended resource -> the class holding it, as the scheduler's
        self._mapping: Mapping[str, str] = MappingProxyType({})
        self._listed = False  # a list was applied since the start (or since the API went away)
        options.setdefault("not_served_seconds", 60.0)  # a cluster before resource.k8s.io/v1 (1.34) has none
        self.loop = ListWatch(source, self, "DeviceClasses", name="gpudra-deviceclass-cache", on_event=self._told,
                              **options)  # fmt: skip

    # -- the admission side ------------------------------------------------------------------------------------

    def mapping(self) -> Mapping[str, str]:
        """Extended resource name -> DeviceClass name (empty until a list succeeded)."""
        return self._mapping

    def __len__(self) -> int:
        """The DeviceClasses kept."""
        return len(self._records)

    # -- the writer side ---------------------------------------------------------------------------------------

    def _told(self, event: LoopEvent, _: str) -> None:
        self._event(event)

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
            before, holders, listed = self._records, dict(self._holders), self._listed
            self._listed = True
        if not listed:
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

    def apply(self, event: str, obj: dict[str, Any]) -> None:
        """One watch event: ADDED, MODIFIED or DELETED."""
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

    def absent(self) -> None:
        """No DeviceClasses are served: nothing is mapped, and the next list maps as a starting scheduler does."""
        with self._lock:
            self._listed = False
        self._publish({}, {})

    # -- health ------------------------------------------------------------------------------------------------

    def readiness(self) -> tuple[bool, str]:
        """Always ready: without the mapping gpudra translates every GPU pod, as it did before KEP-5004."""
        s = self.loop.status()
        if s.served is False:
            return True, f"the API server does not serve {PLURAL}.{GROUP}/{VERSION}: every GPU pod is translated"
        if not s.synced:
            why = f": {s.last_error}" if s.last_error else ""
            return True, f"warning: DeviceClasses not listed yet (every GPU pod is translated){why}"
        mapping = self._mapping
        shown = ", ".join(f"{r} -> {c}" for r, c in mapping.items()) or "no extended resource mapped"
        detail = f"{len(self)} DeviceClasses; {shown}"
        if s.failing:
            detail = f"warning: serving the last good mapping; {detail}; last error: {s.last_error}"
        return True, detail
