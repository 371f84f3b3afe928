"""`gpudra recommend`: size GPU workloads from what they used (DCGM exporter series in Prometheus) and write one
GPUSizingRecommendation per workload owner.

One pass by default: the objects it wrote (or, with `--dry-run`, would write) and what it skipped, as JSON or YAML.
`--watch` keeps passing every `--interval`, serving `/healthz`, `/readyz` and `/metrics` on `--metrics-port`, until
SIGTERM or SIGINT. Exit codes: 0 a pass finished, 2 a bad option, 3 Prometheus or the API server failed the pass.
Series whose labels are not Kubernetes names are skipped and counted (`droppedSeries`), never sent to the API server.
"""

from __future__ import annotations

import json
import logging
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from dra.documents import dump_documents
from kubeapi import ApiServerError, api_client
from recommender import (
    KubeObjects,
    OwnerResolver,
    PassReport,
    PrometheusClient,
    PrometheusError,
    RecommendationStore,
    Recommender,
    RecommenderConfig,
    Settings,
    invalid_name,
    parse_duration,
    parse_statistic,
    serve_health,
)

from ..options import OptionError, output_format
from ..outcome import Outcome
from ..signature import add_command

EXIT_INPUT, EXIT_FAILED = 2, 3


def _render(report: PassReport, fmt: str, dry_run: bool) -> str:
    doc: dict[str, Any] = {"dryRun": dry_run, **report.as_dict()}
    if fmt == "json":
        return json.dumps(doc, indent=2) + "\n"
    return dump_documents([doc])


@dataclass(frozen=True, slots=True)
class RecommendOptions:
    """`gpudra recommend`'s options as typer shows them (the command's one signature)."""

    prometheus: Annotated[str, typer.Option("--prometheus", help="Prometheus base URL (http://prometheus:9090).")]
    kubeconfig: Annotated[Path | None, typer.Option("--kubeconfig", help="kubeconfig (default: ~/.kube/config).")] = (
        None
    )
    in_cluster: Annotated[bool, typer.Option("--in-cluster", help="Use the pod's service account.")] = False
    window: Annotated[str, typer.Option("--window", help="How far back to look (168h, 7d, 1h30m).")] = "168h"
    step: Annotated[str, typer.Option("--step", help="Resolution of the range query (the exporter's interval).")] = (
        "30s"
    )
    headroom: Annotated[float, typer.Option("--headroom", min=0, max=10, help="vram = peak x (1 + headroom).")] = 0.2
    statistic: Annotated[str, typer.Option("--statistic", help="max, or a quantile such as p99 / p99.9.")] = "p99"
    min_samples: Annotated[int, typer.Option("--min-samples", min=1, help="Fewer samples: no recommendation.")] = 100
    namespace: Annotated[str | None, typer.Option("--namespace", "-n", help="Only this namespace (default: all).")] = (
        None
    )
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print what would be written; write nothing.")] = False
    watch: Annotated[bool, typer.Option("--watch", help="Keep recommending every --interval.")] = False
    interval: Annotated[str, typer.Option("--interval", help="Time between passes with --watch.")] = "5m"
    metrics_port: Annotated[int, typer.Option("--metrics-port", min=0, max=65535, help="--watch: health, metrics.")] = (
        8080
    )
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="Seconds per Prometheus or API call.")] = 30.0
    output: Annotated[str, typer.Option("--output", "-o", help="json or yaml.")] = "json"


def recommend(options: RecommendOptions) -> Outcome | None:
    """One pass (its report, or why it failed), or with `--watch` passes until SIGTERM or SIGINT."""
    try:
        fmt = output_format(options.output)
        settings = Settings(
            window_seconds=parse_duration(options.window),
            headroom=options.headroom,
            min_samples=options.min_samples,
            quantile=parse_statistic(options.statistic),
        )
        step_seconds, interval_seconds = parse_duration(options.step), parse_duration(options.interval)
        namespace = options.namespace
        if namespace is not None and invalid_name("namespace", namespace):
            raise ValueError(f"--namespace {namespace!r}: {invalid_name('namespace', namespace)}")
        client = PrometheusClient(options.prometheus, timeout=options.timeout)
    except (OptionError, ValueError) as exc:
        return Outcome(stderr=f"error: {exc}\n", code=EXIT_INPUT)
    if options.watch and options.dry_run:
        return Outcome(stderr="error: --watch and --dry-run do not go together\n", code=EXIT_INPUT)
    kube = api_client(str(options.kubeconfig) if options.kubeconfig else None, in_cluster=options.in_cluster)
    objects = KubeObjects(kube, timeout=options.timeout)
    config = RecommenderConfig(
        settings=settings, step_seconds=step_seconds, namespace=namespace, dry_run=options.dry_run
    )
    store = None if options.dry_run else RecommendationStore(kube, timeout=options.timeout)
    recommender = Recommender(client, lambda: OwnerResolver(objects), store, config)
    if not options.watch:
        try:
            report = recommender.run_once()
        except (PrometheusError, ApiServerError) as exc:
            return Outcome(stderr=f"error: {exc}\n", code=EXIT_FAILED)
        return Outcome(stdout=_render(report, fmt, options.dry_run))
    _watch(recommender, interval_seconds, options.metrics_port)
    return None


def _watch(recommender: Recommender, interval_seconds: float, metrics_port: int) -> None:
    """Pass every `interval_seconds` until SIGTERM or SIGINT, a JSON line per pass, health and metrics served."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = serve_health(recommender.health, recommender.metrics, port=metrics_port) if metrics_port else None

    def on_pass(report: PassReport | None, error: str | None) -> None:
        line: dict[str, Any] = {"error": error}
        if report is not None:
            line = {"writes": report.writes, "skipped": len(report.skipped), "droppedSeries": report.dropped_series}
        typer.echo(json.dumps(line))

    try:
        recommender.run_forever(stop, interval=interval_seconds, on_pass=on_pass)
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()


def register(app: typer.Typer) -> None:
    add_command(
        app,
        "recommend",
        recommend,
        help="Recommend VRAM per GPU workload from observed use; write GPUSizingRecommendations.",
    )
