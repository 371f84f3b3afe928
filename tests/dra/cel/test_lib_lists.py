"""Unit tests of the list libraries (Kubernetes lists, cel-go ext.Lists v3, first/last), through the registry."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dra.cel._functions import NoMatchingOverload
from dra.cel.lists import INCLUDES_REGISTRY, REGISTRY
from dra.cel.values import Duration, Optional, Timestamp, Uint
from dra.errors import CelCostError, CelRuntimeError


def member(name: str, receiver: object, *args: object) -> Any:
    return REGISTRY.call_member(name, receiver, args)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([1, 2, 3], True),
        (["a", "b", "b", "c"], True),
        ([2.0, 1.0], False),
        ([], True),
        ([Uint(1), Uint(1)], True),
        ([b"a", b"b"], True),
        ([False, True], True),
        ([True, False], False),
        ([Duration(1), Duration(2)], True),
        ([Timestamp(5), Timestamp(1)], False),
    ],
)
def test_is_sorted(values: list[Any], expected: bool) -> None:
    assert member("isSorted", values) is expected


def test_is_sorted_rejects_non_comparable_elements() -> None:
    with pytest.raises(CelRuntimeError, match="no such overload"):
        member("isSorted", [[1], [2]])


def test_sum_keeps_element_type_and_checks_overflow() -> None:
    assert member("sum", [1, 3]) == 4
    assert member("sum", [1.0, 3.0]) == 4.0 and type(member("sum", [1.0, 3.0])) is float
    assert type(member("sum", [Uint(1), Uint(2)])) is Uint
    assert member("sum", [Duration(10), Duration(5)]) == Duration(15)
    assert member("sum", []) == 0
    with pytest.raises(CelRuntimeError, match="integer overflow"):
        member("sum", [2**62, 2**62])
    with pytest.raises(CelRuntimeError, match="no such overload"):
        member("sum", ["a"])


def test_min_max() -> None:
    assert member("min", [1, 3]) == 1
    assert member("max", [1, 3]) == 3
    assert member("max", ["b", "c", "a"]) == "c"
    assert member("min", [3.5, 1.25]) == 1.25
    for name in ("min", "max"):
        with pytest.raises(CelRuntimeError, match=f"^{name} called on empty list$"):
            member(name, [])


def test_index_of_uses_cel_equality() -> None:
    assert member("indexOf", [1, 2, 2, 3], 2) == 1
    assert member("lastIndexOf", ["a", "b", "b", "c"], "b") == 2
    assert member("indexOf", [1.0], 1.1) == -1
    assert member("indexOf", [1, 2], 2.0) == 1
    assert member("indexOf", [[1], [2]], [Uint(2)]) == 1
    assert member("lastIndexOf", [], 1) == -1


def test_includes_is_a_separate_opt_in_registry() -> None:
    assert INCLUDES_REGISTRY.call_member("includes", [1, 2, 3], (2,)) is True
    assert INCLUDES_REGISTRY.call_member("includes", "model-a", ("model-a",)) is True
    assert INCLUDES_REGISTRY.call_member("includes", [1], (5,)) is False
    assert "includes" not in REGISTRY.members


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [
        (3, 0, "cannot slice(3, 0), start index must be less than or equal to end index"),
        (0, 10, "cannot slice(0, 10), list is length 4"),
        (-5, 10, "cannot slice(-5, 10), negative indexes not supported"),
    ],
)
def test_slice_errors(start: int, end: int, message: str) -> None:
    with pytest.raises(CelRuntimeError) as err:
        member("slice", [1, 2, 3, 4], start, end)
    assert err.value.message == message


def test_slice_flatten_range_reverse_distinct() -> None:
    assert member("slice", [1, 2, 3, 4], 1, 3) == [2, 3]
    assert member("slice", [1, 2, 3, 4], 4, 4) == []
    assert member("flatten", [1, [2, [3, 4]]]) == [1, 2, [3, 4]]
    assert member("flatten", [1, 2, [], [], [3, 4]]) == [1, 2, 3, 4]
    assert member("flatten", [1, [2, [3, [4]]]], 2) == [1, 2, 3, [4]]
    assert member("flatten", [1, [2]], 0) == [1, [2]]
    with pytest.raises(CelRuntimeError, match="level must be non-negative"):
        member("flatten", [], -1)
    with pytest.raises(NoMatchingOverload):
        member("flatten", {})
    assert REGISTRY.call_global("lists.range", (4,)) == [0, 1, 2, 3]
    assert REGISTRY.call_global("lists.range", (0,)) == []
    with pytest.raises(CelRuntimeError, match="^lists.range: size must be non-negative, got -2$"):
        REGISTRY.call_global("lists.range", (-2,))
    assert member("reverse", [5, 1, 2, 3]) == [3, 2, 1, 5]
    assert member("distinct", [-2, 5, -2, 1, 1, 5, -2, 1]) == [-2, 5, 1]
    distinct = member("distinct", [1, 1.0, 2])
    assert distinct == [1, 2] and type(distinct[0]) is int
    assert member("distinct", [[1], [1], [2]]) == [[1], [2]]


def test_sort_and_sort_by_associated_keys() -> None:
    assert member("sort", [4, 3, 2, 1]) == [1, 2, 3, 4]
    assert member("sort", ["d", "a", "b", "c"]) == ["a", "b", "c", "d"]
    assert member("sort", []) == []
    with pytest.raises(CelRuntimeError, match="list elements must have the same type"):
        member("sort", ["d", 3, 2, "c"])
    with pytest.raises(CelRuntimeError, match="list elements must have the same type"):
        member("sort", [1, Uint(2)])
    with pytest.raises(CelRuntimeError, match="list elements must be comparable"):
        member("sort", [[1], [2]])
    values = [-3, 1, -5, -2, 4]
    keys = [-(v * v) for v in values]
    assert member("@sortByAssociatedKeys", values, keys) == [-5, 4, -3, -2, 1]
    with pytest.raises(CelRuntimeError, match="same size as the associated keys list, but got 2 and 1"):
        member("@sortByAssociatedKeys", [1, 2], [1])


def test_first_last_return_optionals() -> None:
    assert member("first", [1, 2, 3]) == Optional.of(1)
    assert member("last", [1, 2, 3]) == Optional.of(3)
    assert member("first", []) is Optional.NONE
    assert not member("last", []).has_value()


@given(st.lists(st.integers(min_value=-1000, max_value=1000), max_size=30))
def test_properties_against_python(values: list[int]) -> None:
    assert member("sort", values) == sorted(values)
    assert member("isSorted", values) is (values == sorted(values))
    assert member("reverse", values) == values[::-1]
    assert member("distinct", values) == list(dict.fromkeys(values))
    assert member("sum", values) == sum(values)
    if values:
        assert member("min", values) == min(values)
        assert member("max", values) == max(values)
        assert member("indexOf", values, values[-1]) == values.index(values[-1])


def test_range_beyond_any_budget_is_refused_before_allocating() -> None:
    with pytest.raises(CelCostError, match="cost limit exceeded"):
        REGISTRY.call_global("lists.range", (10**12,))


def test_unwrap_keeps_present_values() -> None:
    opts = [Optional.of(1), Optional.NONE, Optional.of("a")]
    assert REGISTRY.call_global("optional.unwrap", (opts,)) == [1, "a"]
    assert member("unwrapOpt", opts) == [1, "a"]
    assert member("unwrapOpt", []) == []
    with pytest.raises(CelRuntimeError, match="^value 2 is not optional$"):
        member("unwrapOpt", [Optional.of(1), 2])


@pytest.mark.parametrize(
    ("n", "modulus", "expected"),
    [
        # Go's sort.Slice (pdqsort) order for ties, as the Kubernetes v1.37.2 CEL build returns it.
        (15, 3, [6, 0, 12, 3, 9, 10, 1, 4, 7, 13, 8, 5, 11, 2, 14]),
        (13, 2, [8, 12, 2, 0, 4, 10, 6, 3, 7, 9, 5, 11, 1]),
        (12, 2, [0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11]),
    ],
)
def test_sort_by_orders_ties_like_go(n: int, modulus: int, expected: list[int]) -> None:
    values = list(range(n))
    assert member("@sortByAssociatedKeys", values, [v % modulus for v in values]) == expected


@given(st.lists(st.integers(min_value=0, max_value=6), max_size=120))
def test_sort_by_keys_is_a_sorted_permutation(keys: list[int]) -> None:
    values = list(range(len(keys)))
    out = member("@sortByAssociatedKeys", values, keys)
    assert sorted(out) == values
    assert [keys[i] for i in out] == sorted(keys)


@pytest.mark.parametrize(
    ("name", "values", "message"),
    [
        # A dyn list dispatches on its first element: one of no overload's type fails the call itself...
        ("sum", ["a"], "no such overload: sum(list)"),
        ("min", [None, 1], "no such overload: min(list)"),
        ("max", [[2], 1], "no such overload: max(list)"),
        ("isSorted", [{}], "no such overload: isSorted(list)"),
        ("unwrapOpt", [1], "no such overload: unwrapOpt(list)"),
        # ...while a later element of another type fails inside the overload.
        ("sum", [1, 2.5], "no such overload"),
        ("min", [1, None], "no such overload"),
    ],
)
def test_dyn_lists_dispatch_on_their_first_element(name: str, values: list[Any], message: str) -> None:
    with pytest.raises(CelRuntimeError) as err:
        member(name, values)
    assert err.value.message == message
