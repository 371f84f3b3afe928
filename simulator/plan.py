"""`gpudra plan`: the smallest cluster of candidate pools that meets a target, per strategy, with its cost and power.

Each strategy's search (`simulator.plan_search`) submits its probes (a simulation of the fixed workload on one
candidate cluster under one strategy, replay protocol) to a `simulator.parallel` stream and moves on as soon as its
own batch is in, so every core (or Ray) stays busy; a probe ends as soon as it has provably missed the target
(`simulator.plan_stop`), which changes no verdict and so no answer. The workload is drawn or read once, so every
probe sees the same pods: same seed, same answer.

kube-scheduler picks at random among the nodes tied at the top score, and the model draws that choice from a seeded
generator: one seed is one draw, and whole runs of one workload differ from draw to draw (docs/simulator.md, the
model's own spread). With `tie_seeds` N each probe runs under N seeds (`seed`, `seed + 1`, ...) and meets the target
only if every run does; its figures are the worst run's.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dra.errors import InputError
from dra.gpus import DriverGates

from .cluster import default_cluster
from .cluster_sources import load_cluster
from .engine import EngineConfig, run
from .frag import typical_pods
from .kpis import summarize
from .parallel import Stream, parallel_stream
from .plan_inputs import HOURS_PER_MONTH, PoolSet, Price, Target, percentile
from .plan_search import Counts, Search, smallest
from .plan_stop import PendingStop
from .strategies import RunSettings, strategy_class
from .traces import GeneratorConfig, generate, load_trace
from .vram import VramModel
from .workload import Workload

__all__ = ["PLAN_STRATEGIES", "Measure", "PlanConfig", "PlanResult", "Probe", "StrategyPlan", "plan", "plan_workload"]

PLAN_STRATEGIES = ("device-plugin", "dra-whole", "gpudra")
BASELINE = "device-plugin"
Progress = Callable[[int, int], None]


def plan_workload(trace: str | Path | None, cluster: str | Path | None, pods: int, seed: int) -> Workload:
    """The plan's one workload: the trace, or the generator's `pods` pods at the load it offers `cluster` (the
    built-in cluster by default), as `gpudra simulate` draws it."""
    if trace is not None:
        return load_trace(trace)
    reference = default_cluster() if cluster is None else load_cluster(cluster)
    return generate(GeneratorConfig(pods=pods, seed=seed), reference.total_gpus, vram=VramModel(kind="class"))


@dataclass(frozen=True, slots=True)
class PlanConfig:
    """Everything a plan reads; `prices` (currency, per catalog key) is optional: without it no cost or power."""

    pools: PoolSet
    target: Target
    workload: Workload
    strategies: tuple[str, ...] = PLAN_STRATEGIES
    seed: int = 0
    policies: str | None = None
    driver: DriverGates = field(default_factory=DriverGates)
    prices: tuple[str, dict[str, Price]] | None = None
    backend: str = "process"
    workers: int = 0
    early_stop: bool = True  # end a probe's simulation once it has provably missed the target (`simulator.plan_stop`)
    tie_seeds: int = 1  # each probe runs under this many tie-break seeds and meets only if every run does


@dataclass(frozen=True, slots=True)
class Measure:
    """What one probe measured: the GPU pods' waits (inf: never placed) and the run's GPU allocation ratio, or, when
    `missed` (the run was stopped early, `simulator.plan_stop`), only that the target's pending clauses were missed."""

    waits: tuple[float, ...]
    allocation: float
    missed: bool = False

    def pending(self, pct: float) -> float:
        """The `pct` percentile of the GPU pods' waits in seconds (inf: that many pods were never placed)."""
        return percentile(list(self.waits), pct)

    def meets(self, target: Target) -> bool:
        """Whether every pending clause of `target` holds (allocation clauses are checked once, at the end)."""
        return not self.missed and all(
            self.pending(c.percentile) <= c.value for c in target.conditions if c.metric == "pending"
        )


@dataclass(frozen=True, slots=True)
class Probe:
    """One cluster size under one strategy, run under each of the plan's tie-break seeds (`runs`, in seed order):
    it meets the target only if every run does, and its figures are the worst run's."""

    runs: tuple[Measure, ...]

    def meets(self, target: Target) -> bool:
        return all(run.meets(target) for run in self.runs)

    def pending(self, pct: float) -> float:
        """The highest `pct` percentile of the GPU pods' waits over the runs (inf: some pod never placed)."""
        return max(run.pending(pct) for run in self.runs)

    @property
    def allocation(self) -> float:
        """The lowest GPU allocation ratio over the runs."""
        return min(run.allocation for run in self.runs)

    @property
    def never_placed(self) -> int:
        """The most GPU pods never placed in one run."""
        return max(sum(1 for w in run.waits if w == math.inf) for run in self.runs)


