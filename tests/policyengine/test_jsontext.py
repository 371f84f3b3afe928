"""`policyengine.jsontext.dumps` writes what `json.dumps` writes, and fails where it fails."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policyengine import jsontext

_LEAVES = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)


def _expected(value: Any, allow_nan: bool, compact: bool) -> str | type[Exception]:
    try:
        separators = (",", ":") if compact else (", ", ": ")
        return json.dumps(value, allow_nan=allow_nan, separators=separators)
    except (TypeError, ValueError) as exc:
        return type(exc)


@given(_VALUES, st.booleans(), st.booleans())
def test_the_same_text_as_json_dumps(value: Any, allow_nan: bool, compact: bool) -> None:
    expected = _expected(value, allow_nan, compact)
    if isinstance(expected, str):
        assert jsontext.dumps(value, allow_nan=allow_nan, compact=compact) == expected
    else:
        with pytest.raises(expected):
            jsontext.dumps(value, allow_nan=allow_nan, compact=compact)


def test_the_same_errors_and_conversions() -> None:
    circular: dict[str, Any] = {}
    circular["self"] = circular
    for bad, error in ((math.nan, ValueError), ({"x": [math.inf]}, ValueError), ({"o": object()}, TypeError)):
        with pytest.raises(error):
            jsontext.dumps(bad, allow_nan=False)
    with pytest.raises(ValueError, match="Circular reference"):
        jsontext.dumps(circular, allow_nan=True)
    assert jsontext.dumps({1: "a", None: 2.5, False: "\u00e9\ud800", 2.5: 0}, allow_nan=False) == json.dumps(
        {1: "a", None: 2.5, False: "\u00e9\ud800", 2.5: 0}, separators=(",", ":")
    )
    assert jsontext.dumps([math.nan, -math.inf], allow_nan=True) == "[NaN,-Infinity]"
    # a failed call leaves nothing behind for the next (each call has its own circular-reference markers)
    shared = [1]
    assert jsontext.dumps([shared, shared], allow_nan=False) == "[[1],[1]]"
