"""The recommender: one pass (Prometheus -> owners -> recommendations -> GPUSizingRecommendations), and the loop
`gpudra recommend --watch` runs, with backoff, metrics and a small `/readyz` `/healthz` `/metrics` endpoint.

A pass reads `DCGM_FI_DEV_FB_USED` of every series that names a pod over the window (a range query at `step`), and
the last FB used + free + reserved of each series (what the device or MIG instance gives it). A failed pass (Prometheus
or the API server) changes nothing that was written before; the loop retries after 10 s, doubling up to the interval,
and `/readyz` answers 503 with the error until a pass succeeds again.
"""

from __future__ import annotations

import datetime as dt
import http.server
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from kubeapi import ApiServerError

from .compute import ContainerUsage, Owner, Settings, Skipped, recommend_all
from .dcgm import FB_FREE, FB_RESERVED, FB_USED, DeviceSeries, Rejected, fb_selector, invalid_name, series_identity
from .metrics import RecommenderMetrics
from .owners import OwnerResolver
from .prometheus import PrometheusClient, PrometheusError, Series
from .store import condition, recommendation_object

__all__ = ["Health", "PassReport", "Recommender", "RecommenderConfig", "serve_health"]

log = logging.getLogger("gpudra.recommend")


class Store(Protocol):
    def apply(self, obj: dict[str, Any]) -> str: ...

    def mark_all(self, namespace: str | None, cond: dict[str, Any]) -> int: ...


@dataclass(frozen=True)
class RecommenderConfig:
    settings: Settings = field(default_factory=Settings)
    step_seconds: float = 30.0
    namespace: str | None = None
    dry_run: bool = False


@dataclass
class PassReport:
    objects: list[dict[str, Any]] = field(default_factory=list)
    writes: dict[str, int] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    series: int = 0
    dropped_series: dict[str, int] = field(default_factory=dict)
    dropped_examples: dict[str, list[str]] = field(default_factory=dict)  # up to 3 per reason

    def as_dict(self) -> dict[str, Any]:
        return {
            "recommendations": self.objects,
            "writes": self.writes,
            "skipped": [{"owner": s.owner, "container": s.container, "reason": s.reason} for s in self.skipped],
            "series": self.series,
            "droppedSeries": self.dropped_series,
            "droppedSeriesExamples": self.dropped_examples,
        }


@dataclass
class Health:
    """What `/readyz` answers: ready after a successful pass, until a pass fails."""

    passes: int = 0
    last_success: float | None = None
    last_error: str | None = None
    consecutive_failures: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ok(self) -> None:
        with self.lock:
            self.passes += 1
            self.last_success = time.time()
            self.last_error = None
            self.consecutive_failures = 0

    def failed(self, error: str) -> None:
        with self.lock:
            self.passes += 1
            self.last_error = error
            self.consecutive_failures += 1

    def ready(self) -> tuple[bool, str]:
        with self.lock:
            if self.last_error is not None:
                return False, f"last pass failed ({self.consecutive_failures} in a row): {self.last_error}"
            if self.last_success is None:
                return False, "no pass finished yet"
            return True, f"last pass succeeded at {dt.datetime.fromtimestamp(self.last_success, dt.UTC).isoformat()}"


