"""List functions: Kubernetes `library/lists.go` (v0), cel-go `ext.Lists` v3, and the optional library's (v2)
`first`/`last`/`optional.unwrap`/`unwrapOpt`.

`sortBy(e, key)` is a macro upstream (expanded to `@sortByAssociatedKeys`); the compiler expands it and calls
the `@sortByAssociatedKeys` member registered here. `includes` (Kubernetes lists v1, 1.37, and DRA's
ListTypeAttributes) is kept apart in `INCLUDES_REGISTRY` so an environment can opt in.
"""

from __future__ import annotations

from typing import Any, Final

from dra.cel._functions import FunctionRegistry
from dra.cel.stdlib import add, cel_equal, compare
from dra.cel.values import Duration, Optional, Timestamp, Uint
from dra.errors import CelCostError, CelRuntimeError

__all__ = ["INCLUDES_REGISTRY", "REGISTRY"]

REGISTRY = FunctionRegistry()
INCLUDES_REGISTRY = FunctionRegistry()

# The element types cel-go's traits.Comparer covers (and the overloads both libraries declare).
_COMPARABLE: Final = (int, Uint, float, bool, Duration, Timestamp, str, bytes)
_SUM_ZERO: Final[dict[type, Any]] = {int: 0, Uint: Uint(0), float: 0.0, Duration: Duration(0)}


def _no_such_overload() -> CelRuntimeError:
    return CelRuntimeError("no such overload")


def _order(a: Any, b: Any) -> int | None:
    """cel-go `a.Compare(b)` as an int, or None where it yields an error (NaN, incompatible types)."""
    try:
        c = compare("compare", a, b)
    except CelRuntimeError:
        return None
    return None if c == 2 else c


def _check_comparable(value: Any) -> None:
    if type(value) not in _COMPARABLE:
        raise _no_such_overload()


@REGISTRY.member("isSorted", list)
def is_sorted(values: list[Any]) -> bool:
    prev: Any = None
    for i, value in enumerate(values):
        _check_comparable(value)
        if i and _order(prev, value) == 1:
            return False
        prev = value
    return True


@REGISTRY.member("sum", list)
def sum_(values: list[Any]) -> Any:
    if not values:
        # Upstream returns the zero of the list's static element type; untyped at run time, we give int 0.
        return 0
    zero = _SUM_ZERO.get(type(values[0]))
    if zero is None:
        raise _no_such_overload()
    acc = zero
    for value in values:
        acc = add(acc, value)
    return acc


def _extreme(values: list[Any], name: str, prefer: int) -> Any:
    result: Any = None
    for i, value in enumerate(values):
        _check_comparable(value)
        if i == 0:
            result = value
        elif _order(result, value) == prefer:
            result = value
    if not values:
        raise CelRuntimeError(f"{name} called on empty list")
    return result


@REGISTRY.member("min", list)
def min_(values: list[Any]) -> Any:
    return _extreme(values, "min", 1)


@REGISTRY.member("max", list)
def max_(values: list[Any]) -> Any:
    return _extreme(values, "max", -1)


@REGISTRY.member("indexOf", list, object)
def index_of(values: list[Any], item: Any) -> int:
    for i, value in enumerate(values):
        if cel_equal(value, item):
            return i
    return -1


@REGISTRY.member("lastIndexOf", list, object)
def last_index_of(values: list[Any], item: Any) -> int:
    for i in range(len(values) - 1, -1, -1):
        if cel_equal(values[i], item):
            return i
    return -1


@INCLUDES_REGISTRY.member("includes", object, object)
def includes(target: Any, arg: Any) -> bool:
    if type(target) is list:
        return any(cel_equal(item, arg) for item in target)
    return cel_equal(target, arg)


# ---------------------------------------------------------------------------------------------- cel-go ext.Lists


@REGISTRY.member("slice", list, int, int)
def slice_(values: list[Any], start: int, end: int) -> list[Any]:
    if start < 0 or end < 0:
        raise CelRuntimeError(f"cannot slice({start}, {end}), negative indexes not supported")
    if start > end:
        raise CelRuntimeError(f"cannot slice({start}, {end}), start index must be less than or equal to end index")
    if len(values) < end:
        raise CelRuntimeError(f"cannot slice({start}, {end}), list is length {len(values)}")
    return values[start:end]