@dataclass(frozen=True, slots=True)
class _Trial:
    pools: PoolSet
    counts: Counts
    strategy: str
    workload: Workload
    seed: int
    policies: str | None
    driver: DriverGates
    stop: Target | None = None  # stop the run once it has provably missed this target's pending clauses


def _run_trial(trial: _Trial) -> Measure:
    """One probe: the workload on the cluster of `trial.counts` under one strategy (module level: it is pickled),
    run as `simulate` runs it with the replay protocol and the default scheduler profile."""
    spec = trial.pools.cluster(trial.counts).with_driver_gates(trial.driver)
    pods = trial.workload.pods
    rule = None if trial.stop is None else PendingStop(trial.stop, pods)
    (strategy,) = strategy_class(trial.strategy).runs(RunSettings(spec, trial.seed, "replay", policies=trial.policies))
    engine = EngineConfig(protocol="replay", seed=trial.seed, stop=rule)
    rec = run(spec, pods, strategy, engine, None, typical_pods(pods))
    if rule is not None and rule.missed:
        return Measure((), 0.0, missed=True)
    waits = tuple(w if n in rec.placed else math.inf for n, w in rec.waits.items() if rec.gpus.get(n, 0) > 0)
    allocation = float(summarize(rec)["gpu_allocation_ratio"])
    return Measure(waits, allocation)


@dataclass(frozen=True, slots=True)
class StrategyPlan:
    """The smallest cluster found for one strategy and what it costs."""

    strategy: str
    counts: Counts
    gpus: int
    measure: Probe
    simulations: int
    cost_month: float | None
    power_kw: float | None
    # the clusters one node smaller (in one pool) the search probed, with how many of their runs met the target
    smaller: tuple[tuple[Counts, int], ...] = ()


@dataclass(slots=True)
class PlanResult:
    """The plan per strategy, with the config it answers."""

    config: PlanConfig
    plans: dict[str, StrategyPlan]
    wall_seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        """The stable JSON of `gpudra plan --json`."""
        pools = self.config.pools.pools
        pcts = sorted({95.0, *(c.percentile for c in self.config.target.conditions if c.metric == "pending")})
        strategies = {
            name: {
                "nodes": {p.name: c for p, c in zip(pools, found.counts, strict=True)},
                "total_nodes": sum(found.counts),
                "gpus": found.gpus,
                "cost_per_month": None if found.cost_month is None else round(found.cost_month, 2),
                "power_kw": None if found.power_kw is None else round(found.power_kw, 3),
                "pending_seconds": {f"p{p:g}": _seconds(found.measure.pending(p)) for p in pcts},
                "gpu_allocation_ratio": found.measure.allocation,
                "pods_never_placed": found.measure.never_placed,
                "simulations": found.simulations,
                "one_node_fewer": [
                    {"nodes": {p.name: c for p, c in zip(pools, counts, strict=True)}, "runs_meeting": met}
                    for counts, met in found.smaller
                ],
            }
            for name, found in self.plans.items()
        }
        return {
            "target": self.config.target.text,
            "workload": self.config.workload.summary(),
            "protocol": "replay",
            "seed": self.config.seed,
            "tie_seeds": self.config.tie_seeds,
            "driver_gates": sorted(self.config.driver.enabled),
            "pools": [
                {"name": p.name, "gpu": p.model, "gpus_per_node": p.gpus, "min": p.low, "max": p.high} for p in pools
            ],  # fmt: skip
            "currency": self.config.prices[0] if self.config.prices else None,
            "strategies": strategies,
            "savings_vs_device_plugin": self.savings(),
            "wall_seconds": round(self.wall_seconds, 3),
        }

    def savings(self) -> dict[str, dict[str, float | None]]:
        """Per strategy other than the device plugin: nodes, GPUs, cost and power it saves (and GPUs in %)."""
        base = self.plans.get(BASELINE)
        if base is None:
            return {}
        out: dict[str, dict[str, float | None]] = {}
        for name, found in self.plans.items():
            if name == BASELINE:
                continue
            out[name] = {
                "nodes": sum(base.counts) - sum(found.counts),
                "gpus": base.gpus - found.gpus,
                "gpus_pct": round(100 * (base.gpus - found.gpus) / base.gpus, 1) if base.gpus else None,
                "cost_per_month": _less(base.cost_month, found.cost_month, 2),
                "power_kw": _less(base.power_kw, found.power_kw, 3),
            }
        return out


