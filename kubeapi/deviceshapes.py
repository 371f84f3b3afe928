"""The cluster's ResourceSlices and DeviceClasses folded into distinct device shapes (`dra.shapes`), kept in memory
by two list+watch loops (`kubeapi.listwatch`) so that an admission checks a claim against the cluster's devices
without calling the API server.

Slices are folded as they come (`dra.shapes.ShapeFolder`: a digest per slice, one stored copy per distinct slice,
at most `max_shapes` shapes and `max_tracked` slices); a relist is folded off to the side and swapped in at once, so
readers never wait for it. `shapes()` returns an immutable snapshot whose `generation` moves only when the set of
shapes or the classes change. The last good shapes keep serving through API failures; a cluster that serves no
resource.k8s.io/v1 has no shapes, and a check against no shapes decides nothing (every claim passes unchanged).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Unpack

from dra.shapes import DEFAULT_MAX_SHAPES, DEFAULT_MAX_TRACKED, DeviceShapes, ShapeFolder

from .clusterlistwatch import ClusterListWatch
from .listwatch import ListWatch, ListWatchOptions, ListWatchSource, ListWatchStatus, LoopEvent
from .paging import PAGE

__all__ = ["DEFAULT_READY_AFTER", "DeviceShapeCache", "KubeResourceSliceSource"]

log = logging.getLogger("gpudra.kubeapi.deviceshapes")

GROUP, VERSION, PLURAL = "resource.k8s.io", "v1", "resourceslices"
DEFAULT_READY_AFTER = 30.0  # seconds: past this, a cache that never listed reports ready (checks decide nothing)


class KubeResourceSliceSource(ClusterListWatch):
    """The ResourceSlices of a `kubernetes.client.ApiClient` (`kubeapi.clusterlistwatch`)."""

    def __init__(
        self, api_client: Any, *, timeout: float = 10.0, page: int = PAGE, watch_seconds: tuple[int, int] = (240, 360)
    ) -> None:
        super().__init__(api_client, GROUP, VERSION, PLURAL, timeout=timeout, page=page, watch_seconds=watch_seconds)


def _name(obj: Any) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else ""


class _Hooks:
    """One loop's `ListWatchCache`: what a list, an event and an absent resource do to the shapes."""

    def __init__(self, cache: DeviceShapeCache, slices: bool) -> None:
        self.cache = cache
        self.slices = slices

    def replace(self, items: list[dict[str, Any]]) -> None:
        self.cache._replace(self.slices, items)

    def apply(self, event: str, obj: dict[str, Any]) -> None:
        self.cache._apply(self.slices, event, obj)

    def absent(self) -> None:
        self.cache._replace(self.slices, [])


