"""Runtime value classes: uint, duration, timestamp, optional, type values; JSON conversion."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dra.cel import CelType, Duration, Optional, Timestamp, Uint, from_json, to_json
from dra.errors import CelRuntimeError


def test_uint_is_distinct_but_numeric() -> None:
    assert Uint(3) == 3 and type(Uint(3)) is not int and repr(Uint(3)) == "3u"


@pytest.mark.parametrize(
    ("text", "nanos", "canonical"),
    [
        ("1h2m3s", 3723 * 10**9, "3723s"),
        ("1.5s", 1_500_000_000, "1.5s"),
        ("-90m", -5400 * 10**9, "-5400s"),
        ("1ms", 1_000_000, "0.001s"),
        ("0", 0, "0s"),
        ("2us", 2000, "0.000002s"),
        ("0.3333333333333333333h", 1_200_000_000_000, "1200s"),  # Go's float64 fraction, as cel-go reads it
        ("+1μs", 1000, "0.000001s"),
    ],
)
def test_duration_parse_and_print(text: str, nanos: int, canonical: str) -> None:
    d = Duration.parse(text)
    assert d.nanos == nanos and str(d) == canonical


@pytest.mark.parametrize("text", ["", "1", "h", "1x", "--1s"])
def test_duration_rejects(text: str) -> None:
    with pytest.raises(CelRuntimeError, match="invalid duration"):
        Duration.parse(text)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("2009-02-13T23:31:30Z", "2009-02-13T23:31:30Z"),
        ("2009-02-13T23:31:30.120Z", "2009-02-13T23:31:30.12Z"),
        ("2009-02-14T01:31:30+02:00", "2009-02-13T23:31:30Z"),
        ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"),
    ],
)
def test_timestamp_parse_and_print(text: str, canonical: str) -> None:
    assert str(Timestamp.parse(text)) == canonical


def test_timestamp_range() -> None:
    with pytest.raises(CelRuntimeError, match="out of range"):
        Timestamp(253402300800 * 10**9)
    with pytest.raises(CelRuntimeError, match="parse error"):
        Timestamp.parse("2009-02-13 23:31:30")


def test_optional_and_type_values() -> None:
    assert Optional.of(1) == Optional.of(1.0)
    assert Optional.NONE != Optional.of(None)
    with pytest.raises(CelRuntimeError):
        Optional.NONE.value()
    assert CelType("int") is CelType("int")


def test_to_json_renders_every_kind() -> None:
    value = [Uint(1), b"hi", math.inf, Optional.of(2), Optional.NONE, CelType("int"), Duration(10**9), {1: True}]
    assert to_json(value) == [
        1,
        "aGk=",
        "+Inf",
        {"@optional": [2]},
        {"@optional": []},
        {"@type": "int"},
        "1s",
        {"1": True},
    ]


def test_from_json_keeps_ints_and_big_uints() -> None:
    assert from_json({"a": [1, 1.0, 2**63]}) == {"a": [1, 1.0, Uint(2**63)]}
    assert type(from_json(1.0)) is float


@given(st.integers(min_value=-(9 * 10**9), max_value=9 * 10**9), st.integers(min_value=0, max_value=999_999_999))
def test_duration_string_round_trips(seconds: int, frac: int) -> None:
    d = Duration(seconds * 10**9 + (frac if seconds >= 0 else -frac))
    assert Duration.parse(str(d)) == d
