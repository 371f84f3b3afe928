"""Unit tests of cel-go's strings extension (version 2), through the registry."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dra.cel.strings import REGISTRY
from dra.errors import CelRuntimeError


def member(name: str, receiver: object, *args: object) -> Any:
    return REGISTRY.call_member(name, receiver, args)


@pytest.mark.parametrize(
    ("receiver", "name", "args", "expected"),
    [
        ("hello", "charAt", (4,), "o"),
        ("hello", "charAt", (5,), ""),
        ("héllo", "charAt", (1,), "é"),
        ("hello mellow", "indexOf", ("",), 0),
        ("hello mellow", "indexOf", ("ello",), 1),
        ("hello mellow", "indexOf", ("jello",), -1),
        ("hello mellow", "indexOf", ("", 2), 2),
        ("hello mellow", "indexOf", ("ello", 2), 7),
        ("hello mellow", "indexOf", ("ello", 20), -1),
        ("hello mellow", "indexOf", ("", 20), 12),
        ("tacoçat", "indexOf", ("çat",), 4),
        ("hello mellow", "lastIndexOf", ("",), 12),
        ("hello mellow", "lastIndexOf", ("ello",), 7),
        ("hello mellow", "lastIndexOf", ("jello",), -1),
        ("hello mellow", "lastIndexOf", ("ello", 6), 1),
        ("hello mellow", "lastIndexOf", ("ello", 20), -1),
        ("hello mellow", "lastIndexOf", ("", 3), 3),
        ("ab", "lastIndexOf", ("abc", 1), -1),
        ("TacoCat", "lowerAscii", (), "tacocat"),
        ("TacoCÆt Xii", "lowerAscii", (), "tacocÆt xii"),
        ("TacoCÆt Xii", "upperAscii", (), "TACOCÆT XII"),
        ("hello hello", "replace", ("he", "we"), "wello wello"),
        ("hello hello", "replace", ("he", "we", -1), "wello wello"),
        ("hello hello", "replace", ("he", "we", 1), "wello hello"),
        ("hello hello", "replace", ("he", "we", 0), "hello hello"),
        ("hello", "replace", ("", "_"), "_h_e_l_l_o_"),
        ("hello", "replace", ("", "_", 2), "_h_ello"),
        ("hello hello hello", "split", (" ",), ["hello", "hello", "hello"]),
        ("hello hello hello", "split", (" ", 0), []),
        ("hello hello hello", "split", (" ", 1), ["hello hello hello"]),
        ("hello hello hello", "split", (" ", 2), ["hello", "hello hello"]),
        ("hello hello hello", "split", (" ", -1), ["hello", "hello", "hello"]),
        ("héllo", "split", ("",), ["h", "é", "l", "l", "o"]),
        ("hello", "split", ("", 2), ["h", "ello"]),
        ("", "split", (",",), [""]),
        ("tacocat", "substring", (4,), "cat"),
        ("tacocat", "substring", (7,), ""),
        ("tacocat", "substring", (0, 4), "taco"),
        ("ta©o©αT", "substring", (2, 6), "©o©α"),
        ("  \ttrim\n    ", "trim", (), "trim"),
        ("\u00a0\u2003x\u200b", "trim", (), "x\u200b"),
        ("\x1cx", "trim", (), "\x1cx"),
    ],
)
def test_functions(receiver: str, name: str, args: tuple[Any, ...], expected: Any) -> None:
    assert member(name, receiver, *args) == expected


@pytest.mark.parametrize(
    ("receiver", "name", "args", "message"),
    [
        ("hello", "charAt", (-1,), "index out of range: -1"),
        ("hello", "charAt", (6,), "index out of range: 6"),
        ("hello mellow", "indexOf", ("ello", -1), "index out of range: -1"),
        ("hello mellow", "lastIndexOf", ("ello", -1), "index out of range: -1"),
        ("tacocat", "substring", (-1,), "index out of range: -1"),
        ("tacocat", "substring", (8,), "index out of range: 8"),
        ("tacocat", "substring", (2, 1), "invalid substring range. start: 2, end: 1"),
        ("tacocat", "substring", (0, 8), "index out of range: 8"),
        ("tacocat", "substring", (-1, 2), "index out of range: -1"),
    ],
)
def test_errors(receiver: str, name: str, args: tuple[Any, ...], message: str) -> None:
    with pytest.raises(CelRuntimeError) as err:
        member(name, receiver, *args)
    assert err.value.message == message


def test_join() -> None:
    assert member("join", ["hello", "mellow"]) == "hellomellow"
    assert member("join", ["hello", "mellow"], " ") == "hello mellow"
    assert member("join", []) == ""
    assert member("join", [], "/") == ""
    with pytest.raises(CelRuntimeError, match="^join: invalid input: 1$"):
        member("join", ["a", 1])


def test_quote() -> None:
    quote = REGISTRY.globals["strings.quote"][0].impl
    assert quote('single-quote with "double quote"') == '"single-quote with \\"double quote\\""'
    assert quote("two escape sequences \a\n") == '"two escape sequences \\a\\n"'
    assert quote("backslash \\ and \ud800") == '"backslash \\\\ and \ufffd"'
    assert quote("ünïcode") == '"ünïcode"'


def test_no_reverse_in_version_2() -> None:
    assert "reverse" not in REGISTRY.members


@given(st.text(max_size=20), st.text(max_size=3), st.integers(min_value=0, max_value=25))
def test_index_functions_against_python(text: str, sub: str, offset: int) -> None:
    if not sub:
        return
    expected = -1 if offset >= len(text) else text.find(sub, offset)
    assert member("indexOf", text, sub, offset) == expected
    if offset < len(text):
        assert member("lastIndexOf", text, sub, offset) == text.rfind(sub, 0, offset + len(sub))


@given(st.text(max_size=20), st.sampled_from([",", "ab", "é"]), st.integers(min_value=-1, max_value=5))
def test_split_join_round_trip(text: str, sep: str, n: int) -> None:
    parts = member("split", text, sep, n)
    if n != 0:
        assert member("join", parts, sep) == text
        assert n < 0 or len(parts) <= n
