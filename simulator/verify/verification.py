"""`gpudra simulate --verify-scheduler`: a sample of the workload through a real control plane, each decision compared
with the simulator's model in the same state; the figures the summary's `verification` holds."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dra.errors import InputError
from dra.gpus import DriverGates
from dra.yamlio import load_yaml, read_source

from ..cluster import ClusterSpec, NodeSpec, default_cluster
from ..cluster_sources import load_cluster
from ..comparison import SimulationConfig, simulate
from ..kpis import Recorder, pending_by_gpus
from ..scheduling import Profile
from ..sizing import strip_annotations
from ..traces import GeneratorConfig, generate, load_trace
from ..vram import VramModel
from ..workload import SimPod, Workload
from .binaries import component_version, find_components
from .compare import ALLOCATOR_MODE, model_ask, tally
from .controlplane import ControlPlane
from .replay import Replayed, replay
from .spread import spread
from .timeline import figures, model_runs, pod_runs

if TYPE_CHECKING:
    from policyengine import PolicySet

__all__ = [
    "model_figures", "model_run", "prepared", "published_driver", "real_pending_by_gpus", "verification_inputs",
    "verify_scheduler", "whole_run_spread",
]  # fmt: skip


def verification_inputs(
    cluster: Path | None, trace: Path | None, *, seed: int = 0, driver: DriverGates | None = None,
    unannotated: bool = False,
) -> tuple[ClusterSpec, list[SimPod]]:  # fmt: skip
    """The cluster and workload `gpudra simulate` runs with these options (the built-in ones by default), every
    node running `driver`'s gates."""
    spec = default_cluster() if cluster is None else load_cluster(str(cluster))
    if driver is not None:
        spec = spec.with_driver_gates(driver)
    if trace is None:
        work = generate(GeneratorConfig(seed=seed), spec.total_gpus, vram=VramModel(kind="class"))
    else:
        work = load_trace(trace)
    if unannotated:
        work = strip_annotations(work)
    return spec, work.pods


def _read_config(path: Path) -> dict[str, Any]:
    """The KubeSchedulerConfiguration as YAML, for the real scheduler (the model reads the same file itself)."""
    text, name = read_source(path)
    documents = [data for data, _ in load_yaml(text, name)]
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise InputError("a KubeSchedulerConfiguration must be one mapping", source=name, line=1)
    return documents[0]


def real_pending_by_gpus(waits: tuple[tuple[int, float, bool], ...]) -> dict[str, float]:
    """GPUs per pod (as text, ascending) -> the mean simulated seconds its pods waited for the real scheduler in the
    replay (the replay's own retry order; pods still held at the end count the time they waited), as
    `strategies[*].pending_by_gpus` is for the model's run."""
    by: dict[int, list[float]] = {}
    for gpus, seconds, _ in waits:
        by.setdefault(gpus, []).append(seconds)
    return {str(g): round(sum(w) / len(w), 3) for g, w in sorted(by.items())}


def published_driver(spec: ClusterSpec, slices: list[dict[str, Any]]) -> dict[str, Any]:
    """The driver gates the verification's nodes ran with and what their ResourceSlices published: devices, and
    shareable devices (`allowMultipleAllocations`, ConsumableShares) beside the model's count of shareable GPUs."""
    devices = [device for item in slices for device in item["spec"].get("devices", ())]
    gates = sorted({gate for node in spec.nodes for gate in node.driver_gates.enabled})
    return {
        "gates": gates,
        "devices": len(devices),
        "shareable_devices": sum(1 for device in devices if device.get("allowMultipleAllocations")),
        "model_shareable_gpus": spec.summary()["shareable_gpus"],
    }


def model_run(
    spec: ClusterSpec, pods: list[SimPod], policies: str | Path | None, profile: Profile, gpudra_attributes: bool,
    seed: int,
) -> Recorder:  # fmt: skip
    """The simulator's gpudra run of `pods` (replay protocol, `profile`): it goes on until every pod ran."""
    work = Workload(list(pods), "verification sample", "jsonl")
    config = SimulationConfig(
        spec, work, ("gpudra",), seed, "replay", policies=policies, scheduler=profile,
        gpudra_attributes=gpudra_attributes,
    )  # fmt: skip
    return simulate(config).runs["gpudra"]


def model_figures(spec: ClusterSpec, pods: list[SimPod], rec: Recorder, cut: float) -> dict[str, Any]:
    """The whole-run figures of one model run of `pods`, cut at `cut`; pods its policies denied are left out."""
    ran = [p for p in pods if p.name in rec.waits]
    return figures(model_runs(ran, rec.placed, rec.waits), cut, spec.total_gpus)


def whole_run_spread(
    spec: ClusterSpec,
    pods: list[SimPod],
    rec: Recorder,
    starts: list[dict[str, float]],
    cut: float,
    others: Sequence[Recorder] = (),
) -> dict[str, Any]:
    """Each real run's whole-run figures (`starts`: the second each pod first ran, one mapping per run) and the
    model's (`rec`; `others`: its runs under other tie-break seeds), all cut at `cut`, and the model against the
    runs' spread (`spread.spread`). Pods the model's policies denied are left out on both sides (the real runs
    never submitted them)."""
    seen = [p for p in pods if p.name in rec.waits]
    model = model_figures(spec, pods, rec, cut)
    more = [model_figures(spec, pods, run, cut) for run in others]
    runs = [figures(pod_runs(seen, found), cut, spec.total_gpus) for found in starts]
    found: dict[str, Any] = {"cut_seconds": cut, "runs": runs, "model": model}
    if more:
        found["model_runs"] = more
    return found | {"spread": spread(model, runs, more)}


