"""The one test fake of a list+watch API (`kubeapi.ListWatchSource`), shared by the tests of every cache kept by
`kubeapi.ListWatch`: a scripted server for one resource, and a sleep that records instead of waiting."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterator
from typing import Any

from kubeapi import ListWatchError

__all__ = ["FakeListWatch", "recording_sleep"]

Event = tuple[str, Any]  # (type, object); an exception as the object is raised at that point of the watch


class FakeListWatch:
    """A scripted API server for one resource. Each `list()` pops the next answer of `lists` (items, or a
    `ListWatchError` it raises; none left: a 503) and returns a new resourceVersion (11, 12, ...); each `watch()`
    replays the next script of `watches` (or raises it), then ends as the server's timeout would, or, with `idle`,
    blocks until `interrupt()`. `calls` records what was asked ("list", "watch@<version>"); `watching` is set by
    each watch, after the list before it was applied."""

    def __init__(self, *, idle: bool = False) -> None:
        self.lists: list[list[dict[str, Any]] | ListWatchError] = []
        self.watches: list[list[Event] | ListWatchError] = []
        self.calls: list[str] = []
        self.rv = 10
        self.idle = idle
        self.watching = threading.Event()
        self._interrupted = threading.Event()

    def list(self) -> tuple[list[dict[str, Any]], str]:
        self.calls.append("list")
        answer = self.lists.pop(0) if self.lists else ListWatchError("no more answers", 503)
        if isinstance(answer, ListWatchError):
            raise answer
        self.rv += 1
        return copy.deepcopy(answer), str(self.rv)

    def watch(self, resource_version: str) -> Iterator[tuple[str, dict[str, Any]]]:
        self.calls.append(f"watch@{resource_version}")
        self.watching.set()
        script = self.watches.pop(0) if self.watches else []
        if isinstance(script, ListWatchError):
            raise script
        for kind, obj in script:
            if isinstance(obj, Exception):
                raise obj
            yield kind, copy.deepcopy(obj)
        if self.idle and not self.watches:
            self._interrupted.wait()
            raise ListWatchError("watch interrupted")

    def interrupt(self) -> None:
        self._interrupted.set()


def recording_sleep() -> tuple[Callable[[threading.Event, float], bool], list[float]]:
    """A `sleep` for `ListWatch` that records the seconds it was asked to wait, and returns at once."""
    slept: list[float] = []

    def sleep(stop: threading.Event, seconds: float) -> bool:
        slept.append(seconds)
        return stop.is_set()

    return sleep, slept
