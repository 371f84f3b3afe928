"""The cost budget: runaway comprehensions stop with CelCostError, quickly; ordinary programs pay their size."""

from __future__ import annotations

import time

import pytest

from dra.cel import DEFAULT_COST_LIMIT, Environment
from dra.errors import CelCostError, CelRuntimeError

TEN = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"


def nested(depth: int) -> str:
    expr = "true"
    for i in range(depth):
        expr = f"{TEN}.all(x{i}, {expr})"
    return expr


def test_default_limit_matches_kubernetes() -> None:
    assert DEFAULT_COST_LIMIT == 1_000_000


def test_runaway_nest_stops_fast() -> None:
    program = Environment.admission().compile(nested(8))  # 10^8 iterations unchecked
    start = time.perf_counter()
    with pytest.raises(CelCostError, match="actual cost limit exceeded"):
        program.evaluate({})
    assert time.perf_counter() - start < 5


def test_cost_error_is_not_absorbed_by_logic() -> None:
    program = Environment.admission().compile(f"true || ({nested(8)}) || true")
    assert program.evaluate({}) is True  # short-circuit before the loop
    program = Environment.admission().compile(f"({nested(8)}) || object.flag")
    with pytest.raises(CelCostError):
        program.evaluate({"object": {"flag": True}})


def test_small_nest_fits_and_custom_limit_applies() -> None:
    program = Environment.admission().compile(nested(3))
    assert program.evaluate({}) is True
    with pytest.raises(CelCostError):
        program.evaluate({}, cost_limit=100)


def test_static_cost_checked_without_loops() -> None:
    program = Environment.admission().compile("object.a + object.b + object.c")
    assert not program.tracked
    with pytest.raises(CelCostError):
        program.evaluate({"object": {"a": 1, "b": 2, "c": 3}}, cost_limit=2)
    assert program.evaluate({"object": {"a": 1, "b": 2, "c": 3}}, cost_limit=1000) == 6


def test_string_arguments_cost_by_size() -> None:
    program = Environment.admission().compile("object.items.exists(s, s.contains('x'))")
    long = {"items": ["y" * 10_000] * 20}
    with pytest.raises(CelCostError):
        program.evaluate({"object": long}, cost_limit=10_000)
    assert program.evaluate({"object": {"items": ["y"] * 20}}, cost_limit=10_000) is False


def test_cost_error_is_a_runtime_error() -> None:
    assert issubclass(CelCostError, CelRuntimeError)


def test_doubling_concatenation_in_bindings_stops() -> None:
    body = "size(a60) > 0"
    for i in range(60, 0, -1):
        body = f"cel.bind(a{i}, a{i - 1} + a{i - 1}, {body})"
    program = Environment.dra_selector().compile(f'cel.bind(a0, "abcdefgh", {body})')  # 2^63 bytes unchecked
    start = time.perf_counter()
    with pytest.raises(CelCostError):
        program.evaluate({})
    assert time.perf_counter() - start < 5
