"""Unit tests of cel-go's strings extension (version 2), through the registry."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dra.cel.strings import REGISTRY
from dra.cel.values import CelType, Duration, Optional, Timestamp, Uint
from dra.errors import CelCostError, CelRuntimeError


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
    with pytest.raises(CelRuntimeError, match="^join: invalid input: true$"):
        member("join", [True], "-")
    with pytest.raises(CelRuntimeError, match="^join: invalid input: 0$"):
        member("join", ["a", None], "-")


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


def fmt(template: str, *args: object) -> str:
    result = REGISTRY.call_member("format", template, (list(args),))
    assert isinstance(result, str)
    return result


@pytest.mark.parametrize(
    ("template", "args", "expected"),
    [
        ("no substitution", [], "no substitution"),
        ("%s is filler and some more", ["str"], "str is filler and some more"),
        ("%% and also %%", [], "% and also %"),
        ("%.3f", [1.2345], "1.234"),
        ("%f", [2.71828], "2.718280"),
        ("%f", [1234567.5], "1,234,567.500000"),
        ("%.1f", [-1234.25], "-1,234.2"),
        ("%e", [2.71828], "2.718280\u00d710\u2070\u2070"),
        ("%.6e", [1052.032911275], "1.052033\u00d710\u2070\u00b3"),
        ("%e", [0.00012], "1.200000\u00d710\u207b\u2070\u2074"),
        ("%.20e", [2.71828], "       2.718280\u00d710\u2070\u2070"),
        ("%.2e", [2.71828], "2.718280\u00d710\u2070\u2070"),
        ("%e", [-0.0], "0.000000\u00d710\u2070\u2070"),
        ("%f", [-0.0], "0.000000"),
        ("%f", ["NaN"], "NaN"),
        ("%f", ["Infinity"], "∞"),
        ("%f", [float("-inf")], "-∞"),
        ("%s", [2.71], "2.71"),
        ("%s", [0.000000002], "2e-09"),
        ("%s", [float("inf")], "+Inf"),
        ("%s", [123456789.0], "1.23456789e+08"),
        ("%s", [1e20], "1e+20"),
        ("%s", [100000.0], "100000"),
        ("%s", [0.0001], "0.0001"),
        ("%s", [0.00001], "1e-05"),
        ("%s", [-0.0], "-0"),
        ("%s", [[2.71]], "[2.710000]"),
        ("%s", [[float("nan"), float("inf"), float("-inf")]], '["NaN", "+Inf", "-Inf"]'),
        ("%s", [None], "null"),
        ("%s", [b"xyz"], "xyz"),
        ("%s", [True], "true"),
        ("%s", [Uint(7)], "7"),
        ("%s", [Duration(6347 * 10**9)], "6347s"),
        ("%s", [Duration(2)], "0.000000002s"),
        ("%s", [CelType("string")], "string"),
        (
            "%s",
            [["abc", 3.14, None, [9, 8, 7, 6], Timestamp(1675467080 * 10**9)]],
            '["abc", 3.140000, null, [9, 8, 7, 6], timestamp("2023-02-03T23:31:20Z")]',
        ),
        (
            "%s",
            [{"key1": b"xyz", "key5": None, "key2": Duration(7200 * 10**9), "key4": True, "key3": 2.71828}],
            '{"key1":b"xyz", "key2":duration("7200s"), "key3":2.718280, "key4":true, "key5":null}',
        ),
        ("%s", [{1: "value1", Uint(2): "value2"}], '{1:"value1", 2:"value2"}'),
        ("%d", [Uint(64)], "64"),
        ("%d", [-13], "-13"),
        ("this is 5 in binary: %b", [5], "this is 5 in binary: 101"),
        ("this is -5 in binary: %b", [-5], "this is -5 in binary: -101"),
        ("bit set from bool: %b", [True], "bit set from bool: 1"),
        ("this is an unsigned octal: %o", [Uint(65535)], "this is an unsigned octal: 177777"),
        ("%x is 30 in hexadecimal", [30], "1e is 30 in hexadecimal"),
        ("%X is 20 in hexadecimal", [30], "1E is 20 in hexadecimal"),
        ("%x is -30 in hexadecimal", [-30], "-1e is -30 in hexadecimal"),
        ("%x", ["Hello world!"], "48656c6c6f20776f726c6421"),
        ("%X", [b"byte string"], "6279746520737472696E67"),
        ("%x", [b"\x00\x00byte string\x00"], "00006279746520737472696e6700"),
        ("%.200f", [1.0], "1." + "0" * 200),
    ],
)
def test_format(template: str, args: list[Any], expected: str) -> None:
    assert fmt(template, *args) == expected


@pytest.mark.parametrize(
    ("template", "args", "message"),
    [
        ("%a", [1], 'could not parse formatting clause: unrecognized formatting clause "a"'),
        ("%E", [1.0], 'could not parse formatting clause: unrecognized formatting clause "E"'),
        ("%d %d", [1], "index 1 out of range"),
        ("%", [], "index 0 out of range"),
        ("%", [1], "unexpected end of string"),
        ("%.3", [1.0], "could not parse formatting clause: error while parsing precision: could not find end of"),
        (
            "%b",
            ["str"],
            "error during formatting: only integers and bools can be formatted as binary, was given string",
        ),
        ("%d", [Duration(1)], "decimal clause can only be used on integers, was given google.protobuf.Duration"),
        ("%o", ["str"], "error during formatting: octal clause can only be used on integers, was given string"),
        ("%x", [1.5], "only integers, byte buffers, and strings can be formatted as hex, was given double"),
        ("%f", [None], "fixed-point clause can only be used on doubles, was given null_type"),
        ("%e", [1], "scientific clause can only be used on doubles, was given int"),
        ("%s", [Optional.of(1)], "string clause can only be used on strings, bools, bytes, ints, doubles, maps"),
        ("%s", [b"\xff"], 'could not convert argument "invalid UTF-8 in bytes, cannot convert to string" to string'),
    ],
)
def test_format_errors(template: str, args: list[Any], message: str) -> None:
    with pytest.raises(CelRuntimeError) as err:
        fmt(template, *args)
    assert message in err.value.message


def test_huge_precision_is_refused_before_formatting() -> None:
    with pytest.raises(CelCostError, match="cost limit exceeded"):
        fmt("%.1000000000f", 1.0)
