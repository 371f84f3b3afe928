"""Metrics of one run: the time series the engine records and the stable per-strategy summary.

Definitions (all ratios in [0, 1]; see docs/simulator.md):
- allocation ratio: GPU compute *requested* by running pods / GPUs in the cluster (a 0.3-GPU pod counts 0.3
  even when it holds a whole GPU) — the share of the fleet doing work someone asked for;
- held ratio: GPU compute *held* (reserved, unusable by others) / GPUs; unallocated GPUs = GPUs - held;
- VRAM waste: 1 - VRAM needed / VRAM held, over running pods (needed is capped at held per GPU);
- fragmentation: the FGD measure sum_n F_n(M) / sum_n free_n (`simulator.frag`).
In `replay` runs the summary averages over time (weighted by how long each state lasted) from the first to the
last arrival; in `fgd` runs (no departures) it is the state once arrivals reach the target load.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .breakdown import GroupLedger, pod_size, size_order
from .frag import TypicalPod, frag_amount
from .state import PLAIN, STATIC, ClusterState
from .workload import SimPod

__all__ = [
    "Recorder", "Sample", "alloc_pct_at", "cluster_fragmentation", "gpu_occupancy", "load_kpis", "pending_by_gpus",
    "summarize",
]  # fmt: skip

KPI_LOADS = (80, 100, 130)  # arrived demand (% of capacity) at which the FGD protocol's KPIs are read


@dataclass(slots=True)
class Sample:
    time: float
    allocated: float  # requested GPUs of running pods
    held: float  # GPUs held
    vram_needed: float  # MiB
    vram_held: float  # MiB
    pending: int
    pending_gpu: int  # pending pods that want GPUs
    running: int
    fragmentation: float | None = None  # FGD ratio; sampled less often (costly)
    arrived: float = 0.0  # requested GPUs of all pods arrived so far / GPUs (the FGD protocol's x axis)


def cluster_fragmentation(
    state: ClusterState, typical: tuple[TypicalPod, ...], cache: dict[int, tuple[float, int]]
) -> float:
    """sum_n F_n(M) / sum_n free GPU milli over nodes that are up; 0 when nothing is free."""
    frag = free = 0.0
    for cid, members in state.classes.items():
        found = cache.get(cid)
        if found is None:
            node = state.representative(cid)
            milli = tuple(sorted(_node_free(node)))
            found = cache[cid] = (frag_amount(node.free_cpu, milli, node.spec.model_label, typical), sum(milli))
        frag += found[0] * len(members)
        free += found[1] * len(members)
    return min(1.0, frag / free) if free else 0.0


def gpu_occupancy(state: ClusterState) -> dict[str, int]:
    """GPUs with nothing held on them (`gpus_unused`) and GPUs partly held (`gpus_partly_held`: a share or some
    MIG slices held, the rest free), over nodes that are up."""
    unused = partly = 0
    for members in state.classes.values():
        for index in members:
            for free in _node_free(state.nodes[index]):
                unused += free >= 1000
                partly += 0 < free < 1000
    return {"gpus_unused": unused, "gpus_partly_held": partly}


def _node_free(node: Any) -> list[int]:
    out = []
    for gpu in node.gpus:
        if gpu.mode in (PLAIN, STATIC):  # memory shares may overcommit compute: free never goes below 0
            out.append(max(0, gpu.free_milli))
        else:
            out.append(0 if gpu.whole else (7 - gpu.compute) * 1000 // 7)
    return out


@dataclass(slots=True)
class Recorder:
    """Collects samples and event counters for one strategy's run."""

    strategy: str
    total_gpus: int
    protocol: str
    samples: list[Sample] = field(default_factory=list)
    pods_total: int = 0
    placed: set[str] = field(default_factory=set)
    waits: dict[str, float] = field(default_factory=dict)  # pod -> seconds pending before it first ran
    gpus: dict[str, int] = field(default_factory=dict)  # pod -> GPUs it asks for (0: a CPU pod)
    multi_gpu: int = 0
    multi_gpu_nvlink: int = 0
    mig_reconfigurations: int = 0
    drained_node_seconds: float = 0.0
    evicted_pods: int = 0
    partitions_created: int = 0
    window: tuple[float, float] = (0.0, 0.0)
    pending_at_end: int = 0
    wall_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    # per GPU model and pod size (`simulator.breakdown`); empty where a run does not record them (the FGD peer)
    model_gpus: dict[str, int] = field(default_factory=dict)  # GPU model -> GPUs of it in the cluster
    sizes: dict[str, tuple[str, str]] = field(default_factory=dict)  # pod -> its size (GPU pods only)
    models: dict[str, str] = field(default_factory=dict)  # pod -> the GPU model it first ran on
    restricted: dict[str, tuple[str, ...]] = field(default_factory=dict)  # never-placed pod -> its allowed models
    ledger: GroupLedger = field(default_factory=GroupLedger)
    occupancy: dict[str, int] | None = None  # GPUs with nothing held / partly held, at the end (FGD protocol)

    def note_pod(self, pod: SimPod, wait: float, model: str | None) -> None:
        """A pod's first placement (`model`: the GPU model it ran on) or, `model` None, a pod never placed."""
        self.waits[pod.name] = wait
        self.gpus[pod.name] = pod.num_gpu if pod.is_gpu else 0
        if pod.is_gpu:
            self.sizes[pod.name] = pod_size(pod)
            if model:
                self.models[pod.name] = model
            elif pod.gpu_models:
                self.restricted[pod.name] = pod.gpu_models

    def sample(
        self, state: ClusterState, now: float, pending: int, pending_gpu: int, frag: float | None, arrived: float = 0.0
    ) -> None:
        self.ledger.window = self.window
        self.ledger.advance(now, {"model": state.by_model, "size": state.by_size})
        self.samples.append(
            Sample(
                time=now,
                allocated=state.requested_milli / 1000,
                held=state.held_milli / 1000,
                vram_needed=float(state.needed_vram),
                vram_held=float(state.held_vram),
                pending=pending,
                pending_gpu=pending_gpu,
                running=sum(len(n.pods) for n in state.nodes) if frag is not None else -1,
                fragmentation=frag,
                arrived=arrived,
            )
        )


