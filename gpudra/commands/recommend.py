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
from pathlib import Path
from typing import Any

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
from ..outcome import Outcome, emit

EXIT_INPUT, EXIT_FAILED = 2, 3


def _render(report: PassReport, fmt: str, dry_run: bool) -> str:
    doc: dict[str, Any] = {"dryRun": dry_run, **report.as_dict()}
    if fmt == "json":
        return json.dumps(doc, indent=2) + "\n"
    return dump_documents([doc])


def register(app: typer.Typer) -> None:
    @app.command("recommend")
    def _recommend(
        prometheus: str = typer.Option(..., "--prometheus", help="Prometheus base URL (http://prometheus:9090)."),
        kubeconfig: Path | None = typer.Option(None, "--kubeconfig", help="kubeconfig (default: ~/.kube/config)."),
        in_cluster: bool = typer.Option(False, "--in-cluster", help="Use the pod's service account."),
        window: str = typer.Option("168h", "--window", help="How far back to look (168h, 7d, 1h30m)."),
        step: str = typer.Option("30s", "--step", help="Resolution of the range query (the exporter's interval)."),
        headroom: float = typer.Option(0.2, "--headroom", min=0, max=10, help="vram = peak x (1 + headroom)."),
        statistic: str = typer.Option("p99", "--statistic", help="max, or a quantile such as p99 / p99.9."),
        min_samples: int = typer.Option(100, "--min-samples", min=1, help="Fewer samples: no recommendation."),
        namespace: str | None = typer.Option(None, "--namespace", "-n", help="Only this namespace (default: all)."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Print what would be written; write nothing."),
        watch: bool = typer.Option(False, "--watch", help="Keep recommending every --interval."),
        interval: str = typer.Option("5m", "--interval", help="Time between passes with --watch."),
        metrics_port: int = typer.Option(8080, "--metrics-port", min=0, max=65535, help="--watch: health, metrics."),
        timeout: float = typer.Option(30.0, "--timeout", min=1, help="Seconds per Prometheus or API call."),
        output: str = typer.Option("json", "--output", "-o", help="json or yaml."),
    ) -> None:
        """Recommend VRAM per GPU workload from observed use; write GPUSizingRecommendations."""
        try:
            fmt = output_format(output)
            settings = Settings(
                window_seconds=parse_duration(window),
                headroom=headroom,
                min_samples=min_samples,
                quantile=parse_statistic(statistic),
            )
            step_seconds, interval_seconds = parse_duration(step), parse_duration(interval)
            if namespace is not None and invalid_name("namespace", namespace):
                raise ValueError(f"--namespace {namespace!r}: {invalid_name('namespace', namespace)}")
            client = PrometheusClient(prometheus, timeout=timeout)
        except (OptionError, ValueError) as exc:
            emit(Outcome(stderr=f"error: {exc}\n", code=EXIT_INPUT))
            return
        if watch and dry_run:
            emit(Outcome(stderr="error: --watch and --dry-run do not go together\n", code=EXIT_INPUT))
        kube = api_client(str(kubeconfig) if kubeconfig else None, in_cluster=in_cluster)
        objects = KubeObjects(kube, timeout=timeout)
        recommender = Recommender(
            client,
            lambda: OwnerResolver(objects),
            None if dry_run else RecommendationStore(kube, timeout=timeout),
            RecommenderConfig(settings=settings, step_seconds=step_seconds, namespace=namespace, dry_run=dry_run),
        )
        if not watch:
            try:
                report = recommender.run_once()
            except (PrometheusError, ApiServerError) as exc:
                emit(Outcome(stderr=f"error: {exc}\n", code=EXIT_FAILED))
                return
            emit(Outcome(stdout=_render(report, fmt, dry_run)))
            return
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
