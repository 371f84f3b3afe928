"""The optional-syntax pre-pass and parse errors."""

from __future__ import annotations

import pytest

from dra.cel import Environment
from dra.cel.parse import OPT_ELEM, OPT_INDEX, OPT_KEY, OPT_SELECT, parse, rewrite_optionals
from dra.errors import CelCompileError


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("a.?b", f'a.{OPT_SELECT}("b")'),
        ("a.?b.?c", f'a.{OPT_SELECT}("b").{OPT_SELECT}("c")'),
        ("m[?k]", f"m.{OPT_INDEX}(k)"),
        ("m[?'k'][0]", f"m.{OPT_INDEX}('k')[0]"),
        ("[?x, 1]", f"[{OPT_ELEM}(x), 1]"),
        ("[1, ?x]", f"[1, {OPT_ELEM}(x)]"),
        ("{?'k': v, 'j': 1}", f"{{{OPT_KEY}('k'): v, 'j': 1}}"),
        ("a ? b : c", "a ? b : c"),
        ("[a ? b : c]", "[a ? b : c]"),
        ("'a.?b' + x.?y", f"'a.?b' + x.{OPT_SELECT}(\"y\")"),
        ("f(x) ? [?y] : {}", f"f(x) ? [{OPT_ELEM}(y)] : {{}}"),
    ],
)
def test_rewrite(source: str, expected: str) -> None:
    assert rewrite_optionals(source) == expected


def test_rewritten_source_parses() -> None:
    for text in ("a.?b.orValue(1)", "[?a, ?b]", "{?'k': a.?b}", "m[?1].hasValue()"):
        parse(text)


def test_reserved_hidden_names_rejected() -> None:
    with pytest.raises(CelCompileError, match="reserved identifier"):
        parse(f"{OPT_SELECT}(1) ? 1 : 2")


def test_syntax_error_has_position() -> None:
    with pytest.raises(CelCompileError) as info:
        parse("a &&& b")
    assert info.value.position is not None
    assert "Syntax error" in str(info.value)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("{'a': 1}.?a.orValue(0)", 1),
        ("{'a': 1}.?b.orValue(0)", 0),
        ("[1, 2][?5].orValue(9)", 9),
        ("[?optional.of(1), ?optional.none(), 3]", [1, 3]),
        ("{?'a': optional.of(1), ?'b': optional.none()}", {"a": 1}),
        ("optional.of({'c': 1}).c.orValue(0)", 1),
        ("optional.none().or(optional.of(2)).value()", 2),
        ("optional.of(1).optMap(x, x + 1).value()", 2),
        ("optional.of(1).optFlatMap(x, optional.none()).hasValue()", False),
    ],
)
def test_optional_semantics(expr: str, expected: object) -> None:
    assert Environment.admission().evaluate(expr) == expected
