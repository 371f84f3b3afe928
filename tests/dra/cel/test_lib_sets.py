"""Unit tests of cel-go's sets extension, through the registry."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dra.cel._functions import NoMatchingOverload
from dra.cel.sets import REGISTRY
from dra.cel.values import Uint


def call(name: str, a: list[Any], b: list[Any]) -> bool:
    result = REGISTRY.call_global(name, (a, b))
    assert type(result) is bool
    return result


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([], [], True),
        ([1], [], True),
        ([1], [1, 1], True),
        ([2, 1], [1], True),
        ([1, 2, 3, 4], [2, 3], True),
        ([1], [1.0, 1], True),
        ([1, 2], [Uint(2), 2.0], True),
        ([1, 2.0, Uint(3)], [1.0, Uint(2), 3], True),
        ([[1], [2, 3]], [[2, 3.0]], True),
        ([1], [2], False),
        ([1], [1, 2], False),
        ([1], ["1", 1], False),
        ([1], [1.1, Uint(1)], False),
    ],
)
def test_contains(a: list[Any], b: list[Any], expected: bool) -> None:
    assert call("sets.contains", a, b) is expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([], [], True),
        ([1], [1, 1], True),
        ([1], [Uint(1), 1.0], True),
        ([1, 2, 3], [Uint(3), 2.0, 1], True),
        ([[1.0], [2, 3]], [[1], [2, 3.0]], True),
        ([2, 1], [1], False),
        ([1, 2], [1, 2, 2.3], False),
    ],
)
def test_equivalent(a: list[Any], b: list[Any], expected: bool) -> None:
    assert call("sets.equivalent", a, b) is expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([1], [1], True),
        ([2, 1], [1], True),
        ([1], [1.0, 2], True),
        ([[1], [2, 3]], [[1, 2], [2, 3.0]], True),
        ([], [], False),
        ([1], [], False),
        ([1], ["1", 2], False),
        ([1], [1.1, Uint(2)], False),
        (["a", True], [1, "b"], False),
    ],
)
def test_intersects(a: list[Any], b: list[Any], expected: bool) -> None:
    assert call("sets.intersects", a, b) is expected


def test_bool_is_not_a_number() -> None:
    assert call("sets.contains", [1], [True]) is False
    assert call("sets.intersects", [0], [False]) is False


def test_requires_lists() -> None:
    with pytest.raises(NoMatchingOverload):
        REGISTRY.call_global("sets.contains", ({}, []))


_ints = st.lists(st.integers(min_value=-5, max_value=5), max_size=8)


@given(_ints, _ints)
def test_agree_with_python_sets(a: list[int], b: list[int]) -> None:
    assert call("sets.contains", a, b) is set(b).issubset(a)
    assert call("sets.equivalent", a, b) is (set(a) == set(b))
    assert call("sets.intersects", a, b) is bool(set(a) & set(b))
