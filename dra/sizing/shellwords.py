"""Split a shell command line into words as `shlex.split` does (POSIX mode, no comments), in linear time.

`shlex` appends each character to its token attribute one at a time, which is quadratic in a token's length (a 1.4 MB
`sh -c` script took 65 s). Here each run of ordinary characters is one slice and each word one join. The rules are
shlex's: whitespace is space, tab, CR and LF; `'...'` is literal; in `"..."` a backslash escapes only `"` and `\\`;
outside quotes a backslash escapes any character; quoted empty strings are words.
"""

from __future__ import annotations

import re

__all__ = ["split", "split_prefix"]

_WHITESPACE = frozenset(" \t\r\n")
_PLAIN = re.compile(r"[^ \t\r\n'\"\\]+")
_IN_DOUBLE = re.compile(r'[^"\\]+')
_SPECIAL = re.compile(r"['\"\\]")
_BARE_WORDS = re.compile(r"[^ \t\r\n]+")


def _scan(text: str) -> tuple[list[str], bool, str]:
    """The words that whitespace ended; whether a word was still open at the end; and the error shlex would raise
    ('' when none: then the open word, if any, is complete)."""
    if _SPECIAL.search(text) is None:  # no quotes, no escapes: the words are the runs between whitespace
        return _BARE_WORDS.findall(text), bool(text) and text[-1] not in _WHITESPACE, ""
    words: list[str] = []
    parts: list[str] = []
    open_word = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in _WHITESPACE:
            if open_word:
                words.append("".join(parts))
                parts.clear()
                open_word = False
            i += 1
            continue
        open_word = True
        if c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                return words, True, "No closing quotation"
            parts.append(text[i + 1 : end])
            i = end + 1
        elif c == '"':
            i += 1
            while True:
                plain = _IN_DOUBLE.match(text, i)
                if plain is not None:
                    parts.append(plain.group())
                    i = plain.end()
                if i >= n:
                    return words, True, "No closing quotation"
                if text[i] == '"':
                    i += 1
                    break
                if i + 1 >= n:
                    return words, True, "No escaped character"
                escaped = text[i + 1]
                parts.append(escaped if escaped in '"\\' else "\\" + escaped)
                i += 2
        elif c == "\\":
            if i + 1 >= n:
                return words, True, "No escaped character"
            parts.append(text[i + 1])
            i += 2
        else:
            plain = _PLAIN.match(text, i)
            assert plain is not None  # c is none of the characters the pattern excludes
            parts.append(plain.group())
            i = plain.end()
    if open_word:
        words.append("".join(parts))
    return words, open_word, ""


def split(text: str) -> list[str]:
    """`shlex.split(text)`; raises ValueError where shlex does (an unclosed quote, a trailing backslash)."""
    words, _, error = _scan(text)
    if error:
        raise ValueError(error)
    return words


def split_prefix(text: str) -> list[str]:
    """The words of a text cut short: only those whitespace ended, since the last one may continue past the cut."""
    words, open_word, error = _scan(text)
    if open_word and not error:
        words.pop()
    return words
