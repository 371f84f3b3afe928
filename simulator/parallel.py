"""Independent simulations in parallel: all local cores through a process pool, or a Ray cluster.

`sweep` runs its grid through `parallel_map` in one batch; `plan` submits its searches' probes one by one to a
`parallel_stream` and takes each result as it finishes, so a strategy's search moves on while the others' probes
still run and no core waits for the slowest probe of a round. Either way the pool (or Ray) is started once and kept
while the caller holds the context.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from dra.errors import InputError

__all__ = ["BACKENDS", "Mapper", "Stream", "parallel_map", "parallel_stream"]

BACKENDS = ("process", "ray")

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")
Done = Callable[[int], None]  # called with how many items of the batch are done
Mapper = Callable[[Callable[[_Item], _Result], Sequence[_Item], Done | None], list[_Result]]


@contextmanager
def parallel_map(backend: str = "process", workers: int = 0) -> Iterator[Mapper[Any, Any]]:
    """A `map(fn, items, done)` that returns `fn`'s results in `items`' order: one process per core (`workers`, 0 = all
    cores; 1 runs in this process) or Ray (`RAY_ADDRESS`, else a local Ray). `fn` must be a module-level function."""
    if backend not in BACKENDS:
        raise InputError(f"backend must be process or ray (got {backend!r})")
    if backend == "ray":
        yield _ray_mapper()
        return
    count = workers or os.cpu_count() or 1
    if count == 1:
        yield _serial
        return
    with ProcessPoolExecutor(max_workers=count) as pool:

        def pooled(fn: Callable[[Any], Any], items: Sequence[Any], done: Done | None = None) -> list[Any]:
            if len(items) == 1:  # nothing to spread: spare the pickling
                return _serial(fn, items, done)
            results = []
            for result in pool.map(fn, items):
                results.append(result)
                if done:
                    done(len(results))
            return results

        yield pooled


class Stream(Protocol):
    """Tasks submitted one at a time, results taken as they finish."""

    def submit(self, fn: Callable[[Any], Any], item: Any) -> int:
        """Start `fn(item)` (`fn` module level); its ticket (0, 1, 2, ... in submission order)."""
        ...

    def next_done(self) -> tuple[int, Any]:
        """(ticket, result) of one finished task not taken yet; waits for one. Only with a task in flight."""
        ...


class _SerialStream:
    """Runs each task in this process when its result is asked for, in submission order."""

    def __init__(self) -> None:
        self.queue: deque[tuple[int, Callable[[Any], Any], Any]] = deque()
        self.tickets = 0

    def submit(self, fn: Callable[[Any], Any], item: Any) -> int:
        self.tickets += 1
        self.queue.append((self.tickets - 1, fn, item))
        return self.tickets - 1

    def next_done(self) -> tuple[int, Any]:
        ticket, fn, item = self.queue.popleft()
        return ticket, fn(item)


class _PoolStream:
    def __init__(self, pool: ProcessPoolExecutor) -> None:
        self.pool = pool
        self.running: dict[Future[Any], int] = {}
        self.tickets = 0

    def submit(self, fn: Callable[[Any], Any], item: Any) -> int:
        self.tickets += 1
        self.running[self.pool.submit(fn, item)] = self.tickets - 1
        return self.tickets - 1

    def next_done(self) -> tuple[int, Any]:
        done, _ = wait(self.running, return_when=FIRST_COMPLETED)
        future = min(done, key=lambda f: self.running[f])  # the oldest of those done
        return self.running.pop(future), future.result()


class _RayStream:
    def __init__(self) -> None:
        self.ray = _ray()
        self.running: dict[Any, int] = {}
        self.remotes: dict[Callable[[Any], Any], Any] = {}
        self.tickets = 0

    def submit(self, fn: Callable[[Any], Any], item: Any) -> int:
        remote = self.remotes.setdefault(fn, self.ray.remote(fn))
        self.tickets += 1
        self.running[remote.remote(item)] = self.tickets - 1
        return self.tickets - 1

    def next_done(self) -> tuple[int, Any]:
        (ref,), _ = self.ray.wait(list(self.running), num_returns=1)
        return self.running.pop(ref), self.ray.get(ref)


@contextmanager
def parallel_stream(backend: str = "process", workers: int = 0) -> Iterator[Stream]:
    """A `Stream` on one process per core (`workers`, 0 = all cores; 1 runs each task in this process, in order) or
    on Ray (`RAY_ADDRESS`, else a local Ray)."""
    if backend not in BACKENDS:
        raise InputError(f"backend must be process or ray (got {backend!r})")
    if backend == "ray":
        yield _RayStream()
        return
    count = workers or os.cpu_count() or 1
    if count == 1:
        yield _SerialStream()
        return
    with ProcessPoolExecutor(max_workers=count) as pool:
        yield _PoolStream(pool)


def _serial(fn: Callable[[Any], Any], items: Sequence[Any], done: Done | None = None) -> list[Any]:
    results = []
    for item in items:
        results.append(fn(item))
        if done:
            done(len(results))
    return results


def _ray() -> Any:
    """The ray module, connected (`RAY_ADDRESS`, else a local Ray)."""
    try:
        import ray
    except ImportError as exc:
        raise InputError("backend: ray needs the ray package (pip install 'gpudra[ray]')") from exc
    if not ray.is_initialized():
        ray.init(address=os.environ.get("RAY_ADDRESS") or None)
    return ray


def _ray_mapper() -> Mapper[Any, Any]:
    ray = _ray()

    def mapped(fn: Callable[[Any], Any], items: Sequence[Any], done: Done | None = None) -> list[Any]:
        remote = ray.remote(fn)
        results = list(ray.get([remote.remote(item) for item in items]))
        if done:
            done(len(results))
        return results

    return mapped