def _less(base: float | None, other: float | None, digits: int) -> float | None:
    return None if base is None or other is None else round(base - other, digits)


def _seconds(value: float) -> float | None:
    return None if value == math.inf else round(value, 1)


class _Probes:
    """Every probe run or running, by (strategy, counts): a point two batches of a search share runs once. A probe
    is one simulation per tie-break seed (`PlanConfig.tie_seeds`), each submitted on its own."""

    def __init__(self, config: PlanConfig, stream: Stream, progress: Progress | None, estimate: int) -> None:
        self.config, self.stream, self.progress, self.estimate = config, stream, progress, estimate
        self.done: dict[tuple[str, Counts], Probe] = {}
        self.running: dict[int, tuple[str, Counts, int]] = {}  # ticket -> (probe, tie-break seed's index)
        self.parts: dict[tuple[str, Counts], dict[int, Measure]] = {}  # a probe's runs in so far
        self.simulations = 0

    def submit(self, strategy: str, batch: list[Counts], early_stop: bool = True) -> None:
        """Start the probes of `batch` not run or running yet (`early_stop`: as far as the config allows, stop each
        once it has missed the target)."""
        config = self.config
        stop = config.target if early_stop and config.early_stop else None
        for counts in dict.fromkeys(batch):
            key = (strategy, counts)
            if key in self.done or key in self.parts:
                continue
            if config.pools.gpus(counts) == 0:  # nothing to simulate: no GPU pod can run
                self.done[key] = Probe((Measure(tuple(math.inf for p in config.workload.pods if p.is_gpu), 0.0),))
                continue
            self.parts[key] = {}
            for k in range(config.tie_seeds):
                trial = _Trial(config.pools, counts, strategy, config.workload, config.seed + k, config.policies,
                               config.driver, stop)  # fmt: skip
                self.running[self.stream.submit(_run_trial, trial)] = (strategy, counts, k)

    def collect(self) -> str:
        """Wait for one running simulation to finish; the strategy it probed."""
        ticket, measure = self.stream.next_done()
        strategy, counts, k = self.running.pop(ticket)
        key = (strategy, counts)
        parts = self.parts[key]
        parts[k] = measure
        if len(parts) == self.config.tie_seeds:
            self.done[key] = Probe(tuple(parts[i] for i in range(self.config.tie_seeds)))
            del self.parts[key]
        self.simulations += 1
        if self.progress is not None:
            self.estimate = max(self.estimate, self.simulations + len(self.running))
            self.progress(self.simulations, self.estimate)
        return strategy

    def complete(self, strategy: str, batch: list[Counts]) -> bool:
        """Whether every probe of `batch` has finished."""
        return all((strategy, counts) in self.done for counts in batch)

    def met(self, strategy: str, counts: Counts) -> bool:
        """Whether the probe of `counts` under `strategy` (run already) met the target's pending clauses."""
        return self.done[(strategy, counts)].meets(self.config.target)


def _estimate(config: PlanConfig) -> int:
    """Roughly how many probes the search takes (the progress bar's total; it grows if the search needs more)."""
    pools = config.pools.pools
    rounds = sum(math.ceil(math.log2(p.high - p.low + 1)) for p in pools)
    if len(pools) > 1:
        rounds += math.ceil(math.log2(max(p.high for p in pools) + 1))
    return len(config.strategies) * (1 + rounds) * config.tie_seeds


def _unmet(config: PlanConfig, strategy: str, measure: Probe) -> InputError:
    pools = config.pools.pools
    bounds = ", ".join(f"{p.name} {p.high}" for p in pools)
    reached = "; ".join(
        f"p{c.percentile:g} pending {_duration(measure.pending(c.percentile))}"
        for c in config.target.conditions if c.metric == "pending"
    )  # fmt: skip
    return InputError(
        f"--target {config.target.text}: {strategy} does not meet it within the pools' bounds; the best reached, at "
        f"every pool's max ({bounds} nodes): {reached}. Raise pools[].max or relax --target",
        source=config.pools.source,
    )


def _duration(seconds: float) -> str:
    if seconds == math.inf:
        return "never placed"
    return f"{seconds / 3600:.2f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"


