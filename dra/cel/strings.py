"""cel-go `ext.Strings` at version 2, as Kubernetes loads it (`ext.Strings(StringsVersion(2))`).

Indices count Unicode code points. v2 has `format` (the pre-v4 formatter, see `dra.cel.formatting`),
`strings.quote` and the lenient `join`; `reverse` (v3) and the cel-spec formatter (v4) are not part of it.
"""

from __future__ import annotations

from typing import Any, Final

from dra.cel._functions import FunctionRegistry
from dra.errors import CelRuntimeError

__all__ = ["REGISTRY", "go_trim_space"]

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
            raise CelRuntimeError(f"join: invalid input: {value}")
    return sep.join(values)


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
