"""`simulator.plan_stop`: a probe stops exactly when its target is decided missed, and the plan's answers are the
same with the early stop as without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from dra.gpus import DriverGates
from simulator.comparison import SimulationConfig, simulate
from simulator.plan import PlanConfig, _run_trial, _Trial, plan, plan_workload
from simulator.plan_inputs import PoolSet, Target, load_pools, parse_target
from simulator.plan_stop import PendingStop
from simulator.workload import SimPod

H100 = "{name: h100, gpu: H100-SXM5-80GB, gpus: 8, cpu: 192, memory: 2Ti, max: 8}"
A100 = "{name: a100, gpu: A100-SXM4-80GB, gpus: 4, cpu: 96, memory: 1Ti, max: 6}"


def _pod(name: str, arrival: float, gpus: int = 1) -> SimPod:
    return SimPod(name, 1000, 1024, gpus, 1000 if gpus else 0, 0, arrival=arrival)


def _pools(tmp_path: Path, *pools: str) -> PoolSet:
    path = tmp_path / "pools.yaml"
    path.write_text("pools:\n" + "".join(f"  - {p}\n" for p in pools))
    return load_pools(path)


def _waiting(*pods: SimPod) -> list[tuple[SimPod, float]]:
    return [(p, p.arrival) for p in pods]


def test_p80_stops_once_the_fifth_of_the_pods_is_late() -> None:
    # 10 GPU pods: p80 is the 8th smallest wait, so the clause is missed once 3 pods waited more than 60 s
    pods = [_pod(f"p{i}", 0.0) for i in range(10)] + [_pod("cpu-only", 0.0, gpus=0)]
    rule = PendingStop(parse_target("p80-pending<=60s"), pods)
    rule.placed(pods[0], 61.0)
    rule.placed(pods[1], 60.0)  # not more than the limit: on time
    rule.placed(pods[10], 500.0)  # not a GPU pod: not counted
    assert not rule.stop(60.0, _waiting(pods[2], pods[3]))  # waited exactly 60 s so far: may still be on time
    assert not rule.missed
    assert not rule.stop(61.0, _waiting(pods[2]))  # 2 late: p80 can still be <= 60 s
    assert rule.stop(61.0, _waiting(pods[2], pods[3]))  # 3 late (one placed, two waiting past 60 s)
    assert rule.missed


def test_a_pod_queued_again_after_its_placement_is_not_late_twice() -> None:
    pods = [_pod(f"p{i}", 0.0) for i in range(4)]
    rule = PendingStop(parse_target("p50-pending<=10s"), pods)  # missed once 3 of the 4 pods are late
    rule.placed(pods[0], 0.0)
    rule.placed(pods[1], 20.0)
    # pod 0 was evicted and queued again at 5 s: its wait was 0, it must not count as late
    assert not rule.stop(100.0, [(pods[0], 5.0), (pods[2], 0.0)])
    assert rule.stop(100.0, [(pods[0], 5.0), (pods[2], 0.0), (pods[3], 0.0)])


def test_placed_misses_at_the_first_pod_that_waits() -> None:
    pods = [_pod("a", 0.0), _pod("b", 10.0)]
    rule = PendingStop(parse_target("placed"), pods)
    rule.placed(pods[0], 0.0)
    assert not rule.stop(10.0, _waiting(pods[1]))  # arrived this step: may still be placed now
    assert rule.stop(10.5, _waiting(pods[1]))


def test_any_missed_clause_stops_and_no_gpu_pods_never_do() -> None:
    pods = [_pod(f"p{i}", 0.0) for i in range(4)]
    rule = PendingStop(parse_target("p100-pending<=1h,p25-pending<=1m"), pods)
    assert not rule.stop(120.0, _waiting(*pods[:3]))  # 3 late: p25 (the 1st wait) is still open
    assert rule.stop(120.0, _waiting(*pods))
    idle = PendingStop(parse_target("placed"), [_pod("cpu", 0.0, gpus=0)])
    assert not idle.stop(1e9, _waiting(_pod("cpu", 0.0, gpus=0)))


def _trial(pools: PoolSet, counts: tuple[int, ...], strategy: str, seed: int, stop: Target | None) -> _Trial:
    return _Trial(pools, counts, strategy, plan_workload(None, None, 40, seed), seed, None, DriverGates(), stop)


@pytest.mark.parametrize("strategy", ["device-plugin", "dra-whole", "gpudra"])
def test_probe_run_by_plan_is_the_simulate_run(tmp_path: Path, strategy: str) -> None:
    pools = _pools(tmp_path, H100)
    workload = plan_workload(None, None, 40, 2)
    measure = _run_trial(_trial(pools, (2,), strategy, 2, None))
    rec = simulate(SimulationConfig(pools.cluster((2,)), workload, (strategy,), 2, "replay")).runs[strategy]
    expected = tuple(w if n in rec.placed else float("inf") for n, w in rec.waits.items() if rec.gpus.get(n, 0) > 0)
    assert measure.waits == expected and not measure.missed


@pytest.mark.parametrize(("strategy", "target"), [("device-plugin", "p95-pending<=10m"), ("dra-whole", "placed"),
                                                  ("gpudra", "p90-pending<=20m")])  # fmt: skip
def test_early_stop_keeps_every_probes_verdict(tmp_path: Path, strategy: str, target: str) -> None:
    pools = _pools(tmp_path, H100)
    goal = parse_target(target)
    stopped = 0
    for nodes in range(1, 9):
        full = _run_trial(_trial(pools, (nodes,), strategy, 1, None))
        early = _run_trial(_trial(pools, (nodes,), strategy, 1, goal))
        assert early.meets(goal) == full.meets(goal), nodes
        if early.missed:
            stopped += 1
        else:  # a run not stopped is the whole run
            assert early == full
    assert stopped > 0, "the case must stop some probe early"


@pytest.mark.parametrize(
    ("pools", "target", "seed"),
    [((H100,), "p95-pending<=10m", 0), ((H100,), "placed", 2), ((H100.replace("max: 8", "max: 6"), A100),
     "p95-pending<=5h", 0), ((H100.replace("max: 8", "max: 6"), A100), "p80-pending<=30m", 3)],
)  # fmt: skip
def test_plan_answers_the_same_with_and_without_early_stop(
    tmp_path: Path, pools: tuple[str, ...], target: str, seed: int
) -> None:
    candidates = _pools(tmp_path, *pools)
    workload = plan_workload(None, None, 40, seed)
    answers = []
    for early in (True, False):
        config = PlanConfig(candidates, parse_target(target), workload, ("device-plugin", "dra-whole", "gpudra"),
                            seed, workers=1, early_stop=early)  # fmt: skip
        summary = plan(config).summary()
        summary.pop("wall_seconds")
        answers.append(summary)
    assert answers[0] == answers[1]
    assert any(found["total_nodes"] > 0 for found in answers[0]["strategies"].values())


def test_openb_example_is_one_pool_up_to_the_trace_clusters_size() -> None:
    pools = load_pools(Path(__file__).resolve().parents[2] / "examples" / "plan" / "openb.yaml")
    (pool,) = pools.pools
    assert (pool.model, pool.gpus, pool.low, pool.high) == ("A100-SXM4-80GB", 8, 0, 1213)
    assert len(pools.cluster((pool.high,)).nodes) == 1213
