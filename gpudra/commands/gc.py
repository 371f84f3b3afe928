"""`gpudra gc`: delete the ResourceClaimTemplates gpudra created that no pod names any more.

One pass by default (a CronJob runs it); `--watch` keeps collecting every `--interval` seconds. The report is
JSON on stdout, one object per pass. Exit codes: 0 collected, 2 a bad option, 3 the API server failed the pass.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from housekeeping import MIN_IDLE_FLOOR, GcReport, check_min_idle, collect, run_forever
from kubeapi import ApiServerError, KubeTemplateStore, api_client

from ..outcome import Outcome
from ..signature import add_command

EXIT_INPUT, EXIT_API = 2, 3


def collect_once(store: KubeTemplateStore, *, min_idle_seconds: float, dry_run: bool) -> Outcome:
    """One pass as an `Outcome`: the report as JSON, or the API server's failure on stderr."""
    try:
        report = collect(store, min_idle=dt.timedelta(seconds=min_idle_seconds), dry_run=dry_run)
    except ApiServerError as exc:
        return Outcome(stderr=f"error: {exc}\n", code=EXIT_API)
    return Outcome(stdout=json.dumps({"dryRun": dry_run, **report.as_dict()}) + "\n")


def _print_pass(report: GcReport | None, error: str | None) -> None:
    line = {"error": error} if report is None else report.as_dict()
    typer.echo(json.dumps(line))


@dataclass(frozen=True, slots=True)
class GcOptions:
    """`gpudra gc`'s options as typer shows them (the command's one signature)."""

    kubeconfig: Annotated[Path | None, typer.Option("--kubeconfig", help="kubeconfig (default: ~/.kube/config).")] = (
        None
    )
    in_cluster: Annotated[bool, typer.Option("--in-cluster", help="Use the pod's service account.")] = False
    min_idle: Annotated[
        float,
        typer.Option(
            "--min-idle",
            help=f"Seconds a template must be unused (not created or reused) to go; at least "
            f"{MIN_IDLE_FLOOR.total_seconds():g}.",
        ),
    ] = 600.0
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report what would be deleted; delete nothing.")] = False
    watch: Annotated[bool, typer.Option("--watch", help="Keep collecting every --interval seconds.")] = False
    interval: Annotated[float, typer.Option("--interval", min=1, help="Seconds between passes with --watch.")] = 300.0
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="Seconds per API call.")] = 30.0


def gc(options: GcOptions) -> Outcome | None:
    """One pass (its report), or with `--watch` passes every `--interval` seconds, a JSON line each."""
    if options.watch and options.dry_run:
        return Outcome(stderr="error: --watch and --dry-run do not go together\n", code=EXIT_INPUT)
    min_idle = dt.timedelta(seconds=options.min_idle)
    try:
        check_min_idle(min_idle)
    except ValueError as exc:
        return Outcome(stderr=f"error: --min-idle: {exc}\n", code=EXIT_INPUT)
    client = api_client(str(options.kubeconfig) if options.kubeconfig else None, in_cluster=options.in_cluster)
    store = KubeTemplateStore(client, timeout=options.timeout)
    if not options.watch:
        return collect_once(store, min_idle_seconds=options.min_idle, dry_run=options.dry_run)
    run_forever(store, interval_seconds=options.interval, min_idle=min_idle, on_pass=_print_pass)
    return None


def register(app: typer.Typer) -> None:
    add_command(app, "gc", gc, help="Delete gpudra's ResourceClaimTemplates that no pod uses; print what went as JSON.")