def prepared(
    bin_dir: Path | None, scheduler_config: Path | None, policies: str | Path | None
) -> tuple[dict[str, Path], Profile, dict[str, Any] | None, PolicySet]:
    """The binaries, the model's profile, the real scheduler's configuration and the policies of a verification;
    `MissingBinaries` or `InputError` before anything starts."""
    from policyengine import load_policies, shipped_policies_dir
    from simulator.scheduling import DEFAULT_PROFILE, load_scheduler_config

    binaries = find_components(bin_dir)
    profile = DEFAULT_PROFILE if scheduler_config is None else load_scheduler_config(scheduler_config)
    config = None if scheduler_config is None else _read_config(scheduler_config)
    policy_set = load_policies(Path(policies) if policies else shipped_policies_dir())
    if policy_set.errors:
        raise policy_set.errors[0]
    return dict(binaries), profile, config, policy_set


def verify_scheduler(
    spec: ClusterSpec,
    pods: list[SimPod],
    *,
    sample: int,
    replays: int = 1,
    bin_dir: Path | None = None,
    scheduler_config: Path | None = None,
    policies: str | Path | None = None,
    gpudra_attributes: bool = False,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Replay the first `sample` pods (by arrival, with their departures) through kube-scheduler and the model,
    `replays` times (each on a fresh control plane): the decisions of every replay are compared; `pending_by_gpus`
    is the first replay's; `whole_run` sets each replay's whole-run figures against the model's, cut the same way.

    Raises `MissingBinaries` (naming what is missing and how to get it) before anything starts, `InputError` for a
    bad scheduler configuration, `ControlPlaneError` / `ReplayError` when the control plane misbehaves."""
    from simulator.scheduling import node_slices

    if sample < 1:
        raise InputError(f"--sample must be at least 1 (got {sample})")
    if replays < 1:
        raise InputError(f"--replays must be at least 1 (got {replays})")
    binaries, profile, config, policy_set = prepared(bin_dir, scheduler_config, policies)
    chosen = sorted(pods, key=lambda p: p.arrival)[:sample]
    version = component_version(binaries["kube-scheduler"])

    published: list[dict[str, Any]] = []  # every ResourceSlice the real cluster got, to say what it published
    runs: list[Replayed[Any]] = []

    def slices_of(node: NodeSpec) -> list[dict[str, Any]]:  # with the node's driver gates, as the model's
        made = list(node_slices(node, node.name, gpudra_attributes=gpudra_attributes).slices)
        if not runs:  # every replay publishes the same: the first one's are counted
            published.extend(made)
        return made

    started = time.perf_counter()
    for _ in range(replays):
        cp = ControlPlane.launch(binaries, scheduler_config=config)
        try:
            runs.append(
                replay(
                    cp,
                    spec,
                    chosen,
                    policies=policy_set,
                    slices_of=slices_of,
                    ask=model_ask(profile, seed=seed),
                    progress=progress,
                )  # fmt: skip
            )
        finally:
            cp.stop()
    replayed = runs[0]
    cutoff = max(p.arrival for p in chosen)  # the replay stops once the last arrival is decided
    rec = model_run(spec, chosen, policies, profile, gpudra_attributes, seed)
    model_pending = pending_by_gpus(rec, until=cutoff, arrivals={p.name: p.arrival for p in chosen})
    steps = [step for run in runs for step in run.steps]
    found = tally(steps).figures()
    pools = {node.name: node.pool for node in spec.nodes}
    bound = [step.real for step in replayed.steps if step.real.node is not None]
    head = {key: found.pop(key) for key in ("decisions", "feasibility_agreement", "node_in_top_set", "same_devices")}
    return {
        **head,
        "kube_scheduler_version": version,
        **found,
        "sample": len(chosen),
        "replays": replays,
        "decisions_per_replay": [len(run.steps) for run in runs],
        "departures": replayed.departures,
        "denied": replayed.denied,
        "bound_by_policy": dict(Counter(real.admitted.policy for real in bound).most_common()),
        "bound_by_pool": dict(Counter(pools.get(str(real.node), "?") for real in bound).most_common()),
        "bound_multi_device": sum(1 for real in bound if len(real.devices) >= 2),
        "pending_by_gpus": real_pending_by_gpus(replayed.waits),
        # the model's own run of the same sample, waits cut at the same point: the figure to set against the real one
        "model_pending_by_gpus": model_pending,
        "pending_cutoff_seconds": cutoff,
        "gpu_pods_still_pending": sum(1 for _, _, placed in replayed.waits if not placed),
        "whole_run": whole_run_spread(spec, chosen, rec, [run.starts for run in runs], cutoff),
        "driver": published_driver(spec, published),
        "scheduler_config": None if scheduler_config is None else str(scheduler_config),
        "allocator_mode": ALLOCATOR_MODE,
        "model_seconds": round(sum(run.model_seconds for run in runs), 1),
        "wall_seconds": round(time.perf_counter() - started, 1),
    }
