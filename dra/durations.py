"""Go durations (`168h`, `1h30m`, `-1.5s`) as Kubernetes objects, CEL and flags carry them: the one parser and printer.

Parsing follows Go's `time.ParseDuration` (src/time/format.go, go1.26) to the nanosecond, overflow and float rounding
of fractions included; the printer writes what every reader here accepts back (see `format_go_duration`).
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DurationOverflowError",
    "format_go_duration",
    "format_go_duration_nanos",
    "parse_go_duration",
    "parse_go_duration_nanos",
]

_NANOS_PER_SECOND: Final = 1_000_000_000
# time.unitMap: "µs" is U+00B5 (micro sign), "μs" U+03BC (Greek mu).
_GO_UNITS: Final[dict[str, int]] = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,
    "\u03bcs": 1_000,
    "ms": 1_000_000,
    "s": _NANOS_PER_SECOND,
    "m": 60 * _NANOS_PER_SECOND,
    "h": 3600 * _NANOS_PER_SECOND,
}
# Prometheus's day and week (prometheus/common model.ParseDuration), for flags that have always read `7d`.
_PROMETHEUS_UNITS: Final[dict[str, int]] = {
    **_GO_UNITS,
    "d": 86400 * _NANOS_PER_SECOND,
    "w": 7 * 86400 * _NANOS_PER_SECOND,
}
_UINT63: Final = 1 << 63  # Go accumulates in uint64 and allows -1<<63 but not +1<<63
_EXAMPLE: Final = "e.g. 168h, 1h30m, 90s"


class DurationOverflowError(ValueError):
    """Well-formed, but past int64 nanoseconds (about 292 years): Go says "invalid duration", CEL "out of range"."""


def parse_go_duration_nanos(text: str, *, prometheus_units: bool = False) -> int:
    """Integer nanoseconds of `text` exactly as Go's `time.ParseDuration` reads it: an optional sign, then one or more
    decimal numbers (fraction allowed) each with a unit ns, us (µs, μs), ms, s, m or h; `0` alone needs none.
    `prometheus_units` also accepts `d` (24h) and `w` (7d). ValueError naming the text otherwise."""
    if not isinstance(text, str):
        raise ValueError(f"{text!r} is not a Go duration ({_EXAMPLE})")
    units = _PROMETHEUS_UNITS if prometheus_units else _GO_UNITS
    s, negative = text, False
    if s[:1] in ("-", "+"):
        negative, s = s[0] == "-", s[1:]
    if s == "0":
        return 0
    if not s:
        raise _invalid(text, "empty")
    total = 0
    while s:
        if not (s[0] == "." or "0" <= s[0] <= "9"):
            raise _invalid(text, f"expected a number at {s!r}")
        whole, digits_before, s = _leading_int(s, text)
        fraction, scale, digits_after = 0, 1.0, 0
        if s[:1] == ".":
            fraction, scale, digits_after, s = _leading_fraction(s[1:])
        if not digits_before and not digits_after:
            raise _invalid(text, "a '.' without digits")
        end = 0
        while end < len(s) and not (s[end] == "." or "0" <= s[end] <= "9"):
            end += 1
        if end == 0:
            raise _invalid(text, "missing unit")
        unit_name, s = s[:end], s[end:]
        unit = units.get(unit_name)
        if unit is None:
            raise _invalid(text, f"unknown unit {unit_name!r}")
        if whole > _UINT63 // unit:
            raise _overflow(text)
        value = whole * unit
        if fraction > 0:
            # Go: float64 is nanosecond-accurate for fractions of hours; truncated like Go's uint64(float64).
            value += int(float(fraction) * (float(unit) / scale))
            if value > _UINT63:
                raise _overflow(text)
        total += value
        if total > _UINT63:
            raise _overflow(text)
    if negative:
        return -total
    if total > _UINT63 - 1:
        raise _overflow(text)
    return total


def parse_go_duration(text: str, *, prometheus_units: bool = False) -> float:
    """Seconds of a Go duration (`168h`, `1h30m`, `-1.5s`, `250ms`), read as `parse_go_duration_nanos` reads it."""
    return parse_go_duration_nanos(text, prometheus_units=prometheus_units) / _NANOS_PER_SECOND


def format_go_duration_nanos(nanos: int) -> str:
    """Go's `Duration.String()` without its zero units: `1h30m` (Go: 1h30m0s), `168h`, `1m30.5s`, `250ms`, `0s`.

    Under a second it is the largest of ms, us, ns that keeps a leading digit (Go writes `µs`; `us` keeps it ASCII
    for the CRD's `window` pattern). Go's ParseDuration, CEL's duration() and the recommender's flags all read it back
    to the same nanoseconds; Prometheus range selectors read whole-unit values (`1h30m`, `90s`) too."""
    if nanos == 0:
        return "0s"
    sign, rest = ("-" if nanos < 0 else ""), abs(nanos)
    if rest < _NANOS_PER_SECOND:
        for unit_name, unit in (("ms", 1_000_000), ("us", 1_000), ("ns", 1)):
            if rest >= unit:
                return f"{sign}{_decimal(rest, unit)}{unit_name}"
    hours, rest = divmod(rest, 3600 * _NANOS_PER_SECOND)
    minutes, rest = divmod(rest, 60 * _NANOS_PER_SECOND)
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else ""]
    parts.append(f"{_decimal(rest, _NANOS_PER_SECOND)}s" if rest else "")
    return sign + "".join(parts)


def format_go_duration(seconds: float) -> str:
    """`format_go_duration_nanos` of `seconds` rounded to the nanosecond: 5400 -> `1h30m`, 604800 -> `168h`."""
    return format_go_duration_nanos(round(seconds * _NANOS_PER_SECOND))


def _decimal(amount: int, unit: int) -> str:
    """`amount / unit` in plain decimal without trailing zeros (`unit` a power of ten)."""
    whole, fraction = divmod(amount, unit)
    if not fraction:
        return str(whole)
    width = len(str(unit)) - 1
    return f"{whole}.{fraction:0{width}d}".rstrip("0")


def _leading_int(s: str, text: str) -> tuple[int, int, str]:
    """time.leadingInt: the leading digits' value, their count and the rest; past 1<<63 is an overflow."""
    i, value = 0, 0
    while i < len(s) and "0" <= s[i] <= "9":
        value = value * 10 + ord(s[i]) - ord("0")
        if value > _UINT63:
            raise _overflow(text)
        i += 1
    return value, i, s[i:]


def _leading_fraction(s: str) -> tuple[int, float, int, str]:
    """time.leadingFraction: digits after the point; past uint64 precision they are consumed but no longer counted."""
    i, value, scale, overflow = 0, 0, 1.0, False
    while i < len(s) and "0" <= s[i] <= "9":
        if not overflow:
            if value > (_UINT63 - 1) // 10:
                overflow = True
            else:
                candidate = value * 10 + ord(s[i]) - ord("0")
                if candidate > _UINT63:
                    overflow = True
                else:
                    value, scale = candidate, scale * 10
        i += 1
    return value, scale, i, s[i:]


def _invalid(text: str, why: str) -> ValueError:
    return ValueError(f"{text!r} is not a Go duration ({_EXAMPLE}): {why}")


def _overflow(text: str) -> DurationOverflowError:
    return DurationOverflowError(f"{text!r} is not a Go duration ({_EXAMPLE}): past int64 nanoseconds")
