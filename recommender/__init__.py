"""The recommender behind `gpudra recommend`: observed GPU memory from the NVIDIA DCGM exporter's series in
Prometheus, grouped by workload owner through the API server, stored as GPUSizingRecommendation objects.

Never on the admission path: the webhook reads the objects through its own watch cache.
"""

from __future__ import annotations

from .answer import Answer, AnswerError, AnswerSeries, read_answer
from .compute import (
    ContainerRecommendation,
    ContainerUsage,
    Owner,
    Settings,
    Skipped,
    capped_to_device,
    fitting_device,
    format_bytes,
    parse_duration,
    parse_statistic,
    peak_of,
    recommend,
    recommend_all,
    vram_for,
)
from .controller import Health, PassReport, Recommender, RecommenderConfig, serve_health
from .dcgm import FB_USED, MIB, DeviceSeries, Rejected, fb_selector, invalid_name, series_identity
from .metrics import RecommenderMetrics
from .owners import SUPPORTED_KINDS, KubeObjects, ObjectReader, OwnerResolver
from .prometheus import PrometheusClient, PrometheusError, Series
from .store import GROUP, KIND, PLURAL, VERSION, RecommendationStore, recommendation_object

__all__ = [
    "FB_USED",
    "GROUP",
    "KIND",
    "MIB",
    "PLURAL",
    "SUPPORTED_KINDS",
    "VERSION",
    "Answer",
    "AnswerError",
    "AnswerSeries",
    "ContainerRecommendation",
    "ContainerUsage",
    "DeviceSeries",
    "Health",
    "KubeObjects",
    "ObjectReader",
    "Owner",
    "OwnerResolver",
    "PassReport",
    "PrometheusClient",
    "PrometheusError",
    "RecommendationStore",
    "Rejected",
    "Recommender",
    "RecommenderConfig",
    "RecommenderMetrics",
    "Series",
    "Settings",
    "Skipped",
    "capped_to_device",
    "fb_selector",
    "fitting_device",
    "format_bytes",
    "invalid_name",
    "parse_duration",
    "parse_statistic",
    "peak_of",
    "recommend",
    "recommend_all",
    "read_answer",
    "recommendation_object",
    "serve_health",
    "series_identity",
    "vram_for",
]
