"""cel-go `ext.Strings` at version 2, as Kubernetes loads it (`ext.Strings(StringsVersion(2))`).

Indices count Unicode code points. v2 has `format` (cel-go's pre-v4 formatter with its en-US locale output:
`%f` groups thousands, `%e` prints `1.000000×10⁰⁰`, infinities print `∞`), `strings.quote` and the lenient
`join`; `reverse` (v3) and the cel-spec formatter (v4) are not part of it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, Final

from dra.cel._functions import FunctionRegistry
from dra.cel.ip import go_quote
from dra.cel.stdlib import format_double, type_of
from dra.cel.values import CelType, Duration, Timestamp, Uint
from dra.errors import CelCostError, CelRuntimeError

__all__ = ["REGISTRY", "UNCHECKED", "check_format", "go_trim_space"]

UNCHECKED: Final = object()  # check_format: an argument of a type the compiler does not know

REGISTRY = FunctionRegistry()

# Go unicode.IsSpace: Latin-1 spaces plus the Unicode White_Space property.
_GO_SPACE: Final = frozenset(
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def _index_error(index: int) -> CelRuntimeError:
    return CelRuntimeError(f"index out of range: {index}")


@REGISTRY.member("charAt", str, int)
def char_at(text: str, index: int) -> str:
    if index < 0 or index > len(text):
        raise _index_error(index)
    return text[index : index + 1]


def _index_of(text: str, sub: str, offset: int) -> int:
    if offset < 0:
        raise _index_error(offset)
    if not sub:
        return min(offset, len(text))
    if offset >= len(text):
        return -1
    return text.find(sub, offset)


@REGISTRY.member("indexOf", str, str)
def index_of(text: str, sub: str) -> int:
    return _index_of(text, sub, 0)


@REGISTRY.member("indexOf", str, str, int)
def index_of_offset(text: str, sub: str, offset: int) -> int:
    return _index_of(text, sub, offset)


def _last_index_of(text: str, sub: str, offset: int) -> int:
    if offset < 0:
        raise _index_error(offset)
    if not sub:
        return min(offset, len(text))
    if offset >= len(text):
        return -1
    return text.rfind(sub, 0, min(offset, len(text) - len(sub)) + len(sub))


@REGISTRY.member("lastIndexOf", str, str)
def last_index_of(text: str, sub: str) -> int:
    if not sub:
        return len(text)
    # cel-go compares UTF-8 byte lengths here before searching.
    if len(text.encode("utf-8", "surrogatepass")) < len(sub.encode("utf-8", "surrogatepass")):
        return -1
    return _last_index_of(text, sub, len(text) - 1)


@REGISTRY.member("lastIndexOf", str, str, int)
def last_index_of_offset(text: str, sub: str, offset: int) -> int:
    return _last_index_of(text, sub, offset)


_LOWER: Final = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_UPPER: Final = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


@REGISTRY.member("lowerAscii", str)
def lower_ascii(text: str) -> str:
    return text.translate(_LOWER)


@REGISTRY.member("upperAscii", str)
def upper_ascii(text: str) -> str:
    return text.translate(_UPPER)


@REGISTRY.member("replace", str, str, str)
def replace(text: str, old: str, new: str) -> str:
    return text.replace(old, new)


@REGISTRY.member("replace", str, str, str, int)
def replace_n(text: str, old: str, new: str, n: int) -> str:
    # Go strings.Replace: n < 0 replaces all; Python's count=-1 does the same.
    return text.replace(old, new, n if n >= 0 else -1)


def _split(text: str, sep: str, n: int) -> list[str]:
    """Go strings.SplitN: n == 0 → [], n < 0 → all; an empty separator splits into code points."""
    if n == 0:
        return []
    if not sep:
        chars = list(text)
        if 0 < n < len(chars):
            return chars[: n - 1] + ["".join(chars[n - 1 :])]
        return chars
    if n < 0:
        return text.split(sep)
    return text.split(sep, n - 1)


@REGISTRY.member("split", str, str)
def split(text: str, sep: str) -> list[str]:
    return _split(text, sep, -1)


@REGISTRY.member("split", str, str, int)
def split_n(text: str, sep: str, n: int) -> list[str]:
    return _split(text, sep, n)


@REGISTRY.member("substring", str, int)
def substring(text: str, start: int) -> str:
    if start < 0 or start > len(text):
        raise _index_error(start)
    return text[start:]


@REGISTRY.member("substring", str, int, int)
def substring_range(text: str, start: int, end: int) -> str:
    if start > end:
        raise CelRuntimeError(f"invalid substring range. start: {start}, end: {end}")
    if start < 0 or start > len(text):
        raise _index_error(start)
    if end < 0 or end > len(text):
        raise _index_error(end)
    return text[start:end]


def go_trim_space(text: str) -> str:
    """Go strings.TrimSpace (unicode.IsSpace, which differs from Python's str.isspace)."""
    start, end = 0, len(text)
    while start < end and text[start] in _GO_SPACE:
        start += 1
    while end > start and text[end - 1] in _GO_SPACE:
        end -= 1
    return text[start:end]


@REGISTRY.member("trim", str)
def trim(text: str) -> str:
    return go_trim_space(text)


def _join(values: list[Any], sep: str) -> str:
    for value in values:
        if type(value) is not str:
            raise CelRuntimeError(f"join: invalid input: {_go_value(value)}")
    return sep.join(values)


def _go_value(value: Any) -> str:
    """Go's %v of a scalar CEL value, for messages."""
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is float:
        return format_double(value)
    if value is None:
        return "0"  # types.Null is the protobuf NullValue enum, which %v prints as its number
    return str(value)


@REGISTRY.member("join", list)
def join(values: list[Any]) -> str:
    return _join(values, "")


@REGISTRY.member("join", list, str)
def join_sep(values: list[Any], sep: str) -> str:
    return _join(values, sep)


_QUOTE_ESCAPES: Final = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


@REGISTRY.function("strings.quote", str)
def quote(text: str) -> str:
    out = ['"']
    for c in text:
        if 0xD800 <= ord(c) <= 0xDFFF:  # not a valid rune: cel-go substitutes U+FFFD
            c = "\ufffd"
        out.append(_QUOTE_ESCAPES.get(c, c))
    out.append('"')
    return "".join(out)


# ---------------------------------------------------------------------------------------- "...".format(list)

_DEFAULT_PRECISION: Final = 6
_MAX_PRECISION: Final = 10_000_000
_SUPERSCRIPT: Final = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
_STRING_TYPES: Final = (int, Uint, float, bool, str, Timestamp, bytes, Duration, CelType)


class _FormatError(Exception):
    """A clause that cannot format its argument; wrapped as `error during formatting: ...`."""


def _type_name(value: Any) -> str:
    return type_of(value).name


def _format_string(value: Any) -> str:
    """cel-go `FormatString` (the `%s` clause)."""
    t = type(value)
    if t is list:
        return _format_list(value)
    if isinstance(value, dict):
        return _format_map(value)
    if value is None:
        return "null"
    if t in _STRING_TYPES:
        return _to_string(value)
    raise _FormatError(
        "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, "
        f"and timestamps, was given {_type_name(value)}"
    )


def _to_string(value: Any) -> str:
    t = type(value)
    if t is str:
        return str(value)
    if t is bool:
        return "true" if value else "false"
    if t is float:
        return format_double(value)
    if t is bytes:
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            # cel-go quotes the conversion error where it meant to quote the argument.
            raise _FormatError(
                'could not convert argument "invalid UTF-8 in bytes, cannot convert to string" to string'
            ) from None
    if t is CelType:
        return str(value.name)
    return str(int(value)) if t is int or t is Uint else str(value)


def _format_decimal(value: Any) -> str:
    if type(value) is int or type(value) is Uint:
        return str(int(value))
    raise _FormatError(f"decimal clause can only be used on integers, was given {_type_name(value)}")


def _go_fixed(value: float, precision: int) -> str:
    """Go `%.<p>f` as cel-go prints it through x/text (NaN, Inf, -Inf → "NaN", "+Inf", "-Inf")."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return f"{value:.{precision}f}"


def _element(value: Any) -> str:
    """cel-go `clauseForType` for list elements and map values, quoted as CEL literals."""
    t = type(value)
    if t is int or t is Uint:
        text = _format_decimal(value)
    elif t in (str, bytes, bool, CelType) or value is None:
        text = _format_string(value)
    elif t is Timestamp:
        return f"timestamp({go_quote(str(value))})"
    elif t is Duration:
        return f"duration({go_quote(str(value))})"
    elif t is list:
        return _format_list(value)
    elif isinstance(value, dict):
        return _format_map(value)
    elif t is float:
        text = _go_fixed(value, _DEFAULT_PRECISION)
        return go_quote(text) if math.isnan(value) or math.isinf(value) else text
    else:
        raise _FormatError(f"no formatting function for {_type_name(value)}")
    if t is str:
        return go_quote(text)
    if t is bytes:
        return "b" + go_quote(text)
    return text


def _format_list(values: list[Any]) -> str:
    return "[" + ", ".join(_element(v) for v in values) + "]"


def _format_map(values: dict[Any, Any]) -> str:
    pairs: list[tuple[str, str]] = []
    for key, value in values.items():
        kt = type(key)
        if kt is str:
            key_text = go_quote(key)
        elif kt is bool:
            key_text = _format_string(key)
        elif kt is int or kt is Uint:
            key_text = _format_decimal(key)
        else:
            raise _FormatError(f"no formatting function for map key of type {_type_name(key)}")
        pairs.append((key_text, _element(value)))
    pairs.sort(key=lambda kv: kv[0].encode("utf-8", "surrogatepass"))
    return "{" + ", ".join(f"{k}:{v}" for k, v in pairs) + "}"


def _double_operand(value: Any, clause: str) -> float:
    if type(value) is float:
        return float(value)
    if type(value) is str and value in ("NaN", "Infinity", "-Infinity"):
        return float(value.replace("Infinity", "inf"))
    raise _FormatError(f"{clause} clause can only be used on doubles, was given {_type_name(value)}")


def _localized_special(value: float) -> str | None:
    # x/text's en-US number formatting.
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    return None


def _format_fixed(value: Any, precision: int) -> str:
    number = _double_operand(value, "fixed-point")
    special = _localized_special(number)
    if special is not None:
        return special
    # x/text uses the locale's decimal pattern (#,##0.###): thousands are grouped with ","; -0 has no sign.
    return f"{number + 0.0:,.{precision}f}"


def _format_scientific(value: Any, width: int) -> str:
    # cel-go builds "%<p>e" for x/text: the precision becomes a width, so six fraction digits are always printed
    # and the text is left-padded with spaces to <p> characters.
    number = _double_operand(value, "scientific")
    special = _localized_special(number)
    if special is None:
        mantissa, _, exponent = f"{number + 0.0:.{_DEFAULT_PRECISION}e}".partition("e")
        exp = int(exponent)
        digits = f"{'-' if exp < 0 else ''}{abs(exp):02d}"
        special = f"{mantissa}×10{digits.translate(_SUPERSCRIPT)}"
    return special.rjust(width)


def _format_binary(value: Any) -> str:
    t = type(value)
    if t is int or t is Uint:
        return format(int(value), "b")
    if t is bool:
        return "1" if value else "0"
    raise _FormatError(f"only integers and bools can be formatted as binary, was given {_type_name(value)}")


def _format_hex(value: Any, upper: bool) -> str:
    t = type(value)
    if t is str:
        text = str(value).encode("utf-8", "surrogatepass").hex()
    elif t is bytes:
        text = bytes(value).hex()
    elif t is int or t is Uint:
        text = format(int(value), "x")
    else:
        raise _FormatError(
            f"only integers, byte buffers, and strings can be formatted as hex, was given {_type_name(value)}"
        )
    return text.upper() if upper else text


def _format_octal(value: Any) -> str:
    if type(value) is int or type(value) is Uint:
        return format(int(value), "o")
    raise _FormatError(f"octal clause can only be used on integers, was given {_type_name(value)}")


def _parse_clause(spec: str) -> tuple[int, int | None, str]:
    """One clause after `%` (`.<precision>` then a verb): (chars read, precision, verb)."""
    i = 0
    precision: int | None = None
    if spec[0] == ".":
        i = 1
        while True:
            if i >= len(spec):
                raise CelRuntimeError(
                    "could not parse formatting clause: error while parsing precision: "
                    "could not find end of precision specifier"
                )
            if not ("0" <= spec[i] <= "9"):
                break
            i += 1
        if i == 1:
            raise CelRuntimeError(
                "could not parse formatting clause: error while parsing precision: error while converting precision "
                'to integer: strconv.Atoi: parsing "": invalid syntax'
            )
        precision = int(spec[1:i])
    verb = spec[i]
    if verb not in _CHECKED_TYPES:
        raise CelRuntimeError(f'could not parse formatting clause: unrecognized formatting clause "{verb}"')
    return i + 1, precision, verb


def _clauses(template: str, n_args: int) -> Iterator[str | tuple[int, int | None, str]]:
    """cel-go `parseFormatString` (strings extension before version 4): literal text, or (arg index, precision,
    verb) per clause; raises the parse errors (`index 1 out of range`, `unexpected end of string`, ...)."""
    i = 0
    arg_index = 0
    n = len(template)
    while i < n:
        c = template[i]
        if c != "%":
            yield c
            i += 1
            continue
        if i + 1 < n and template[i + 1] == "%":
            yield "%"
            i += 2
            continue
        if arg_index >= n_args:
            raise CelRuntimeError(f"index {arg_index} out of range")
        if i + 1 >= n:
            raise CelRuntimeError("unexpected end of string")
        read, precision, verb = _parse_clause(template[i + 1 :])
        yield arg_index, precision, verb
        i += 1 + read
        arg_index += 1


def _format_clause(verb: str, precision: int | None, value: Any) -> str:
    if precision is not None and precision > _MAX_PRECISION:
        # Unbounded before strings v5 upstream; refuse output no cost budget could pay for rather than hang.
        raise CelCostError(f"operation cancelled: actual cost limit exceeded (precision {precision})")
    try:
        if verb == "s":
            return _format_string(value)
        if verb == "d":
            return _format_decimal(value)
        if verb == "f":
            return _format_fixed(value, _DEFAULT_PRECISION if precision is None else precision)
        if verb == "e":
            return _format_scientific(value, _DEFAULT_PRECISION if precision is None else precision)
        if verb == "b":
            return _format_binary(value)
        if verb in "xX":
            return _format_hex(value, verb == "X")
        return _format_octal(value)
    except _FormatError as err:
        raise CelRuntimeError(f"error during formatting: {err}") from None


@REGISTRY.member("format", str, list)
def format_(template: str, args: list[Any]) -> str:
    out: list[str] = []
    for part in _clauses(template, len(args)):
        if isinstance(part, str):
            out.append(part)
        else:
            index, precision, verb = part
            out.append(_format_clause(verb, precision, args[index]))
    return "".join(out)


# Argument types cel-go's `stringFormatValidator` accepts per verb when it checks a literal format call at
# compile time (`%f`/`%e` take strings for "NaN" and "Infinity"; `%s` looks into list and map literals).
_CHECKED_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "s": (*_STRING_TYPES, list, dict, type(None)),
    "d": (int, Uint),
    "o": (int, Uint),
    "b": (int, Uint, bool),
    "x": (int, Uint, str, bytes),
    "X": (int, Uint, str, bytes),
    "f": (float, str),
    "e": (float, str),
}


def _unformattable(verb: str, value: Any) -> Any:
    """The (nested, for `%s`) value whose type the validator rejects for `verb`, else UNCHECKED."""
    if value is UNCHECKED:
        return UNCHECKED
    accepted = _CHECKED_TYPES[verb]
    if type(value) not in accepted and not (dict in accepted and isinstance(value, dict)):
        return value
    if verb == "s" and isinstance(value, (list, dict)):
        items = value if isinstance(value, list) else [x for kv in value.items() for x in kv]
        for item in items:
            bad = _unformattable("s", item)
            if bad is not UNCHECKED:
                return bad
    return UNCHECKED


def check_format(template: str, args: list[Any]) -> tuple[int | None, str] | None:
    """cel-go's compile-time check of `<string literal>.format(<list literal>)`: None when it passes, else
    (index of the offending argument or None for the call itself, message). `args` holds the constant
    arguments, UNCHECKED for those whose type the compiler does not know (they pass, as dyn does)."""
    used = 0
    try:
        for part in _clauses(template, len(args)):
            if isinstance(part, str):
                continue
            index, _, verb = part
            used = index + 1
            bad = _unformattable(verb, args[index])
            if bad is not UNCHECKED:
                try:
                    _format_clause(verb, None, bad)
                except CelRuntimeError as e:  # the runtime's text is the validator's
                    return index, e.message
    except CelRuntimeError as e:
        return None, e.message
    if len(args) > used:
        return None, f"too many arguments supplied to string.format (expected {used}, got {len(args)})"
    return None
