"""Independent simulations in parallel: all local cores through a process pool, or a Ray cluster.

`sweep` runs its grid through it in one batch; `plan` runs its search's probes through it round after round, so
the pool (or Ray) is started once and kept while the caller holds the context.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

from dra.errors import InputError

__all__ = ["BACKENDS", "Mapper", "parallel_map"]

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


def _serial(fn: Callable[[Any], Any], items: Sequence[Any], done: Done | None = None) -> list[Any]:
    results = []
    for item in items:
        results.append(fn(item))
        if done:
            done(len(results))
    return results


def _ray_mapper() -> Mapper[Any, Any]:
    try:
        import ray
    except ImportError as exc:
        raise InputError("backend: ray needs the ray package (pip install 'gpudra[ray]')") from exc
    if not ray.is_initialized():
        ray.init(address=os.environ.get("RAY_ADDRESS") or None)

    def mapped(fn: Callable[[Any], Any], items: Sequence[Any], done: Done | None = None) -> list[Any]:
        remote = ray.remote(fn)
        results = list(ray.get([remote.remote(item) for item in items]))
        if done:
            done(len(results))
        return results

    return mapped
