"""List functions: Kubernetes `library/lists.go` (v0), cel-go `ext.Lists` v3 and the optional library's (v2)
`first`/`last`/`optional.unwrap`/`unwrapOpt`. The `sortBy` macro (the compiler's) calls `@sortByAssociatedKeys`
here; sorting follows Go's sort.Slice. `includes` (lists v1, Kubernetes 1.37, and DRA's ListTypeAttributes)
is kept apart in `INCLUDES_REGISTRY` so an environment can opt in.
"""

from __future__ import annotations

from collections.abc import Callable
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


def _dispatch_on_first(values: list[Any], name: str, accepted: tuple[type, ...]) -> None:
    # Upstream's overloads are per element type (list(int), list(string), ...); at run time a dyn list is
    # matched by its first element, so a first element of no overload's type fails the dispatch itself.
    if values and type(values[0]) not in accepted:
        raise CelRuntimeError(f"no such overload: {name}(list)")


@REGISTRY.member("isSorted", list)
def is_sorted(values: list[Any]) -> bool:
    _dispatch_on_first(values, "isSorted", _COMPARABLE)
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
    _dispatch_on_first(values, "sum", tuple(_SUM_ZERO))
    kind = type(values[0])
    acc = _SUM_ZERO[kind]
    for value in values:
        if type(value) is not kind:
            raise _no_such_overload()
        acc = add(acc, value)
    return acc


def _extreme(values: list[Any], name: str, prefer: int) -> Any:
    _dispatch_on_first(values, name, _COMPARABLE)
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
    if n < 0:
        raise CelRuntimeError(f"lists.range: size must be non-negative, got {n}")
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
    order = list(range(len(values)))

    def less(i: int, j: int) -> bool:
        return _order(keys[order[i]], keys[order[j]]) == -1

    def swap(i: int, j: int) -> None:
        order[i], order[j] = order[j], order[i]

    # cel-go sorts the index list with Go's sort.Slice, which is not stable; ties come out in its order.
    _go_sort_slice(len(order), less, swap)
    return [values[i] for i in order]


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


def _unwrap(values: list[Any], name: str) -> list[Any]:
    _dispatch_on_first(values, name, (Optional,))
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
    return _unwrap(values, "optional.unwrap")


@REGISTRY.member("unwrapOpt", list)
def unwrap_opt(values: list[Any]) -> list[Any]:
    return _unwrap(values, "unwrapOpt")


# ------------------------------------------------------------------ Go's sort.Slice (pattern-defeating quicksort)
# The algorithm of Go's sort/zsortfunc.go (pdqsort_func and helpers), so that sort() and sortBy() put equal keys
# in the same order as upstream. `less(i, j)` and `swap(i, j)` work on positions, as Go's lessSwap does.

_Less = Callable[[int, int], bool]
_Swap = Callable[[int, int], None]
_INCREASING, _DECREASING, _UNKNOWN = 1, 2, 0
_MASK64: Final = 2**64 - 1


def _go_sort_slice(n: int, less: _Less, swap: _Swap) -> None:
    _pdqsort(less, swap, 0, n, n.bit_length())


def _insertion_sort(less: _Less, swap: _Swap, a: int, b: int) -> None:
    for i in range(a + 1, b):
        j = i
        while j > a and less(j, j - 1):
            swap(j, j - 1)
            j -= 1


def _sift_down(less: _Less, swap: _Swap, lo: int, hi: int, first: int) -> None:
    root = lo
    while True:
        child = 2 * root + 1
        if child >= hi:
            return
        if child + 1 < hi and less(first + child, first + child + 1):
            child += 1
        if not less(first + root, first + child):
            return
        swap(first + root, first + child)
        root = child


