"""The terminal side of `gpudra simulate`: a rich progress bar on stderr, then a table or the JSON summary."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from dra.errors import GpudraError

from .run import DEFAULT_STRATEGIES, SimulationResult, simulate
from .strategies import STRATEGY_NAMES

__all__ = ["simulate_command"]

_COLUMNS = [
    ("pods_placed", "placed"),
    ("pods_pending", "pending"),
    ("gpu_allocation_ratio", "GPU alloc"),
    ("vram_waste_ratio", "VRAM waste"),
    ("fragmentation_ratio", "frag"),
    ("unallocated_gpus", "unalloc GPUs"),
    ("nvlink_satisfied_ratio", "NVLink ok"),
    ("mig_reconfigurations", "MIG reconf"),
    ("drained_node_hours", "drained h"),
    ("mean_pending_seconds", "wait s"),
]


def simulate_command(
    *,
    cluster: Path | None,
    trace: Path | None,
    policies: Path | None,
    strategies: str | None,
    seed: int,
    report: Path | None,
    as_json: bool,
    protocol: str = "auto",
    load: float = 1.0,
    mode: str = "scored",
) -> int:
    """Run, print, write the report; returns the exit code (2 on bad input, with file:line on stderr)."""
    err = Console(stderr=True)
    names = tuple(s.strip() for s in strategies.split(",") if s.strip()) if strategies else DEFAULT_STRATEGIES
    unknown = [n for n in names if n not in STRATEGY_NAMES]
    if unknown:
        err.print(f"[red]error:[/red] unknown strategies {unknown}; known: {', '.join(STRATEGY_NAMES)}")
        return 2
    if mode not in ("upstream", "scored"):
        err.print(f"[red]error:[/red] --allocator-mode must be upstream or scored (got {mode!r})")
        return 2
    try:
        with Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=err, transient=True, disable=not err.is_terminal,
        ) as bar:  # fmt: skip
            tasks: dict[str, Any] = {}

            def progress(name: str, done: int, total: int) -> None:
                if name not in tasks:
                    tasks[name] = bar.add_task(name, total=total)
                bar.update(tasks[name], completed=done)

            result = simulate(
                cluster, trace, policies=policies, strategies=names, seed=seed, protocol=protocol, load=load,
                mode=mode, progress=progress,
            )  # fmt: skip
    except (GpudraError, OSError) as exc:
        err.print(f"[red]error:[/red] {exc}", markup=False, highlight=False)
        return 2
    summary = result.summary()
    if report is not None:
        from .report import write_report

        index = write_report(result, report)
        err.print(f"report: {index}")
    if as_json:
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    else:
        _print_table(result)
    return 0


def _print_table(result: SimulationResult) -> None:
    out = Console()
    summary = result.summary()
    info = summary["input"]
    skipped = info["workload"]["skipped"] + info["cluster"]["skipped"]
    out.print(
        f"cluster {info['cluster']['name']}: {info['cluster']['nodes']} nodes, {info['cluster']['gpus']} GPUs; "
        f"workload {info['workload']['source']}: {info['workload']['pods']} pods"
        + (f" ({skipped} skipped, see --json)" if skipped else "")
    )
    table = Table(show_edge=False)
    table.add_column("metric")
    for name in summary["strategies"]:
        table.add_column(name, justify="right")
    for key, title in _COLUMNS:
        table.add_row(title, *(_fmt(row[key]) for row in summary["strategies"].values()))
    out.print(table)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if value < 10 else f"{value:.0f}"
    return str(value)


def sweep_command(config: Path) -> int:
    """Run a sweep with a progress bar on stderr; prints where the results are (exit 2 on bad input)."""
    from .sweep import load_sweep, run_sweep

    err = Console(stderr=True)
    try:
        sweep = load_sweep(config)
        with Progress(
            TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err,
            transient=True, disable=not err.is_terminal,
        ) as bar:  # fmt: skip
            task = bar.add_task("sweep", total=len(sweep.jobs))
            rows = run_sweep(sweep, lambda done, total: bar.update(task, completed=done))
    except (GpudraError, OSError) as exc:
        err.print(f"[red]error:[/red] {exc}", markup=False, highlight=False)
        return 2
    Console().print(f"{len(rows)} runs -> {sweep.output / 'results.csv'}, {sweep.output / 'index.html'}")
    return 0