def alloc_pct_at(arrived_pct: list[float], used_pct: list[float], load: int) -> float | None:
    """The FGD paper's allocation at `load` % arrived, as its scripts compute it: the mean of round(used %, 2)
    over the pod events whose round(arrived %) is `load` (`load` +- 1 when none is); None past the run's end."""
    pairs = [(round(a), round(u, 2)) for a, u in zip(arrived_pct, used_pct, strict=True)]
    values = [u for a, u in pairs if a == load] or [u for a, u in pairs if load - 1 <= a <= load + 1]
    return round(sum(values) / len(values), 2) if values else None


def load_kpis(rec: Recorder) -> dict[str, dict[str, float | int | None]]:
    """Per KPI load: GPU allocation % (the paper's metric), the fragmentation ratio (mean of the samples taken
    at that rounded load, else the nearest sample) and the pods failed by then."""
    gpus = max(1, rec.total_gpus)
    arrived = [s.arrived * 100 for s in rec.samples]
    used = [s.allocated / gpus * 100 for s in rec.samples]
    frags = [(a, s.fragmentation) for a, s in zip(arrived, rec.samples, strict=True) if s.fragmentation is not None]
    out: dict[str, dict[str, float | int | None]] = {}
    for load in KPI_LOADS:
        alloc = alloc_pct_at(arrived, used, load)
        if alloc is None:
            out[str(load)] = {"gpu_allocation_pct": None, "fragmentation_ratio": None, "failed_pods": None}
            continue
        band = [f for a, f in frags if round(a) == load]
        if not band and frags:
            band = [min(frags, key=lambda af: abs(af[0] - load))[1]]
        failed = [s.pending for a, s in zip(arrived, rec.samples, strict=True) if round(a) <= load]
        out[str(load)] = {
            "gpu_allocation_pct": alloc,
            "fragmentation_ratio": round(sum(band) / len(band), 6) if band else None,
            "failed_pods": failed[-1] if failed else 0,
        }
    return out


