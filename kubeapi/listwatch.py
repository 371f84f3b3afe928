"""The one list+watch loop behind every cache kept by list+watch (DeviceClasses, GPUSizingRecommendations, the
verification's pods and claims): list, watch from the list's resourceVersion, watch again from the last version
seen (bookmarks included) when the server ends the watch, relist at once when it is too old (410 Gone), back off
after a failure, and ask again later for a resource the API server does not serve (404). A cache is only what it
does with a list (`replace`), an event (`apply`) and an absent resource (`absent`); the loop keeps its status."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypedDict

from .backoff import Backoff
from .errors import ApiServerError

__all__ = [
    "ListWatch",
    "ListWatchCache",
    "ListWatchError",
    "ListWatchOptions",
    "ListWatchSource",
    "ListWatchStatus",
    "ListWatched",
    "LoopEvent",
]

log = logging.getLogger("gpudra.kubeapi.listwatch")

LoopEvent = Literal["list", "absent", "error", "restart"]
"""What the loop tells `on_event`, with a detail: `error` (list | watch) and `restart` (closed | expired | error)."""


class ListWatchError(ApiServerError):
    """The API server could not list or watch; `status` is its HTTP status when it answered (410: too old a
    resourceVersion, relist; 404: the resource is not served)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ListWatchSource(Protocol):
    """Where a resource comes from: a whole list (items, resourceVersion), a watch from a resourceVersion yielding
    (type, object) until the server ends it, and `interrupt` to end a running watch from another thread. `list`
    and `watch` raise `ListWatchError`."""

    def list(self) -> tuple[list[dict[str, Any]], str]: ...

    def watch(self, resource_version: str) -> Iterator[tuple[str, dict[str, Any]]]: ...

    def interrupt(self) -> None: ...


class ListWatchCache(Protocol):
    """What a cache does with what the loop reads: a whole list replaces what it holds, an event (ADDED, MODIFIED,
    DELETED; never BOOKMARK) changes it, and `absent` says the API server does not serve the resource."""

    def replace(self, items: list[dict[str, Any]]) -> None: ...

    def apply(self, event: str, obj: dict[str, Any]) -> None: ...

    def absent(self) -> None: ...


@dataclass(frozen=True, slots=True)
class ListWatchStatus:
    """The loop's state, one immutable value swapped at each change (readable from any thread)."""

    synced: bool = False  # a list has succeeded at least once
    served: bool | None = None  # whether the API server serves the resource (None: not known yet)
    watching: bool = False
    failing: bool = False  # the last list or watch failed and no list has succeeded since
    last_sync: float | None = None  # wall-clock time of the last successful list, watch event or watch end
    restarts: int = 0  # watches ended, whatever the reason
    errors: int = 0
    last_error: str = ""


class ListWatchOptions(TypedDict, total=False):
    """How a loop waits: `backoff` (first, longest delay after failures), `not_served_seconds` (None: a 404 is a
    failure), `clock` (wall-clock time) and `sleep(stop, seconds)` (True when stopped)."""

    backoff: tuple[float, float]
    not_served_seconds: float | None
    clock: Callable[[], float]
    sleep: Callable[[threading.Event, float], bool]


def _wait(stop: threading.Event, seconds: float) -> bool:
    return stop.wait(seconds)


def _version_of(obj: Any, default: str) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    version = meta.get("resourceVersion") if isinstance(meta, dict) else None
    return version if isinstance(version, str) and version else default


