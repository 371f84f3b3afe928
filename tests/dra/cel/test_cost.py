"""The cost budget: runaway comprehensions stop with CelCostError, quickly; ordinary programs pay their size."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable

import pytest

from dra.cel import DEFAULT_COST_LIMIT, Environment, from_json
from dra.errors import CelCostError, CelRuntimeError

TEN = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
# Unchecked, these programs run for hours or build strings of exabytes: a bound of minutes catches that and
# holds on a loaded 2-core machine. How fast they stop is benchmarks/timing_bounds.py's business.
HANG_SECONDS = 120


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
    with pytest.raises(CelCostError, match="actual cost limit exceeded|a CEL string or list may have"):
        program.evaluate({})
    assert time.perf_counter() - start < HANG_SECONDS


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
    program = Environment.admission().compile("object.a * object.b - object.c")  # `+` is metered: strings grow
    assert not program.tracked
    with pytest.raises(CelCostError):
        program.evaluate({"object": {"a": 1, "b": 2, "c": 3}}, cost_limit=2)
    assert program.evaluate({"object": {"a": 1, "b": 2, "c": 3}}, cost_limit=1000) == -1


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
    assert time.perf_counter() - start < HANG_SECONDS


def _peak_bytes(run: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        run()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def test_growing_replace_chain_stops_before_building_the_string() -> None:
    # Issue 12: nine replaces made a 1e9-character string in 4.9 s and 1.1 GB; Kubernetes stops it on cost.
    program = Environment.admission().compile("size('a'" + ".replace('a', 'aaaaaaaaaa')" * 9 + ")")

    def run() -> None:
        with pytest.raises(CelCostError, match="actual cost limit exceeded|a CEL string or list may have"):
            program.evaluate({})

    start = time.perf_counter()
    assert _peak_bytes(run) < 64 << 20
    assert time.perf_counter() - start < HANG_SECONDS


def test_constant_chain_is_not_folded_past_the_fold_bound() -> None:
    start = time.perf_counter()
    program = Environment.admission().compile("size('a'" + ".replace('a', 'aaaaaaaaaa')" * 12 + ")")
    assert time.perf_counter() - start < HANG_SECONDS
    with pytest.raises(CelCostError):
        program.evaluate({})
    assert Environment.admission().compile("size('a'" + ".replace('a', 'aaaaaaaaaa')" * 5 + ")").evaluate({}) == 10**5


@pytest.mark.parametrize(
    "expression",
    [
        "size(object.t.replace('x', object.t))",  # one call, 10^4 x 10^4 characters
        "size(lists.range(2000).map(i, object.t).join())",  # 2000 references to one string
        "size('%s%s%s%s'.format([object.l, object.l, object.l, object.l]))",
        "size(object.t + object.t + object.t + object.t + object.t + object.t + object.t + object.t)",
    ],
)
def test_one_huge_result_is_priced_before_it_is_built(expression: str) -> None:
    program = Environment.admission().compile(expression)
    obj = from_json({"t": "x" * 10_000, "l": ["y" * 1000] * 300})

    def run() -> None:
        with pytest.raises(CelCostError):
            program.evaluate({"object": obj}, cost_limit=5000)

    assert _peak_bytes(run) < 8 << 20


def test_evaluate_with_cost_reports_the_charges() -> None:
    program = Environment.admission().compile("object.s.replace('a', 'b')")
    value, cost = program.evaluate_with_cost({"object": {"s": "a" * 1000}})
    assert value == "b" * 1000
    assert 200 <= cost <= 210  # cel-go/Kubernetes: 2 selects + ceil(0.2 * 1000)
    assert Environment.admission().compile("1 < 2").evaluate_with_cost({}) == (True, 3)
