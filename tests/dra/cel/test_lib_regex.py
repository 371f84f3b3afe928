"""Unit tests of the Kubernetes regex library (Go RE2 semantics), through the registry."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dra.cel.regex import REGISTRY, compile_go_regex
from dra.errors import CelRuntimeError


def member(name: str, receiver: object, *args: object) -> object:
    return REGISTRY.call_member(name, receiver, args)


def test_find_returns_first_match_or_empty() -> None:
    assert member("find", "abc 123", "[0-9]+") == "123"
    assert member("find", "abc 123", "[0-9]*") == ""  # Go matches the empty string at index 0
    assert member("find", "abc 123", "xyz") == ""
    assert member("find", "héllo wörld", "w.r") == "wör"


def test_find_all_skips_empty_matches_next_to_a_match() -> None:
    assert member("findAll", "123 abc 456", "[0-9]*") == ["123", "", "", "", "", "456"]
    assert member("findAll", "123 abc 456", "[0-9]+") == ["123", "456"]
    assert member("findAll", "123 abc 456", "[0-9]+", 1) == ["123"]
    assert member("findAll", "123 abc 456", "[0-9]+", 0) == []
    assert member("findAll", "123 abc 456", "[0-9]+", -1) == ["123", "456"]
    assert member("findAll", "123 abc 456", "xyz") == []
    assert member("findAll", "aé", "") == ["", "", ""]


def test_anchors_keep_their_context_while_scanning() -> None:
    assert member("findAll", "aaa", "^a") == ["a"]
    assert member("findAll", "ab ab", r"\bab") == ["ab", "ab"]


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("[", "Illegal regex: error parsing regexp: missing closing ]: `[`"),
        ("a**", "Illegal regex: error parsing regexp: invalid nested repetition operator: `**`"),
        ("(?<=a)b", "Illegal regex: error parsing regexp: invalid named capture: `(?<=a)b`"),
        ("(?=a)b", "Illegal regex: error parsing regexp: invalid or unsupported Perl syntax: `(?=`"),
        ("(a", "Illegal regex: error parsing regexp: missing closing ): `(a`"),
        ("\\", "Illegal regex: error parsing regexp: trailing backslash at end of expression: ``"),
        ("a\\C", "Illegal regex: error parsing regexp: invalid escape sequence: `\\C`"),
        ("a{1001}", "Illegal regex: error parsing regexp: invalid repeat count: `{1001}`"),
        ("[z-a]", "Illegal regex: error parsing regexp: invalid character class range: `z-a`"),
        ("*", "Illegal regex: error parsing regexp: missing argument to repetition operator: `*`"),
    ],
)
def test_bad_patterns_fail_with_go_messages(pattern: str, message: str) -> None:
    with pytest.raises(CelRuntimeError) as err:
        member("find", "x", pattern)
    assert err.value.message == message


def test_compile_is_cached() -> None:
    assert compile_go_regex("a+b") is compile_go_regex("a+b")


@given(st.text(alphabet="ab1 ", max_size=20))
def test_non_empty_patterns_agree_with_python_re(text: str) -> None:
    # For patterns that never match empty, Go and Python find the same leftmost-first matches.
    assert member("findAll", text, "[0-9]+|a+") == re.findall("[0-9]+|a+", text)