class Recommender:
    def __init__(
        self,
        prometheus: PrometheusClient,
        resolver_factory: Callable[[], OwnerResolver],
        store: Store | None,
        config: RecommenderConfig,
        metrics: RecommenderMetrics | None = None,
    ) -> None:
        self.prometheus = prometheus
        self.resolver_factory = resolver_factory
        self.store = store
        self.config = config
        self.metrics = metrics or RecommenderMetrics()
        self.health = Health()
        prometheus.on_problem = self._count_problem  # the client reports dropped samples and series here

    def _in_scope(self, ident: DeviceSeries) -> bool:
        return self.config.namespace is None or ident.namespace == self.config.namespace

    def _count_problem(self, what: str, reason: str, count: int) -> None:
        counter = self.metrics.dropped_samples if what == "sample" else self.metrics.dropped_series
        counter.labels(reason).inc(count)

    # -- one pass -------------------------------------------------------------------------------------------
    def _granted(self, now: float) -> dict[tuple[str, str, str, str, str], float]:
        """The last FB used + free + reserved (MiB) of each series, by identity."""
        window = f"{int(self.config.settings.window_seconds)}s"
        total: dict[tuple[str, str, str, str, str], float] = {}
        for metric in (FB_USED, FB_FREE, FB_RESERVED):
            for series in self.prometheus.query(fb_selector(metric, self.config.namespace, over=window), at=now):
                ident = series_identity(series.labels)
                if isinstance(ident, DeviceSeries) and self._in_scope(ident) and series.values.size:
                    key = _key(ident)
                    total[key] = total.get(key, 0.0) + float(series.values[-1])
        return total

    def run_once(self, now: dt.datetime | None = None) -> PassReport:
        """One pass; raises PrometheusError or ApiServerError when it cannot finish (nothing half-written matters:
        each object is written whole)."""
        when = now or dt.datetime.now(dt.UTC)
        end = when.timestamp()
        settings = self.config.settings
        series = self.prometheus.query_range(
            fb_selector(FB_USED, self.config.namespace),
            start=end - settings.window_seconds,
            end=end,
            step=self.config.step_seconds,
        )
        granted = self._granted(end)
        report = PassReport(series=len(series))
        resolver = self.resolver_factory()
        usages: dict[tuple[Owner, str], ContainerUsage] = {}
        seen: set[tuple[str, str, str, str, str]] = set()
        for s in series:
            self._add(s, granted, seen, resolver, usages, report)
        for (owner, container), usage in usages.items():
            usage.restarts = _restarts(resolver, owner, container, usage.pods)
        recs, skipped = recommend_all(((o, c, u) for (o, c), u in sorted(usages.items())), settings)
        for skip in skipped:
            self._skip(report, skip)
        for owner, containers in recs.items():
            why = invalid_name("pod", owner.object_name)  # the object's name: a DNS-1123 subdomain, like a pod's
            if why is not None:
                where = f"{owner.namespace}/{owner.kind}/{owner.name[:64]}"
                self._skip(report, Skipped(where, "", f"no object name ({why})"))
                continue
            conditions = [
                condition("Ready", True, "Recommended", f"{len(containers)} container(s) sized from use", when),
                condition("PrometheusReachable", True, "Queried", f"{self.prometheus.url} answered", when),
            ]
            obj = recommendation_object(owner, containers, conditions, when)
            report.objects.append(obj)
            result = "dry_run" if self.config.dry_run or self.store is None else self.store.apply(obj)
            report.writes[result] = report.writes.get(result, 0) + 1
            self.metrics.writes.labels(result).inc()
        self.metrics.recommendations.set(len(report.objects))
        return report

    def _add(
        self,
        s: Series,
        granted: dict[tuple[str, str, str, str, str], float],
        seen: set[tuple[str, str, str, str, str]],
        resolver: OwnerResolver,
        usages: dict[tuple[Owner, str], ContainerUsage],
        report: PassReport,
    ) -> None:
        ident = series_identity(s.labels)
        if isinstance(ident, DeviceSeries) and not self._in_scope(ident):
            return  # a series of another namespace that the selector's superset brought along
        if isinstance(ident, DeviceSeries) and _key(ident) in seen:
            # the same device scraped twice (two jobs or exporters): counted once
            ident = Rejected("duplicate", f"{ident.namespace}/{ident.pod} {ident.container} on {ident.device} again")
        if isinstance(ident, Rejected):
            report.dropped_series[ident.reason] = report.dropped_series.get(ident.reason, 0) + 1
            examples = report.dropped_examples.setdefault(ident.reason, [])
            if len(examples) < 3:
                examples.append(ident.detail)
            self.metrics.dropped_series.labels(ident.reason).inc()
            log.warning("series %s dropped: %s", _short(s.labels), ident.detail)
            return
        seen.add(_key(ident))
        owner = resolver.owner_of(ident.namespace, ident.pod)
        if isinstance(owner, str):
            self._skip(report, Skipped(f"{ident.namespace}/{ident.pod}", ident.container, owner))
            return
        usage = usages.setdefault((owner, ident.container), ContainerUsage())
        usage.add(
            s.values,
            pod=ident.pod,
            granted_mib=granted.get(_key(ident), 0.0),
            model_name=ident.model_name,
            mig_profile=ident.mig_profile,
            pressure_ratio=self.config.settings.pressure_ratio,
            keep_samples=self.config.settings.quantile is not None,
        )

    def _skip(self, report: PassReport, skip: Skipped) -> None:
        report.skipped.append(skip)
        self.metrics.skipped.labels(skip.reason.split(" (")[0]).inc()

    # -- the loop -------------------------------------------------------------------------------------------
    def run_pass(self) -> PassReport | None:
        """One pass with its metrics and health; the error is logged and kept, never raised."""
        started = time.monotonic()
        try:
            report = self.run_once()
        except (PrometheusError, ApiServerError) as exc:
            kind = f"prometheus_{exc.kind}" if isinstance(exc, PrometheusError) else "apiserver"
            self.metrics.errors.labels(kind).inc()
            self.metrics.runs.labels("failure").inc()
            self.health.failed(str(exc))
            log.error("recommendation pass failed (%s): %s", kind, exc)
            if isinstance(exc, PrometheusError) and self.store is not None and not self.config.dry_run:
                self._say_unreachable(str(exc))
            return None
        finally:
            self.metrics.pass_duration.observe(time.monotonic() - started)
        self.metrics.runs.labels("success").inc()
        self.metrics.last_success.set(time.time())
        self.health.ok()
        return report

    def _say_unreachable(self, error: str) -> None:
        assert self.store is not None
        cond = condition("PrometheusReachable", False, "QueryFailed", error, dt.datetime.now(dt.UTC))
        try:
            self.store.mark_all(self.config.namespace, cond)
        except ApiServerError as exc:
            self.metrics.errors.labels("apiserver").inc()
            log.error("could not mark recommendations: %s", exc)

    def run_forever(
        self,
        stop: threading.Event,
        *,
        interval: float,
        retry_initial: float = 10.0,
        on_pass: Callable[[PassReport | None, str | None], None] | None = None,
    ) -> None:
        """Passes every `interval` seconds until `stop` is set; after a failure the next try comes after
        `retry_initial`, doubling each time up to `interval`."""
        delay_after_failure = retry_initial
        while not stop.is_set():
            report = self.run_pass()
            if on_pass is not None:
                on_pass(report, self.health.last_error)
            if report is None:
                wait = min(interval, delay_after_failure)
                delay_after_failure = min(interval, delay_after_failure * 2)
            else:
                wait, delay_after_failure = interval, retry_initial
            stop.wait(wait)