def _flatten(values: list[Any], depth: int) -> list[Any]:
    if depth < 0:
        raise CelRuntimeError("level must be non-negative")
    out: list[Any] = []
    for value in values:
        if type(value) is list and depth > 0:
            out.extend(_flatten(value, depth - 1))
        else:
            out.append(value)
    return out


@REGISTRY.member("flatten", list)
def flatten(values: list[Any]) -> list[Any]:
    return _flatten(values, 1)


@REGISTRY.member("flatten", list, int)
def flatten_depth(values: list[Any], depth: int) -> list[Any]:
    return _flatten(values, depth)


# The largest runtime budget Kubernetes grants (RuntimeCELCostBudget); a list longer than this costs more
# than any caller may spend, so refuse it before allocating rather than hang.
_MAX_RANGE: Final = 10_000_000


@REGISTRY.function("lists.range", int)
def lists_range(n: int) -> list[int]:
    if n > _MAX_RANGE:
        raise CelCostError(f"operation cancelled: actual cost limit exceeded (lists.range({n}) > {_MAX_RANGE})")
    return list(range(n))


@REGISTRY.member("reverse", list)
def reverse(values: list[Any]) -> list[Any]:
    return values[::-1]


@REGISTRY.member("distinct", list)
def distinct(values: list[Any]) -> list[Any]:
    unique: list[Any] = []
    for value in values:
        if not any(cel_equal(value, seen) for seen in unique):
            unique.append(value)
    return unique


def _sort_by_keys(values: list[Any], keys: list[Any]) -> list[Any]:
    if len(values) != len(keys):
        raise CelRuntimeError(
            "@sortByAssociatedKeys() expected a list of the same size as the associated keys list, "
            f"but got {len(values)} and {len(keys)} elements respectively"
        )
    if not values:
        return values
    key_type = type(keys[0])
    if key_type not in _COMPARABLE:
        raise CelRuntimeError("list elements must be comparable")
    if any(type(k) is not key_type for k in keys):
        raise CelRuntimeError("list elements must have the same type")
    # Stable sort; Go's sort.Slice is stable only up to 12 elements (insertion sort), so ties in longer
    # lists may order differently from upstream.
    order = sorted(range(len(values)), key=lambda i: _SortKey(keys, i))
    return [values[i] for i in order]


class _SortKey:
    """Orders indices by their keys with cel-go `Compare == -1` as the less-than (NaN never less)."""

    __slots__ = ("index", "keys")

    def __init__(self, keys: list[Any], index: int) -> None:
        self.keys = keys
        self.index = index

    def __lt__(self, other: _SortKey) -> bool:
        return _order(self.keys[self.index], self.keys[other.index]) == -1


@REGISTRY.member("sort", list)
def sort(values: list[Any]) -> list[Any]:
    return _sort_by_keys(values, values)


@REGISTRY.member("@sortByAssociatedKeys", list, list)
def sort_by_associated_keys(values: list[Any], keys: list[Any]) -> list[Any]:
    return _sort_by_keys(values, keys)


# ------------------------------------------------------------------- optional library v2 first/last and unwrap


@REGISTRY.member("first", list)
def first(values: list[Any]) -> Optional:
    return Optional.of(values[0]) if values else Optional.NONE


@REGISTRY.member("last", list)
def last(values: list[Any]) -> Optional:
    return Optional.of(values[-1]) if values else Optional.NONE


def _unwrap(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if type(value) is not Optional:
            shown = ("true" if value else "false") if type(value) is bool else value
            raise CelRuntimeError(f"value {shown} is not optional")
        if value.has_value():
            out.append(value.value())
    return out


@REGISTRY.function("optional.unwrap", list)
def optional_unwrap(values: list[Any]) -> list[Any]:
    return _unwrap(values)


@REGISTRY.member("unwrapOpt", list)
def unwrap_opt(values: list[Any]) -> list[Any]:
    return _unwrap(values)
