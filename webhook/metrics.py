"""Prometheus metrics of the webhook, on a registry of its own so that tests and several apps do not collide."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from webhook.gate import ConnectionGate
from webhook.review_sources import ReviewSources

__all__ = ["WebhookMetrics"]

_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


@dataclass
class WebhookMetrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.reviews = Counter(
            "gpudra_admission_reviews",
            "AdmissionReviews answered, by endpoint, operation, policy and outcome.",
            ["endpoint", "operation", "policy", "outcome"],
            registry=r,
        )
        self.latency = Histogram(
            "gpudra_admission_review_duration_seconds",
            "Time to answer one AdmissionReview, by endpoint.",
            ["endpoint"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.decision_wait = Histogram(
            "gpudra_decision_queue_wait_seconds",
            "Time a review waited for a decision thread (all busy: slow decisions, or threads held by API calls).",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.bad_requests = Counter(
            "gpudra_admission_bad_requests", "Requests rejected as malformed, by HTTP status.", ["status"], registry=r
        )
        self.policy_errors = Counter(
            "gpudra_policy_evaluation_errors", "Policy evaluation errors, by policy.", ["policy"], registry=r
        )
        self.templates_created = Counter(
            "gpudra_resourceclaimtemplates_created",
            "ResourceClaimTemplates created (or found identical), by result.",
            ["result"],
            registry=r,
        )
        self.cert_expiry = Gauge(
            "gpudra_serving_certificate_expiry_timestamp_seconds",
            "Unix time at which the serving certificate expires.",
            registry=r,
        )
        self.policy_reloads = Counter(
            "gpudra_policy_reloads", "Policy set reload attempts, by result (success|failure).", ["result"], registry=r
        )
        self.policies_loaded = Gauge("gpudra_policies_loaded", "Policies in the serving set.", registry=r)
        self.cert_reloads = Counter(
            "gpudra_certificate_reloads", "Serving certificate reloads, by result.", ["result"], registry=r
        )
        # The recommendation cache (webhook.sizing_cache): zero and untouched when it is off.
        self.sizing_owners = Gauge(
            "gpudra_sizing_recommendations", "Workload owners with a GPUSizingRecommendation in the cache.", registry=r
        )
        self.sizing_containers = Gauge(
            "gpudra_sizing_recommendation_containers", "Containers with a usable recommendation in the cache.",
            registry=r,
        )  # fmt: skip
        self.sizing_last_sync = Gauge(
            "gpudra_sizing_cache_last_sync_timestamp_seconds",
            "Unix time of the recommendation cache's last successful list or watch event.",
            registry=r,
        )
        self.sizing_restarts = Counter(
            "gpudra_sizing_cache_watch_restarts",
            "Recommendation watches ended and relisted, by reason (closed|expired|error).",
            ["reason"],
            registry=r,
        )
        self.sizing_errors = Counter(
            "gpudra_sizing_cache_errors", "Recommendation list or watch failures, by operation.", ["operation"],
            registry=r,
        )  # fmt: skip
        self.sizing_skipped = Counter(
            "gpudra_sizing_recommendations_skipped",
            "Malformed recommendations (or container entries) skipped, by reason.",
            ["reason"],
            registry=r,
        )
        self.sizing_lookups = Counter(
            "gpudra_sizing_lookups", "Recommendation cache lookups on the admission path, by result.", ["result"],
            registry=r,
        )  # fmt: skip
        # KEP-5004 coexistence (policyengine.scheduler_path, kubeapi.deviceclasses).
        self.left_to_scheduler = Counter(
            "gpudra_admission_left_to_scheduler",
            "GPU pods admitted unchanged because kube-scheduler builds the same whole-device claim itself (a "
            "DeviceClass maps their extended resource, KEP-5004), by policy and DeviceClass.",
            ["policy", "device_class"],
            registry=r,
        )
        self.extended_resource_mapping = Gauge(
            "gpudra_extended_resource_mapping",
            "1 for each legacy GPU resource (nvidia.com/gpu, nvidia.com/mig-*) a DeviceClass maps (KEP-5004), by "
            "resource and DeviceClass.",
            ["resource", "device_class"],
            registry=r,
        )
        self.deviceclass_cache_events = Counter(
            "gpudra_deviceclass_cache_events",
            "DeviceClass cache lists, mapping changes, failures, watch restarts and lists not served, by event "
            "(list|change|error|restart|absent).",
            ["event"],
            registry=r,
        )
        # The cluster's device shapes (kubeapi.deviceshapes, dra.shapes).
        self.device_shape_cache_events = Counter(
            "gpudra_device_shape_cache_events",
            "ResourceSlice and DeviceClass cache lists, new generations of shapes, failures, watch restarts and lists "
            "not served, by event (list|change|error|restart|absent).",
            ["event"],
            registry=r,
        )
        self.device_shapes = Gauge(
            "gpudra_device_shapes",
            "The cluster's device shapes as the webhook sees them, by what is counted (shapes: distinct node shapes "
            "kept; nodes: nodes folded into them; overflow: nodes past the cap; pending: incomplete pools).",
            ["what"],
            registry=r,
        )

    def watch_review_sources(self, sources: ReviewSources) -> None:
        """Expose the review-source check's verdicts (webhook.review_sources), read at scrape time."""
        self.registry.register(_ReviewSourcesCollector(sources))

    def watch_gate(self, gate: ConnectionGate) -> None:
        """Expose the connection gate's table and its refusals (read at scrape time: nothing on the hot path)."""
        self.registry.register(_GateCollector(gate))


class _GateCollector(Collector):
    def __init__(self, gate: ConnectionGate) -> None:
        self._gate = gate

    def collect(self) -> Iterator[Metric]:
        gate, stats = self._gate, self._gate.stats
        yield GaugeMetricFamily("gpudra_connections_open", "Connections open in this process.", value=len(gate))
        yield CounterMetricFamily(
            "gpudra_connections_opened",
            "Connections let in by the gate since the process started (each one a TLS handshake when serving TLS).",
            value=stats.opened,
        )
        refused = CounterMetricFamily(
            "gpudra_connections_refused",
            "Connections reset at accept, by reason (per-source: an untrusted source's cap; open-rate: its rate of "
            "new connections; full: no room and nothing to evict; tenant-pod: a source whose review was refused as "
            "a tenant pod's, while that refusal is remembered).",
            labels=["reason"],
        )
        refused.add_metric(["per-source"], stats.refused_per_source)
        refused.add_metric(["open-rate"], stats.refused_open_rate)
        refused.add_metric(["full"], stats.refused_full)
        refused.add_metric(["tenant-pod"], stats.refused_tenant_pod)
        yield refused
        evicted = CounterMetricFamily(
            "gpudra_connections_evicted",
            "Connections reset to make room for a new one, by kind (untrusted-idle, untrusted-busy, trusted-idle).",
            labels=["kind"],
        )
        for kind in ("untrusted-idle", "untrusted-busy", "trusted-idle"):
            evicted.add_metric([kind], stats.evicted.get(kind, 0))
        yield evicted


class _ReviewSourcesCollector(Collector):
    def __init__(self, sources: ReviewSources) -> None:
        self._sources = sources

    def collect(self) -> Iterator[Metric]:
        checked = CounterMetricFamily(
            "gpudra_review_sources",
            "Review sources looked up, by verdict (allowed: not a tenant pod's address; refused: a tenant pod's, "
            "answered 403; unchecked: the lookup failed and the source was answered as before).",
            labels=["verdict"],
        )
        for verdict, count in self._sources.counts.items():
            checked.add_metric([verdict], count)
        yield checked