def _weighted(samples: list[Sample], start: float, end: float) -> list[tuple[Sample, float]]:
    """Each sample with how long it held within [start, end] (a state lasts until the next sample)."""
    out = []
    for i, s in enumerate(samples):
        nxt = samples[i + 1].time if i + 1 < len(samples) else end
        lo, hi = max(s.time, start), min(nxt, end)
        if hi > lo:
            out.append((s, hi - lo))
    return out


def summarize(rec: Recorder) -> dict[str, Any]:
    """The stable summary for `--json` (keys documented in docs/simulator.md)."""
    gpus = max(1, rec.total_gpus)
    if not rec.samples:
        alloc = waste = frag = 0.0
        unallocated = float(rec.total_gpus)
    elif rec.protocol == "fgd" or rec.window[1] <= rec.window[0]:
        last = rec.samples[-1]
        alloc = last.allocated / gpus
        waste = 1 - last.vram_needed / last.vram_held if last.vram_held else 0.0
        frags = [s.fragmentation for s in rec.samples if s.fragmentation is not None]
        frag = frags[-1] if frags else 0.0
        unallocated = rec.total_gpus - last.held
    else:
        start, end = rec.window
        weighted = _weighted(rec.samples, start, end)
        span = sum(w for _, w in weighted) or 1.0
        alloc = sum(s.allocated * w for s, w in weighted) / span / gpus
        held_vram = sum(s.vram_held * w for s, w in weighted)
        waste = 1 - sum(s.vram_needed * w for s, w in weighted) / held_vram if held_vram else 0.0
        frags = [s.fragmentation for s in rec.samples if s.fragmentation is not None and start <= s.time <= end]
        frag = sum(frags) / len(frags) if frags else 0.0
        saturated = [(s, w) for s, w in weighted if s.pending_gpu > 0]
        if saturated:
            unallocated = sum((rec.total_gpus - s.held) * w for s, w in saturated) / sum(w for _, w in saturated)
        else:
            unallocated = rec.total_gpus - max(s.held for s in rec.samples)
    waits = list(rec.waits.values())
    timeless = rec.protocol == "fgd"
    out: dict[str, Any] = {
        "pods_total": rec.pods_total,
        "pods_placed": len(rec.placed),
        "pods_pending": rec.pending_at_end,
        "gpu_allocation_ratio": round(_unit(alloc), 6),
        "vram_waste_ratio": round(_unit(waste), 6),
        "fragmentation_ratio": round(_unit(frag), 6),
        "unallocated_gpus": round(max(0.0, unallocated), 3),
        "nvlink_satisfied_ratio": round(rec.multi_gpu_nvlink / rec.multi_gpu, 6) if rec.multi_gpu else 1.0,
        "mig_reconfigurations": rec.mig_reconfigurations,
        "drained_node_hours": round(rec.drained_node_seconds / 3600, 3),
        # the FGD protocol has no time (pods arrive in order and never leave): no wait to state (None, not 0)
        "mean_pending_seconds": None if timeless else round(sum(waits) / len(waits), 3) if waits else 0.0,
        "pending_by_gpus": None if timeless else pending_by_gpus(rec),
        "evicted_pods": rec.evicted_pods,
        "on_the_fly_partitions": rec.partitions_created,
        "multi_gpu_pods": rec.multi_gpu,
    }
    for key in rec.extra.get("unmodelled", ()):  # e.g. the FGD paper's baselines: no VRAM, no NVLink
        out[key] = None
    if rec.occupancy is not None:
        out.update(rec.occupancy)
    if rec.model_gpus:
        out["by_gpu_model"] = by_gpu_model(rec)
        out["by_pod_size"] = by_pod_size(rec)
    if rec.protocol == "fgd":
        out["at_load"] = load_kpis(rec)
    return out


