"""One simulation as the CLI runs it: load the inputs, run each strategy, build the stable summary.

`SimulationConfig` holds every input; each strategy class decides from it what runs it makes
(`Strategy.runs`: gpudra adds `gpudra+observed` with observed sizing, the device plugin reads the cluster's drain
knobs, the FGD paper's baselines run in the paper's own simulator on its protocol).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dra.errors import InputError
from dra.gpus import DriverGates

from .cluster import ClusterSpec, default_cluster
from .cluster_sources import load_cluster
from .driver import SIMULATED_RELEASE
from .engine import EngineConfig, run
from .frag import typical_pods
from .kpis import Recorder, summarize
from .notes import assumptions, explanations, result_notes
from .peer_protocol import run_peer
from .scheduling import DEFAULT_PROFILE, Profile
from .sizing import (
    ObservedLookup,
    SizingSpec,
    generated_lookup,
    granted_vs_observed,
    load_observed,
    strip_annotations,
)
from .strategies import OBSERVED_RUN, RunSettings, Strategy, strategy_class
from .traces import GeneratorConfig, generate, load_trace
from .tuning import TUNE_RATIO
from .vram import VramModel
from .workload import Workload

__all__ = ["DEFAULT_STRATEGIES", "OBSERVED_RUN", "SimulationConfig", "SimulationResult", "simulate"]

DEFAULT_STRATEGIES = ("device-plugin", "gpudra")
StrategyProgress = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class SimulationConfig:
    """Everything one simulation reads (defaults: the built-in cluster and generator, kube-scheduler's defaults).

    gpudra allocates on slices exactly as NVIDIA DRA driver 0.5 publishes them with the gates of `driver`
    (`simulator.driver.simulated_driver`: ConsumableShares is the one meaning of consumable capacity); gpudra's one
    addition is opt-in: `gpudra_attributes` adds `gpu.gpudra.io/nvlinkGroup`. `sizing` observed (`parse_sizing`:
    `observed:FILE` or `observed:generated`) runs gpudra twice: as `gpudra` (annotations only) and as
    `gpudra+observed` (unannotated pods sized from the observed usage); `unannotated` removes the pods'
    `gpudra.io/vram` annotations first."""

    cluster: ClusterSpec | str | Path | None = None
    trace: Workload | str | Path | None = None
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    seed: int = 0
    protocol: str = "auto"  # replay | fgd | auto (fgd for openb CSVs)
    load: float | None = None  # fgd: the workload's GPU demand as a multiple of the cluster's (default 1.3)
    vram: VramModel | None = None
    gpu_model_map: dict[str, str] | None = None  # openb's G1/G2/G3 labels -> catalog GPU models
    generator: GeneratorConfig | None = None
    policies: str | Path | None = None
    allocator_mode: str = "upstream"  # `scored` is a what-if: not what a stock cluster does
    node_score: str | None = None
    scheduler: Profile = field(default=DEFAULT_PROFILE)
    gpudra_attributes: bool = False
    sizing: SizingSpec = field(default_factory=SizingSpec)
    unannotated: bool = False
    # NVIDIA DRA driver 0.5's own gates every node runs with (ConsumableShares, FabricManagerPartitioning)
    driver: DriverGates = field(default_factory=DriverGates)


@dataclass(slots=True)
class SimulationResult:
    input: dict[str, Any]
    runs: dict[str, Recorder] = field(default_factory=dict)
    spec: ClusterSpec | None = None  # the cluster the runs used (for the summary's notes)
    # With --sizing observed: per gpudra run, per pod (MiB per device) what it got, needed and what was observed
    sizing: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        strategies = {name: summarize(rec) for name, rec in self.runs.items()}
        out: dict[str, Any] = {"input": self.input, "strategies": strategies}
        if self.spec is not None:
            out["notes"] = result_notes(self.spec, strategies)
            out["explanations"] = explanations(self.input, strategies)
            out["assumptions"] = assumptions(self.input, self.spec)
        if self.sizing:
            out["sizing"] = {run: data["stats"] for run, data in self.sizing.items()}
        return out


def _cluster(config: SimulationConfig) -> ClusterSpec:
    cluster = config.cluster
    if isinstance(cluster, ClusterSpec):
        spec = cluster
    elif cluster is None:
        spec = default_cluster()
    else:
        spec = load_cluster(str(cluster), gpu_model_map=config.gpu_model_map)
    return spec.with_driver_gates(config.driver)


def _workload(config: SimulationConfig, spec: ClusterSpec) -> Workload:
    trace = config.trace
    if isinstance(trace, Workload):
        work = trace
    elif trace is None:
        work = generate(config.generator or GeneratorConfig(seed=config.seed), spec.total_gpus,
                        vram=config.vram or VramModel(kind="class"))  # fmt: skip
    else:
        work = load_trace(trace, vram=config.vram)
    return strip_annotations(work) if config.unannotated else work


def simulate(config: SimulationConfig, progress: StrategyProgress | None = None) -> SimulationResult:
    """Run every strategy of `config` on the same cluster and workload."""
    sizing_spec = config.sizing
    spec = _cluster(config)
    work = _workload(config, spec)
    lookup: ObservedLookup | None = None
    if sizing_spec.kind == "observed":
        lookup = generated_lookup(work, config.seed) if sizing_spec.path is None else load_observed(sizing_spec.path)
    vram_model = config.vram or VramModel(kind="class" if work.kind == "generated" else "proportional")
    _note_unknown_models(work, spec)
    protocol = config.protocol
    if protocol == "auto":  # openb times are a snapshot (replayed, < 1% of the GPUs are ever busy): use FGD's
        protocol = "fgd" if work.kind == "openb" else "replay"
    load = TUNE_RATIO if config.load is None else config.load
    if protocol == "fgd" and load <= 0:
        raise InputError(f"load must be above 0 (got {load})")
    engine = EngineConfig(protocol=protocol, load=load, seed=config.seed)
    settings = RunSettings(
        spec, config.seed, protocol, config.scheduler, config.policies, config.allocator_mode, config.node_score,
        config.gpudra_attributes, lookup,
    )  # fmt: skip
    result = SimulationResult(
        input=_input(config, spec, work, vram_model, protocol, load, sizing_spec, lookup), spec=spec
    )
    typical = typical_pods(work.pods)
    runs: list[tuple[str, str, Strategy | None]] = []  # (run name, strategy name, strategy; None: the FGD peer)
    for name in tuple(config.strategies):
        cls = strategy_class(name)
        if protocol == "fgd" and cls.fgd_peer:  # the FGD paper's baselines as its simulator runs them
            runs.append((name, name, None))
        else:
            runs.extend((strategy.name, name, strategy) for strategy in cls.runs(settings))
    if [r for r, _, _ in runs] != list(config.strategies):
        result.input["strategies"] = [r for r, _, _ in runs]
    details: dict[str, Any] = {}
    for run_name, name, strategy in runs:
        callback = None if progress is None else _bind(progress, run_name)
        if strategy is None:
            result.runs[name] = run_peer(spec, work.pods, name, config.seed, ratio=load, progress=callback).recorder()
            details[name] = {"implementation": "simulator.peer_protocol"}
            continue
        result.runs[run_name] = run(spec, work.pods, strategy, engine, callback, typical)
        granted = getattr(strategy, "granted", None)
        if lookup is not None and isinstance(granted, dict):
            result.sizing[run_name] = granted_vs_observed(work.pods, granted, lookup)
        described = strategy.describe()
        if described is not None:  # e.g. gpudra: the policy directory, allocator mode and what the policies decided
            details[run_name] = described
    if details:
        result.input["strategy_details"] = details
    return result


def _input(
    config: SimulationConfig,
    spec: ClusterSpec,
    work: Workload,
    vram_model: VramModel,
    protocol: str,
    load: float,
    sizing_spec: SizingSpec,
    lookup: ObservedLookup | None,
) -> dict[str, Any]:
    mode = config.allocator_mode
    return {
        "cluster": spec.summary(),
        "workload": work.summary(),
        "vram_model": vram_model.describe(),
        "protocol": protocol,
        "load": load if protocol == "fgd" else None,
        "seed": config.seed,
        "policies": str(config.policies) if config.policies else None,
        "allocator_mode": mode if mode == "upstream" else f"{mode} (what-if: not what a stock cluster does)",
        "node_score": config.node_score or "least-allocated",
        "scheduler": config.scheduler.describe(),
        # what a result needs of the NVIDIA DRA driver: a release and the gates it was run with
        "driver": {"release": SIMULATED_RELEASE, "gates": sorted(config.driver.enabled)},
        "gpudra_additions": {"gpudra_attributes": config.gpudra_attributes},
        "strategies": list(config.strategies),
        "sizing": {"spec": sizing_spec.label, "unannotated": config.unannotated,
                   **(lookup.describe() if lookup is not None else {})},
    }  # fmt: skip


def _note_unknown_models(work: Workload, spec: ClusterSpec) -> None:
    """Count the pods whose allowed GPU models no node of the cluster has: they can only fail."""
    present = {n.model_label for n in spec.nodes} | {n.gpu.key for n in spec.nodes if n.gpu is not None}
    prefix = "GPU model not in the cluster: "
    for reason in [r for r in work.notes if r.startswith(prefix)]:  # counted again for this cluster
        del work.notes[reason]
        work.note_examples.pop(reason, None)
    for pod in work.pods:
        if pod.is_gpu and pod.gpu_models and not set(pod.gpu_models) & present:
            work.note(prefix + "|".join(pod.gpu_models), pod.source or pod.name)


def _bind(progress: StrategyProgress, name: str) -> Callable[[int, int], None]:
    return lambda done, total: progress(name, done, total)
