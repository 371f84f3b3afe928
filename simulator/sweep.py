"""Sweeps: a grid over clusters, traces, policy directories, strategies, allocator modes and seeds.

Config (YAML):

    clusters: [built-in, cluster.yaml, openb_node_list_all_node.csv]
    traces: [generated, openb_pod_list_default.csv]      # default: generated
    policies: [null, ./policies]                          # for gpudra; null = the shipped policies
    strategies: [device-plugin, dra-whole, gpudra, fgd]
    modes: [upstream]                                     # gpudra allocator mode(s); scored is a what-if
    node_scores: [least-allocated]                        # gpudra node ranking(s); fragmentation: FGD's score
    seeds: [0, 1, 2]
    protocol: auto                                        # replay | fgd | auto
    load: 1.3                                             # fgd: workload tuned to 1.3 x capacity
    consumable_capacity: false                            # driver 0.5's ConsumableShares on every node
    gpudra_attributes: false                              # gpudra's addition: gpu.gpudra.io/nvlinkGroup
    output: sweep-out                                     # results.csv, results.json, index.html, plot
    backend: process                                      # process (all cores) | ray (if installed)
    workers: 0                                            # 0 = all cores

Every grid point is one independent job; results come back as one table (CSV and JSON) plus an HTML page.
"""

from __future__ import annotations

import csv
import html
import itertools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dra.documents import parse_yaml
from dra.errors import InputError

from .comparison import SimulationConfig, simulate
from .driver import simulated_driver
from .parallel import parallel_map
from .strategies import NODE_SCORES

__all__ = ["SweepConfig", "Job", "load_sweep", "run_job", "run_sweep"]

_KEYS = {"clusters", "traces", "policies", "strategies", "modes", "node_scores", "seeds", "protocol", "load", "output",
         "backend", "workers", "consumable_capacity", "gpudra_attributes"}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Job:
    cluster: str
    trace: str
    policies: str | None
    strategy: str
    mode: str
    seed: int
    protocol: str
    load: float | None
    node_score: str = "least-allocated"
    consumable_capacity: bool = False
    gpudra_attributes: bool = False


@dataclass(frozen=True, slots=True)
class SweepConfig:
    jobs: tuple[Job, ...]
    output: Path
    backend: str
    workers: int


def _list(data: dict[str, Any], key: str, default: list[Any]) -> list[Any]:
    value = data.get(key, default)
    return list(value) if isinstance(value, list) else [value]


def load_sweep(path: str | Path) -> SweepConfig:
    """Read a sweep file; relative paths are resolved against the file's folder."""
    path = Path(path)
    try:
        documents = parse_yaml(path)
    except InputError as exc:
        raise InputError(f"cannot read sweep config: {exc.message}", source=str(path), line=exc.line) from exc
    data = documents[0] if documents else {}
    if not isinstance(data, dict):
        raise InputError("a sweep config is a mapping", source=str(path), line=1)
    unknown = set(data) - _KEYS
    if unknown:
        raise InputError(f"unknown keys {sorted(unknown)} (expected {sorted(_KEYS)})", source=str(path))

    def resolve(value: Any, builtin: str) -> Any:
        if value is None or value == builtin:
            return value
        candidate = Path(str(value))
        return str(candidate if candidate.is_absolute() else (path.parent / candidate))

    clusters = [resolve(c, "built-in") for c in _list(data, "clusters", ["built-in"])]
    traces = [resolve(t, "generated") for t in _list(data, "traces", ["generated"])]
    policies = [None if p is None else resolve(p, "") for p in _list(data, "policies", [None])]
    strategies = [str(s) for s in _list(data, "strategies", ["device-plugin", "gpudra"])]
    modes = [str(m) for m in _list(data, "modes", ["upstream"])]
    node_scores = [str(n) for n in _list(data, "node_scores", ["least-allocated"])]
    for name in node_scores:
        if name not in NODE_SCORES:
            raise InputError(f"node_scores: unknown {name!r} (known: {', '.join(NODE_SCORES)})", source=str(path))
    seeds = [int(s) for s in _list(data, "seeds", [0])]
    protocol = str(data.get("protocol", "auto"))
    load = None if data.get("load") is None else float(data["load"])
    additions = {}
    for key in ("consumable_capacity", "gpudra_attributes"):
        value = data.get(key, False)
        if not isinstance(value, bool):
            raise InputError(f"{key} must be true or false (got {value!r})", source=str(path))
        additions[key] = value
    jobs = []
    for cluster, trace, strategy, seed in itertools.product(clusters, traces, strategies, seeds):
        gpudra = strategy == "gpudra"
        variants = (
            itertools.product(policies, modes, node_scores) if gpudra else [(None, "upstream", "least-allocated")]
        )
        for policy, mode, node_score in variants:
            jobs.append(Job(cluster, trace, policy, strategy, mode, seed, protocol, load, node_score, **additions))
    backend = str(data.get("backend", "process"))
    if backend not in ("process", "ray"):
        raise InputError(f"backend must be process or ray (got {backend!r})", source=str(path))
    output = Path(resolve(data.get("output", "sweep-out"), ""))
    return SweepConfig(tuple(jobs), output, backend, int(data.get("workers", 0)))


