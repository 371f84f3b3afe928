"""Environment.compile/evaluate: compile errors, caching, error absorption, variables."""

from __future__ import annotations

import pytest

from dra.cel import Environment, from_json
from dra.errors import CelCompileError, CelRuntimeError


@pytest.fixture
def env() -> Environment:
    return Environment.admission()


def test_compile_is_cached(env: Environment) -> None:
    assert env.compile("object.a + 1") is env.compile("object.a + 1")


def test_admission_variables(env: Environment) -> None:
    act = {
        "object": from_json({"metadata": {"name": "p"}}),
        "namespaceObject": from_json({"metadata": {"labels": {"t": "x"}}}),
    }
    assert env.evaluate("object.metadata.name + '-' + namespaceObject.metadata.labels.t", act) == "p-x"


@pytest.mark.parametrize(
    ("expr", "pattern"),
    [
        ("1 +", "Syntax error"),
        ("nope.a", "undeclared reference to 'nope.a'"),
        ("nope", "undeclared reference to 'nope'"),
        ("authorizer.path('/x')", "undeclared reference"),
        ("unknownFn(1)", "undeclared reference to 'unknownFn'"),
        ("'a'.noSuchMethod()", "undeclared reference to 'noSuchMethod'"),
        ("size(1, 2)", "found no matching overload for 'size'"),
        ("size(1)", r"found no matching overload for 'size' applied to '\(int\)'"),
        ("9223372036854775808", "invalid int literal"),
    ],
)
def test_compile_errors(env: Environment, expr: str, pattern: str) -> None:
    with pytest.raises(CelCompileError, match=pattern):
        env.compile(expr)


def test_runtime_error_names_expression(env: Environment) -> None:
    with pytest.raises(CelRuntimeError, match="no such key: b") as info:
        env.evaluate("object.b", {"object": {"a": 1}})
    assert info.value.expression == "object.b"


def test_missing_variable_is_runtime_error(env: Environment) -> None:
    with pytest.raises(CelRuntimeError, match="no such attribute: object"):
        env.evaluate("object.a", {})


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("object.x / 0 == 1 || true", True),
        ("true || object.x / 0 == 1", True),
        ("object.x / 0 == 1 && false", False),
        ("false && object.missing", False),
        ("object.x > 0 ? 'pos' : 'neg'", "pos"),
    ],
)
def test_error_absorption(env: Environment, expr: str, expected: object) -> None:
    assert env.evaluate(expr, {"object": {"x": 1}}) == expected


def test_logic_error_not_absorbed_when_undecided(env: Environment) -> None:
    with pytest.raises(CelRuntimeError, match="division by zero"):
        env.evaluate("object.x / 0 == 1 || false", {"object": {"x": 1}})


def test_constant_result_is_not_shared(env: Environment) -> None:
    program = env.compile("[1, 2]")
    first = program.evaluate({})
    first.append(3)
    assert program.evaluate({}) == [1, 2]


def test_with_variables_declares_more() -> None:
    env = Environment.admission().with_variables("extra")
    assert env.evaluate("extra + 1", {"extra": 1}) == 2
    with pytest.raises(CelCompileError):
        Environment.admission().compile("extra + 1")
