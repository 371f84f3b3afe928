"""`--verify-scheduler --whole-run` without a control plane: the whole-run figures both sides are cut to, the
model against the real runs' spread, kube-scheduler's /metrics as the bulk run reads them, and the CLI's refusals."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from dra.errors import InputError
from gpudra.cli import app
from simulator.kpis import Recorder
from simulator.verify.bulk import barrier_claim
from simulator.verify.schedmetrics import MetricsError, parse_metrics
from simulator.verify.spread import flatten, spread
from simulator.verify.timeline import PodRun, figures, model_runs, pod_runs
from simulator.workload import SimPod


def _pod(name: str, gpus: int, arrival: float, duration: float | None, milli: int = 1000) -> SimPod:
    return SimPod(name, 1000, 1024, gpus, milli if gpus else 0, 0, arrival=arrival, duration=duration)


# -- timeline.figures -------------------------------------------------------------------------------------------


def test_figures_cut_every_pod_at_the_same_second() -> None:
    runs = [
        PodRun("a", 4, 4.0, 0.0, 0.0, 50.0),  # runs 0-50 on 4 GPUs
        PodRun("b", 4, 4.0, 10.0, 60.0, None),  # waits 50 s, runs 60-100
        PodRun("c", 8, 8.0, 20.0, 150.0, None),  # placed after the cut: waited 80 s there, unplaced
        PodRun("d", 1, 0.5, 30.0, None, None),  # never placed: waited 70 s
        PodRun("e", 0, 0.0, 40.0, None, None),  # a CPU pod never placed
    ]
    found = figures(runs, 100.0, 8)
    # 4 GPUs x 50 s + 4 GPUs x 40 s over 8 GPUs x 100 s
    assert found["gpu_allocation"] == pytest.approx((4 * 50 + 4 * 40) / 800)
    assert found["pending_by_gpus"] == {"1": 70.0, "4": 25.0, "8": 80.0}
    assert found["unplaced_pods"] == 3
    assert found["unplaced_by_gpus"] == {"0": 1, "1": 1, "4": 0, "8": 1}


def test_figures_refuse_a_pod_after_the_cut_and_a_cluster_without_gpus() -> None:
    with pytest.raises(InputError, match="pod late arrives after the cut at 10 s"):
        figures([PodRun("late", 1, 1.0, 11.0, None, None)], 10.0, 8)
    with pytest.raises(InputError, match="no GPUs"):
        figures([PodRun("a", 1, 1.0, 0.0, 0.0, None)], 10.0, 0)
    with pytest.raises(InputError, match="no pods"):
        figures([], 10.0, 8)


def test_the_model_and_a_real_run_give_the_same_runs_for_the_same_starts() -> None:
    pods = [_pod("a", 2, 0.0, 30.0), _pod("b", 1, 5.0, None, 500), _pod("denied", 1, 6.0, None)]
    rec = Recorder("gpudra", 8, "replay")
    rec.placed = {"a", "b"}
    rec.waits = {"a": 0.0, "b": 7.0}  # "denied": the model's policies refused it, it never waited
    model = model_runs(pods, rec.placed, rec.waits)
    real = pod_runs(pods[:2], {"a": 0.0, "b": 12.0})
    assert [r.name for r in model] == ["a", "b"] and model[1].start == 12.0 and model[1].request == 0.5
    assert model == real


# -- spread -----------------------------------------------------------------------------------------------------


def _found(alloc: float, wait4: float, unplaced: int) -> dict[str, object]:
    return {"gpu_allocation": alloc, "pending_by_gpus": {"4": wait4}, "unplaced_pods": unplaced}


def test_the_model_within_the_replays_spread() -> None:
    replays = [_found(0.50, 1076.0, 3), _found(0.55, 3360.0, 5), _found(0.52, 2000.0, 4)]
    compared = spread(_found(0.53, 1500.0, 3), replays)
    rows = compared["figures"]
    assert rows["pending_by_gpus.4"] == {
        "model": 1500.0, "replays": [1076.0, 3360.0, 2000.0], "min": 1076.0, "median": 2000.0, "max": 3360.0,
        "within": True,
    }  # fmt: skip
    assert rows["unplaced_pods"]["within"] is True  # on the edge: min <= model
    assert compared["within"] == 3 and compared["outside"] == []


def test_a_model_outside_the_spread_is_named() -> None:
    replays = [_found(0.50, 1076.0, 3), _found(0.55, 3360.0, 5)]
    compared = spread(_found(0.61, 1500.0, 9), replays)
    assert compared["outside"] == ["gpu_allocation", "unplaced_pods"]
    assert compared["figures"]["gpu_allocation"]["within"] is False
    assert compared["figures"]["unplaced_pods"]["median"] == 4.0
    assert compared["within"] == 1


def test_spread_without_a_value_says_so_and_mismatched_figures_are_refused() -> None:
    compared = spread({"gpu_allocation": None}, [{"gpu_allocation": 0.5}])
    assert compared["figures"]["gpu_allocation"]["within"] is None and compared["outside"] == []
    differ = r"replay 2 and the model differ in figures: \['pending_by_gpus.4', 'pending_by_gpus.8'\]"
    with pytest.raises(InputError, match=differ):
        spread(_found(0.5, 1.0, 0), [_found(0.5, 1.0, 0), {**_found(0.5, 1.0, 0), "pending_by_gpus": {"8": 1.0}}])
    with pytest.raises(InputError, match="no replays"):
        spread(_found(0.5, 1.0, 0), [])
    with pytest.raises(InputError, match="whole-run figure a.b: 'x' is not a number"):
        flatten({"a": {"b": "x"}})


# -- kube-scheduler's /metrics ----------------------------------------------------------------------------------

METRICS = """\
# HELP scheduler_pending_pods [STABLE] Number of pending pods, by the queue type.
# TYPE scheduler_pending_pods gauge
scheduler_pending_pods{queue="active"} 0
scheduler_pending_pods{queue="backoff"} 0
scheduler_pending_pods{queue="gated"} 0
scheduler_pending_pods{queue="unschedulable"} 3
scheduler_event_handling_duration_seconds_bucket{event="AssignedPodDelete",le="0.0001"} 2
scheduler_event_handling_duration_seconds_count{event="AssignedPodDelete"} 7
scheduler_event_handling_duration_seconds_count{event="resource.k8s.io/ResourceClaimAdd"} 12
scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 9
scheduler_schedule_attempts_total{profile="default-scheduler",result="unschedulable"} 1.4e+01
"""


def test_the_scheduler_state_from_its_metrics() -> None:
    state = parse_metrics(METRICS)
    assert state.queues == {"active": 0, "backoff": 0, "gated": 0, "unschedulable": 3}
    assert state.handled_of("AssignedPodDelete") == 7 and state.handled_of("ResourceClaimAdd") == 12
    assert state.handled_of("NodeAdd") == 0
    assert state.attempts == {"scheduled": 9, "unschedulable": 14}
    assert state.idle_with(3) and not state.idle_with(4)  # a pending pod not parked is being tried or bound
    busy = parse_metrics(METRICS.replace('queue="backoff"} 0', 'queue="backoff"} 1'))
    assert not busy.idle_with(3)


def test_metrics_without_the_queues_are_refused() -> None:
    with pytest.raises(MetricsError, match="no scheduler_pending_pods"):
        parse_metrics("apiserver_request_total 3\n")


def test_the_barrier_claim_is_used_by_no_pod_and_named_by_its_index() -> None:
    claim = barrier_claim(3, "default")
    assert claim["metadata"] == {"name": "gpudra-barrier-3", "namespace": "default"}
    assert claim["kind"] == "ResourceClaim" and "reservedFor" not in claim.get("status", {})


def test_the_replays_against_the_models_own_spread() -> None:
    replays = [_found(0.50, 1076.0, 3), _found(0.55, 3360.0, 5)]
    runs = [_found(0.48, 900.0, 3), _found(0.56, 2500.0, 4), _found(0.52, 1800.0, 3)]
    compared = spread(runs[0], replays, runs[1:])
    rows = compared["figures"]
    assert rows["gpu_allocation"]["model_runs"] == [0.48, 0.56, 0.52]
    assert (rows["gpu_allocation"]["model_min"], rows["gpu_allocation"]["model_max"]) == (0.48, 0.56)
    assert rows["gpu_allocation"]["model_median"] == 0.52
    assert rows["gpu_allocation"]["replays_outside_model"] == 0
    assert rows["pending_by_gpus.4"]["replays_outside_model"] == 1  # 3,360 s above the model's 2,500
    assert rows["unplaced_pods"]["replays_outside_model"] == 1  # 5 above the model's 4
    assert compared["model_runs"] == 3 and compared["figures_within_model"] == 1
    assert compared["outside_model"] == ["pending_by_gpus.4", "unplaced_pods"]
    # the first model run is still set against the replays' own spread
    assert rows["gpu_allocation"]["within"] is False
    assert compared["outside"] == ["gpu_allocation", "pending_by_gpus.4"]


def test_the_models_spread_without_a_value_and_a_model_run_with_other_figures() -> None:
    compared = spread({"gpu_allocation": 0.5}, [{"gpu_allocation": None}], [{"gpu_allocation": 0.6}])
    assert compared["figures"]["gpu_allocation"]["replays_outside_model"] is None
    assert compared["figures_within_model"] == 0 and compared["outside_model"] == []
    compared = spread({"gpu_allocation": None}, [{"gpu_allocation": 0.5}], [{"gpu_allocation": 0.6}])
    assert compared["figures"]["gpu_allocation"]["model_min"] is None
    with pytest.raises(InputError, match=r"model run 3 and the model differ in figures: \['pending_by_gpus.8'\]"):
        spread(_found(0.5, 1.0, 0), [_found(0.5, 1.0, 0)], [_found(0.5, 1.0, 0), {**_found(0.5, 1.0, 0),
               "pending_by_gpus": {"4": 1.0, "8": 2.0}}])  # fmt: skip
    assert "model_runs" not in spread(_found(0.5, 1.0, 0), [_found(0.5, 1.0, 0)])


# -- the CLI ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("option", [["--whole-run"], ["--replays", "3"]])
def test_whole_run_options_need_verify_scheduler(option: list[str]) -> None:
    result = CliRunner().invoke(app, ["simulate", *option, "--json"])
    assert result.exit_code == 2 and result.stdout == ""
    assert "--whole-run and --replays need --verify-scheduler" in " ".join(result.stderr.split())


def test_model_runs_need_a_whole_run_and_at_least_one() -> None:
    result = CliRunner().invoke(app, ["simulate", "--model-runs", "3", "--json"])
    assert result.exit_code == 2 and result.stdout == ""
    assert "--model-runs needs --verify-scheduler --whole-run" in " ".join(result.stderr.split())
    result = CliRunner().invoke(app, ["simulate", "--verify-scheduler", "--whole-run", "--model-runs", "0"])
    assert result.exit_code == 2 and "--model-runs" in result.stderr


# -- the model alone --------------------------------------------------------------------------------------------


def test_the_models_own_spread_is_seeded_and_repeatable() -> None:
    from simulator.verify import model_whole_runs, verification_inputs

    spec, pods = verification_inputs(None, None, seed=3)
    first = model_whole_runs(spec, pods, sample=40, model_runs=3, seed=3)
    assert first == model_whole_runs(spec, pods, sample=40, model_runs=3, seed=3)
    assert first["sample"] == 40 and len(first["runs"]) == 3
    assert first["cut_seconds"] == max(p.arrival for p in sorted(pods, key=lambda p: p.arrival)[:40])
    row = first["figures"]["gpu_allocation"]
    assert row["model_runs"] == [run["gpu_allocation"] for run in first["runs"]]
    assert row["model_min"] <= row["model_median"] <= row["model_max"]
    # the first run is the one `verify_whole_run` sets against the replays: the same seed, the same figures
    assert model_whole_runs(spec, pods, sample=40, model_runs=1, seed=3)["runs"] == first["runs"][:1]
    with pytest.raises(InputError, match="--model-runs must be at least 1"):
        model_whole_runs(spec, pods, sample=40, model_runs=0)
