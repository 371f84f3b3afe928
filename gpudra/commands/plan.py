"""`gpudra plan POOLS`: the smallest cluster of the candidate pools that meets a target, per strategy, with its GPUs,
cost and power and what each DRA strategy saves against the device plugin. Wiring only: the search is
`simulator.plan`. Exit code 2 on bad input, naming the file and field."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from dra.errors import GpudraError

from ..options import OptionError, strategy_names
from ..outcome import Outcome
from ..signature import add_command
from ..terminal import progress_bar, styled
from .simulate import input_error

if TYPE_CHECKING:
    from rich.table import Table

    from simulator.plan import PlanConfig


@dataclass(frozen=True, slots=True)
class PlanOptions:
    """`gpudra plan`'s options as typer shows them (the command's one signature)."""

    pools: Annotated[
        Path, typer.Argument(help="Plan file (YAML/JSON): pools, each a cluster spec pool with min and max nodes.")
    ]
    target: Annotated[
        str,
        typer.Option(
            "--target",
            help="What the cluster must achieve: p95-pending<=10m (any percentile; s, m, h), placed (every GPU pod "
            "placed as it arrives), allocation>=0.6 (with a pending clause), joined by commas.",
        ),
    ] = "p95-pending<=10m"
    cluster: Annotated[
        Path | None,
        typer.Option("--cluster", help="The cluster the generated workload's load is drawn for (default: built-in)."),
    ] = None
    trace: Annotated[Path | None, typer.Option("--trace", help="openb pod CSV or gpudra JSONL of Pod specs.")] = None
    pods: Annotated[int, typer.Option("--pods", help="Pods of the generated workload (no --trace).")] = 1200
    prices: Annotated[
        Path | None,
        typer.Option("--prices", help="Prices file: currency, and per GPU model {gpu_hour, watts}; cost and power."),
    ] = None
    strategies: Annotated[
        str | None, typer.Option("--strategies", help="Comma-separated (default device-plugin,dra-whole,gpudra).")
    ] = None
    policies: Annotated[Path | None, typer.Option("--policies", help="Policy directory for the gpudra strategy.")] = (
        None
    )
    driver_gates: Annotated[
        str,
        typer.Option(
            "--driver-gates", help="NVIDIA DRA driver 0.5's gates: ConsumableShares, FabricManagerPartitioning."
        ),
    ] = ""
    seed: Annotated[int, typer.Option("--seed", help="Seed of the generator and of every simulation.")] = 0
    tie_seeds: Annotated[
        int,
        typer.Option(
            "--tie-seeds",
            min=1,
            help="Run each probe under this many tie-break seeds (--seed, --seed + 1, ...: kube-scheduler's random "
            "pick among tied nodes) and accept a size only if every run meets the target; figures are the worst run's.",
        ),
    ] = 1
    workers: Annotated[int, typer.Option("--workers", help="Parallel simulations (0: every core).")] = 0
    ray: Annotated[bool, typer.Option("--ray", help="Run the simulations on a Ray cluster (RAY_ADDRESS).")] = False
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON summary.")] = False


def plan_config(options: PlanOptions) -> PlanConfig:
    """The simulator's plan config from the options (`OptionError` or `GpudraError` naming the option or field)."""
    from simulator.driver import simulated_driver
    from simulator.plan import PLAN_STRATEGIES, PlanConfig, plan_workload
    from simulator.plan_inputs import load_pools, load_prices, parse_target
    from simulator.strategies import STRATEGY_NAMES

    names = strategy_names(options.strategies, STRATEGY_NAMES, PLAN_STRATEGIES)
    if options.pods < 1:
        raise OptionError(f"--pods must be >= 1 (got {options.pods})")
    pools = load_pools(options.pools)
    models = tuple(dict.fromkeys(p.model for p in pools.pools))
    prices = None if options.prices is None else load_prices(options.prices, models)
    return PlanConfig(
        pools, parse_target(options.target), plan_workload(options.trace, options.cluster, options.pods, options.seed),
        names, options.seed, None if options.policies is None else str(options.policies),
        simulated_driver(options.driver_gates), prices, "ray" if options.ray else "process", options.workers,
        tie_seeds=options.tie_seeds,
    )  # fmt: skip


def plan(options: PlanOptions) -> Outcome:
    """Search with a progress bar on stderr; the table (or JSON) of the smallest cluster per strategy."""
    from simulator.plan import plan as run

    err = Console(stderr=True)
    try:
        config = plan_config(options)
        with progress_bar("plan", err) as bar:
            task = bar.add_task("plan", total=None)
            result = run(config, lambda done, total: bar.update(task, completed=done, total=total))
    except (OptionError, GpudraError, OSError) as exc:
        return input_error(exc)
    summary = result.summary()
    if options.as_json:
        return Outcome(stdout=json.dumps(summary, indent=2) + "\n")
    return Outcome(stdout=styled(_table(summary)) + _savings(summary))


def _money(value: float | None, currency: str | None) -> str:
    return "-" if value is None else f"{value:,.0f} {currency}"


def _table(summary: dict[str, Any]) -> Table:
    from rich.table import Table

    pending = next(iter(next(iter(summary["strategies"].values()))["pending_seconds"]))
    seeds = summary["tie_seeds"]
    title = f"Smallest cluster meeting {summary['target']} ({summary['workload']['pods']} pods)"
    if seeds > 1:
        title += f" under each of {seeds} tie-break seeds (figures: the worst run)"
    table = Table(title=title)
    for column in ("strategy", "nodes", "GPUs", "cost/month", "power kW", f"{pending} pending s", "simulations"):
        table.add_column(column, justify="left" if column in ("strategy", "nodes") else "right")
    for name, found in summary["strategies"].items():
        table.add_row(
            name, ", ".join(f"{pool} {n}" for pool, n in found["nodes"].items()), str(found["gpus"]),
            _money(found["cost_per_month"], summary["currency"]),
            "-" if found["power_kw"] is None else f"{found['power_kw']:.1f}",
            str(found["pending_seconds"][pending]), str(found["simulations"]),
        )  # fmt: skip
    return table


def _savings(summary: dict[str, Any]) -> str:
    lines = []
    for name, saved in summary["savings_vs_device_plugin"].items():
        cost = (
            ""
            if saved["cost_per_month"] is None
            else f", {_money(saved['cost_per_month'], summary['currency'])} a month"
        )
        power = "" if saved["power_kw"] is None else f", {saved['power_kw']:.1f} kW"
        pct = "" if saved["gpus_pct"] is None else f" ({saved['gpus_pct']:g}%)"
        lines.append(f"{name} vs device-plugin: saves {saved['nodes']} nodes, {saved['gpus']} GPUs{pct}{cost}{power}")
    seeds = summary["tie_seeds"]
    if seeds > 1:
        for name, found in summary["strategies"].items():
            for fewer in found["one_node_fewer"]:
                nodes = ", ".join(f"{pool} {n}" for pool, n in fewer["nodes"].items())
                lines.append(f"{name} with {nodes}: met the target in {fewer['runs_meeting']} of {seeds} draws")
    if summary["currency"] is None:
        lines.append("cost and power: give --prices (the GPU catalog has no price or TDP)")
    return "".join(f"{line}\n" for line in lines)


def register(app: typer.Typer) -> None:
    add_command(
        app,
        "plan",
        plan,
        help="Smallest cluster of candidate pools meeting a target, per strategy: nodes, GPUs, cost, power.",
    )
