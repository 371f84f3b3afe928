"""Differential test: every conformance vector through the Go oracle (cel-go with the Kubernetes and DRA
environments, tests/oracle/cmd/k8s-cel) and through dra.cel; outcomes and values must agree.

Tolerated, and listed in the failure message only when something else disagrees: the oracle rejecting at
compile time (cel-go's type checker) a cel-spec case that the spec runs unchecked (`disable_check`).
`$GPUDRA_K8S_CEL` may name a built k8s-cel binary; otherwise the `k8s_cel_oracle` fixture is used.
"""

from __future__ import annotations

import functools
import math
import random
from typing import Any

import pytest

from tests.dra.cel.conftest import Oracle
from tests.dra.cel.test_vectors import CASES, DEFAULT_DRIVER, run_case

ADMISSION_NAMES = {"object", "oldObject", "request", "params", "namespaceObject", "variables"}


def oracle_case(case: dict[str, Any]) -> dict[str, Any] | None:
    """The oracle's input for a vector, or None when the oracle cannot express it (undeclared variables)."""
    if case.get("env") == "dra-selector":
        device = {k: v for k, v in case.get("device", {}).items() if k != "name"}
        device["driver"] = case.get("driver", DEFAULT_DRIVER)
        return {"expression": case["expr"], "env": "dra-selector", "device": device}
    variables = case.get("vars") or {}
    if set(variables) - ADMISSION_NAMES:
        return None
    return {"expression": case["expr"], "env": "admission", "variables": variables}


def as_oracle_json(v: Any) -> Any:
    """Our `to_json` in the oracle's rendering: optionals as their value (none as null), types as their name."""
    if isinstance(v, dict):
        if set(v) == {"@optional"}:
            return as_oracle_json(v["@optional"][0]) if v["@optional"] else None
        if set(v) == {"@type"}:
            return v["@type"]
        return {k: as_oracle_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [as_oracle_json(x) for x in v]
    return v


def loose_equal(a: Any, b: Any) -> bool:
    """JSON equality across Go and Python renderings: numbers by value (doubles as doubles), NaN equals NaN."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, float) or isinstance(b, float):
            fa, fb = float(a), float(b)
            return (math.isnan(fa) and math.isnan(fb)) or fa == fb
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(loose_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(loose_equal(a[k], b[k]) for k in a)
    return bool(a == b)


@pytest.mark.oracle
def test_vectors_agree_with_go_oracle(oracle: Oracle) -> None:
    selected = [(name, case, oc) for name, case in CASES if (oc := oracle_case(case)) is not None]
    results = oracle([oc for _, _, oc in selected])
    assert len(results) == len(selected)
    disagreements: list[str] = []
    tolerated: list[str] = []
    for (name, case, _), theirs in zip(selected, results, strict=True):
        kind, ours = run_case(case)
        stage = theirs.get("stage") if theirs.get("error") is not None else "result"
        if stage == "output" and kind == "result":
            continue  # evaluated on both sides; the oracle cannot render this value type as JSON to compare
        if stage == "input" or stage == "output":
            disagreements.append(f"{name}: oracle could not run it: {theirs.get('error')}")
            continue
        their_kind = {"compile": "compile_error", "eval": "error", "result": "result"}[stage]
        if their_kind == kind and (kind != "result" or loose_equal(as_oracle_json(ours), theirs.get("result"))):
            continue
        their_value = theirs.get("error") or theirs.get("result")
        line = f"{name} {case['expr']!r}: ours {kind} {ours!r}, oracle {their_kind} {their_value!r}"
        if their_kind == "compile_error" and "cel-spec" in case.get("source", ""):
            tolerated.append(line)
        else:
            disagreements.append(line)
    assert not disagreements, "\n".join(disagreements + ["-- tolerated (checker stricter than cel-spec):"] + tolerated)


_ATOMS = [
    "1", "-1", "0", "1u", "1.5", '"a"', "b'x'", "true", "false", "null", "[]", "{}", "[1,2]", '{"a": 1}', "object",
    "object.a", "object.l", 'duration("1s")', 'timestamp("2020-01-01T00:00:00Z")', 'quantity("1Gi")',
    "optional.of(1)", "optional.none()", "dyn(1)", 'dyn("a")', "dyn([1])", "9223372036854775807",
]  # fmt: skip
_BINARY = ["+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "in", "&&", "||"]
_CALLS = ["int", "uint", "double", "string", "bytes", "bool", "type", "dyn", "size", "duration", "quantity"]
_METHODS = ["contains", "startsWith", "matches", "orValue", "compareTo", "isGreaterThan", "add", "sum", "value"]


def random_expression(rng: random.Random, depth: int = 0) -> str:
    """A random, mostly ill-typed expression over every operator kind (for differential fuzzing)."""
    r = rng.random()
    sub = functools.partial(random_expression, rng, depth + 1)
    if depth > 3 or r < 0.3:
        return rng.choice(_ATOMS)
    if r < 0.6:
        return f"({sub()} {rng.choice(_BINARY)} {sub()})"
    if r < 0.65:
        return f"!{sub()}"
    if r < 0.7:
        return f"-{sub()}"
    if r < 0.75:
        return f"{sub()}[{sub()}]"
    if r < 0.8:
        return f"{rng.choice(_CALLS)}({sub()})"
    if r < 0.85:
        return f"{sub()}.{rng.choice(_METHODS)}({sub()})"
    if r < 0.9:
        return f"{sub()}.?a"
    if r < 0.95:
        return f"[{sub()}, {sub()}].exists(x, x {rng.choice(_BINARY)} {sub()})"
    return f"({sub()} ? {sub()} : {sub()})"


@pytest.mark.oracle
def test_random_expressions_agree_with_go_oracle(oracle: Oracle) -> None:
    """Differential fuzzing: cel-go may reject more at compile time (its type checker); otherwise we agree."""
    from dra.cel import Environment, from_json, to_json
    from dra.errors import CelCompileError, CelRuntimeError

    rng = random.Random(20261202)
    expressions = sorted({random_expression(rng) for _ in range(1500)})
    obj = {"a": 1, "l": [1, "x"]}
    results = oracle([{"expression": e, "env": "admission", "variables": {"object": obj}} for e in expressions])
    env = Environment.admission()
    disagreements = []
    for expr, theirs in zip(expressions, results, strict=True):
        try:
            ours: tuple[str, Any] = ("result", to_json(env.evaluate(expr, {"object": from_json(obj)})))
        except CelCompileError as e:
            ours = ("compile", str(e))
        except CelRuntimeError as e:
            ours = ("eval", str(e))
        stage = theirs.get("stage") if theirs.get("error") is not None else "result"
        if stage == "output" or (stage == "compile" and ours[0] != "compile"):
            continue
        same_value = ours[0] != "result" or loose_equal(as_oracle_json(ours[1]), theirs.get("result"))
        if ours[0] != stage or not same_value:
            disagreements.append(
                f"{expr!r}: ours {ours}, oracle {stage} {theirs.get('error') or theirs.get('result')!r}"
            )
    assert not disagreements, "\n".join(disagreements)
