"""What the webhook reads about the cluster besides pods and namespaces, wired for `gpudra serve`: the
DeviceClasses' KEP-5004 mapping (a list+watch cache, kubeapi.deviceclasses) and the API server's minor version (read
once at start, kubeapi.version). Both only refine decisions: without them every GPU pod is translated, with no
version warnings, as before."""

from __future__ import annotations

from typing import Any

from kubeapi import ListWatchSource
from kubeapi.deviceclasses import DeviceClassCache, KubeDeviceClassSource
from kubeapi.version import server_minor
from policyengine import extended_resource_pairs
from webhook.metrics import WebhookMetrics

__all__ = ["DeviceClassCache", "device_class_cache", "server_minor"]


def device_class_cache(
    api_client: Any, metrics: WebhookMetrics, *, timeout: float = 10.0, source: ListWatchSource | None = None
) -> DeviceClassCache:
    """The DeviceClass cache over `api_client` (its own client: the watch holds a connection for minutes), or over
    `source` when given; its events and mapping counted in `metrics` (gpudra_deviceclass_cache_events,
    gpudra_extended_resource_mapping)."""
    cache: DeviceClassCache | None = None
    shown: list[tuple[str, str]] = []  # the pairs the gauge holds

    def on_event(event: str) -> None:
        metrics.deviceclass_cache_events.labels(event).inc()
        if cache is not None:
            pairs = extended_resource_pairs(cache.mapping())
            if list(pairs) != shown:
                metrics.extended_resource_mapping.clear()
                for resource, device_class in pairs:
                    metrics.extended_resource_mapping.labels(resource, device_class).set(1)
                shown[:] = pairs

    cache = DeviceClassCache(source or KubeDeviceClassSource(api_client, timeout=timeout), on_event=on_event)
    return cache
