"""One simulation as the CLI runs it: load the inputs, run each strategy, build the stable summary."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dra.errors import InputError

from .cluster import ClusterSpec, default_cluster
from .cluster_sources import load_cluster
from .engine import EngineConfig, run
from .frag import typical_pods
from .kpis import Recorder, summarize
from .peer_protocol import PEER_POLICIES, run_peer
from .sizing import (
    ObservedLookup,
    SizingSpec,
    generated_lookup,
    granted_vs_observed,
    load_observed,
    parse_sizing,
    strip_annotations,
)
from .strategies import make_strategy
from .traces import GeneratorConfig, generate, load_trace
from .tuning import TUNE_RATIO
from .vram import VramModel
from .workload import Workload

__all__ = ["DEFAULT_STRATEGIES", "OBSERVED_RUN", "SimulationResult", "simulate"]

DEFAULT_STRATEGIES = ("device-plugin", "gpudra")
OBSERVED_RUN = "gpudra+observed"  # the gpudra strategy with --sizing observed:..., beside plain gpudra
StrategyProgress = Callable[[str, int, int], None]


@dataclass(slots=True)
class SimulationResult:
    input: dict[str, Any]
    runs: dict[str, Recorder] = field(default_factory=dict)
    # With --sizing observed: per gpudra run, per pod (MiB per device) what it got, needed and what was observed
    sizing: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        out = {"input": self.input, "strategies": {name: summarize(rec) for name, rec in self.runs.items()}}
        if self.sizing:
            out["sizing"] = {run: data["stats"] for run, data in self.sizing.items()}
        return out


def simulate(
    cluster: ClusterSpec | str | Path | None = None,
    trace: Workload | str | Path | None = None,
    *,
    policies: str | Path | None = None,
    strategies: tuple[str, ...] | list[str] = DEFAULT_STRATEGIES,
    seed: int = 0,
    protocol: str = "auto",
    load: float | None = None,
    vram: VramModel | None = None,
    model_map: dict[str, str] | None = None,
    generator: GeneratorConfig | None = None,
    mode: str = "scored",
    node_score: str | None = None,
    progress: StrategyProgress | None = None,
    consumable_capacity: bool = False,
    gpudra_attributes: bool = False,
    sizing: SizingSpec | str | None = None,
    unannotated: bool = False,
) -> SimulationResult:
    """Run every strategy on the same cluster and workload (defaults: built-in cluster and generator).

    The gpudra strategy allocates on slices exactly as the NVIDIA DRA driver publishes them; gpudra's additions
    are opt-in: `consumable_capacity` publishes every pool's whole GPUs as shareable (`sharing: true`),
    `gpudra_attributes` adds `gpu.gpudra.io/nvlinkGroup`. `sizing` observed (`observed:FILE` or
    `observed:generated`, simulator.sizing) runs gpudra twice: as `gpudra` (annotations only) and as
    `gpudra+observed` (unannotated pods sized from the observed usage); `unannotated` removes the pods'
    `gpudra.io/vram` annotations first (the pods as their owners wrote them)."""
    sizing_spec = sizing if isinstance(sizing, SizingSpec) else parse_sizing(sizing)
    spec = cluster if isinstance(cluster, ClusterSpec) else default_cluster() if cluster is None else None
    if spec is None:
        spec = load_cluster(str(cluster), model_map=model_map)
    if consumable_capacity:
        spec = spec.with_consumable_capacity()
    if isinstance(trace, Workload):
        work = trace
    elif trace is None:
        gen = generator or GeneratorConfig(seed=seed)
        work = generate(gen, spec.total_gpus, vram=vram or VramModel(kind="class"))
    else:
        work = load_trace(trace, vram=vram)
    if unannotated:
        work = strip_annotations(work)
    lookup: ObservedLookup | None = None
    if sizing_spec.kind == "observed":
        lookup = generated_lookup(work, seed) if sizing_spec.path is None else load_observed(sizing_spec.path)
    vram_model = vram or VramModel(kind="class" if work.kind == "generated" else "proportional")
    _note_unknown_models(work, spec)
    if protocol == "auto":  # openb times are a snapshot (replayed, < 1% of the GPUs are ever busy): use FGD's
        protocol = "fgd" if work.kind == "openb" else "replay"
    load = TUNE_RATIO if load is None else load
    if protocol == "fgd" and load <= 0:
        raise InputError(f"load must be above 0 (got {load})")
    config = EngineConfig(protocol=protocol, load=load, seed=seed)
    result = SimulationResult(
        input={
            "cluster": spec.summary(),
            "workload": work.summary(),
            "vram_model": vram_model.describe(),
            "protocol": protocol,
            "load": load if protocol == "fgd" else None,
            "seed": seed,
            "policies": str(policies) if policies else None,
            "allocator_mode": mode,
            "node_score": node_score or "least-allocated",
            "gpudra_additions": {"consumable_capacity": consumable_capacity, "gpudra_attributes": gpudra_attributes},
            "strategies": list(strategies),
            "sizing": {"spec": sizing_spec.label, "unannotated": unannotated,
                       **(lookup.describe() if lookup is not None else {})},
        }
    )  # fmt: skip
    typical = typical_pods(work.pods)
    runs: list[tuple[str, str]] = []  # (run name, strategy)
    for name in strategies:
        runs.append((name, name))
        if name == "gpudra" and lookup is not None:
            runs.append((OBSERVED_RUN, name))
    if lookup is not None and "gpudra" in strategies:
        result.input["strategies"] = [run for run, _ in runs]
    for run_name, name in runs:
        callback = None if progress is None else _bind(progress, run_name)
        if protocol == "fgd" and name in PEER_POLICIES:  # the FGD paper's baselines as its simulator runs them
            peer = run_peer(spec, work.pods, name, seed, ratio=load, progress=callback)
            result.runs[name] = peer.recorder()
            result.input.setdefault("strategy_details", {})[name] = {"implementation": "simulator.peer_protocol"}
            continue
        options: dict[str, Any] = {}
        if name == "gpudra":  # on the FGD protocol, under its resource model: shares bound by compute too
            options = {
                "policies": policies,
                "mode": mode,
                "compute_bound": protocol == "fgd",
                "node_score": node_score,
                "gpudra_attributes": gpudra_attributes,
            }
            if run_name == OBSERVED_RUN:
                options.update(sizing=lookup, run_name=OBSERVED_RUN)
        if name == "device-plugin" and spec.device_plugin:
            knobs = dict(spec.device_plugin)
            if "drain_max_pods" in knobs:
                options["drain_max_pods"] = int(knobs.pop("drain_max_pods"))
            options.update(knobs)
        strategy = make_strategy(name, seed=seed, **options)
        result.runs[run_name] = run(spec, work.pods, strategy, config, callback, typical)
        granted = getattr(strategy, "granted", None)
        if lookup is not None and isinstance(granted, dict):
            result.sizing[run_name] = granted_vs_observed(work.pods, granted, lookup)
        if name in PEER_POLICIES:  # the replay engine's carry-over of the paper's baseline (departures, queue)
            result.input.setdefault("strategy_details", {})[name] = {"implementation": "simulator.strategies"}
        describe = getattr(strategy, "describe", None)
        if describe is not None:  # e.g. gpudra: the policy directory, allocator mode and what the policies decided
            result.input.setdefault("strategy_details", {})[run_name] = describe()
    return result


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
