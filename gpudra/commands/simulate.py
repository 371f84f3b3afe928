"""`gpudra simulate`: replay a trace (or the built-in workload) on a cluster under several strategies.

A rich progress bar on stderr while it runs (on a terminal only), then the comparison table or the JSON summary.
Exit code 2 on bad input, with file:line on stderr.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.text import Text

from dra.errors import GpudraError

from ..extras import missing_extra
from ..options import OptionError, allocator_mode, one_of, strategy_names
from ..outcome import Outcome, emit
from ..render.simulation import comparison, notes_text
from ..terminal import progress_bar, styled

EXIT_INPUT = 2


def input_error(exc: Exception) -> Outcome:
    """Exit 2 with the message as rich prints it, file:line first (shared with `gpudra sweep`)."""
    # the message as plain Text: brackets in paths stay literal, and only "error:" is red (on a terminal)
    text = styled(Text.assemble(("error:", "red"), f" {exc}"), stderr=True, highlight=False)
    return Outcome(stderr=text, code=EXIT_INPUT)


def simulate(
    *,
    cluster: Path | None = None,
    trace: Path | None = None,
    policies: Path | None = None,
    strategies: str | None = None,
    seed: int = 0,
    report: Path | None = None,
    as_json: bool = False,
    protocol: str = "auto",
    load: float | None = None,
    mode: str = "upstream",
    node_score: str | None = None,
    consumable_capacity: bool = False,
    gpudra_attributes: bool = False,
    sizing: str = "none",
    unannotated: bool = False,
    scheduler_config: Path | None = None,
    verify_scheduler: bool = False,
    k8s_bin: Path | None = None,
    sample: int = 200,
    driver_release: str = "0.5",
    driver_gates: str = "",
) -> Outcome:
    """Run every strategy, write the report (its path goes to stderr at once), and the table or JSON summary."""
    if report is not None and (missing := missing_extra("matplotlib", "report", "--report")):
        return input_error(OptionError(missing))
    from simulator.comparison import DEFAULT_STRATEGIES, SimulationConfig
    from simulator.comparison import simulate as run
    from simulator.scheduling import DEFAULT_PROFILE
    from simulator.scheduling.config import load_scheduler_config
    from simulator.strategies import NODE_SCORES, STRATEGY_NAMES

    try:
        names = strategy_names(strategies, STRATEGY_NAMES, DEFAULT_STRATEGIES)
        checked_mode = allocator_mode(mode, "--allocator-mode")
        checked_score = None if node_score is None else one_of(node_score, NODE_SCORES, "--node-score")
    except OptionError as exc:
        return input_error(exc)
    from dra.gpus import parse_driver_gates

    try:
        if driver_release.strip().removeprefix("v")[:3] != "0.5" and driver_gates:
            raise ValueError(
                f"the simulator models the gates of driver release 0.5 (got --driver-release {driver_release})"
            )
        gates = parse_driver_gates(driver_gates, driver_release).enabled
        modelled = {"ConsumableShares", "FabricManagerPartitioning"}
        if gates - modelled:
            raise ValueError(
                f"the simulator models {', '.join(sorted(modelled))}, not {', '.join(sorted(gates - modelled))}"
            )
    except ValueError as exc:
        return input_error(OptionError(f"--driver-gates: {exc}"))
    if verify_scheduler:  # before the simulation: without the binaries there is nothing to verify against
        from simulator.verify import find_components

        try:
            find_components(k8s_bin)
        except GpudraError as exc:
            return input_error(exc)
    err = Console(stderr=True)
    try:
        profile = DEFAULT_PROFILE if scheduler_config is None else load_scheduler_config(scheduler_config)
        config = SimulationConfig(
            cluster, trace, tuple(names), seed, protocol, load, policies=policies, allocator_mode=checked_mode,
            node_score=checked_score, scheduler=profile, consumable_capacity=consumable_capacity,
            gpudra_attributes=gpudra_attributes, sizing=sizing, unannotated=unannotated, driver_gates=gates,
        )  # fmt: skip
        with progress_bar("{task.description}", err) as bar:
            tasks: dict[str, Any] = {}

            def progress(name: str, done: int, total: int) -> None:
                if name not in tasks:
                    tasks[name] = bar.add_task(name, total=total)
                bar.update(tasks[name], completed=done)

            result = run(config, progress)
    except (GpudraError, OSError) as exc:
        return input_error(exc)
    summary = result.summary()
    if verify_scheduler:
        try:
            summary["verification"] = _verification(
                cluster, trace, policies=policies, seed=seed, k8s_bin=k8s_bin, sample=sample,
                consumable_capacity=consumable_capacity, gpudra_attributes=gpudra_attributes,
                unannotated=unannotated, scheduler_config=scheduler_config, err=err, quiet=as_json,
            )  # fmt: skip
        except (GpudraError, OSError) as exc:
            return input_error(exc)
    if report is not None:
        from simulator.html_report import write_report

        err.print(f"report: {write_report(result, report)}")
    if as_json:
        return Outcome(stdout=json.dumps(summary, indent=2) + "\n")
    heading, table = comparison(summary)
    verified = _verification_text(summary["verification"]) if verify_scheduler else ""
    return Outcome(stdout=styled(heading) + styled(table) + notes_text(summary) + verified)


def _verification(
    cluster: Path | None, trace: Path | None, *, policies: Path | None, seed: int, k8s_bin: Path | None, sample: int,
    consumable_capacity: bool, gpudra_attributes: bool, unannotated: bool, scheduler_config: Path | None, err: Console,
    quiet: bool,
) -> dict[str, Any]:  # fmt: skip
    """`--verify-scheduler`: the sample through the real kube-scheduler, a progress bar on a terminal."""
    from simulator.verify import verification_inputs, verify_scheduler

    spec, pods = verification_inputs(
        cluster, trace, seed=seed, consumable_capacity=consumable_capacity, unannotated=unannotated
    )
    console = Console(stderr=True, quiet=True) if quiet else err
    with progress_bar("verify-scheduler", console) as bar:
        task = bar.add_task("verify-scheduler", total=min(sample, len(pods)))
        return verify_scheduler(
            spec, pods, sample=sample, bin_dir=k8s_bin, policies=policies, gpudra_attributes=gpudra_attributes,
            seed=seed, scheduler_config=scheduler_config,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )  # fmt: skip


def _verification_text(found: dict[str, Any]) -> str:
    """The verification's figures and its first disagreements, as the table's footnote."""

    def pct(value: float | None) -> str:
        return "-" if value is None else f"{100 * value:.1f}%"

    lines = [
        f"\nScheduler verification: {found['decisions']} decisions through kube-scheduler "
        f"{found['kube_scheduler_version']} ({found['bound']} bound, {found['unschedulable']} unschedulable)",
        f"  feasibility agreement {pct(found['feasibility_agreement'])}, real node in the simulator's tie set "
        f"{pct(found['node_in_top_set'])}, same devices ({found['allocator_mode']} allocator) "
        f"{pct(found['same_devices'])}",
    ]
    for cause, count in found["causes"].items():
        lines.append(f"  {count} x {cause}")
    for item in found["disagreements"][:10]:
        lines.append(f"  - {item['pod']} ({item['check']}): {item['detail']}")
    return "\n".join(lines) + "\n"


def register(app: typer.Typer) -> None:
    @app.command("simulate")
    def _simulate(
        cluster: Path | None = typer.Option(None, "--cluster", help="Cluster YAML spec or openb node CSV."),
        trace: Path | None = typer.Option(None, "--trace", help="openb pod CSV or gpudra JSONL of Pod specs."),
        policies: Path | None = typer.Option(None, "--policies", help="Policy directory for the gpudra strategy."),
        strategies: str | None = typer.Option(
            None, "--strategies", help="Comma-separated, e.g. device-plugin,dra-whole,gpudra,fgd."
        ),
        seed: int = typer.Option(0, "--seed", help="Seed for the generator, sampling and Random."),
        report: Path | None = typer.Option(None, "--report", help="Write HTML + PNG plots + CSV series here."),
        as_json: bool = typer.Option(False, "--json", help="Print the stable JSON summary."),
        protocol: str = typer.Option(
            "auto", "--protocol", help="replay (trace times), fgd (the FGD paper's) or auto (fgd for openb CSVs)."
        ),
        load: float | None = typer.Option(
            None, "--load", help="fgd protocol: tune the workload's GPU demand to this x capacity (default 1.3)."
        ),
        mode: str = typer.Option(
            "upstream",
            "--allocator-mode",
            help="gpudra's dra.allocator mode: upstream (kube-scheduler's choices, the default) or scored (a what-if: "
            "device choice by gpudra's scoring, not what a stock cluster does).",
        ),
        node_score: str | None = typer.Option(
            None,
            "--node-score",
            help="gpudra's node ranking: least-allocated (kube-scheduler's default), most-allocated (both the "
            "NodeResourcesFit scoring strategy of the profile), or fragmentation (FGD's score: a what-if for a "
            "fragmentation-aware scheduler).",
        ),
        scheduler_config: Path | None = typer.Option(
            None,
            "--scheduler-config",
            help="A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) for the DRA strategies, read as "
            "kube-scheduler reads it (profile default-scheduler: plugins, weights, NodeResourcesFit scoringStrategy, "
            "percentageOfNodesToScore). Default: kube-scheduler 1.37's defaults.",
        ),
        consumable_capacity: bool = typer.Option(
            False,
            "--consumable-capacity",
            help="gpudra's addition: publish every pool's whole GPUs as shareable (allowMultipleAllocations, "
            "DRA consumable capacity), which the NVIDIA DRA driver does not publish.",
        ),
        gpudra_attributes: bool = typer.Option(
            False,
            "--gpudra-attributes",
            help="gpudra's addition: publish gpu.gpudra.io/nvlinkGroup on whole GPUs (the driver has no NVLink "
            "attribute).",
        ),
        sizing: str = typer.Option(
            "none",
            "--sizing",
            help="none (annotations only), observed:FILE (a Prometheus query_range dump of DCGM_FI_DEV_FB_USED, or "
            "GPUSizingRecommendation objects) or observed:generated (a demo dump of the workload): gpudra runs "
            "again as gpudra+observed, unannotated pods sized from the observed usage.",
        ),
        unannotated: bool = typer.Option(
            False,
            "--unannotated",
            help="Remove the pods' gpudra.io/vram annotations first (the pods as their owners wrote them).",
        ),
        verify_scheduler: bool = typer.Option(
            False,
            "--verify-scheduler",
            help="Also replay a sample of the workload (with churn, one settled event at a time) through a real "
            "kube-apiserver, kube-scheduler, kube-controller-manager and etcd, and compare each decision with the "
            "simulator's in the same state (the summary's `verification`).",
        ),
        k8s_bin: Path | None = typer.Option(
            None,
            "--k8s-bin",
            help="--verify-scheduler: the directory holding etcd, kube-apiserver, kube-controller-manager and "
            "kube-scheduler (default: what tests/controlplane/build.sh builds into ~/.cache/gpudra/k8s/<version>/bin).",
        ),
        sample: int = typer.Option(200, "--sample", help="--verify-scheduler: how many pods (the first by arrival)."),
        driver_release: str = typer.Option("0.5", "--driver-release", help="The NVIDIA DRA driver release (0.5)."),
        driver_gates: str = typer.Option(
            "",
            "--driver-gates",
            help="The driver's gates the cluster runs with: ConsumableShares (shareable GPUs), "
            "FabricManagerPartitioning (NVSwitch partitions).",
        ),
    ) -> None:
        """Compare placement strategies; with no arguments: the built-in cluster and workload."""
        emit(
            simulate(
                cluster=cluster,
                trace=trace,
                policies=policies,
                strategies=strategies,
                seed=seed,
                report=report,
                as_json=as_json,
                protocol=protocol,
                load=load,
                mode=mode,
                node_score=node_score,
                consumable_capacity=consumable_capacity,
                gpudra_attributes=gpudra_attributes,
                sizing=sizing,
                unannotated=unannotated,
                scheduler_config=scheduler_config,
                verify_scheduler=verify_scheduler,
                k8s_bin=k8s_bin,
                sample=sample,
                driver_release=driver_release,
                driver_gates=driver_gates,
            )
        )
