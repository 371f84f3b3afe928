"""`gpudra simulate --verify-scheduler --whole-run`: the whole sample through a real control plane in bulk
(`bulk.run_whole`: kube-scheduler's own queue and retries, no per-decision comparison), `replays` times on fresh
control planes, and the model's runs of the same sample (under `model_runs` tie-break seeds) set against the spread
of those runs, both cut at the last arrival: allocation, pending by GPUs per pod, unplaced pods (`timeline.figures`,
`spread.spread`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from dra.errors import InputError

from ..cluster import ClusterSpec, NodeSpec
from ..workload import SimPod
from .binaries import component_version
from .bulk import WholeRun, run_whole
from .controlplane import ControlPlane
from .spread import model_spread
from .verification import model_figures, model_run, prepared, published_driver, whole_run_spread

__all__ = ["model_whole_runs", "verify_whole_run"]


def verify_whole_run(
    spec: ClusterSpec,
    pods: list[SimPod],
    *,
    sample: int,
    replays: int = 2,
    bin_dir: Path | None = None,
    scheduler_config: Path | None = None,
    policies: str | Path | None = None,
    gpudra_attributes: bool = False,
    seed: int = 0,
    parallel: bool = False,
    model_runs: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """The first `sample` pods (by arrival) through kube-scheduler in bulk `replays` times (side by side with
    `parallel`, each on its own control plane), against the model run `model_runs` times, with the tie-break seeds
    `seed`, `seed + 1`, ... (the model's own spread: `spread.spread`).

    `progress(done, total)` counts arrivals over every replay. Raises `MissingBinaries` or `InputError` before
    anything starts, `ControlPlaneError` / `ReplayError` when the control plane misbehaves."""
    from simulator.scheduling import node_slices

    if sample < 1:
        raise InputError(f"--sample must be at least 1 (got {sample})")
    if replays < 1:
        raise InputError(f"--replays must be at least 1 (got {replays})")
    if model_runs < 1:
        raise InputError(f"--model-runs must be at least 1 (got {model_runs})")
    binaries, profile, config, policy_set = prepared(bin_dir, scheduler_config, policies)
    chosen = sorted(pods, key=lambda p: p.arrival)[:sample]
    published: list[dict[str, Any]] = []
    done = [0] * replays

    def slices_of(index: int) -> Callable[[NodeSpec], list[dict[str, Any]]]:
        def made(node: NodeSpec) -> list[dict[str, Any]]:  # with the node's driver gates, as the model's
            found = list(node_slices(node, node.name, gpudra_attributes=gpudra_attributes).slices)
            if index == 0:  # every run publishes the same: the first one's are counted
                published.extend(found)
            return found

        return made

    def one(index: int) -> WholeRun:
        def step(arrived: int, total: int) -> None:
            done[index] = arrived
            if progress is not None:
                progress(sum(done), replays * total)

        cp = ControlPlane.launch(binaries, scheduler_config=config)
        try:
            return run_whole(cp, spec, chosen, policies=policy_set, slices_of=slices_of(index), progress=step)
        finally:
            cp.stop()

    started = time.perf_counter()
    if parallel and replays > 1:  # each run on its own control plane; the settled states do not depend on timing
        with ThreadPoolExecutor(max_workers=replays, thread_name_prefix="whole-run") as pool:
            runs = list(pool.map(one, range(replays)))
    else:
        runs = [one(index) for index in range(replays)]
    model_started = time.perf_counter()
    rec = model_run(spec, chosen, policies, profile, gpudra_attributes, seed)
    model_seconds = time.perf_counter() - model_started
    others = [model_run(spec, chosen, policies, profile, gpudra_attributes, seed + k) for k in range(1, model_runs)]
    model_runs_seconds = time.perf_counter() - model_started
    cut = runs[0].cut
    compared = whole_run_spread(spec, chosen, rec, [run.starts for run in runs], cut, others)
    for run, found in zip(runs, compared["runs"], strict=True):
        found |= {
            "attempts": run.attempts, "departures": run.departures, "clock_steps": run.steps,
            "metrics_reads": run.metrics_reads, "wall_seconds": run.wall_seconds,
        }  # fmt: skip
    return {
        "mode": "whole-run",
        "kube_scheduler_version": component_version(binaries["kube-scheduler"]),
        "sample": len(chosen),
        "replays": replays,
        "parallel": parallel and replays > 1,
        "denied": len(runs[0].denied),
        **compared,
        "driver": published_driver(spec, published),
        "scheduler_config": None if scheduler_config is None else str(scheduler_config),
        "model_seconds": round(model_seconds, 1),
        "model_runs_seconds": round(model_runs_seconds, 1),
        "wall_seconds": round(time.perf_counter() - started, 1),
    }


def model_whole_runs(
    spec: ClusterSpec,
    pods: list[SimPod],
    *,
    sample: int,
    model_runs: int,
    seed: int = 0,
    scheduler_config: Path | None = None,
    policies: str | Path | None = None,
    gpudra_attributes: bool = False,
) -> dict[str, Any]:
    """The model alone (no control plane): its whole-run figures for the first `sample` pods under `model_runs`
    tie-break seeds (`seed`, `seed + 1`, ...), cut at the last arrival as `verify_whole_run` cuts them, with each
    figure's min / median / max over the runs: the spread a real run is set against."""
    from simulator.scheduling import DEFAULT_PROFILE, load_scheduler_config

    if sample < 1 or model_runs < 1:
        raise InputError(f"--sample and --model-runs must be at least 1 (got {sample} and {model_runs})")
    profile = DEFAULT_PROFILE if scheduler_config is None else load_scheduler_config(scheduler_config)
    chosen = sorted(pods, key=lambda p: p.arrival)[:sample]
    cut = max(p.arrival for p in chosen)
    found = [
        model_figures(spec, chosen, model_run(spec, chosen, policies, profile, gpudra_attributes, seed + k), cut)
        for k in range(model_runs)
    ]
    return {"sample": len(chosen), "cut_seconds": cut, "runs": found, "figures": model_spread(found)}
