"""Differential property: on generated source text, our grammar accepts exactly what cel-go's parser accepts.

The generator mixes valid and invalid syntax (the optional forms, trailing commas, keywords and reserved
words, sign and prefix-operator runs, every literal form, backquoted fields); an expression is "rejected by
the parser" on cel-go's side when its compile error is a syntax or reserved-identifier error, on ours when
`parse` raises. Escapes in generated strings are valid ones: cel-go's lexer refuses a bad escape, ours leaves
it to the literal reader (dra/cel/literals.py), which names the escape.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from dra.cel.parse import parse
from dra.errors import CelCompileError
from tests.dra.cel.conftest import Oracle

_ATOMS = st.sampled_from(
    [
        "1", "0", "0x1F", "0XaB", "1u", "0x1Fu", "7U", "1.5", ".5", "1e3", "2.5E-2", "1.", "00", "1.5u",
        "'a'", '"b"', "'\\n\\t\\\\'", "'\\x41\\101\\u00e9'", "r'\\d'", 'R"a\\"', '"""x\n"y"\n"""', "'''z'''",
        "b'\\xff'", 'B"\\377"', "br'\\d'", "rb'a'", "'", '"unterminated',
        "true", "false", "null", "x", "__x", "_", "in", "if", "as", "while", "trueish", "nullable",
        "`a-b`", "x.`a-b`", "x.`a/b c.d`", "x.``", "[]", "{}", "[,]", "{,}", "()",
    ]
)  # fmt: skip
_BINARY = st.sampled_from(["+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "in", "&&", "||", "&&&", "="])
_PREFIX = st.sampled_from(["!", "-", "!!", "--", "!-", "-!", "- -", "! !"])
_FIELD = st.sampled_from(["f", "?f", "? f", "`a-b`", "?`a.b`", "in", "?true", "1", "if", ""])


def _compound(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    elems = st.lists(st.tuples(st.booleans(), inner), max_size=3)

    def seq(items: list[tuple[bool, str]], optional_ok: bool) -> str:
        return ", ".join(("?" if opt and optional_ok else "") + e for opt, e in items)

    comma = st.sampled_from(["", ","])
    return st.one_of(
        st.tuples(inner, _BINARY, inner).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
        st.tuples(_PREFIX, inner).map(lambda t: t[0] + t[1]),
        st.tuples(inner, _FIELD).map(lambda t: f"{t[0]}.{t[1]}"),
        st.tuples(inner, st.sampled_from(["", "?"]), inner).map(lambda t: f"{t[0]}[{t[1]}{t[2]}]"),
        st.tuples(inner, _FIELD, elems, comma).map(lambda t: f"{t[0]}.{t[1]}({seq(t[2], False)}{t[3]})"),
        st.tuples(st.sampled_from(["f", ".f", "has", "a.b"]), elems, comma).map(
            lambda t: f"{t[0]}({seq(t[1], False)}{t[2]})"
        ),
        st.tuples(elems, comma).map(lambda t: f"[{seq(t[0], True)}{t[1]}]"),
        st.tuples(st.lists(st.tuples(st.booleans(), inner, inner), max_size=3), comma).map(
            lambda t: "{" + ", ".join(("?" if o else "") + f"{k}: {v}" for o, k, v in t[0]) + t[1] + "}"
        ),
        st.tuples(st.sampled_from(["T", ".T", "a.T"]), st.lists(st.tuples(_FIELD, inner), max_size=2), comma).map(
            lambda t: t[0] + "{" + ", ".join(f"{f}: {v}" for f, v in t[1]) + t[2] + "}"
        ),
        st.tuples(inner, inner, inner).map(lambda t: f"{t[0]} ? {t[1]} : {t[2]}"),
        inner.map(lambda e: f"({e})"),
        inner.map(lambda e: f".{e}"),
    )


EXPRESSIONS = st.recursive(_ATOMS, _compound, max_leaves=8)


def _oracle_rejects_syntax(result: dict[str, object]) -> bool:
    error = str(result.get("error") or "")
    return result.get("stage") == "compile" and ("Syntax error" in error or "reserved identifier" in error)


def _we_reject_syntax(text: str) -> bool:
    try:
        parse(text)
    except CelCompileError:
        return True
    return False


@pytest.mark.oracle
# A batch per example keeps oracle runs few; no shrinking (a batch shrinks slowly): the message lists every
# disagreeing expression of the batch instead.
@settings(
    max_examples=20,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(batch=st.lists(EXPRESSIONS, min_size=60, max_size=60, unique=True))
def test_generated_source_is_accepted_exactly_when_cel_go_accepts_it(oracle: Oracle, batch: list[str]) -> None:
    results = oracle([{"expression": e, "env": "admission", "variables": {}} for e in batch])
    disagreements = [
        f"{text!r}: ours {'rejects' if ours else 'accepts'}, cel-go {r.get('error') or 'accepts'}"
        for text, r in zip(batch, results, strict=True)
        if (ours := _we_reject_syntax(text)) != _oracle_rejects_syntax(r)
    ]
    assert not disagreements, "\n".join(disagreements)
