"""`gpudra simulate`: replay a trace (or the built-in workload) on a cluster under several strategies.

A rich progress bar on stderr while it runs (on a terminal only), then the comparison table or the JSON summary.
Exit code 2 on bad input, with file:line on stderr.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from dra.errors import GpudraError

from ..extras import missing_extra
from ..options import OptionError, allocator_mode, one_of, strategy_names
from ..outcome import Outcome
from ..render.simulation import comparison, notes_text
from ..signature import add_command
from ..terminal import progress_bar, styled

# --whole-run: where model and scheduler agree, a real run lies within ten model runs' range with probability 9/11
DEFAULT_MODEL_RUNS = 10

if TYPE_CHECKING:  # the type only: the simulator is imported when the command runs
    from simulator.comparison import SimulationConfig

EXIT_INPUT = 2


def input_error(exc: Exception) -> Outcome:
    """Exit 2 with the message as rich prints it, file:line first (shared with `gpudra sweep`)."""
    # the message as plain Text: brackets in paths stay literal, and only "error:" is red (on a terminal)
    text = styled(Text.assemble(("error:", "red"), f" {exc}"), stderr=True, highlight=False)
    return Outcome(stderr=text, code=EXIT_INPUT)


@dataclass(frozen=True, slots=True)
class SimulateOptions:
    """`gpudra simulate`'s options as typer shows them (the command's one signature)."""

    cluster: Annotated[Path | None, typer.Option("--cluster", help="Cluster YAML spec or openb node CSV.")] = None
    trace: Annotated[Path | None, typer.Option("--trace", help="openb pod CSV or gpudra JSONL of Pod specs.")] = None
    policies: Annotated[Path | None, typer.Option("--policies", help="Policy directory for the gpudra strategy.")] = (
        None
    )
    strategies: Annotated[
        str | None, typer.Option("--strategies", help="Comma-separated, e.g. device-plugin,dra-whole,gpudra,fgd.")
    ] = None
    seed: Annotated[int, typer.Option("--seed", help="Seed for the generator, sampling and Random.")] = 0
    report: Annotated[Path | None, typer.Option("--report", help="Write HTML + PNG plots + CSV series here.")] = None
    as_json: Annotated[bool, typer.Option("--json", help="Print the stable JSON summary.")] = False
    protocol: Annotated[
        str,
        typer.Option("--protocol", help="replay (trace times), fgd (the FGD paper's) or auto (fgd for openb CSVs)."),
    ] = "auto"
    load: Annotated[
        float | None,
        typer.Option("--load", help="fgd protocol: tune the workload's GPU demand to this x capacity (default 1.3)."),
    ] = None
    mode: Annotated[
        str,
        typer.Option(
            "--allocator-mode",
            help="gpudra's dra.allocator mode: upstream (kube-scheduler's choices, the default) or scored (a what-if: "
            "device choice by gpudra's scoring, not what a stock cluster does).",
        ),
    ] = "upstream"
    node_score: Annotated[
        str | None,
        typer.Option(
            "--node-score",
            help="gpudra's node ranking: least-allocated (kube-scheduler's default), most-allocated (both the "
            "NodeResourcesFit scoring strategy of the profile), or fragmentation (FGD's score: a what-if for a "
            "fragmentation-aware scheduler).",
        ),
    ] = None
    scheduler_config: Annotated[
        Path | None,
        typer.Option(
            "--scheduler-config",
            help="A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) for the DRA strategies, read as "
            "kube-scheduler reads it (profile default-scheduler: plugins, weights, NodeResourcesFit scoringStrategy, "
            "percentageOfNodesToScore). Default: kube-scheduler 1.37's defaults.",
        ),
    ] = None
    consumable_capacity: Annotated[
        bool,
        typer.Option(
            "--consumable-capacity",
            help="DRA consumable capacity as NVIDIA DRA driver 0.5 publishes it: the same as --driver-gates "
            "ConsumableShares (every node's whole GPUs and static MIG devices shareable, memory mode).",
        ),
    ] = False
    gpudra_attributes: Annotated[
        bool,
        typer.Option(
            "--gpudra-attributes",
            help="gpudra's addition: publish gpu.gpudra.io/nvlinkGroup on whole GPUs (the driver has no NVLink "
            "attribute).",
        ),
    ] = False
    sizing: Annotated[
        str,
        typer.Option(
            "--sizing",
            help="none (annotations only), observed:FILE (a Prometheus query_range dump of DCGM_FI_DEV_FB_USED, or "
            "GPUSizingRecommendation objects) or observed:generated (a demo dump of the workload): gpudra runs "
            "again as gpudra+observed, unannotated pods sized from the observed usage.",
        ),
    ] = "none"
    unannotated: Annotated[
        bool,
        typer.Option(
            "--unannotated",
            help="Remove the pods' gpudra.io/vram annotations first (the pods as their owners wrote them).",
        ),
    ] = False
    verify_scheduler: Annotated[
        bool,
        typer.Option(
            "--verify-scheduler",
            help="Also replay a sample of the workload (with churn, one settled event at a time) through a real "
            "kube-apiserver, kube-scheduler, kube-controller-manager and etcd, and compare each decision with the "
            "simulator's in the same state (the summary's `verification`).",
        ),
    ] = False
    k8s_bin: Annotated[
        Path | None,
        typer.Option(
            "--k8s-bin",
            help="--verify-scheduler: the directory holding etcd, kube-apiserver, kube-controller-manager and "
            "kube-scheduler (default: what tests/controlplane/build.sh builds into ~/.cache/gpudra/k8s/<version>/bin).",
        ),
    ] = None
    sample: Annotated[
        int, typer.Option("--sample", help="--verify-scheduler: how many pods (the first by arrival).")
    ] = 200
    whole_run: Annotated[
        bool,
        typer.Option(
            "--whole-run",
            help="--verify-scheduler: submit the whole sample in bulk in simulated time order, kube-scheduler's own "
            "queue deciding (no per-decision comparison), and set the model's allocation, pending by GPUs per pod "
            "and unplaced pods against the spread of --replays runs, both cut at the last arrival.",
        ),
    ] = False
    replays: Annotated[
        int | None,
        typer.Option(
            "--replays",
            help="--verify-scheduler: how many times the sample goes through fresh control planes (kube-scheduler "
            "picks at random among tied nodes): the spread the model is set against (default 2 with --whole-run, "
            "else 1).",
        ),
    ] = None
    model_runs: Annotated[
        int | None,
        typer.Option(
            "--model-runs",
            min=1,
            help="--whole-run: how many times the model runs the sample, each with its own tie-break seed (--seed, "
            "--seed + 1, ...): the model's own spread, which each real run should lie within (default 10; the "
            "model's runs take seconds where a real run takes minutes).",
        ),
    ] = None
    driver_release: Annotated[
        str,
        typer.Option(
            "--driver-release",
            help="The NVIDIA DRA driver release (0.5, the one release whose slices the simulator publishes).",
        ),
    ] = "0.5"
    driver_gates: Annotated[
        str,
        typer.Option(
            "--driver-gates",
            help="The driver's gates the cluster runs with: ConsumableShares (shareable GPUs), "
            "FabricManagerPartitioning (NVSwitch partitions).",
        ),
    ] = ""


def simulation_config(options: SimulateOptions) -> SimulationConfig:
    """The simulator's typed config from the options (the simulator's rules refuse what it cannot model):
    `OptionError` or `GpudraError` naming the option or value."""
    from simulator.comparison import DEFAULT_STRATEGIES, SimulationConfig
    from simulator.driver import simulated_driver
    from simulator.scheduling import DEFAULT_PROFILE
    from simulator.scheduling.config import load_scheduler_config
    from simulator.sizing import parse_sizing
    from simulator.strategies import NODE_SCORES, STRATEGY_NAMES

    names = strategy_names(options.strategies, STRATEGY_NAMES, DEFAULT_STRATEGIES)
    mode = allocator_mode(options.mode, "--allocator-mode")
    node_score = None if options.node_score is None else one_of(options.node_score, NODE_SCORES, "--node-score")
    driver = simulated_driver(
        options.driver_gates, options.driver_release, consumable_capacity=options.consumable_capacity
    )
    sizing = parse_sizing(options.sizing)
    profile = DEFAULT_PROFILE if options.scheduler_config is None else load_scheduler_config(options.scheduler_config)
    return SimulationConfig(
        options.cluster, options.trace, names, options.seed, options.protocol, options.load,
        policies=options.policies, allocator_mode=mode, node_score=node_score, scheduler=profile,
        gpudra_attributes=options.gpudra_attributes, sizing=sizing, unannotated=options.unannotated, driver=driver,
    )  # fmt: skip


def simulate(options: SimulateOptions) -> Outcome:
    """Run every strategy, write the report (its path goes to stderr at once), and the table or JSON summary."""
    if options.report is not None and (missing := missing_extra("matplotlib", "report", "--report")):
        return input_error(OptionError(missing))
    from simulator.comparison import simulate as run

    try:
        config = simulation_config(options)
        if (options.whole_run or options.replays is not None) and not options.verify_scheduler:
            raise OptionError("--whole-run and --replays need --verify-scheduler")
        if options.model_runs is not None and not options.whole_run:
            raise OptionError("--model-runs needs --verify-scheduler --whole-run")
        if options.verify_scheduler:  # before the simulation: without the binaries there is nothing to verify against
            from simulator.verify import find_components

            find_components(options.k8s_bin)
    except (OptionError, GpudraError, OSError) as exc:
        return input_error(exc)
    err = Console(stderr=True)
    try:
        with progress_bar("{task.description}", err) as bar:
            tasks: dict[str, Any] = {}

            def progress(name: str, done: int, total: int) -> None:
                if name not in tasks:
                    tasks[name] = bar.add_task(name, total=total)
                bar.update(tasks[name], completed=done)

            result = run(config, progress)
        summary = result.summary()
        if options.verify_scheduler:
            summary["verification"] = _verification(options, config, err)
    except (GpudraError, OSError) as exc:
        return input_error(exc)
    if options.report is not None:
        from simulator.html_report import write_report

        err.print(f"report: {write_report(result, options.report)}")
    if options.as_json:
        return Outcome(stdout=json.dumps(summary, indent=2) + "\n")
    heading, table = comparison(summary)
    verified = _verification_text(summary["verification"]) if options.verify_scheduler else ""
    return Outcome(stdout=styled(heading) + styled(table) + notes_text(summary) + verified)


def _verification(options: SimulateOptions, config: SimulationConfig, err: Console) -> dict[str, Any]:
    """`--verify-scheduler`: the sample through the real kube-scheduler (per decision, or `--whole-run` in bulk), a
    progress bar on a terminal."""
    from simulator.verify import verification_inputs, verify_scheduler, verify_whole_run

    spec, pods = verification_inputs(
        options.cluster, options.trace, seed=options.seed, driver=config.driver, unannotated=options.unannotated
    )
    replays = options.replays if options.replays is not None else 2 if options.whole_run else 1
    verify: Callable[..., dict[str, Any]] = verify_scheduler
    if options.whole_run:
        runs = options.model_runs if options.model_runs is not None else DEFAULT_MODEL_RUNS
        verify = functools.partial(verify_whole_run, model_runs=runs)
    console = Console(stderr=True, quiet=True) if options.as_json else err
    with progress_bar("verify-scheduler", console) as bar:
        task = bar.add_task("verify-scheduler", total=min(options.sample, len(pods)) * replays)
        return verify(
            spec, pods, sample=options.sample, replays=replays, bin_dir=options.k8s_bin, policies=options.policies,
            gpudra_attributes=options.gpudra_attributes, seed=options.seed, scheduler_config=options.scheduler_config,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )  # fmt: skip


def _spread_text(compared: dict[str, Any]) -> list[str]:
    """The model's whole-run figures against the real runs' min / median / max, one line each."""
    spread = compared["spread"]
    lines = [
        f"  whole run, both cut at the last arrival ({compared['cut_seconds']:g} s): the model against "
        f"{spread['replays']} real runs (min / median / max); {spread['within']} of {len(spread['figures'])} "
        "figures within"
    ]

    def num(value: float | None) -> str:
        return "-" if value is None else f"{value:g}"

    runs = spread.get("model_runs")
    if runs:
        lines.append(
            f"  and the real runs against the model's own spread over {runs} tie-break seeds: "
            f"{spread['figures_within_model']} of {len(spread['figures'])} figures with every real run within"
        )
    for name, row in spread["figures"].items():
        mark = {True: "within", False: "OUTSIDE", None: "-"}[row["within"]]
        real = " / ".join(num(row[key]) for key in ("min", "median", "max"))
        line = f"    {name}: model {num(row['model'])}, real {real} ({mark})"
        if runs:
            own = " / ".join(num(row[key]) for key in ("model_min", "model_median", "model_max"))
            outside = row["replays_outside_model"]
            verdict = "-" if outside is None else "every real run within" if not outside else f"{outside} OUTSIDE"
            line += f"; model runs {own} ({verdict})"
        lines.append(line)
    return lines


def _verification_text(found: dict[str, Any]) -> str:
    """The verification's figures and its first disagreements, as the table's footnote."""
    if found.get("mode") == "whole-run":
        heading = (
            f"\nScheduler verification, whole run: {found['sample']} pods through kube-scheduler "
            f"{found['kube_scheduler_version']} in bulk, {found['replays']} runs "
            f"({', '.join(str(sum(run['attempts'].values())) for run in found['runs'])} scheduling attempts)"
        )
        return "\n".join([heading, *_spread_text(found)]) + "\n"

    def pct(value: float | None) -> str:
        return "-" if value is None else f"{100 * value:.1f}%"

    lines = [
        f"\nScheduler verification: {found['decisions']} decisions through kube-scheduler "
        f"{found['kube_scheduler_version']} ({found['bound']} bound, {found['unschedulable']} unschedulable)",
        f"  feasibility agreement {pct(found['feasibility_agreement'])}, real node in the simulator's tie set "
        f"{pct(found['node_in_top_set'])}, same devices ({found['allocator_mode']} allocator) "
        f"{pct(found['same_devices'])}",
    ]
    cutoff = found["pending_cutoff_seconds"]
    lines.append(
        f"  GPU pods' mean pending s by GPUs per pod, both cut at the last arrival ({cutoff:g} s): "
        f"real {found['pending_by_gpus']}, model {found['model_pending_by_gpus']}"
    )
    lines.append(
        f"  slices published: {found['driver']['devices']} devices, {found['driver']['shareable_devices']} shareable "
        f"(gates: {', '.join(found['driver']['gates']) or 'none'})"
    )
    lines.extend(_spread_text(found["whole_run"]))
    for cause, count in found["causes"].items():
        lines.append(f"  {count} x {cause}")
    for item in found["disagreements"][:10]:
        lines.append(f"  - {item['pod']} ({item['check']}): {item['detail']}")
    return "\n".join(lines) + "\n"


def register(app: typer.Typer) -> None:
    add_command(
        app,
        "simulate",
        simulate,
        help="Compare placement strategies; with no arguments: the built-in cluster and workload.",
    )
