"""`simulator.plan`: the search finds the brute-force minimum on small generated cases, repeats itself, and refuses
bad input naming the field."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dra.errors import InputError
from dra.gpus import DriverGates
from simulator.plan import Measure, PlanConfig, _run_trial, _Trial, plan, plan_workload
from simulator.plan_inputs import PoolSet, Target, load_pools, load_prices, parse_target
from simulator.plan_search import Counts, Search, smallest
from simulator.workload import Workload

H100 = "{name: h100, gpu: H100-SXM5-80GB, gpus: 8, cpu: 192, memory: 2Ti, max: 8}"
A100 = "{name: a100, gpu: A100-SXM4-80GB, gpus: 4, cpu: 96, memory: 1Ti, max: 8}"


def _pools(tmp_path: Path, *pools: str) -> PoolSet:
    path = tmp_path / "pools.yaml"
    path.write_text("pools:\n" + "".join(f"  - {p}\n" for p in pools))
    return load_pools(path)


def _drive(search: Search, met: object) -> tuple[Counts, int]:
    """Run a search against a predicate; (its answer, how many points it asked for)."""
    asked = 0
    try:
        batch = next(search)
        while True:
            asked += len(batch)
            batch = search.send([met(c) for c in batch])  # type: ignore[operator]
    except StopIteration as stop:
        return stop.value, asked


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 5), st.integers(1, 60), st.data(), st.integers(1, 3))
def test_one_pool_bisection_finds_the_threshold(low: int, span: int, data: st.DataObject, width: int) -> None:
    high = low + span
    threshold = data.draw(st.integers(low, high))
    found, asked = _drive(smallest((low,), (high,), width=width), lambda c: c[0] >= threshold)
    assert found == (threshold,)
    assert asked <= width * (math.ceil(math.log2(span + 1)) + 1)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 9), st.integers(1, 8)), min_size=2, max_size=3), st.data())
def test_several_pools_end_minimal_pool_by_pool(pools: list[tuple[int, int, int]], data: st.DataObject) -> None:
    low = tuple(lo for lo, _, _ in pools)
    high = tuple(lo + span for lo, span, _ in pools)
    weights = [w for _, _, w in pools]
    need = data.draw(st.integers(0, sum(w * h for w, h in zip(weights, high, strict=True))))

    def met(counts: Counts) -> bool:
        return sum(w * c for w, c in zip(weights, counts, strict=True)) >= need

    found, _ = _drive(smallest(low, high), met)
    assert met(found) and all(lo <= c <= hi for lo, c, hi in zip(low, found, high, strict=True))
    for i, count in enumerate(found):  # no single pool can lose a node
        assert count == low[i] or not met(found[:i] + (count - 1,) + found[i + 1 :])


def _measure(pools: PoolSet, counts: Counts, strategy: str, workload: Workload, seed: int) -> Measure:
    return _run_trial(_Trial(pools, counts, strategy, workload, seed, None, DriverGates()))


def _config(pools: PoolSet, target: str, workload: Workload, strategies: tuple[str, ...], seed: int) -> PlanConfig:
    return PlanConfig(pools, parse_target(target), workload, strategies, seed, workers=1)


@pytest.mark.parametrize(
    ("seed", "strategy", "target"),
    [(0, "device-plugin", "p95-pending<=10m"), (1, "dra-whole", "p95-pending<=10m"), (2, "device-plugin", "placed"),
     (2, "dra-whole", "p90-pending<=20m")],
)  # fmt: skip
def test_one_pool_plan_is_the_brute_force_minimum(tmp_path: Path, seed: int, strategy: str, target: str) -> None:
    pools = _pools(tmp_path, H100)
    workload = plan_workload(None, None, 40, seed)
    goal = parse_target(target)
    met = [_measure(pools, (n,), strategy, workload, seed).meets(goal) for n in range(9)]
    assert met[-1]
    minimum = min(n for n in range(9) if all(met[n:]))  # every larger size meets too
    assert 0 < minimum < 8, "the case must have its minimum inside the bounds"
    result = plan(_config(pools, target, workload, (strategy,), seed))
    assert result.plans[strategy].counts == (minimum,)
    assert result.plans[strategy].gpus == 8 * minimum
    assert result.plans[strategy].simulations <= 1 + math.ceil(math.log2(9))


def test_gpudra_plan_is_the_brute_force_minimum(tmp_path: Path) -> None:
    pools = _pools(tmp_path, H100)
    workload = plan_workload(None, None, 40, 1)
    goal = parse_target("p95-pending<=10m")
    met = [_measure(pools, (n,), "gpudra", workload, 1).meets(goal) for n in range(9)]
    minimum = min(n for n in range(9) if all(met[n:]))
    assert 0 < minimum < 8
    assert plan(_config(pools, "p95-pending<=10m", workload, ("gpudra",), 1)).plans["gpudra"].counts == (minimum,)


def test_tie_seeds_plan_is_the_brute_force_minimum_every_seed_meets(tmp_path: Path) -> None:
    # kube-scheduler's random pick among tied nodes, drawn under seeds 0, 1, 2: on this case the third draw needs
    # one node more than the first two, so one seed's answer is not the size every draw meets
    pools = _pools(tmp_path, H100)
    workload = plan_workload(None, None, 40, 0)
    goal = parse_target("p90-pending<=20m")
    met = [[_measure(pools, (n,), "dra-whole", workload, k).meets(goal) for n in range(9)] for k in range(3)]
    per_seed = [min(n for n in range(9) if all(seed_met[n:])) for seed_met in met]
    every = min(n for n in range(9) if all(all(seed_met[n:]) for seed_met in met))
    assert per_seed[0] < every == max(per_seed), "the case must have draws that differ"
    one = plan(_config(pools, "p90-pending<=20m", workload, ("dra-whole",), 0))
    assert one.plans["dra-whole"].counts == (per_seed[0],)
    config = PlanConfig(pools, goal, workload, ("dra-whole",), 0, workers=1, tie_seeds=3)
    three = plan(config)
    found = three.plans["dra-whole"]
    assert found.counts == (every,) and len(found.measure.runs) == 3
    assert found.measure.meets(goal) and all(run.meets(goal) for run in found.measure.runs)
    # the figures are the worst run's
    assert found.measure.pending(90) == max(run.pending(90) for run in found.measure.runs)
    assert found.measure.allocation == min(run.allocation for run in found.measure.runs)
    # the size one node smaller, which the bisection probed: in how many of the draws it met
    assert found.smaller == (((every - 1,), sum(1 for k in range(3) if met[k][every - 1])),)
    summary = three.summary()
    assert summary["tie_seeds"] == 3 and summary["strategies"]["dra-whole"]["simulations"] % 3 == 0
    assert summary["strategies"]["dra-whole"]["one_node_fewer"] == [
        {"nodes": {"h100": every - 1}, "runs_meeting": found.smaller[0][1]}
    ]
    with pytest.raises(InputError, match="--tie-seeds must be at least 1"):
        plan(PlanConfig(pools, goal, workload, ("dra-whole",), 0, workers=1, tie_seeds=0))


def test_two_pools_plan_is_minimal_against_the_brute_force_grid(tmp_path: Path) -> None:
    pools = _pools(tmp_path, H100.replace("max: 8", "max: 6"), A100)
    workload = plan_workload(None, None, 40, 0)
    goal = parse_target("p95-pending<=5h")
    sizes: list[Counts] = [(a, b) for a in range(7) for b in range(9)]
    grid = {size: _measure(pools, size, "device-plugin", workload, 0).meets(goal) for size in sizes}
    found = plan(_config(pools, "p95-pending<=5h", workload, ("device-plugin",), 0)).plans["device-plugin"].counts
    assert grid[found] and found[1] > 0, "the case must need both pools"
    a, b = found
    assert (a == 0 or not grid[(a - 1, b)]) and (b == 0 or not grid[(a, b - 1)])
    cheapest = min(8 * x + 4 * y for (x, y), ok in grid.items() if ok)
    assert 8 * a + 4 * b <= cheapest + 8  # pool by pool minimal: within one H100 node of the grid's fewest GPUs


def test_same_seed_same_answer_serial_or_parallel(tmp_path: Path) -> None:
    pools = _pools(tmp_path, H100)
    answers = []
    for workers in (1, 2, 1):
        workload = plan_workload(None, None, 40, 3)
        config = PlanConfig(pools, parse_target("p95-pending<=10m"), workload, ("device-plugin", "dra-whole"), 3,
                            workers=workers)  # fmt: skip
        summary = plan(config).summary()
        summary.pop("wall_seconds")
        answers.append(summary)
    assert answers[0] == answers[1] == answers[2]


def test_unmet_target_names_it_and_the_best_reached(tmp_path: Path) -> None:
    pools = _pools(tmp_path, H100.replace("max: 8", "max: 2"))
    workload = plan_workload(None, None, 40, 0)
    with pytest.raises(InputError) as caught:
        plan(_config(pools, "p95-pending<=10m", workload, ("device-plugin",), 0))
    message = str(caught.value)
    assert "--target p95-pending<=10m" in message and "device-plugin does not meet it" in message
    best = _measure(pools, (2,), "device-plugin", workload, 0).pending(95)
    assert f"p95 pending {best / 3600:.2f} h" in message and "h100 2 nodes" in message


def test_allocation_clause_checked_at_the_smallest_size(tmp_path: Path) -> None:
    pools = _pools(tmp_path, H100)
    workload = plan_workload(None, None, 40, 0)
    found = plan(_config(pools, "p95-pending<=10m", workload, ("device-plugin",), 0)).plans["device-plugin"]
    above = found.measure.allocation + 0.01
    with pytest.raises(InputError, match=r"GPU allocation is .* a larger cluster only lowers it"):
        plan(_config(pools, f"p95-pending<=10m,allocation>={above:.3f}", workload, ("device-plugin",), 0))
    below = plan(_config(pools, f"p95-pending<=10m,allocation>={found.measure.allocation:.3f}", workload,
                         ("device-plugin",), 0))  # fmt: skip
    assert below.plans["device-plugin"].counts == found.counts


@pytest.mark.parametrize(
    ("text", "error"),
    [("p95-pending<10m", "cannot read 'p95-pending<10m'"), ("allocation>=0.6", "allocation falls as the cluster"),
     ("p0-pending<=1m", "percentile must be in"), ("placed,allocation>=1.5", "allocation is a ratio")],
)  # fmt: skip
def test_bad_target_names_the_option(text: str, error: str) -> None:
    with pytest.raises(InputError, match="--target") as caught:
        parse_target(text)
    assert error in str(caught.value)


def test_target_units_and_placed() -> None:
    target = parse_target("p95-pending<=10m, p50-pending<=90s, placed")
    assert isinstance(target, Target)
    assert [(c.percentile, c.value) for c in target.conditions] == [(95.0, 600.0), (50.0, 90.0), (100.0, 0.0)]


def test_unknown_gpu_model_lists_close_names(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        _pools(tmp_path, H100.replace("H100-SXM5-80GB", "H100-SXM-80GB"))
    message = str(caught.value)
    assert "pools[0].gpu: unknown GPU model 'H100-SXM-80GB'" in message and "did you mean" in message
    assert "H100-SXM5-80GB" in message and str(tmp_path / "pools.yaml") in message


@pytest.mark.parametrize(
    ("pool", "error"),
    [(H100.replace("max: 8", "count: 3"), "pools[0].count: a plan sizes the pool"),
     (H100.replace("max: 8", "max: -1"), "pools[0].max must be a whole number"),
     (H100.replace("max: 8", "min: 4, max: 2"), "pools[0].max must be >= 1 and >= min (4)"),
     (H100.replace("mig: none", "").replace("gpus: 8", "gpus: 8, mig: dynamic").replace("H100-SXM5-80GB", "L40S"),
      "dynamic MIG on a GPU without MIG")],
)  # fmt: skip
def test_bad_pool_names_the_field(tmp_path: Path, pool: str, error: str) -> None:
    with pytest.raises(InputError, match=r"pools\[0\]") as caught:
        _pools(tmp_path, pool)
    assert error in str(caught.value)


PRICES = "currency: EUR\ngpus:\n  H100-SXM5-80GB: {gpu_hour: 2.5, watts: 700}\n"


def test_prices_file_typo_names_the_key_and_the_file(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(PRICES.replace("gpu_hour", "gpu_hours"))
    with pytest.raises(InputError) as caught:
        load_prices(path, ("H100-SXM5-80GB",))
    message = str(caught.value)
    assert message.startswith(str(path)) and "gpus.H100-SXM5-80GB: unknown key 'gpu_hours'" in message
    assert "did you mean 'gpu_hour'?" in message


@pytest.mark.parametrize(
    ("text", "models", "error"),
    [(PRICES.replace(", watts: 700", ""), ("H100-SXM5-80GB",), "watts is missing (the GPU catalog has no TDP"),
     (PRICES, ("H100-SXM5-80GB", "L40S"), "gpus.L40S is missing: the plan's pools use it"),
     (PRICES.replace("H100-SXM5-80GB:", "H100-SXM5-80G:"), ("H100-SXM5-80GB",), "gpus.H100-SXM5-80G: unknown GPU"),
     (PRICES.replace("2.5", "cheap"), ("H100-SXM5-80GB",), "gpu_hour must be a number >= 0 (got 'cheap')"),
     (PRICES.replace("currency", "curency"), ("H100-SXM5-80GB",), "unknown keys ['curency']")],
)  # fmt: skip
def test_bad_prices_file(tmp_path: Path, text: str, models: tuple[str, ...], error: str) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        load_prices(path, models)
    assert error in str(caught.value) and str(path) in str(caught.value)


def test_cost_power_and_saving_follow_the_prices(tmp_path: Path) -> None:
    pools = _pools(tmp_path, H100)
    path = tmp_path / "prices.yaml"
    path.write_text(PRICES)
    workload = plan_workload(None, None, 40, 0)
    config = PlanConfig(pools, parse_target("p95-pending<=10m"), workload, ("device-plugin", "dra-whole"), 0,
                        prices=load_prices(path, ("H100-SXM5-80GB",)), workers=1)  # fmt: skip
    summary = plan(config).summary()
    assert summary["currency"] == "EUR"
    for found in summary["strategies"].values():
        assert found["gpus"] == 8 * found["nodes"]["h100"]
        assert found["cost_per_month"] == pytest.approx(found["gpus"] * 2.5 * 730)
        assert found["power_kw"] == pytest.approx(found["gpus"] * 0.7)
    saved = summary["savings_vs_device_plugin"]["dra-whole"]
    base, other = summary["strategies"]["device-plugin"], summary["strategies"]["dra-whole"]
    assert saved["gpus"] == base["gpus"] - other["gpus"]
    assert saved["cost_per_month"] == pytest.approx(base["cost_per_month"] - other["cost_per_month"])


def test_ray_backend_gives_the_process_answer(tmp_path: Path) -> None:
    import ray  # in the dev extra, as for the sweep's Ray test

    pools = _pools(tmp_path, H100)
    workload = plan_workload(None, None, 40, 0)
    answers = {}
    for backend in ("process", "ray"):
        config = PlanConfig(pools, parse_target("p95-pending<=10m"), workload, ("device-plugin",), 0,
                            backend=backend, workers=1)  # fmt: skip
        answers[backend] = plan(config).plans["device-plugin"].counts
    ray.shutdown()
    assert answers["ray"] == answers["process"]
