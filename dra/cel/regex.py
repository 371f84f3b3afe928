"""Kubernetes CEL regex library (`library/regex.go`): `find`, `findAll` with Go `regexp` (RE2) semantics.

Patterns compile through google-re2 once and are cached; compile errors read as Go's
(`Illegal regex: error parsing regexp: missing closing ]: `[``). `findAll` follows Go's `FindAllString`:
an empty match right after a previous match is skipped.
"""

from __future__ import annotations

from typing import Any, Final

import re2

from dra.cel._functions import FunctionRegistry
from dra.errors import CelRuntimeError

__all__ = ["GoRegexError", "REGISTRY", "compile_go_regex", "go_find_all"]

REGISTRY = FunctionRegistry()

_OPTIONS: Final = re2.Options()
_OPTIONS.log_errors = False

# RE2 (C++) error codes → Go regexp/syntax ErrorCode texts.
_GO_CODES: Final = {
    "invalid escape sequence": "invalid escape sequence",
    "invalid character class": "invalid character class",
    "invalid character class range": "invalid character class range",
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "unexpected )": "unexpected )",
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid repetition size": "invalid repeat count",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid UTF-8": "invalid UTF-8",
    "invalid named capture group": "invalid named capture",
}

try:
    from re2 import _re2

    _UNANCHORED: Any = _re2.RE2.Anchor.UNANCHORED
except (ImportError, AttributeError):  # pragma: no cover - other re2 builds have only the public API
    _UNANCHORED = None

_CACHE: dict[str, Any] = {}
_CACHE_MAX: Final = 4096


class GoRegexError(ValueError):
    """A pattern Go's regexp.Compile rejects; the message is Go's `error parsing regexp: ...`."""


def compile_go_regex(pattern: str) -> Any:
    """The cached RE2 program for `pattern`; raises `GoRegexError` with Go's message."""
    compiled = _CACHE.get(pattern)
    if compiled is None:
        _reject_c_escape(pattern)
        try:
            compiled = re2.compile(pattern, _OPTIONS)
        except re2.error as err:
            raise GoRegexError(_go_message(err, pattern)) from None
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[pattern] = compiled
    return compiled


def _reject_c_escape(pattern: str) -> None:
    # RE2 (C++) accepts \C (any byte); Go's regexp does not.
    i = 0
    while i < len(pattern) - 1:
        if pattern[i] == "\\":
            if pattern[i + 1] == "C":
                raise GoRegexError("error parsing regexp: invalid escape sequence: `\\C`")
            i += 2
        else:
            i += 1


def _go_message(err: Exception, pattern: str) -> str:
    raw = err.args[0] if err.args else ""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    code, sep, arg = text.partition(": ")
    if code == "trailing \\":
        return "error parsing regexp: trailing backslash at end of expression: ``"
    if not sep:
        return f"error parsing regexp: {text}"
    if code == "invalid perl operator" and arg.startswith("(?<") and (at := pattern.find(arg)) >= 0:
        # Go reads `(?<` as the start of a named capture (`(?<name>`), so lookbehinds fail there.
        rest = pattern[at:]
        end = rest.find(">")
        return f"error parsing regexp: invalid named capture: `{rest if end < 0 else rest[: end + 1]}`"
    return f"error parsing regexp: {_GO_CODES.get(code, code)}: `{arg}`"


def go_find_all(compiled: Any, text: str, n: int) -> list[str]:
    """Go `Regexp.FindAllString(text, n)`: n < 0 means all matches.

    One pass over the UTF-8 bytes, encoded once: each search resumes at a byte offset of the same buffer
    (the text before it stays the context of `^` and `\\b`), and only the matches are decoded. The public
    `re2` API re-encodes the text and re-counts code points from the start on every `search(text, pos)`,
    which made a loop over it quadratic in the length (issue 12).
    """
    low = getattr(compiled, "_regexp", None)
    if _UNANCHORED is None or low is None:  # pragma: no cover - other re2 builds: public API, quadratic
        return _find_all_public(compiled, text, n)
    data = text.encode("utf-8")
    end = len(data)
    if n < 0:
        n = end + 1
    match = low.Match
    out: list[str] = []
    pos = 0
    prev_end = -1
    while len(out) < n and pos <= end:
        start, stop = match(_UNANCHORED, data, pos, end)[0]
        if start < 0:
            break
        accept = True
        if stop == pos:
            # An empty match right after the previous match is not reported; step over one code point.
            if start == prev_end:
                accept = False
            pos += _utf8_width(data[pos]) if pos < end else 1
        else:
            pos = stop
        prev_end = stop
        if accept:
            out.append(data[start:stop].decode("utf-8"))
    return out


def _utf8_width(lead: int) -> int:
    """The byte length of the UTF-8 sequence that starts with `lead` (the text came from a str: valid)."""
    if lead < 0x80:
        return 1
    if lead < 0xE0:
        return 2
    if lead < 0xF0:
        return 3
    return 4


def _find_all_public(compiled: Any, text: str, n: int) -> list[str]:  # pragma: no cover - see go_find_all
    if n < 0:
        n = len(text) + 1
    out: list[str] = []
    pos = 0
    prev_end = -1
    while len(out) < n and pos <= len(text):
        m = compiled.search(text, pos)
        if m is None:
            break
        start, end = m.span()
        accept = True
        if end == pos:
            if start == prev_end:
                accept = False
            pos += 1
        else:
            pos = end
        prev_end = end
        if accept:
            out.append(text[start:end])
    return out


def _compile(pattern: str) -> Any:
    try:
        return compile_go_regex(pattern)
    except GoRegexError as err:
        raise CelRuntimeError(f"Illegal regex: {err}") from None


@REGISTRY.member("find", str, str)
def find(text: str, pattern: str) -> str:
    m = _compile(pattern).search(text)
    return "" if m is None else str(m.group(0))


@REGISTRY.member("findAll", str, str)
def find_all(text: str, pattern: str) -> list[str]:
    return go_find_all(_compile(pattern), text, -1)


@REGISTRY.member("findAll", str, str, int)
def find_all_n(text: str, pattern: str, n: int) -> list[str]:
    return go_find_all(_compile(pattern), text, n)