def _key(ident: DeviceSeries) -> tuple[str, str, str, str, str]:
    return (ident.namespace, ident.pod, ident.container, ident.device, ident.mig_instance)


def _short(labels: dict[str, str]) -> str:
    return "{" + ",".join(f"{k}={v!r}" for k, v in sorted(labels.items())[:8]) + "}"


def _restarts(resolver: OwnerResolver, owner: Owner, container: str, pods: set[str]) -> int:
    """Restarts of `container` in the owner's pods that are still there (from their status)."""
    live = resolver.pods(owner.namespace)
    total = 0
    for name in pods:
        pod = live.get(name)
        for cs in ((pod or {}).get("status") or {}).get("containerStatuses") or []:
            if cs.get("name") == container:
                total += int(cs.get("restartCount") or 0)
    return total


def serve_health(
    health: Health, metrics: RecommenderMetrics, host: str = "0.0.0.0", port: int = 8080
) -> http.server.ThreadingHTTPServer:
    """`/healthz` (the process answers), `/readyz` (the last pass succeeded) and `/metrics`, on a daemon thread;
    call `.shutdown()` to stop it. Port 0 picks a free one (`server.server_address`)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            path = self.path.split("?")[0]
            if path == "/metrics":
                self._answer(200, generate_latest(metrics.registry), CONTENT_TYPE_LATEST)
            elif path == "/readyz":
                ok, why = health.ready()
                self._answer(200 if ok else 503, (why + "\n").encode())
            elif path == "/healthz":
                self._answer(200, b"ok\n")
            else:
                self._answer(404, b"not found\n")

        def _answer(self, status: int, body: bytes, content_type: str = "text/plain; charset=utf-8") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the stdlib's name)
            del format, args

    server = http.server.ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="recommender-health", daemon=True).start()
    return server
