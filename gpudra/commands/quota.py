"""`gpudra quota`: keep a ResourceQuota in every namespace labelled `gpudra.io/max-gpus`, so the cap is a namespace
total the API server enforces on every ResourceClaim (webhook.namespace_quota).

One pass by default (a CronJob runs it beside `gpudra gc`). The report is JSON on stdout. Exit codes: 0 synced,
3 the API server failed the pass, 4 a namespace label or a foreign quota was in the way (reported, others synced).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from housekeeping import sync_quotas
from kubeapi import ApiServerError, KubeQuotaStore, api_client

from ..outcome import Outcome, emit

EXIT_API, EXIT_INVALID = 3, 4


def sync_once(store: KubeQuotaStore, *, dry_run: bool) -> Outcome:
    """One pass as an `Outcome`: the report as JSON, or the API server's failure on stderr."""
    try:
        report = sync_quotas(store, dry_run=dry_run)
    except ApiServerError as exc:
        return Outcome(stderr=f"error: {exc}\n", code=EXIT_API)
    stderr = "".join(f"error: {problem}\n" for problem in report.invalid)
    return Outcome(
        stdout=json.dumps({"dryRun": dry_run, **report.as_dict()}) + "\n",
        stderr=stderr,
        code=EXIT_INVALID if report.invalid else 0,
    )


def register(app: typer.Typer) -> None:
    @app.command("quota")
    def _quota(
        kubeconfig: Path | None = typer.Option(None, "--kubeconfig", help="kubeconfig (default: ~/.kube/config)."),
        in_cluster: bool = typer.Option(False, "--in-cluster", help="Use the pod's service account."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Report what would change; change nothing."),
        timeout: float = typer.Option(30.0, "--timeout", min=1, help="Seconds per API call."),
    ) -> None:
        """Create, update or delete the gpudra-gpu-cap ResourceQuota of each namespace from its gpudra.io/max-gpus
        label; print what changed as JSON."""
        store = KubeQuotaStore(
            api_client(str(kubeconfig) if kubeconfig else None, in_cluster=in_cluster), timeout=timeout
        )
        emit(sync_once(store, dry_run=dry_run))
