"""`gpudra gc`: delete the ResourceClaimTemplates gpudra created that no pod names any more.

One pass by default (a CronJob runs it); `--watch` keeps collecting every `--interval` seconds. The report is
JSON on stdout, one object per pass. Exit codes: 0 collected, 2 a bad option, 3 the API server failed the pass.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import typer

from housekeeping import MIN_IDLE_FLOOR, GcReport, check_min_idle, collect, run_forever
from kubeapi import ApiServerError, KubeTemplateStore, api_client

from ..outcome import Outcome, emit

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


def register(app: typer.Typer) -> None:
    @app.command("gc")
    def _gc(
        kubeconfig: Path | None = typer.Option(None, "--kubeconfig", help="kubeconfig (default: ~/.kube/config)."),
        in_cluster: bool = typer.Option(False, "--in-cluster", help="Use the pod's service account."),
        min_idle: float = typer.Option(
            600.0,
            "--min-idle",
            help=f"Seconds a template must be unused (not created or reused) to go; at least "
            f"{MIN_IDLE_FLOOR.total_seconds():g}.",
        ),
        dry_run: bool = typer.Option(False, "--dry-run", help="Report what would be deleted; delete nothing."),
        watch: bool = typer.Option(False, "--watch", help="Keep collecting every --interval seconds."),
        interval: float = typer.Option(300.0, "--interval", min=1, help="Seconds between passes with --watch."),
        timeout: float = typer.Option(30.0, "--timeout", min=1, help="Seconds per API call."),
    ) -> None:
        """Delete gpudra's ResourceClaimTemplates that no pod uses; print what went as JSON."""
        if watch and dry_run:
            emit(Outcome(stderr="error: --watch and --dry-run do not go together\n", code=EXIT_INPUT))
        try:
            check_min_idle(dt.timedelta(seconds=min_idle))
        except ValueError as exc:
            emit(Outcome(stderr=f"error: --min-idle: {exc}\n", code=EXIT_INPUT))
        store = KubeTemplateStore(
            api_client(str(kubeconfig) if kubeconfig else None, in_cluster=in_cluster), timeout=timeout
        )
        if not watch:
            emit(collect_once(store, min_idle_seconds=min_idle, dry_run=dry_run))
            return
        run_forever(
            store, interval_seconds=interval, min_idle=dt.timedelta(seconds=min_idle), on_pass=_print_pass
        )  # fmt: skip
