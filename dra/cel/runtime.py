"""What compiled closures call at run time besides `stdlib`: overload dispatch memoised per call site, the
conversion of library exceptions into `CelRuntimeError`, and optional selection and indexing (`x.?f`, `m[?k]`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from dra.cel import stdlib
from dra.cel._functions import NoMatchingOverload, Overload
from dra.cel.values import Optional
from dra.errors import CelError, CelRuntimeError

__all__ = ["Dispatcher", "guarded", "opt_index", "opt_select", "runtime_error"]


def runtime_error(e: BaseException) -> CelRuntimeError:
    """The `CelRuntimeError` an exception from library code reads as (cel-go's text for a failed dispatch)."""
    if isinstance(e, NoMatchingOverload):
        return CelRuntimeError(f"no such overload: {e.name}({', '.join(e.args_types)})")
    if isinstance(e, CelRuntimeError):
        return e
    if isinstance(e, CelError):
        return CelRuntimeError(e.message)
    return CelRuntimeError(str(e) or type(e).__name__)


class Dispatcher:
    """Overload resolution for one call site, memoised by the tuple of argument types."""

    __slots__ = ("name", "overloads", "cache")

    def __init__(self, name: str, overloads: Sequence[Overload]) -> None:
        self.name = name
        self.overloads = list(overloads)
        self.cache: dict[tuple[type, ...], Callable[..., Any]] = {}

    def resolve(self, args: tuple[Any, ...]) -> Callable[..., Any]:
        for ov in self.overloads:
            if ov.accepts(args):
                self.cache[tuple(map(type, args))] = ov.impl
                return ov.impl
        raise stdlib.no_overload(self.name, *args)  # cel-go's run-time text; the checker's is at compile time

    def __call__(self, *args: Any) -> Any:
        impl = self.cache.get(tuple(map(type, args)))
        if impl is None:
            impl = self.resolve(args)
        try:
            return impl(*args)
        except CelRuntimeError:
            raise
        except Exception as e:  # library code raises its own errors (QuantityError, ValueError, ...)
            raise runtime_error(e) from None


def guarded(impl: Callable[..., Any], *args: Any) -> Any:
    """`impl(*args)`, its exceptions converted by `runtime_error`."""
    try:
        return impl(*args)
    except CelRuntimeError:
        raise
    except Exception as e:
        raise runtime_error(e) from None


def opt_select(o: Any, field: str) -> Optional:
    """`o.?field`."""
    if isinstance(o, Optional):
        if not o.has_value():
            return o
        o = o.value()
    if isinstance(o, dict) and field in o:
        return Optional.of(o[field])
    if type(o) is list:  # cel-go treats `l.?f` as an index with a string
        raise CelRuntimeError("unsupported index type 'string' in list")
    return Optional.NONE  # cel-go: an optional selection on a value without that field (or without fields)


def opt_index(o: Any, key: Any) -> Optional:
    """`o[?key]`."""
    if isinstance(o, Optional):
        if not o.has_value():
            return o
        o = o.value()
    if isinstance(o, dict):
        try:
            return Optional.of(stdlib.index(o, key))
        except CelRuntimeError as e:
            if str(e).startswith("no such key"):
                return Optional.NONE
            raise
    if type(o) is list:
        try:
            return Optional.of(stdlib.index(o, key))
        except CelRuntimeError as e:
            if str(e).startswith("index out of bounds"):
                return Optional.NONE
            raise
    raise stdlib.no_overload("_[?_]", o, key)
