"""A cluster-wide list and watch of one resource of an API group, for the caches kept by list+watch (DeviceClasses,
GPUSizingRecommendations): one paged list, then a watch from its resourceVersion; both bounded in time and raising
one error type with the HTTP status when the API server answered."""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Iterator
from typing import Any

from .errors import api_errors, status_of
from .paging import PAGE, all_pages

__all__ = ["ClusterListWatch", "ListWatchError", "ListWatchThread"]

log = logging.getLogger("gpudra.kubeapi.listwatch")


class ListWatchError(Exception):
    """The API server could not list or watch; `status` is its HTTP status when it answered (410: too old a
    resourceVersion, relist)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ClusterListWatch:
    """`list()` (items, resourceVersion) and `watch(resource_version)` yielding (type, object) over a
    `kubernetes.client.ApiClient`: pages of `page` objects, calls bounded by `timeout` seconds, a watch ended by the
    server after a random `watch_seconds` (spreading relists) and bounded by that plus `timeout`."""

    def __init__(
        self,
        api_client: Any,
        group: str,
        version: str,
        plural: str,
        *,
        timeout: float = 10.0,
        page: int = PAGE,
        watch_seconds: tuple[int, int] = (240, 360),
    ) -> None:
        from kubernetes import client

        self._custom = client.CustomObjectsApi(api_client)
        self.group, self.version, self.plural = group, version, plural
        self._what = f"{plural}.{group}"
        self.timeout = timeout
        self.page = page
        self.watch_seconds = watch_seconds
        self._watch: Any = None

    def list(self) -> tuple[list[dict[str, Any]], str]:
        def page(token: str | None) -> Any:
            return self._custom.list_cluster_custom_object(
                self.group, self.version, self.plural, limit=self.page, _continue=token,
                _request_timeout=self.timeout,
            )  # fmt: skip

        try:
            items, version = all_pages(page)
        except api_errors() as exc:
            raise ListWatchError(
                f"list {self.plural}.{self.group}: {type(exc).__name__}: {exc}", status_of(exc)
            ) from exc
        return [i for i in items if isinstance(i, dict)], version

    def watch(self, resource_version: str) -> Iterator[tuple[str, dict[str, Any]]]:
        from kubernetes import watch

        seconds = random.randint(*self.watch_seconds)
        w = watch.Watch()  # type: ignore[no-untyped-call]
        self._watch = w
        stream = w.stream(  # type: ignore[no-untyped-call]
            self._custom.list_cluster_custom_object, self.group, self.version, self.plural,
            resource_version=resource_version, allow_watch_bookmarks=True, timeout_seconds=seconds,
            _request_timeout=(self.timeout, seconds + self.timeout),
        )  # fmt: skip
        try:
            for event in stream:
                raw = event.get("raw_object") if isinstance(event, dict) else None
                kind = event.get("type") if isinstance(event, dict) else None
                if isinstance(kind, str) and isinstance(raw, dict):
                    yield kind, raw
        except api_errors() as exc:
            raise ListWatchError(
                f"watch {self.plural}.{self.group}: {type(exc).__name__}: {exc}", status_of(exc)
            ) from exc
        finally:
            self._watch = None

    def interrupt(self) -> None:
        """End a running watch (used when the cache stops)."""
        w = self._watch
        if w is not None:
            w.stop()
            resp = getattr(w, "_resp", None)
            if resp is not None:
                try:
                    resp.close()
                except Exception:  # closing a response another thread reads may raise there, not here
                    log.debug("closing the watch response failed", exc_info=True)


class ListWatchThread:
    """The thread of a cache kept by list+watch: `start` runs the cache's `run(stop)` loop on a daemon thread,
    `stop` sets the event and interrupts the source's running watch so that the loop ends without waiting for it."""

    thread_name = "gpudra-list-watch"
    source: Any

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run(self, stop: threading.Event | None = None) -> None:
        raise NotImplementedError

    def start(self) -> None:
        """Run the loop on a daemon thread (once)."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self.run, name=self.thread_name, daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        interrupt = getattr(self.source, "interrupt", None)
        if callable(interrupt):
            interrupt()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
