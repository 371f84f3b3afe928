"""`gpudra quota`: keep a ResourceQuota in every namespace labelled `gpudra.io/max-gpus`, so the cap is a namespace
total the API server enforces on every ResourceClaim (housekeeping.namespace_quota).

One pass by default (a CronJob runs it beside `gpudra gc`). The report is JSON on stdout. Exit codes: 0 synced,
3 the API server failed the pass, 4 a namespace label or a foreign quota was in the way (reported, others synced).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from housekeeping import sync_quotas
from kubeapi import ApiServerError, KubeQuotaStore, api_client

from ..outcome import Outcome
from ..signature import add_command

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


@dataclass(frozen=True, slots=True)
class QuotaOptions:
    """`gpudra quota`'s options as typer shows them (the command's one signature)."""

    kubeconfig: Annotated[Path | None, typer.Option("--kubeconfig", help="kubeconfig (default: ~/.kube/config).")] = (
        None
    )
    in_cluster: Annotated[bool, typer.Option("--in-cluster", help="Use the pod's service account.")] = False
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report what would change; change nothing.")] = False
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="Seconds per API call.")] = 30.0


def quota(options: QuotaOptions) -> Outcome:
    """One pass through the cluster's API server."""
    client = api_client(str(options.kubeconfig) if options.kubeconfig else None, in_cluster=options.in_cluster)
    return sync_once(KubeQuotaStore(client, timeout=options.timeout), dry_run=options.dry_run)


def register(app: typer.Typer) -> None:
    add_command(
        app,
        "quota",
        quota,
        help="Create, update or delete the gpudra-gpu-cap ResourceQuota of each namespace from its gpudra.io/max-gpus "
        "label; print what changed as JSON.",
    )