def _ratio(part: float, whole: float) -> float | None:
    return round(_unit(part / whole), 6) if whole else None


def by_gpu_model(rec: Recorder) -> dict[str, dict[str, Any]]:
    """Per GPU model in the cluster: its GPUs, the allocation and held ratios of those GPUs, their VRAM waste (as
    the summary averages them), the pods that first ran on it and the GPU pods never placed that may only run on
    some models, this one among them."""
    means = rec.ledger.means("model", final=rec.protocol == "fgd")
    placed: dict[str, int] = {}
    for model in rec.models.values():
        placed[model] = placed.get(model, 0) + 1
    out = {}
    for model, gpus in sorted(rec.model_gpus.items()):
        req, held, need, held_vram = means.get(model, (0.0, 0.0, 0.0, 0.0))
        out[model] = {
            "gpus": gpus,
            "gpu_allocation_ratio": _ratio(req / 1000, gpus),
            "held_ratio": _ratio(held / 1000, gpus),
            "vram_waste_ratio": _ratio(held_vram - need, held_vram),
            "pods_placed": placed.get(model, 0),
            "pods_never_placed_restricted_to_it": sum(1 for m in rec.restricted.values() if model in m),
        }
    return out


def by_pod_size(rec: Recorder) -> dict[str, dict[str, Any]]:
    """Per pod size (`<GPUs> GPU, <VRAM per GPU bucket>`): GPU pods, placed, never placed, their mean wait (None in
    the FGD protocol), their share of the cluster's GPUs (requested compute / all GPUs) and their VRAM waste."""
    means = rec.ledger.means("size", final=rec.protocol == "fgd")
    groups: dict[tuple[str, str], list[str]] = {}
    for name, size in rec.sizes.items():
        groups.setdefault(size, []).append(name)
    gpus = max(1, rec.total_gpus)
    out = {}
    for size in sorted(set(groups) | {k for k in means if isinstance(k, tuple)}, key=size_order):
        names = groups.get(size, [])
        req, _, need, held_vram = means.get(size, (0.0, 0.0, 0.0, 0.0))
        waits = [rec.waits[n] for n in names]
        placed = sum(1 for n in names if n in rec.placed)
        out[f"{size[0]} GPU, {size[1]}"] = {
            "gpus_per_pod": size[0],
            "vram_per_gpu": size[1],
            "pods": len(names),
            "pods_placed": placed,
            "pods_never_placed": len(names) - placed,
            "mean_pending_seconds": None if rec.protocol == "fgd" or not waits else round(sum(waits) / len(waits), 3),
            "gpu_allocation_ratio": round(_unit(req / 1000 / gpus), 6),
            "vram_waste_ratio": _ratio(held_vram - need, held_vram),
        }
    return out


def pending_by_gpus(
    rec: Recorder, *, until: float | None = None, arrivals: dict[str, float] | None = None
) -> dict[str, float]:
    """GPUs per pod (as text, ascending) -> the mean seconds its GPU pods waited before they first ran (pods still
    pending at the end count the time they waited). With `until` (and each pod's arrival), waits are cut off there,
    as a replay that stops at `until` counts them: a pod placed later, or never, waited `until - arrival`."""
    by: dict[int, list[float]] = {}
    for name, wait in rec.waits.items():
        gpus = rec.gpus.get(name, 0)
        if gpus:
            if until is not None:
                if arrivals is None or name not in arrivals:
                    raise ValueError(f"pending_by_gpus: no arrival for pod {name!r} to cut its wait at {until}")
                wait = min(wait, until - arrivals[name])
            by.setdefault(gpus, []).append(wait)
    return {str(g): round(sum(w) / len(w), 3) for g, w in sorted(by.items())}


def _unit(value: float) -> float:
    return min(1.0, max(0.0, value))