def _costed(
    config: PlanConfig,
    strategy: str,
    counts: Counts,
    measure: Probe,
    runs: int,
    smaller: tuple[tuple[Counts, int], ...],
) -> StrategyPlan:
    pools = config.pools.pools
    cost = power = None
    if config.prices is not None:
        prices = config.prices[1]
        gpus_of = [(prices[p.model], p.gpus * c) for p, c in zip(pools, counts, strict=True)]
        cost = sum(price.gpu_hour * n for price, n in gpus_of) * HOURS_PER_MONTH
        power = sum(price.watts * n for price, n in gpus_of) / 1000
    return StrategyPlan(strategy, counts, config.pools.gpus(counts), measure, runs, cost, power, smaller)


def plan(config: PlanConfig, progress: Progress | None = None) -> PlanResult:
    """The smallest cluster per strategy that meets `config.target` (`InputError` naming `--target` when a strategy
    misses it at every pool's max, or an allocation clause fails at the smallest size)."""
    if config.tie_seeds < 1:
        raise InputError(f"--tie-seeds must be at least 1 (got {config.tie_seeds})")
    started = time.perf_counter()
    pools = config.pools.pools
    low, high = tuple(p.low for p in pools), tuple(p.high for p in pools)
    workers = config.workers or os.cpu_count() or 1
    width = max(1, workers // (len(config.strategies) * config.tie_seeds))
    # trim the pools whose nodes cost most first: their nodes are the ones worth saving
    weight = [p.gpus * (config.prices[1][p.model].gpu_hour if config.prices else 1.0) for p in pools]
    order = sorted(range(len(pools)), key=lambda i: -weight[i])
    with parallel_stream(config.backend, config.workers) as stream:
        probes = _Probes(config, stream, progress, _estimate(config))
        for strategy in config.strategies:  # run whole: a miss there reports what it reached
            probes.submit(strategy, [high], early_stop=False)
        searches: dict[str, Search] = {s: smallest(low, high, order, width) for s in config.strategies}
        found: dict[str, Counts] = {}
        asked: dict[str, list[Counts]] = {}
        ready = list(config.strategies)  # the searches to start or send their batch's verdicts
        begun: set[str] = set()
        _check_max(config, probes, high)
        while ready or probes.running:
            while ready:  # each search moves on as soon as its own batch is in: no core waits for another's probes
                strategy = ready.pop(0)
                verdicts = [probes.met(strategy, c) for c in asked[strategy]] if strategy in begun else None
                begun.add(strategy)
                _advance(strategy, searches[strategy], verdicts, asked, found)
                if strategy in asked:
                    probes.submit(strategy, asked[strategy])
                    if probes.complete(strategy, asked[strategy]):
                        ready.append(strategy)
            if probes.running:
                strategy = probes.collect()
                _check_max(config, probes, high)
                if strategy in asked and strategy not in ready and probes.complete(strategy, asked[strategy]):
                    ready.append(strategy)
    plans = {}
    for strategy in config.strategies:
        measure = probes.done[(strategy, found[strategy])]
        for clause in (c for c in config.target.conditions if c.metric == "allocation"):
            if measure.allocation < clause.value:
                raise InputError(
                    f"--target {config.target.text}: at the smallest cluster that meets the pending clauses, "
                    f"{strategy}'s GPU allocation is {measure.allocation:.3f} (< {clause.value}); a larger cluster "
                    "only lowers it, so no size within the bounds meets the target",
                    source=config.pools.source,
                )
        runs = sum(1 for s, _ in probes.done if s == strategy) * config.tie_seeds
        smaller = []
        for i, count in enumerate(found[strategy]):
            fewer = found[strategy][:i] + (count - 1,) + found[strategy][i + 1 :]
            probe = probes.done.get((strategy, fewer)) if count > low[i] else None
            if probe is not None:
                smaller.append((fewer, sum(1 for run in probe.runs if run.meets(config.target))))
        plans[strategy] = _costed(config, strategy, found[strategy], measure, runs, tuple(smaller))
    return PlanResult(config, plans, time.perf_counter() - started)


def _check_max(config: PlanConfig, probes: _Probes, high: Counts) -> None:
    """Once every strategy's probe at the pools' max is in: the first (in `config.strategies` order) that misses
    the target is an error (the searches trust that the max meets; their answers are not used then)."""
    if all(probes.complete(s, [high]) for s in config.strategies):
        for strategy in config.strategies:
            if not probes.met(strategy, high):
                raise _unmet(config, strategy, probes.done[(strategy, high)])


def _advance(
    strategy: str, search: Search, met: list[bool] | None, asked: dict[str, list[Counts]], found: dict[str, Counts]
) -> None:
    """Send `met` to the strategy's search (None: start it); record its next batch, or its answer."""
    try:
        asked[strategy] = next(search) if met is None else search.send(met)
    except StopIteration as stop:
        asked.pop(strategy, None)
        found[strategy] = stop.value
