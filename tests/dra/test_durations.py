"""dra.durations: Go's time.ParseDuration to the nanosecond, and the one printer that every reader reads back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dra.durations import (
    DurationOverflowError,
    format_go_duration,
    format_go_duration_nanos,
    parse_go_duration,
    parse_go_duration_nanos,
)

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


# Expected values are what Go 1.26's time.ParseDuration returns for the same text (int64 nanoseconds).
@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("168h", 168 * 3600 * 10**9),
        ("1h30m", 5400 * 10**9),
        ("1.5s", 1_500_000_000),
        ("250ms", 250_000_000),
        ("-1.5h", -5400 * 10**9),
        ("+90s", 90 * 10**9),
        ("0", 0),
        ("-0", 0),
        (".5s", 500_000_000),
        ("5.s", 5 * 10**9),
        ("1h30m0.5s", 5400_500_000_000),
        ("4.5us", 4500),
        ("1\u00b5s", 1000),  # micro sign
        ("1\u03bcs", 1000),  # Greek mu
        ("0.3333333333333333333h", 1_200_000_000_000),  # Go's float64 fraction, truncated
        ("1.9999999999999999999999s", 2_000_000_000),
        ("2562047.788015215h", 9223372036854774000),
        ("-9223372036854775808ns", INT64_MIN),
        ("9223372036854775807ns", INT64_MAX),
        ("2562047h47m16.854775807s", INT64_MAX),
    ],
)
def test_parses_as_go_does(text: str, nanos: int) -> None:
    assert parse_go_duration_nanos(text) == nanos
    assert parse_go_duration(text) == nanos / 10**9


@pytest.mark.parametrize(
    "text",
    [
        "",
        "-",
        "1",  # missing unit
        "h",
        ".s",
        "-.s",
        "--1s",
        "1h 30m",
        " 1h",
        "1x",
        "7d",  # a Prometheus unit, not a Go one
        "1e3s",
        "9223372036854775808ns",  # one past int64
        "2562047h47m16.854775808s",
        "99999999999999999999h",
    ],
)
def test_rejects_what_go_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not a Go duration"):
        parse_go_duration_nanos(text)


@pytest.mark.parametrize(
    "text", ["9223372036854775808ns", "-9223372036854775809ns", "99999999999999999999h", "3000000h"]
)
def test_overflow_is_its_own_error(text: str) -> None:
    with pytest.raises(DurationOverflowError, match="past int64 nanoseconds"):
        parse_go_duration_nanos(text)


def test_prometheus_units_are_an_explicit_option() -> None:
    assert parse_go_duration("7d", prometheus_units=True) == 7 * 86400
    assert parse_go_duration("1w2d12h", prometheus_units=True) == 9.5 * 86400
    assert parse_go_duration("1h30m", prometheus_units=True) == 5400
    with pytest.raises(ValueError, match="unknown unit 'y'"):
        parse_go_duration("1y", prometheus_units=True)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (604800, "168h"),
        (5400, "1h30m"),  # the recommender once printed 90m, the policy facts 1h30m
        (300, "5m"),
        (90, "1m30s"),
        (3690, "1h1m30s"),
        (90.5, "1m30.5s"),
        (0.25, "250ms"),
        (0.0000045, "4.5us"),
        (1e-9, "1ns"),
        (0, "0s"),
        (-5400, "-1h30m"),
    ],
)
def test_prints_go_string_without_zero_units(seconds: float, text: str) -> None:
    assert format_go_duration(seconds) == text


def test_prints_the_int64_extremes() -> None:
    assert format_go_duration_nanos(INT64_MAX) == "2562047h47m16.854775807s"
    assert format_go_duration_nanos(INT64_MIN) == "-2562047h47m16.854775808s"


@given(st.integers(min_value=INT64_MIN, max_value=INT64_MAX))
def test_print_then_parse_gives_the_nanoseconds_back(nanos: int) -> None:
    text = format_go_duration_nanos(nanos)
    assert parse_go_duration_nanos(text) == nanos
    assert parse_go_duration_nanos(text, prometheus_units=True) == nanos


@given(st.integers(min_value=0, max_value=10 * 365 * 86400))
def test_print_then_parse_gives_whole_seconds_back(seconds: int) -> None:
    assert parse_go_duration(format_go_duration(seconds)) == seconds