def _heap_sort(less: _Less, swap: _Swap, a: int, b: int) -> None:
    hi = b - a
    for i in range((hi - 1) // 2, -1, -1):
        _sift_down(less, swap, i, hi, a)
    for i in range(hi - 1, -1, -1):
        swap(a, a + i)
        _sift_down(less, swap, 0, i, a)


def _pdqsort(less: _Less, swap: _Swap, a: int, b: int, limit: int) -> None:
    was_balanced = True
    was_partitioned = True
    while True:
        length = b - a
        if length <= 12:
            _insertion_sort(less, swap, a, b)
            return
        if limit == 0:
            _heap_sort(less, swap, a, b)
            return
        if not was_balanced:
            _break_patterns(swap, a, b)
            limit -= 1
        pivot, hint = _choose_pivot(less, a, b)
        if hint == _DECREASING:
            _reverse_range(swap, a, b)
            pivot = (b - 1) - (pivot - a)
            hint = _INCREASING
        if was_balanced and was_partitioned and hint == _INCREASING and _partial_insertion_sort(less, swap, a, b):
            return
        if a > 0 and not less(a - 1, pivot):
            a = _partition_equal(less, swap, a, b, pivot)
            continue
        mid, was_partitioned = _partition(less, swap, a, b, pivot)
        left, right = mid - a, b - mid
        threshold = length // 8
        if left < right:
            was_balanced = left >= threshold
            _pdqsort(less, swap, a, mid, limit)
            a = mid + 1
        else:
            was_balanced = right >= threshold
            _pdqsort(less, swap, mid + 1, b, limit)
            b = mid


def _partition(less: _Less, swap: _Swap, a: int, b: int, pivot: int) -> tuple[int, bool]:
    swap(a, pivot)
    i, j = a + 1, b - 1
    while i <= j and less(i, a):
        i += 1
    while i <= j and not less(j, a):
        j -= 1
    if i > j:
        swap(j, a)
        return j, True
    swap(i, j)
    i += 1
    j -= 1
    while True:
        while i <= j and less(i, a):
            i += 1
        while i <= j and not less(j, a):
            j -= 1
        if i > j:
            break
        swap(i, j)
        i += 1
        j -= 1
    swap(j, a)
    return j, False


def _partition_equal(less: _Less, swap: _Swap, a: int, b: int, pivot: int) -> int:
    swap(a, pivot)
    i, j = a + 1, b - 1
    while True:
        while i <= j and not less(a, i):
            i += 1
        while i <= j and less(a, j):
            j -= 1
        if i > j:
            return i
        swap(i, j)
        i += 1
        j -= 1


def _partial_insertion_sort(less: _Less, swap: _Swap, a: int, b: int) -> bool:
    i = a + 1
    for _ in range(5):
        while i < b and not less(i, i - 1):
            i += 1
        if i == b:
            return True
        if b - a < 50:
            return False
        swap(i, i - 1)
        if i - a >= 2:
            for j in range(i - 1, 0, -1):
                if not less(j, j - 1):
                    break
                swap(j, j - 1)
        if b - i >= 2:
            for j in range(i + 1, b):
                if not less(j, j - 1):
                    break
                swap(j, j - 1)
    return False


def _break_patterns(swap: _Swap, a: int, b: int) -> None:
    length = b - a
    if length < 8:
        return
    state = length  # Go's xorshift, seeded with the length
    modulus = 1 << length.bit_length()
    mid = a + (length // 4) * 2
    for idx in range(mid - 1, mid + 2):
        state ^= (state << 13) & _MASK64
        state ^= state >> 7
        state ^= (state << 17) & _MASK64
        other = state & (modulus - 1)
        if other >= length:
            other -= length
        swap(idx, a + other)


def _choose_pivot(less: _Less, a: int, b: int) -> tuple[int, int]:
    n = b - a
    swaps = [0]
    i, j, k = a + n // 4, a + n // 4 * 2, a + n // 4 * 3
    if n >= 8:
        if n >= 50:
            i = _median(less, i - 1, i, i + 1, swaps)
            j = _median(less, j - 1, j, j + 1, swaps)
            k = _median(less, k - 1, k, k + 1, swaps)
        j = _median(less, i, j, k, swaps)
    if swaps[0] == 0:
        return j, _INCREASING
    if swaps[0] == 12:
        return j, _DECREASING
    return j, _UNKNOWN


def _median(less: _Less, a: int, b: int, c: int, swaps: list[int]) -> int:
    if less(b, a):
        swaps[0] += 1
        a, b = b, a
    if less(c, b):
        swaps[0] += 1
        b, c = c, b
    if less(b, a):
        swaps[0] += 1
        a, b = b, a
    return b


def _reverse_range(swap: _Swap, a: int, b: int) -> None:
    i, j = a, b - 1
    while i < j:
        swap(i, j)
        i += 1
        j -= 1
