"""Prometheus metrics of the recommender (`gpudra_recommender_*`), on a registry of its own."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["RecommenderMetrics"]


@dataclass
class RecommenderMetrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.runs = Counter("gpudra_recommender_runs", "Recommendation passes, by result.", ["result"], registry=r)
        self.errors = Counter(
            "gpudra_recommender_errors",
            "Failed passes and failed calls, by kind (prometheus_<kind>, apiserver).",
            ["kind"],
            registry=r,
        )
        self.recommendations = Gauge(
            "gpudra_recommender_recommendations", "GPUSizingRecommendations the last pass produced.", registry=r
        )
        self.writes = Counter(
            "gpudra_recommender_writes",
            "GPUSizingRecommendation writes, by result (created, updated, unchanged, dry_run).",
            ["result"],
            registry=r,
        )
        self.skipped = Counter(
            "gpudra_recommender_skipped",
            "Containers or series left without a recommendation, by reason.",
            ["reason"],
            registry=r,
        )
        self.dropped_samples = Counter(
            "gpudra_recommender_dropped_samples",
            "Samples Prometheus returned that were not used, by reason (nan, inf, negative, unparseable).",
            ["reason"],
            registry=r,
        )
        self.dropped_series = Counter(
            "gpudra_recommender_dropped_series",
            "Series Prometheus returned that were not used, by reason (no pod label, duplicate, ...).",
            ["reason"],
            registry=r,
        )
        self.last_success = Gauge(
            "gpudra_recommender_last_success_timestamp_seconds", "Unix time of the last successful pass.", registry=r
        )
        self.pass_duration = Histogram(
            "gpudra_recommender_pass_duration_seconds",
            "Time of one recommendation pass.",
            buckets=(0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600),
            registry=r,
        )
