"""Conformance vectors: every `vectors/*.yaml` case evaluated by dra.cel and compared after `to_json`.

Format: a YAML list of {expr, env: admission|dra-selector, device?, driver?, vars?, result? | error? (regex) |
compile_error? (regex), source}. Cases marked `xfail: <reason>` are known gaps (strict: they must fail).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from dra.cel import Environment, device_value, from_json, to_json
from dra.errors import CelCompileError, CelRuntimeError

VECTORS = Path(__file__).parent / "vectors"
DEFAULT_DRIVER = "gpu.nvidia.com"


def load_vectors() -> list[tuple[str, dict[str, Any]]]:
    cases: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(VECTORS.glob("*.yaml")):
        for i, case in enumerate(yaml.safe_load(path.read_text()) or []):
            cases.append((f"{path.stem}[{i}]", case))
    return cases


CASES = load_vectors()
_ENVS: dict[tuple[str, frozenset[str]], Environment] = {}


def environment(name: str, extra: frozenset[str]) -> Environment:
    key = (name, extra)
    env = _ENVS.get(key)
    if env is None:
        base = Environment.dra_selector() if name == "dra-selector" else Environment.admission()
        missing = extra - base.variables
        env = _ENVS[key] = base.with_variables(*sorted(missing)) if missing else base
    return env


def strict_equal(got: Any, want: Any) -> bool:
    """JSON equality that keeps bool, int and float apart (1 is not 1.0 is not true); NaN equals NaN."""
    if type(got) is not type(want):
        return False
    if isinstance(got, list):
        return len(got) == len(want) and all(strict_equal(a, b) for a, b in zip(got, want, strict=True))
    if isinstance(got, dict):
        return got.keys() == want.keys() and all(strict_equal(got[k], want[k]) for k in got)
    if isinstance(got, float) and math.isnan(got):
        return math.isnan(want)
    return bool(got == want)


def run_case(case: dict[str, Any]) -> tuple[str, Any]:
    """("result", json) | ("error", message) | ("compile_error", message)."""
    variables = case.get("vars") or {}
    env = environment(case.get("env", "admission"), frozenset(variables))
    activation = {k: from_json(v) for k, v in variables.items()}
    try:
        program = env.compile(case["expr"])
    except CelCompileError as e:
        return "compile_error", str(e)
    try:
        if "device" in case:
            activation["device"] = device_value(case.get("driver", DEFAULT_DRIVER), case["device"])
            return "result", to_json(program.matches(activation))
        return "result", to_json(program.evaluate(activation))
    except CelRuntimeError as e:
        return "error", str(e)


def check(case: dict[str, Any]) -> None:
    kind, got = run_case(case)
    for expected_kind in ("compile_error", "error"):
        if expected_kind in case:
            assert kind == expected_kind, f"expected {expected_kind} /{case[expected_kind]}/, got {kind}: {got!r}"
            assert re.search(case[expected_kind], got), (
                f"{expected_kind} {got!r} does not match /{case[expected_kind]}/"
            )
            return
    assert kind == "result", f"expected {case.get('result')!r}, got {kind}: {got}"
    assert strict_equal(got, case["result"]), f"expected {case['result']!r}, got {got!r}"


def test_vector_count() -> None:
    assert len(CASES) >= 200


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, id=name, marks=[pytest.mark.xfail(strict=True, reason=c["xfail"])] if "xfail" in c else [])
        for name, c in CASES
    ],
)
def test_vector(case: dict[str, Any]) -> None:
    check(case)
