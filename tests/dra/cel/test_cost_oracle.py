"""Differential test of the runtime cost of string- and list-building calls against the Go oracle (k8s-cel).

Each expression runs on both sides with the same `object`; the oracle reports cel-go's ActualCost. Three kinds:

- SAME: the size-dependent charge is cel-go's / Kubernetes' exactly; the totals differ only by the fixed
  per-node part (dra.cel counts compiled nodes where cel-go charges 1 per select, 0 per constant and 10 per
  list literal), at most `SLACK`.
- HIGHER: dra.cel charges more, on purpose (dra/cel/cost.py): a call whose result is much larger than its
  inputs costs at least the result's traversal (replace with a longer replacement, format, list `+`, which
  cel-go concatenates lazily and dra.cel copies); and `+`, startsWith, endsWith on `dyn` operands (every
  admission variable), which cel-go prices at 1 because its checker left the overload unresolved.
- STOPPED: both stop with "actual cost limit exceeded", or cel-go fits only by building a value of 10^8
  characters first, which dra.cel refuses before building it.
"""

from __future__ import annotations

from typing import Any

import pytest

from dra.cel import Environment, from_json
from dra.errors import CelCostError
from tests.dra.cel.conftest import Oracle

SLACK = 10
OBJECT: dict[str, Any] = {
    "s": "ab, " * 250,
    "t": "x" * 10_000,
    "u": "é" * 3000,
    "l": ["abc"] * 500,
    "n": list(range(300)),
    "b": "a,b",
}


def chain(n: int) -> str:
    return "'a'" + ".replace('a','aaaaaaaaaa')" * n


SAME = [
    "object.s.replace('a', 'b')",
    "object.s.replace('', 'x', 5)",
    "object.u.replace('é', 'ab')",
    "object.t.split('x')",
    "object.s.split(', ')",
    "object.l.join()",
    "object.l.join(', ')",
    "[object.s, object.t].join(',')",
    "object.s.lowerAscii()",
    "object.u.upperAscii()",
    "object.t.substring(5)",
    "object.t.substring(5, 900)",
    "object.s.trim()",
    "strings.quote(object.u)",
    "object.s.findAll('[a-z]+')",
    "object.t.findAll('x', 3)",
    "string(object.s) + string(object.t)",
    "size(string(object.t) + string(object.t) + string(object.t))",
    "url('https://x/' + object.s).getHost()",
    "object.b.split(',').join('-')",
    "size(object.t)",
    "'abc'.replace('b', 'xx')",
]
HIGHER = [
    "object.s.replace('ab', 'abcdefgh')",
    chain(2),
    chain(5),
    "'%s and %s'.format([object.s, object.b])",
    "'%s'.format([object.l])",
    "object.n + object.n",
    "object.s + object.t",
    "object.s + object.s + object.s",
]
STOPPED = [chain(9), "size(object.t.replace('x', object.t))", "size(lists.range(1000).map(i, object.t).join())"]


def _ours(env: Environment, expression: str) -> int | None:
    try:
        return env.compile(expression).evaluate_with_cost({"object": from_json(OBJECT)})[1]
    except CelCostError:
        return None


@pytest.mark.oracle
def test_growth_costs_agree_with_go_oracle(oracle: Oracle) -> None:
    cases = SAME + HIGHER + STOPPED
    results = oracle([{"expression": e, "env": "admission", "variables": {"object": OBJECT}} for e in cases])
    env = Environment.admission()
    problems = []
    for expression, result in zip(cases, results, strict=True):
        theirs = result.get("cost") if result.get("error") is None else None
        if result.get("error") is not None and "cost limit exceeded" not in str(result["error"]):
            problems.append(f"{expression}: oracle failed: {result['error']}")
            continue
        ours = _ours(env, expression)
        if expression in SAME:
            ok = ours is not None and theirs is not None and abs(ours - theirs) <= SLACK
        elif expression in HIGHER:
            ok = ours is not None and theirs is not None and ours > theirs + SLACK
        else:  # STOPPED: we stop; cel-go stops too, or fits by building 10^8 characters first
            ok = ours is None and (theirs is None or len(str(result.get("result"))) >= 9)
        if not ok:
            problems.append(f"{expression}: ours {ours}, cel-go {theirs}")
    assert not problems, "\n".join(problems)
