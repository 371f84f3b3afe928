"""Whatever the expression, compiling and evaluating raise only dra.errors.CelError, never a Python error."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dra.cel import Environment
from dra.errors import CelError

ATOMS = st.sampled_from(
    [
        "1", "-1", "0", "1u", "1.5", '"a"', "b'x'", "true", "null", "[]", "{}", "[1, 2]", '{"a": 1}', "object",
        "object.a", "object.l", 'duration("1s")', 'timestamp("2020-01-01T00:00:00Z")', 'quantity("1Gi")',
        'semver("1.0.0")', "optional.of(1)", "optional.none()", "dyn(1)", 'dyn("a")', "dyn([1])",
        "9223372036854775807", "18446744073709551615u",
    ]
)  # fmt: skip
BINARY = st.sampled_from(["+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "in", "&&", "||"])
UNARY = st.sampled_from(["int", "uint", "double", "string", "bytes", "bool", "type", "dyn", "size", "duration"])
METHOD = st.sampled_from(["contains", "startsWith", "matches", "orValue", "compareTo", "add", "sum", "min", "value"])
MACRO = st.sampled_from(["all", "exists", "exists_one", "map", "filter"])


def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, BINARY, inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        inner.map(lambda e: f"!{e}"),
        inner.map(lambda e: f"-{e}"),
        st.tuples(inner, inner).map(lambda t: f"{t[0]}[{t[1]}]"),
        st.tuples(UNARY, inner).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(inner, METHOD, inner).map(lambda t: f"{t[0]}.{t[1]}({t[2]})"),
        st.tuples(inner, MACRO, inner).map(lambda t: f"{t[0]}.{t[1]}(x, {t[2]})"),
        inner.map(lambda e: f"{e}.?a"),
        st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} ? {t[1]} : {t[2]})"),
        st.tuples(inner, inner).map(lambda t: f"[{t[0]}, ?{t[1]}]"),
    )


EXPRESSIONS = st.recursive(ATOMS, extend, max_leaves=12)
ACTIVATION = {"object": {"a": 1, "l": [1, "x"]}}


@settings(max_examples=400, deadline=None)
@given(EXPRESSIONS)
def test_only_cel_errors_escape(expr: str) -> None:
    try:
        Environment.admission().evaluate(expr, ACTIVATION)
    except CelError:
        pass
