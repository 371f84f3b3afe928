"""CEL runtime values that have no Python native: uint, duration, timestamp, optional and type values.

Everything else is native (`bool`, `int`, `float`, `str`, `bytes`, `list`, `dict`, `None`). Library types
(Quantity, Semver, IP, ...) live with their libraries; each class carries `cel_type_name`.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any, ClassVar, Final

from dra.durations import DurationOverflowError, parse_go_duration_nanos
from dra.errors import CelRuntimeError

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "UINT64_MAX",
    "CelType",
    "Duration",
    "Optional",
    "Timestamp",
    "Uint",
]

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
UINT64_MAX: Final = 2**64 - 1

_NANOS: Final = 1_000_000_000


class Uint(int):
    """A CEL `uint`: an int subclass so it hashes and compares like the number it is."""

    __slots__ = ()
    cel_type_name: ClassVar[str] = "uint"

    def __repr__(self) -> str:
        return f"{int(self)}u"


class CelType:
    """A CEL type value (`type(1) == int`); interned by name."""

    __slots__ = ("name",)
    cel_type_name: ClassVar[str] = "type"
    _interned: ClassVar[dict[str, CelType]] = {}

    name: str

    def __new__(cls, name: str) -> CelType:
        found = cls._interned.get(name)
        if found is None:
            found = super().__new__(cls)
            object.__setattr__(found, "name", name)
            cls._interned[name] = found
        return found

    def __repr__(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name


class Optional:
    """A CEL `optional_type` value: `Optional.NONE` or `Optional.of(v)`."""

    __slots__ = ("_value", "_has")
    cel_type_name: ClassVar[str] = "optional_type"
    NONE: ClassVar[Optional]

    def __init__(self, value: Any = None, has: bool = True) -> None:
        self._value = value
        self._has = has

    @classmethod
    def of(cls, value: Any) -> Optional:
        return cls(value, True)

    def has_value(self) -> bool:
        return self._has

    def value(self) -> Any:
        if not self._has:
            raise CelRuntimeError("optional.none() dereference")
        return self._value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Optional):
            return False
        if not self._has or not other._has:
            return self._has == other._has
        from dra.cel.stdlib import cel_equal  # noqa: PLC0415 - equality lives with the operators

        return cel_equal(self._value, other._value)

    def __hash__(self) -> int:
        return hash(("optional", self._has))

    def __repr__(self) -> str:
        return f"optional.of({self._value!r})" if self._has else "optional.none()"


Optional.NONE = Optional(None, False)


# cel-go holds durations as Go time.Duration: int64 nanoseconds (about ±292 years).
_DUR_MAX_NANOS: Final = 2**63 - 1


class Duration:
    """A CEL `google.protobuf.Duration`, held as integer nanoseconds."""

    __slots__ = ("nanos",)
    cel_type_name: ClassVar[str] = "google.protobuf.Duration"

    def __init__(self, nanos: int) -> None:
        if not -_DUR_MAX_NANOS <= nanos <= _DUR_MAX_NANOS:
            raise CelRuntimeError("duration out of range")
        self.nanos = nanos

    @classmethod
    def parse(cls, text: str) -> Duration:
        """Go `time.ParseDuration` syntax: `1h2m3.5s`, `-1.5h`, `0` (cel-go calls it)."""
        try:
            return cls(parse_go_duration_nanos(text))
        except DurationOverflowError:
            raise CelRuntimeError("duration out of range") from None
        except ValueError:
            raise CelRuntimeError(f'invalid duration "{text}"') from None

    def __eq__(self, other: object) -> bool:
        return type(other) is Duration and other.nanos == self.nanos

    def __lt__(self, other: Duration) -> bool:
        return self.nanos < other.nanos

    def __le__(self, other: Duration) -> bool:
        return self.nanos <= other.nanos

    def __gt__(self, other: Duration) -> bool:
        return self.nanos > other.nanos

    def __ge__(self, other: Duration) -> bool:
        return self.nanos >= other.nanos

    def __hash__(self) -> int:
        return hash(("duration", self.nanos))

    def __str__(self) -> str:
        """The protobuf JSON form cel-go prints: seconds with up to 9 fractional digits, `s` suffix."""
        sign = "-" if self.nanos < 0 else ""
        secs, frac = divmod(abs(self.nanos), _NANOS)
        if frac == 0:
            return f"{sign}{secs}s"
        return f"{sign}{secs}.{frac:09d}".rstrip("0") + "s"

    def __repr__(self) -> str:
        return f"duration({str(self)!r})"


_TS_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$"
)
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_TS_MIN_SECONDS: Final = -62135596800  # 0001-01-01T00:00:00Z
_TS_MAX_SECONDS: Final = 253402300799  # 9999-12-31T23:59:59Z


class Timestamp:
    """A CEL `google.protobuf.Timestamp`, held as integer nanoseconds since the Unix epoch (UTC)."""

    __slots__ = ("nanos",)
    cel_type_name: ClassVar[str] = "google.protobuf.Timestamp"

    def __init__(self, nanos: int) -> None:
        if not _TS_MIN_SECONDS * _NANOS <= nanos <= _TS_MAX_SECONDS * _NANOS + 999_999_999:
            raise CelRuntimeError("timestamp out of range")
        self.nanos = nanos

    @classmethod
    def parse(cls, text: str) -> Timestamp:
        """RFC 3339 as cel-go accepts it (`2009-02-13T23:31:30Z`, fractional seconds, numeric offsets)."""
        m = _TS_RE.match(text)
        if m is None:
            raise CelRuntimeError(f'timestamp parse error: cannot parse "{text}" as RFC 3339')
        year, month, day, hour, minute, sec = (int(g) for g in m.groups()[:6])
        try:
            base = _dt.datetime(year, month, day, hour, minute, sec, tzinfo=_dt.UTC)
        except ValueError as exc:
            raise CelRuntimeError(f'timestamp parse error: "{text}": {exc}') from None
        offset = 0
        if m.group(9):
            offset = (int(m.group(10)) * 60 + int(m.group(11))) * 60 * (1 if m.group(9) == "+" else -1)
        frac = int((m.group(7) or "0").ljust(9, "0"))
        seconds = (base - _EPOCH) // _dt.timedelta(seconds=1) - offset
        return cls(seconds * _NANOS + frac)

    @property
    def seconds(self) -> int:
        return self.nanos // _NANOS

    def datetime(self, tz: _dt.tzinfo = _dt.UTC) -> _dt.datetime:
        """The timestamp as an aware datetime in `tz` (microseconds truncated)."""
        return (_EPOCH + _dt.timedelta(microseconds=self.nanos // 1000)).astimezone(tz)

    def __eq__(self, other: object) -> bool:
        return type(other) is Timestamp and other.nanos == self.nanos

    def __lt__(self, other: Timestamp) -> bool:
        return self.nanos < other.nanos

    def __le__(self, other: Timestamp) -> bool:
        return self.nanos <= other.nanos

    def __gt__(self, other: Timestamp) -> bool:
        return self.nanos > other.nanos

    def __ge__(self, other: Timestamp) -> bool:
        return self.nanos >= other.nanos

    def __hash__(self) -> int:
        return hash(("timestamp", self.nanos))

    def __str__(self) -> str:
        """RFC 3339 in UTC with the shortest exact fractional part, as cel-go's string(timestamp)."""
        secs, frac = divmod(self.nanos, _NANOS)
        d = _EPOCH + _dt.timedelta(seconds=secs)
        text = d.strftime("%Y-%m-%dT%H:%M:%S")
        if len(text) < 19:  # years below 1000 are not zero-padded by strftime on every platform
            text = f"{d.year:04d}" + text[text.index("-") :]
        if frac:
            text += f".{frac:09d}".rstrip("0")
        return text + "Z"

    def __repr__(self) -> str:
        return f"timestamp({str(self)!r})"