class DeviceShapeCache:
    """`DeviceShapes` of the cluster, kept by a ResourceSlice loop (`slice_loop`) and a DeviceClass loop
    (`class_loop`). `shapes()` is safe from any thread and never blocks on I/O. `on_event(kind)` is told of each
    `LoopEvent` of either loop and of each new generation of shapes ("change")."""

    def __init__(
        self,
        slices: ListWatchSource,
        classes: ListWatchSource,
        *,
        max_shapes: int = DEFAULT_MAX_SHAPES,
        max_tracked: int = DEFAULT_MAX_TRACKED,
        ready_after: float = DEFAULT_READY_AFTER,
        on_event: Callable[[str], None] | None = None,
        **options: Unpack[ListWatchOptions],
    ) -> None:
        self._folder = ShapeFolder(max_shapes=max_shapes, max_tracked=max_tracked)
        self._lock = threading.Lock()
        self._shapes = self._folder.shapes()
        self._on_event = on_event
        self.ready_after = ready_after
        self._clock: Callable[[], float] = options.get("clock", time.time)
        self._started: float | None = None
        options.setdefault("not_served_seconds", 60.0)  # a cluster before resource.k8s.io/v1 (1.34) has none
        self.slice_loop = ListWatch(slices, _Hooks(self, True), "ResourceSlices", name="gpudra-resourceslice-cache",
                                    on_event=self._told, **options)  # fmt: skip
        self.class_loop = ListWatch(classes, _Hooks(self, False), "DeviceClasses", name="gpudra-shape-class-cache",
                                    on_event=self._told, **options)  # fmt: skip

    # -- the admission side ------------------------------------------------------------------------------------

    def shapes(self) -> DeviceShapes:
        """The current shapes (no shapes until a list succeeded)."""
        return self._shapes

    # -- the loops ---------------------------------------------------------------------------------------------

    def start(self) -> None:
        if self._started is None:
            self._started = self._clock()
        self.slice_loop.start()
        self.class_loop.start()

    def stop(self, timeout: float = 5.0) -> None:
        self.slice_loop.stop(timeout)
        self.class_loop.stop(timeout)

    def status(self) -> dict[str, ListWatchStatus]:
        return {"ResourceSlices": self.slice_loop.status(), "DeviceClasses": self.class_loop.status()}

    # -- the writer side ---------------------------------------------------------------------------------------

    def _told(self, event: LoopEvent, _: str) -> None:
        self._event(event)

    def _event(self, kind: str) -> None:
        if self._on_event is not None:
            self._on_event(kind)

    def _publish(self) -> None:
        """Under `_lock`: swap in the folder's snapshot; tell of a new generation."""
        before = self._shapes.generation
        self._shapes = self._folder.shapes()
        if self._shapes.generation != before:
            s = self._shapes
            log.info("device shapes: %d on %d node(s), generation %d%s", len(s.shapes), s.nodes, s.generation,
                     f" (partial: {s.limit})" if s.limit else "")  # fmt: skip
            self._event("change")

    def _replace(self, slices: bool, items: list[dict[str, Any]]) -> None:
        if slices:
            fresh = self._folder.empty()
            for obj in items:  # folded off to the side: readers keep the last shapes meanwhile
                self._guarded(fresh.apply_slice, obj)
            with self._lock:
                self._folder.adopt_slices(fresh)
                self._publish()
            return
        classes = [obj for obj in items if _name(obj)]
        with self._lock:
            self._folder.replace_classes(classes)
            self._publish()

    def _apply(self, slices: bool, event: str, obj: dict[str, Any]) -> None:
        name = _name(obj)
        if event not in ("ADDED", "MODIFIED", "DELETED") or not name:
            log.warning(
                "ignoring a %s watch event %r without a name", "ResourceSlice" if slices else "DeviceClass", event
            )
            return
        with self._lock:
            if slices:
                self._guarded(self._folder.remove_slice if event == "DELETED" else self._folder.apply_slice,
                              name if event == "DELETED" else obj)  # fmt: skip
            elif event == "DELETED":
                self._folder.remove_class(name)
            else:
                self._folder.apply_class(obj)
            self._publish()

    @staticmethod
    def _guarded(fold: Callable[[Any], None], arg: Any) -> None:
        try:
            fold(arg)
        except (TypeError, ValueError, AttributeError, KeyError) as exc:  # a malformed object is skipped, not fatal
            log.warning("ignoring a malformed ResourceSlice %r: %s: %s", _name(arg) or arg, type(exc).__name__, exc)

    # -- health ------------------------------------------------------------------------------------------------

    def readiness(self) -> tuple[bool, str]:
        """Not ready until both lists succeeded (at most `ready_after` seconds after `start`); then always ready,
        with a warning while serving the last good shapes, a partial view, or none."""
        statuses = self.status()
        if any(s.served is False for s in statuses.values()):
            return True, f"the API server does not serve {GROUP}/{VERSION}: claims are not checked against devices"
        waiting = [what for what, s in statuses.items() if not s.synced]
        errors = "; ".join(f"{what}: {s.last_error}" for what, s in statuses.items() if s.last_error)
        why = f" (last error: {errors})" if errors else ""
        if waiting:
            since = self._started
            if since is None or self._clock() - since < self.ready_after:
                return False, f"waiting for the first list of {' and '.join(waiting)}{why}"
            return True, (
                f"warning: {' and '.join(waiting)} not listed {self.ready_after:.0f}s after start: claims are not "
                f"checked against devices{why}"
            )
        s = self._shapes
        detail = (
            f"{len(s.shapes)} device shape(s) on {s.nodes} node(s), {len(s.classes)} DeviceClasses, generation "
            f"{s.generation}"
        )
        if s.pending:
            detail += f"; {s.pending} pool(s) incomplete"
        if s.limit:
            detail = f"warning: a partial view ({s.limit}): no claim is refused; {detail}"
        if any(st.failing for st in statuses.values()):
            detail = f"warning: serving the last good shapes; {detail}{why}"
        return True, detail
