"""Compiler fast paths agree with the generic operators; public face; macros' error absorption."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dra.cel
from dra.cel import Environment, from_json
from dra.cel.values import INT64_MAX, INT64_MIN
from dra.errors import CelCompileError, CelRuntimeError

ENV = Environment.admission()
INT64 = st.integers(min_value=INT64_MIN, max_value=INT64_MAX)
NUMBER = st.one_of(INT64, st.floats(allow_nan=True, allow_infinity=True))


_ENVS: dict[frozenset[str], Environment] = {}


def run(expr: str, **variables: Any) -> Any:
    names = frozenset(variables)
    env = _ENVS.get(names) or _ENVS.setdefault(names, ENV.with_variables(*sorted(names)) if names else ENV)
    return env.evaluate(expr, {k: from_json(v) for k, v in variables.items()})


def test_public_names_sorted() -> None:
    assert dra.cel.__all__ == sorted(dra.cel.__all__)
    assert all(hasattr(dra.cel, n) for n in dra.cel.__all__)


@settings(deadline=None)
@given(INT64, INT64)
def test_int_addition_overflows_exactly(a: int, b: int) -> None:
    for expr in ("x + y", "x + y + 0"):
        if INT64_MIN <= a + b <= INT64_MAX:
            assert run(expr, x=a, y=b) == a + b
        else:
            with pytest.raises(CelRuntimeError, match="overflow"):
                run(expr, x=a, y=b)


@settings(deadline=None)
@given(NUMBER, NUMBER)
def test_cross_type_ordering_is_double_ordering(a: float, b: float) -> None:
    fa, fb = float(a), float(b)
    same_type = type(a) is type(b)
    expected = (a < b) if same_type else (fa < fb)
    assert run("x < y", x=a, y=b) is expected
    assert run("x >= 40", x=a) is ((a >= 40) if type(a) is int else (fa >= 40.0))
    assert run("x == y", x=a, y=b) is ((a == b) if same_type else (fa == fb))


@given(
    st.dictionaries(st.sampled_from(["a", "b"]), st.one_of(INT64, st.dictionaries(st.sampled_from(["b", "c"]), INT64)))
)
def test_fused_paths_match_step_by_step_selection(obj: dict[str, Any]) -> None:
    def outcome(expr: str) -> Any:
        try:
            return ("ok", run(expr, object=obj))
        except CelRuntimeError as e:
            return ("error", str(e))

    assert outcome('object.a["b"]') == outcome('(object).a["b"]')
    assert outcome("object.b.c") == outcome("(object).b.c")


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("[0, -1].all(x, 1 / x > 0)", False),  # false decides even though another iteration errors
        ("[0, 1].exists(x, 1 / x > 0)", True),
        ("[1, 2, 3].exists_one(x, x > 2)", True),
        ("[1, 2, 3].map(x, x > 1, x * 10)", [20, 30]),
        ("{'a': 1, 'b': 2}.filter(k, k == 'b')", ["b"]),
        ("[10, 20].transformList(i, v, i + v)", [10, 21]),
        ("{'a': 1}.transformMap(k, v, v + 1)", {"a": 2}),
        ("{'a': 1}.transformMapEntry(k, v, {v: k})", {1: "a"}),
        ("[3, 1, 2].sortBy(x, -x)", [3, 2, 1]),
    ],
)
def test_macros(expr: str, expected: object) -> None:
    assert run(expr) == expected


def test_quantifier_error_when_undecided() -> None:
    with pytest.raises(CelRuntimeError, match="division by zero"):
        run("[1, 0].all(x, 1 / x > 0 || x == 1)")


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("[1, 'a']", "expected type 'int' but found 'string'"),
        ("false && 1", "expected type 'bool' but found 'int'"),
        ("1 == 1.0", "found no matching overload for '_==_'"),
        ("'x'.matches('(')", "invalid matches argument"),
        ("duration('forever')", "invalid duration"),
        ("has(1)", "invalid argument to has"),
        ("[1].all(1, true)", "not an identifier"),
        ("cel.bind(x, 1, x)", "undeclared reference to 'cel.bind'"),
        ("Msg{a: 1}", "message construction is not supported"),
    ],
)
def test_kubernetes_compile_checks(expr: str, message: str) -> None:
    with pytest.raises(CelCompileError, match=message):
        ENV.compile(expr)


def test_dyn_escapes_literal_checks() -> None:
    assert run("[dyn(1), dyn('a')].size()") == 2
    assert run("dyn(1) == 1.0") is True
