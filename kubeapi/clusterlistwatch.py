"""A `ListWatchSource` for one resource of an API group across every namespace, through the `kubernetes` client: one
paged list, then a watch from its resourceVersion; both bounded in time and raising `ListWatchError` with the HTTP
status when the API server answered."""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from typing import Any

from .errors import api_errors, status_of
from .listwatch import ListWatchError
from .paging import PAGE, all_pages

__all__ = ["ClusterListWatch"]

log = logging.getLogger("gpudra.kubeapi.clusterlistwatch")


class ClusterListWatch:
    """`list()` (items, resourceVersion) and `watch(resource_version)` yielding (type, object) over a
    `kubernetes.client.ApiClient`: pages of `page` objects, calls bounded by `timeout` seconds, a watch ended by the
    server after a random `watch_seconds` (spreading the watches of replicas) and bounded by that plus `timeout`."""

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
        """End a running watch (used when the loop stops)."""
        w = self._watch
        if w is not None:
            w.stop()
            resp = getattr(w, "_resp", None)
            if resp is not None:
                try:
                    resp.close()
                except Exception:  # closing a response another thread reads may raise there, not here
                    log.debug("closing the watch response failed", exc_info=True)