def run_job(job: Job) -> dict[str, Any]:
    """One grid point: the job's parameters followed by its summary row."""
    result = simulate(
        SimulationConfig(
            None if job.cluster == "built-in" else job.cluster,
            None if job.trace == "generated" else job.trace,
            policies=job.policies,
            strategies=(job.strategy,),
            seed=job.seed,
            protocol=job.protocol,
            load=job.load,
            allocator_mode=job.mode,
            node_score=job.node_score,
            driver=simulated_driver(consumable_capacity=job.consumable_capacity),
            gpudra_attributes=job.gpudra_attributes,
        )
    )
    summary = result.summary()
    row: dict[str, Any] = {
        "cluster": job.cluster, "trace": job.trace, "policies": job.policies or "", "strategy": job.strategy,
        "mode": job.mode if job.strategy == "gpudra" else "",
        "node_score": job.node_score if job.strategy == "gpudra" else "", "seed": job.seed,
        "protocol": summary["input"]["protocol"],
    }  # fmt: skip
    kpis = dict(summary["strategies"][job.strategy])
    at_load = kpis.pop("at_load", {})
    for nested in ("by_gpu_model", "by_pod_size"):  # a sweep's row is flat: the breakdowns are simulate --report's
        kpis.pop(nested, None)
    row.update(kpis)
    for load, values in at_load.items():  # the FGD protocol's KPIs as flat columns, one per KPI and load
        row.update({f"{key}_at_{load}": value for key, value in values.items()})
    row["wall_seconds"] = round(result.runs[job.strategy].wall_seconds, 3)
    return row


def run_sweep(config: SweepConfig, progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """Run every job (all cores, or Ray), write results.csv/results.json/index.html, return the rows."""
    jobs = list(config.jobs)
    workers = min(config.workers or os.cpu_count() or 1, max(1, len(jobs)))
    with parallel_map(config.backend, workers) as mapped:
        rows = mapped(run_job, jobs, None if progress is None else lambda done: progress(done, len(jobs)))
    write_results(rows, config.output)
    return rows


def write_results(rows: list[dict[str, Any]], output: Path) -> None:
    output.mkdir(parents=True, exist_ok=True)
    (output / "results.json").write_text(json.dumps(rows, indent=2) + "\n")
    if not rows:
        return
    with (output / "results.csv").open("w", newline="") as handle:
        keys = list(dict.fromkeys(k for r in rows for k in r))  # runs record more or fewer KPIs (the FGD peer)
        writer = csv.DictWriter(handle, fieldnames=keys, restval="")
        writer.writeheader()
        writer.writerows(rows)
    _plot(rows, output / "allocation.png")
    head = "".join(f"<th>{html.escape(k)}</th>" for k in keys)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(r.get(k, '')))}</td>" for k in keys) + "</tr>" for r in rows)
    (output / "index.html").write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>gpudra sweep</title>"
        "<style>body{font-family:system-ui;margin:2em}td,th{border:1px solid #ccc;padding:.2em .5em}"
        "table{border-collapse:collapse;font-size:.85em}</style></head><body><h1>gpudra sweep</h1>"
        "<p><a href='results.csv'>results.csv</a> · <a href='results.json'>results.json</a></p>"
        f"<img src='allocation.png' alt='allocation by strategy'><table><tr>{head}</tr>{body}</table></body></html>\n"
    )


def _plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # FGD-protocol sweeps: the paper's metric at 100 % arrived demand; otherwise the run's allocation ratio
    at_load = all(row.get("gpu_allocation_pct_at_100") is not None for row in rows)
    groups: dict[str, list[float]] = {}
    for row in rows:
        label = row["strategy"] + (f" ({row['mode']}, {row['node_score']})" if row["mode"] else "")
        value = float(row["gpu_allocation_pct_at_100"]) / 100 if at_load else float(row["gpu_allocation_ratio"])
        groups.setdefault(label, []).append(value)
    fig, ax = plt.subplots(figsize=(8, 4), dpi=110)
    names = list(groups)
    ax.bar(names, [sum(v) / len(v) for v in groups.values()], color="#4c72b0")
    ax.set_ylabel("GPU allocation at 100 % arrived" if at_load else "mean GPU allocation ratio")
    ax.set_ylim(0, 1)
    plt.setp(ax.get_xticklabels(), rotation=25, ha="right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
