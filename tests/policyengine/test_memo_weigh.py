"""`weigh` (the memo's byte charge) keeps its definition: strings by length, containers by their members, a flat
charge past the depth bound; written as loops for speed, checked against the plain recursive definition."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from policyengine._memo import _MAX_WEIGH_DEPTH, weigh


def _reference(value: Any, depth: int = 0) -> int:
    if isinstance(value, str | bytes):
        return 49 + len(value)
    if depth >= _MAX_WEIGH_DEPTH:
        return 64
    if isinstance(value, tuple | list):
        return 56 + 8 * len(value) + sum(_reference(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return 64 + sum(_reference(k, depth + 1) + _reference(v, depth + 1) for k, v in value.items())
    return 32


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.binary(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=4) | st.integers(), inner, max_size=4)
    ),
    max_leaves=60,
)


@given(_json)
def test_weigh_is_the_recursive_definition(value: Any) -> None:
    assert weigh(value) == _reference(value)


def test_the_depth_bound_charges_deep_scalars_flat() -> None:
    deep: Any = 1
    for _ in range(_MAX_WEIGH_DEPTH + 3):
        deep = {"k": deep}
    assert weigh(deep) == _reference(deep)
