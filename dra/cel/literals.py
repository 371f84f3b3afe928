"""CEL literal tokens read into values, as cel-go's parser does: escapes in string and bytes literals (raw and
triple-quoted forms included) and the range checks of int and uint literals.

Every function raises `ValueError` with the checker's wording; the compiler turns that into a `CelCompileError`
at the literal's position.
"""

from __future__ import annotations

from typing import Final

from dra.cel.values import INT64_MAX, INT64_MIN, UINT64_MAX

__all__ = ["bytes_literal", "int_literal", "string_literal", "uint_literal"]


def int_literal(text: str) -> int:
    """An INT_LIT token (decimal or hex, optionally negative) within int64."""
    neg = text.startswith("-")
    body = text[1:] if neg else text
    v = int(body, 16) if body.lower().startswith("0x") else int(body)
    v = -v if neg else v
    if not INT64_MIN <= v <= INT64_MAX:
        raise ValueError(f"invalid int literal {text}")
    return v


def uint_literal(text: str) -> int:
    """A UINT_LIT token (`12u`, `0x1Fu`) within uint64."""
    body = text[:-1]
    v = int(body, 16) if body.lower().lstrip("-").startswith("0x") else int(body)
    if body.startswith("-") or v > UINT64_MAX:
        raise ValueError(f"invalid uint literal {text}")
    return v


_SIMPLE_ESCAPES: Final = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "`": "`",
    "?": "?",
}


def _split_quotes(text: str) -> tuple[bool, str]:
    raw = text[:1] in "rR"
    if raw:
        text = text[1:]
    q = 3 if text[:3] in ('"""', "'''") else 1
    return raw, text[q:-q]


def _unescape(body: str, as_bytes: bool) -> bytes | str:
    out = bytearray() if as_bytes else None
    chars: list[str] = []

    def emit_char(ch: str) -> None:
        if out is not None:
            out.extend(ch.encode("utf-8"))
        else:
            chars.append(ch)

    def emit_byte(b: int) -> None:
        if out is not None:
            out.append(b)
        else:
            chars.append(chr(b))

    i = 0
    n = len(body)
    while i < n:
        ch = body[i]
        if ch != "\\":
            emit_char(ch)
            i += 1
            continue
        if i + 1 >= n:
            raise ValueError("invalid escape at end of string")
        e = body[i + 1]
        if e in _SIMPLE_ESCAPES:
            emit_char(_SIMPLE_ESCAPES[e])
            i += 2
        elif e in "xX":
            emit_byte(int(body[i + 2 : i + 4], 16))
            i += 4
        elif e in "uU" and as_bytes:  # cel-go's unescape allows \u and \U only in strings
            raise ValueError("unable to unescape string")
        elif e == "u":
            emit_char(_code_point(body[i + 2 : i + 6]))
            i += 6
        elif e == "U":
            emit_char(_code_point(body[i + 2 : i + 10]))
            i += 10
        elif e in "0123":
            emit_byte(int(body[i + 1 : i + 4], 8))
            i += 4
        else:
            raise ValueError(f"invalid escape sequence '\\{e}'")
    if out is not None:
        return bytes(out)
    return "".join(chars)


def _code_point(hex_digits: str) -> str:
    cp = int(hex_digits, 16)
    if 0xD800 <= cp <= 0xDFFF or cp > 0x10FFFF:
        raise ValueError(f"invalid unicode code point \\u{hex_digits}")
    return chr(cp)


def string_literal(text: str) -> str:
    """A STRING_LIT or MLSTRING_LIT token's value (quotes included in `text`, optionally `r`-prefixed)."""
    raw, body = _split_quotes(text)
    if raw:
        return body
    result = _unescape(body, as_bytes=False)
    assert isinstance(result, str)
    return result


def bytes_literal(text: str) -> bytes:
    """A BYTES_LIT token's value (`b` prefix and quotes included in `text`)."""
    raw, body = _split_quotes(text[1:])
    if raw:
        return body.encode("utf-8")
    result = _unescape(body, as_bytes=True)
    assert isinstance(result, bytes)
    return result