class ListWatch:
    """Keeps `cache` current from `source` on a daemon thread (`start`, `stop`) or in the caller's (`run`).

    `what` names the resource in logs; `on_event(event, detail)` is told of each `LoopEvent`."""

    def __init__(
        self,
        source: ListWatchSource,
        cache: ListWatchCache,
        what: str,
        *,
        name: str = "gpudra-list-watch",
        on_event: Callable[[LoopEvent, str], None] | None = None,
        backoff: tuple[float, float] = (1.0, 60.0),
        not_served_seconds: float | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[threading.Event, float], bool] = _wait,
    ) -> None:
        self.source, self.cache, self.what, self.name = source, cache, what, name
        self.backoff = backoff
        self.not_served_seconds = not_served_seconds
        self._on_event = on_event
        self.clock = clock
        self._sleep = sleep
        self._status = ListWatchStatus()  # written by the loop's thread only
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def status(self) -> ListWatchStatus:
        return self._status

    # -- the thread --------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Run the loop on a daemon thread (once)."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self.run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """End the loop, interrupting a running watch rather than waiting for the server to end it."""
        self._stop.set()
        self.source.interrupt()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    # -- the loop ----------------------------------------------------------------------------------------------

    def run(self, stop: threading.Event | None = None, *, passes: int | None = None) -> None:
        """List, then watch until the watch ends (watch again from there) or breaks (relist). Returns when `stop`
        is set, or after `passes` watches or failed lists (for tests)."""
        stop = stop or self._stop
        backoff = Backoff(*self.backoff, jitter=0.2)
        version: str | None = None  # None: list first
        done = 0
        while not stop.is_set() and (passes is None or done < passes):
            done += 1
            version, delay = self._pass(stop, backoff, version)
            if delay > 0:
                self._sleep(stop, delay)

    def _pass(self, stop: threading.Event, backoff: Backoff, version: str | None) -> tuple[str | None, float]:
        """A list when `version` is None, then one watch: (where the next watch starts, None to relist; the
        seconds to wait before it)."""
        operation = "watch"
        try:
            if version is None:
                operation = "list"
                items, version = self.source.list()
                self._listed(items)
                operation = "watch"
            version = self._watch(stop, version)
        except ListWatchError as exc:
            return None, self._broken(stop, backoff, operation, exc)
        except Exception as exc:  # never let the loop die: log, count, relist
            log.exception("the %s %s failed unexpectedly", self.what, operation)
            return None, self._broken(stop, backoff, operation, ListWatchError(f"{type(exc).__name__}: {exc}"))
        if stop.is_set():
            self._update(watching=False)
        else:
            self._restarted("closed", last_sync=self.clock())  # the server's watch timeout: the cache was current
        backoff.reset()
        return version, 0.0

    def _watch(self, stop: threading.Event, version: str) -> str:
        """Apply the events of one watch from `version`; the last version seen."""
        self._update(watching=True)
        for event, obj in self.source.watch(version):
            if stop.is_set():
                break
            if event == "ERROR":  # a Status object: the server ended the watch with an error (410: too old)
                code = obj.get("code")
                raise ListWatchError(
                    f"watch {self.what}: {obj.get('message')}", code if isinstance(code, int) else None
                )
            version = _version_of(obj, version)
            self._update(last_sync=self.clock())
            if event != "BOOKMARK":  # a bookmark only moves the version on and proves the watch alive
                self.cache.apply(event, obj)
        return version

    def _listed(self, items: list[dict[str, Any]]) -> None:
        self._update(last_sync=self.clock())
        self.cache.replace(items)
        self._update(synced=True, served=True, failing=False)
        self._tell("list", "")

    def _broken(self, stop: threading.Event, backoff: Backoff, operation: str, exc: ListWatchError) -> float:
        """Count a failed list or watch; the seconds to wait before relisting."""
        if stop.is_set():  # interrupted by `stop`
            self._update(watching=False)
            return 0.0
        if operation == "list" and exc.status == 404 and self.not_served_seconds is not None:
            self._update(served=False, last_error="")
            log.info("the API server does not serve %s (asking again in %.0fs)", self.what, self.not_served_seconds)
            self.cache.absent()
            self._tell("absent", "")
            return self.not_served_seconds
        if operation == "watch" and exc.status == 410:  # too old a resourceVersion: relist now
            self._restarted("expired")
            backoff.reset()
            return 0.0
        s = self._status
        self._update(errors=s.errors + 1, failing=True, last_error=str(exc), watching=False)
        self._tell("error", operation)
        if operation == "watch":
            self._restarted("error")
        delay = backoff.next()
        log.warning("the %s %s failed (keeping the last good state, relisting in %.0fs): %s",
                    self.what, operation, delay, exc)  # fmt: skip
        return delay

    def _restarted(self, reason: str, **changes: Any) -> None:
        self._update(restarts=self._status.restarts + 1, watching=False, **changes)
        self._tell("restart", reason)

    def _update(self, **changes: Any) -> None:
        self._status = dataclasses.replace(self._status, **changes)

    def _tell(self, event: LoopEvent, detail: str) -> None:
        if self._on_event is not None:
            self._on_event(event, detail)


class ListWatched:
    """A cache run by a `ListWatch` of its own (`loop`): starting, stopping and the status are the loop's."""

    loop: ListWatch

    def start(self) -> None:
        self.loop.start()

    def stop(self, timeout: float = 5.0) -> None:
        self.loop.stop(timeout)

    def status(self) -> ListWatchStatus:
        return self.loop.status()
