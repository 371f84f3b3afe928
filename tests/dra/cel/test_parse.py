"""Our CEL grammar (dra/cel/cel.lark): the optional syntax as tree nodes, CEL's lexical forms, keywords and
reserved words, and syntax errors with their position."""

from __future__ import annotations

from typing import Any

import pytest

from dra.cel import Environment
from dra.cel.parse import RESERVED_WORDS, parse
from dra.cel.syntax import Token, Tree
from dra.errors import CelCompileError


def rules(tree: Any) -> set[str]:
    """Every rule name in the tree."""
    return {str(t.data) for t in tree.iter_subtrees()} if isinstance(tree, Tree) else set()


def tokens(tree: Any) -> list[Token]:
    return [t for t in tree.scan_values(lambda v: isinstance(v, Token))]


@pytest.mark.parametrize(
    ("source", "rule"),
    [
        ("a.?b", "member_dot_opt"),
        ("a.?b.?c", "member_dot_opt"),
        ("a. ?b", "member_dot_opt"),
        ("m[?k]", "member_index_opt"),
        ("m[?'k'][0]", "member_index_opt"),
        ("[?x, 1]", "opt_elem"),
        ("[1, ?x,]", "opt_elem"),
        ("{?'k': v, 'j': 1}", "opt_key"),
        ("T{?f: 1}", "opt_field"),
        ("f(x) ? [?y] : {}", "opt_elem"),
    ],
)
def test_optional_syntax_is_a_node_of_its_own(source: str, rule: str) -> None:
    assert rule in rules(parse(source))


def test_optional_nodes_hold_what_they_wrap() -> None:
    (opt,) = parse("a.?b").find_data("member_dot_opt")
    assert [str(c) if isinstance(c, Token) else c.data for c in opt.children] == ["member", "b"]
    (entry,) = parse("{?'k': v}").find_data("opt_key")
    assert [t.value for t in tokens(entry)] == ["'k'"]


def test_ternary_and_strings_with_question_marks_are_not_optionals() -> None:
    for text in ("a ? b : c", "[a ? b : c]", "'a.?b' + x", "{'?k': 1}"):
        assert not rules(parse(text)) & {"member_dot_opt", "member_index_opt", "opt_elem", "opt_key"}


@pytest.mark.parametrize(
    ("source", "kind", "value"),
    [
        ("1", "INT_LIT", "1"),
        ("0x1F", "INT_LIT", "0x1F"),
        ("1u", "UINT_LIT", "1u"),
        ("0xFFU", "UINT_LIT", "0xFFU"),
        ("1.5", "FLOAT_LIT", "1.5"),
        (".5e-3", "FLOAT_LIT", ".5e-3"),
        ("2E10", "FLOAT_LIT", "2E10"),
        ("'a\\'b'", "STRING_LIT", "'a\\'b'"),
        ('r"a\\"', "STRING_LIT", 'r"a\\"'),
        ('"""a\n"b"\n"""', "STRING_LIT", '"""a\n"b"\n"""'),
        ("R'''x'''", "STRING_LIT", "R'''x'''"),
        ("b'\\xff'", "BYTES_LIT", "b'\\xff'"),
        ('BR"\\d"', "BYTES_LIT", 'BR"\\d"'),
        ("true", "BOOL_LIT", "true"),
        ("null", "NULL_LIT", "null"),
    ],
)
def test_literal_tokens(source: str, kind: str, value: str) -> None:
    (tok,) = tokens(parse(source))
    assert (tok.type, tok.value) == (kind, value)


def test_numbers_carry_no_sign_and_negation_is_a_node() -> None:
    tree = parse("-1")
    assert "unary_neg" in rules(tree) and [t.value for t in tokens(tree)] == ["1"]
    assert Environment.admission().evaluate("-9223372036854775808") == -(2**63)


def test_leading_dot_and_qualified_names() -> None:
    assert "dot_ident" in rules(parse(".a.b"))
    assert "dot_ident_arg" in rules(parse(".f(1)"))
    assert "relation_in" in rules(parse("x in [1]"))


def test_backquoted_field_names() -> None:
    tree = parse("x.`a-b/c.d e`")
    (sel,) = tree.find_data("member_dot")
    assert sel.children[1] == "a-b/c.d e"
    assert Environment.admission().evaluate("{'a-b': 1}.`a-b` + {'c': 2}.?`c`.value()") == 3


@pytest.mark.parametrize(
    ("source", "value"),
    [("[1, 2,]", [1, 2]), ("{'a': 1,}", {"a": 1}), ("[,]", []), ("{,}", {}), ("--1", 1), ("__x__", "bound")]
    + [("{'a': 1}.?a.value()", 1), ("!!true", True)],
)
def test_forms_cel_allows(source: str, value: object) -> None:
    env = Environment.admission().with_variables("__x__")
    assert env.evaluate(source, {"__x__": "bound"}) == value


@pytest.mark.parametrize("word", sorted(RESERVED_WORDS))
def test_reserved_words_are_never_identifiers(word: str) -> None:
    for text in (word, f".{word}", f"{word}(1)"):
        with pytest.raises(CelCompileError, match=f"reserved identifier '{word}'"):
            parse(text)
    # As cel-go: a selected field, a method name or a message field may be one.
    for text in (f"x.{word}", f"x.?{word}", f"x.{word}()", f"T{{{word}: 1}}"):
        parse(text)


@pytest.mark.parametrize(
    "source",
    ["!-x", "-!true", "x.in", "x.true", "0X1F", "rb'a'", "1.", "f(1,)", "[1,,2]", "`a`", "x.`a`()", "'abc"],
)
def test_forms_cel_refuses(source: str) -> None:
    with pytest.raises(CelCompileError, match="Syntax error"):
        parse(source)


@pytest.mark.parametrize(
    ("source", "where", "position", "says"),
    [
        ("a &&& b", "<input>:1:5:", 4, "unexpected character '&'"),
        ("f(1,)", "<input>:1:5:", 4, "unexpected ')'"),
        ("1 +", "<input>:1:3:", 2, "unexpected end of input"),
        ("{1: 2", "<input>:1:5:", 4, "expected ',' or '}'"),
        ("a.?1", "<input>:1:4:", 3, "expected `quoted field` or identifier"),
        ("a\n  + * b", "<input>:2:5:", 6, "unexpected '*'"),
    ],
)
def test_syntax_errors_name_line_column_and_what_was_expected(
    source: str, where: str, position: int, says: str
) -> None:
    with pytest.raises(CelCompileError) as info:
        parse(source)
    message = info.value.message
    assert message.startswith(where) and "Syntax error" in message and says in message
    assert info.value.position == position
    # The offending line with a caret under the column.
    line_no, column = (int(x) for x in where.split(":")[1:3])
    *_, shown, caret = message.split("\n")
    assert shown == " | " + source.split("\n")[line_no - 1]
    assert caret == " | " + " " * (column - 1) + "^"


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
