"""CEL's standard operators and functions over gpudra's runtime values.

Operators (`cel_equal`, `compare`, `add`, ... , `index`, `contains`) are plain functions the compiler calls
or inlines; named functions (`size`, conversions, string tests, time accessors, `optional.*`) register in
`REGISTRY`. int/uint arithmetic raises on 64-bit overflow; comparisons cross int/uint/double as Kubernetes
enables (CrossTypeNumericComparisons), and `==` is heterogeneous-numeric.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable
from typing import Any, Final

from dra.cel._functions import FunctionRegistry, type_name
from dra.cel.regex import GoRegexError, compile_go_regex
from dra.cel.values import INT64_MAX, INT64_MIN, UINT64_MAX, CelType, Duration, Optional, Timestamp, Uint
from dra.errors import CelRuntimeError

__all__ = [
    "REGISTRY",
    "add",
    "cel_equal",
    "compare",
    "contains",
    "div",
    "format_double",
    "index",
    "mod",
    "mul",
    "neg",
    "no_overload",
    "select",
    "sub",
    "to_string",
    "type_of",
]

REGISTRY = FunctionRegistry()

_NUM: Final = (int, float, Uint)


def no_overload(name: str, *args: Any) -> CelRuntimeError:
    """The cel-go style runtime error for an operator or function applied to unsupported types."""
    types = ", ".join(type_name(a) for a in args)
    return CelRuntimeError(f"no such overload: {name}({types})")


# ---------------------------------------------------------------------------------------------------- equality


def cel_equal(x: Any, y: Any) -> bool:
    """CEL `==`: same-type value equality, numbers across int/uint/double, deep lists and maps."""
    tx = type(x)
    ty = type(y)
    if tx is ty:
        if tx is list:
            return len(x) == len(y) and all(cel_equal(a, b) for a, b in zip(x, y, strict=True))
        if tx is dict:
            return _map_equal(x, y)
        return bool(x == y)
    if tx in _NUM and ty in _NUM:
        if tx is float or ty is float:  # cel-go compares int/uint with double as doubles
            return float(x) == float(y)
        return bool(x == y)
    if isinstance(x, dict) and isinstance(y, dict):
        return _map_equal(x, y)
    # cel-go: a library type (Quantity, Semver, IP, ...) compared with another type has no overload.
    if tx.__module__ not in _CORE_MODULES or ty.__module__ not in _CORE_MODULES:
        raise no_overload("_==_", x, y)
    return False


_CORE_MODULES: Final = frozenset({"builtins", __name__.rsplit(".", 1)[0] + ".values", "dra.cel.device"})


def _map_equal(x: dict[Any, Any], y: dict[Any, Any]) -> bool:
    if len(x) != len(y):
        return False
    for k, v in x.items():
        found, other = _map_get(y, k)
        if not found or not cel_equal(v, other):
            return False
    return True


def _map_get(m: dict[Any, Any], k: Any) -> tuple[bool, Any]:
    if type(k) is bool:
        for key, val in m.items():
            if type(key) is bool and key == k:
                return True, val
        return False, None
    try:
        present = k in m
    except TypeError:  # lists and maps are never map keys, so never found (as cel-go answers `in`)
        return False, None
    if present:
        for key, val in m.items():  # numeric keys match across int/uint/double but never bool
            if key == k and type(key) is not bool:
                return True, val
    return False, None


# ---------------------------------------------------------------------------------------------------- ordering

_ORDERED: Final = (str, bytes, bool, Duration, Timestamp)


def compare(op: str, x: Any, y: Any) -> int:
    """-1/0/1 for `x` vs `y`, or 2 when unordered (NaN); raises for types CEL cannot order."""
    tx = type(x)
    ty = type(y)
    if tx is not ty and (tx is float or ty is float) and tx in _NUM and ty in _NUM:
        x = float(x)
        y = float(y)
    if (tx in _NUM and ty in _NUM) or (tx is ty and tx in _ORDERED):
        if x < y:
            return -1
        if x > y:
            return 1
        if x == y:
            return 0
        return 2
    raise no_overload(op, x, y)


# ---------------------------------------------------------------------------------------------------- arithmetic


def _int_result(v: int) -> int:
    if INT64_MIN <= v <= INT64_MAX:
        return v
    raise CelRuntimeError("integer overflow")


def _uint_result(v: int) -> Uint:
    if 0 <= v <= UINT64_MAX:
        return Uint(v)
    raise CelRuntimeError("unsigned integer overflow")


def add(x: Any, y: Any) -> Any:
    tx = type(x)
    ty = type(y)
    if tx is ty:
        if tx is int:
            return _int_result(x + y)
        if tx is float or tx is str or tx is bytes:
            return x + y
        if tx is list:
            return x + y
        if tx is Uint:
            return _uint_result(x + y)
        if tx is Duration:
            return Duration(x.nanos + y.nanos)
    elif tx is Timestamp and ty is Duration:
        return Timestamp(x.nanos + y.nanos)
    elif tx is Duration and ty is Timestamp:
        return Timestamp(x.nanos + y.nanos)
    raise no_overload("_+_", x, y)


def sub(x: Any, y: Any) -> Any:
    tx = type(x)
    ty = type(y)
    if tx is ty:
        if tx is int:
            return _int_result(x - y)
        if tx is float:
            return x - y
        if tx is Uint:
            return _uint_result(x - y)
        if tx is Duration:
            return Duration(x.nanos - y.nanos)
        if tx is Timestamp:
            return Duration(x.nanos - y.nanos)
    elif tx is Timestamp and ty is Duration:
        return Timestamp(x.nanos - y.nanos)
    raise no_overload("_-_", x, y)


def mul(x: Any, y: Any) -> Any:
    tx = type(x)
    if tx is type(y):
        if tx is int:
            return _int_result(x * y)
        if tx is float:
            return x * y
        if tx is Uint:
            return _uint_result(x * y)
    raise no_overload("_*_", x, y)


def _trunc_div(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


def _trunc_mod(x: int, y: int) -> int:
    return x - _trunc_div(x, y) * y


def div(x: Any, y: Any) -> Any:
    tx = type(x)
    if tx is type(y):
        if tx is int:
            if y == 0:
                raise CelRuntimeError("division by zero")
            return _int_result(_trunc_div(x, y))
        if tx is float:
            if y == 0.0:
                if x == 0.0 or math.isnan(x):
                    return math.nan
                return math.copysign(math.inf, x) * math.copysign(1.0, y)
            return x / y
        if tx is Uint:
            if y == 0:
                raise CelRuntimeError("division by zero")
            return Uint(x // y)
    raise no_overload("_/_", x, y)


def mod(x: Any, y: Any) -> Any:
    tx = type(x)
    if tx is type(y):
        if tx is int:
            if y == 0:
                raise CelRuntimeError("modulus by zero")
            return _int_result(_trunc_mod(x, y))
        if tx is Uint:
            if y == 0:
                raise CelRuntimeError("modulus by zero")
            return Uint(x % y)
    raise no_overload("_%_", x, y)


def neg(x: Any) -> Any:
    tx = type(x)
    if tx is int:
        return _int_result(-x)
    if tx is float:
        return -x
    if tx is Duration:
        return Duration(-x.nanos)
    raise no_overload("-_", x)


# ---------------------------------------------------------------------------------------------------- access


def index(container: Any, key: Any) -> Any:
    """`container[key]` for lists (int index, also an integral double or uint) and maps."""
    tc = type(container)
    if tc is dict or (tc is not list and isinstance(container, dict)):
        if type(key) is str:
            try:
                return container[key]
            except KeyError:
                raise CelRuntimeError(f"no such key: {key}") from None
        if type(key) not in (*_NUM, bool):
            raise no_overload("_[_]", container, key)
        found, val = _map_get(container, key)
        if found:
            return val
        raise CelRuntimeError(f"no such key: {to_string(key) if type(key) is not str else key}")
    if tc is list:
        tk = type(key)
        if tk is int or tk is Uint:
            i = int(key)
        elif tk is float and key.is_integer():
            i = int(key)
        else:
            raise no_overload("_[_]", container, key)
        if 0 <= i < len(container):
            return container[i]
        raise CelRuntimeError(f"index out of bounds: {i}")
    if isinstance(container, Optional):  # indexing inside an optional chain stays optional
        if not container.has_value():
            return container
        inner = container.value()
        if isinstance(inner, dict):
            found, val = _map_get(inner, key) if type(key) is not str else (key in inner, inner.get(key))
            return Optional.of(val) if found else Optional.NONE
        if type(inner) is list and type(key) in (int, Uint) and not 0 <= key < len(inner):
            return Optional.NONE
        return Optional.of(index(inner, key))
    raise no_overload("_[_]", container, key)


def select(obj: Any, field: str) -> Any:
    """`obj.field`: map lookup by string key; on an optional it stays optional."""
    if type(obj) is dict or isinstance(obj, dict):
        try:
            return obj[field]
        except KeyError:
            raise CelRuntimeError(f"no such key: {field}") from None
    if isinstance(obj, Optional):  # selecting inside an optional chain stays optional
        if not obj.has_value():
            return obj
        inner = obj.value()
        # cel-go (v0.29, Kubernetes): a field missing from the value, or a value without fields, ends the
        # chain as optional.none() (cel-spec's optionals tests expect an error for the latter).
        if not isinstance(inner, dict) or field not in inner:
            return Optional.NONE
        return Optional.of(inner[field])
    raise CelRuntimeError(f"type '{type_name(obj)}' does not support field selection (field '{field}')")


def has_field(obj: Any, field: str) -> bool:
    if isinstance(obj, dict):
        return field in obj
    if isinstance(obj, Optional):
        return obj.has_value() and has_field(obj.value(), field)
    raise CelRuntimeError(f"invalid type for field selection: has() on '{type_name(obj)}'")


def contains(elem: Any, container: Any) -> bool:
    """`elem in container`."""
    if type(container) is list:
        te = type(elem)
        if te is str or te is int:
            for x in container:
                if type(x) is te and x == elem:
                    return True
            if te is str:
                return False
        first_error: CelRuntimeError | None = None
        for x in container:  # as cel-go: an element that cannot be compared only matters if none matches
            try:
                if cel_equal(elem, x):
                    return True
            except CelRuntimeError as e:
                first_error = first_error or e
        if first_error is not None:
            raise first_error
        return False
    if isinstance(container, dict):
        if type(elem) is str:
            return elem in container
        return _map_get(container, elem)[0]
    raise no_overload("@in", elem, container)


# ---------------------------------------------------------------------------------------------------- types

_TYPE_NAMES: Final[dict[type, str]] = {
    bool: "bool",
    int: "int",
    Uint: "uint",
    float: "double",
    str: "string",
    bytes: "bytes",
    list: "list",
    dict: "map",
    type(None): "null_type",
}


def type_of(v: Any) -> CelType:
    name = _TYPE_NAMES.get(type(v))
    if name is None:
        name = getattr(type(v), "cel_type_name", type(v).__name__)
        if isinstance(v, dict):
            name = "map"
    return CelType(name)


def format_double(f: float) -> str:
    """Go's strconv.FormatFloat(f, 'g', -1, 64), which cel-go's string(double) and `%s` use: the shortest
    digits that round-trip, in exponent form when the exponent is < -4 or >= 6 (the shortest 'g' uses 6)."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    text = repr(f)
    mantissa, _, exp_text = text.partition("e")
    exp = int(exp_text) if exp_text else 0
    sign = "-" if mantissa.startswith("-") else ""
    mantissa = mantissa.lstrip("-")
    int_part, _, frac_part = mantissa.partition(".")
    digits = (int_part + frac_part).lstrip("0")
    # decimal exponent of the first significant digit
    if int_part.strip("0"):
        point = len(int_part.lstrip("0")) + exp
    else:
        point = exp - (len(frac_part) - len(frac_part.lstrip("0")))
    digits = digits.rstrip("0") or "0"
    x = point - 1
    if x < -4 or x >= 6:
        m = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{m}e{'-' if x < 0 else '+'}{abs(x):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def to_string(v: Any) -> str:
    t = type(v)
    if t is str:
        return str(v)
    if t is bool:
        return "true" if v else "false"
    if t is int or t is Uint:
        return str(int(v))
    if t is float:
        return format_double(v)
    if t is bytes:
        try:
            return str(v.decode("utf-8"))
        except UnicodeDecodeError:
            raise CelRuntimeError("invalid UTF-8 in bytes, cannot convert to string") from None
    if t is Duration or t is Timestamp:
        return str(v)
    if hasattr(t, "cel_type_name") and "__str__" in vars(t):
        return str(v)
    raise no_overload("string", v)


# ---------------------------------------------------------------------------------------------------- registry

fn = REGISTRY.function
member = REGISTRY.member


def _both(name: str, *types: type) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(impl: Callable[..., Any]) -> Callable[..., Any]:
        fn(name, *types)(impl)
        member(name, *types)(impl)
        return impl

    return register


for _t in (str, bytes, list, dict):
    _both("size", _t)(len)

_both("contains", str, str)(lambda s, sub: sub in s)
_both("startsWith", str, str)(lambda s, p: s.startswith(p))
_both("endsWith", str, str)(lambda s, p: s.endswith(p))


class Regex:
    """An RE2 pattern with a bounded memo of `matches` answers: selectors test the same attribute strings
    (product names, profiles) on many devices, and one RE2 call through pybind costs ~10 µs."""

    __slots__ = ("pattern", "compiled", "_low", "_memo", "_memo_chars")
    _MEMO_SIZE: Final = 4096
    # The texts tested may be a pod's strings: the memo keeps short ones only, within a character budget, so the
    # patterns cached below hold at most _REGEX_CACHE_SIZE * (_MEMO_CHARS + overhead) whatever the pods carried.
    _MEMO_CHARS: Final = 32 * 1024
    _MEMO_TEXT_CHARS: Final = 256

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        try:
            self.compiled = compile_go_regex(pattern)
        except GoRegexError as err:  # cel-go's matches reports Go's regexp error as is
            raise CelRuntimeError(str(err)) from None
        low = getattr(self.compiled, "_regexp", None)
        self._low = low if low is not None and hasattr(low, "Match") else None
        self._memo: dict[str, bool] = {}
        self._memo_chars = 0

    def matches(self, text: str) -> bool:
        found = self._memo.get(text)
        if found is None:
            if self._low is not None:
                data = text.encode("utf-8")
                found = self._low.Match(_UNANCHORED, data, 0, len(data))[0][0] != -1
            else:
                found = self.compiled.search(text) is not None
            if len(text) <= self._MEMO_TEXT_CHARS:
                if len(self._memo) >= self._MEMO_SIZE or self._memo_chars + len(text) > self._MEMO_CHARS:
                    self._memo.clear()
                    self._memo_chars = 0
                self._memo[text] = found
                self._memo_chars += len(text)
        return found

    @property
    def memo_chars(self) -> int:
        """Characters of tested text the memo holds now."""
        return self._memo_chars


try:
    from re2 import _re2

    _UNANCHORED: Any = _re2.RE2.Anchor.UNANCHORED
except (ImportError, AttributeError):  # pragma: no cover - other re2 builds use the public API
    _UNANCHORED = None

_REGEX_CACHE: dict[str, Regex] = {}
_REGEX_CACHE_SIZE: Final = 256
_REGEX_CACHE_PATTERN_CHARS: Final = 1024 * 1024
_regex_cache_chars = 0


def compile_regex(pattern: str) -> Regex:
    """An RE2 regex, cached (within a count and a budget of pattern characters); invalid patterns raise
    `CelRuntimeError` as cel-go's `matches` does."""
    global _regex_cache_chars
    r = _REGEX_CACHE.get(pattern)
    if r is None:
        r = Regex(pattern)
        if len(_REGEX_CACHE) >= _REGEX_CACHE_SIZE or _regex_cache_chars + len(pattern) > _REGEX_CACHE_PATTERN_CHARS:
            _REGEX_CACHE.clear()
            _regex_cache_chars = 0
        if len(pattern) <= _REGEX_CACHE_PATTERN_CHARS:
            _REGEX_CACHE[pattern] = r
            _regex_cache_chars += len(pattern)
    return r


def regex_cache_chars() -> int:
    """Characters held by the compiled-pattern cache and the memos of its patterns."""
    return _regex_cache_chars + sum(r.memo_chars for r in list(_REGEX_CACHE.values()))


_both("matches", str, str)(lambda s, p: compile_regex(p).matches(s))


# conversions ------------------------------------------------------------------------------------------------


@fn("int", int)
def _int_int(v: int) -> int:
    return v


@fn("int", Uint)
def _int_uint(v: Uint) -> int:
    return _int_conv(int(v))


def _int_conv(v: int) -> int:
    if INT64_MIN <= v <= INT64_MAX:
        return v
    raise CelRuntimeError("int range error")


@fn("int", float)
def _int_double(v: float) -> int:
    if math.isnan(v) or math.isinf(v) or not -(2.0**63) < v < 2.0**63:
        raise CelRuntimeError("int range error")
    return _int_conv(int(v))


@fn("int", str)
def _int_string(v: str) -> int:
    try:
        if v.strip() != v or "_" in v:
            raise ValueError(v)
        return _int_conv(int(v, 10))
    except ValueError:
        raise CelRuntimeError(f"cannot convert string '{v}' to int") from None


@fn("int", Duration)
def _int_duration(v: Duration) -> int:
    return v.nanos


@fn("int", Timestamp)
def _int_ts(v: Timestamp) -> int:
    return v.seconds


@fn("uint", Uint)
def _uint_uint(v: Uint) -> Uint:
    return v


@fn("uint", int)
def _uint_int(v: int) -> Uint:
    if v < 0:
        raise CelRuntimeError("uint range error")
    return _uint_result(v)


@fn("uint", float)
def _uint_double(v: float) -> Uint:
    if math.isnan(v) or math.isinf(v) or not 0 <= v < 2.0**64:
        raise CelRuntimeError("uint range error")
    return _uint_result(int(v))


@fn("uint", str)
def _uint_string(v: str) -> Uint:
    try:
        if v.strip() != v or "_" in v or v.startswith(("-", "+")):
            raise ValueError(v)
        return _uint_result(int(v, 10))
    except (ValueError, CelRuntimeError):
        raise CelRuntimeError(f"cannot convert string '{v}' to uint") from None


fn("double", float)(lambda v: v)
fn("double", int)(float)
fn("double", Uint)(lambda v: float(int(v)))


@fn("double", str)
def _double_string(v: str) -> float:
    text = v.lower()
    if text in ("inf", "+inf", "infinity", "+infinity"):
        return math.inf
    if text in ("-inf", "-infinity"):
        return -math.inf
    if text == "nan":
        return math.nan
    try:
        if "_" in v or v.strip() != v:
            raise ValueError(v)
        return float(v)
    except ValueError:
        raise CelRuntimeError(f"cannot convert string '{v}' to double") from None


for _st in (str, bool, int, Uint, float, bytes, Duration, Timestamp):
    fn("string", _st)(to_string)

fn("bytes", bytes)(lambda v: v)
fn("bytes", str)(lambda v: v.encode("utf-8"))
fn("bool", bool)(lambda v: v)

_BOOL_STRINGS: Final = {
    "1": True,
    "t": True,
    "T": True,
    "TRUE": True,
    "true": True,
    "True": True,
    "0": False,
    "f": False,
    "F": False,
    "FALSE": False,
    "false": False,
    "False": False,
}


@fn("bool", str)
def _bool_string(v: str) -> bool:
    try:
        return _BOOL_STRINGS[v]
    except KeyError:
        raise CelRuntimeError(f"cannot convert string '{v}' to bool") from None


fn("dyn", object)(lambda v: v)
fn("type", object)(type_of)

# durations and timestamps -----------------------------------------------------------------------------------

fn("duration", str)(Duration.parse)
fn("duration", Duration)(lambda v: v)
fn("timestamp", str)(Timestamp.parse)
fn("timestamp", Timestamp)(lambda v: v)
fn("timestamp", int)(lambda v: Timestamp(v * 1_000_000_000))


def _zone(tz: str) -> _dt.tzinfo:
    if ":" in tz and tz.lstrip("+-").replace(":", "").isdigit():
        hours, _, minutes = tz.lstrip("+-").partition(":")
        delta = _dt.timedelta(hours=int(hours), minutes=int(minutes))
        return _dt.timezone(-delta if tz.startswith("-") else delta)
    if tz.upper() == "UTC":
        return _dt.UTC
    import zoneinfo  # a named zone: rare in policies, and the module is a tenth of the library's import

    try:
        return zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise CelRuntimeError(f"unknown time zone '{tz}'") from None


_TS_ACCESSORS: Final[dict[str, Callable[[_dt.datetime, Timestamp], int]]] = {
    "getFullYear": lambda d, t: d.year,
    "getMonth": lambda d, t: d.month - 1,
    "getDate": lambda d, t: d.day,
    "getDayOfMonth": lambda d, t: d.day - 1,
    "getDayOfWeek": lambda d, t: (d.weekday() + 1) % 7,
    "getDayOfYear": lambda d, t: d.timetuple().tm_yday - 1,
    "getHours": lambda d, t: d.hour,
    "getMinutes": lambda d, t: d.minute,
    "getSeconds": lambda d, t: d.second,
    "getMilliseconds": lambda d, t: (t.nanos // 1_000_000) % 1000,
}


def _register_ts(name: str, get: Callable[[_dt.datetime, Timestamp], int]) -> None:
    member(name, Timestamp)(lambda t: get(t.datetime(), t))
    member(name, Timestamp, str)(lambda t, tz: get(t.datetime(_zone(tz)), t))


for _name, _get in _TS_ACCESSORS.items():
    _register_ts(_name, _get)

member("getHours", Duration)(lambda d: _trunc_div(d.nanos, 3600 * 1_000_000_000))
member("getMinutes", Duration)(lambda d: _trunc_div(d.nanos, 60 * 1_000_000_000))
member("getSeconds", Duration)(lambda d: _trunc_div(d.nanos, 1_000_000_000))
member("getMilliseconds", Duration)(lambda d: _trunc_mod(_trunc_div(d.nanos, 1_000_000), 1000))

# optionals --------------------------------------------------------------------------------------------------


def _is_zero(v: Any) -> bool:
    t = type(v)
    if v is None:
        return True
    if t in (bool, int, float, Uint, str, bytes, list, dict):
        return not v
    if t is Duration or t is Timestamp:
        return bool(v.nanos == 0)
    return False


fn("optional.of", object)(Optional.of)
fn("optional.none")(lambda: Optional.NONE)
fn("optional.ofNonZeroValue", object)(lambda v: Optional.NONE if _is_zero(v) else Optional.of(v))
member("hasValue", Optional)(lambda o: o.has_value())
member("value", Optional)(lambda o: o.value())
