"""What the webhook reads about the cluster besides pods and namespaces, wired for `gpudra serve`: the
DeviceClasses' KEP-5004 mapping (a list+watch cache, kubeapi.deviceclasses), the API server's minor version (read
once at start, kubeapi.version) and the cluster's device shapes (ResourceSlices and DeviceClasses, a list+watch
cache, kubeapi.deviceshapes). All only refine decisions: without them every GPU pod is translated, with no version
warnings and no claim checked against devices, as before."""

from __future__ import annotations

from typing import Any

from kubeapi import ListWatchSource
from kubeapi.deviceclasses import DeviceClassCache, KubeDeviceClassSource
from kubeapi.deviceshapes import DeviceShapeCache, KubeResourceSliceSource
from kubeapi.version import server_minor
from policyengine import extended_resource_pairs
from webhook.metrics import WebhookMetrics

__all__ = ["DeviceClassCache", "DeviceShapeCache", "device_class_cache", "device_shape_cache", "server_minor"]


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


def device_shape_cache(
    api_client: Any,
    metrics: WebhookMetrics | None = None,
    *,
    timeout: float = 10.0,
    slices: ListWatchSource | None = None,
    classes: ListWatchSource | None = None,
) -> DeviceShapeCache:
    """The device-shape cache over `api_client` (its own client: two watches hold connections for minutes), or over
    `slices` and `classes` when given; its events and shapes counted in `metrics` when given
    (gpudra_device_shape_cache_events, gpudra_device_shapes). Not started: the caller starts it and asks its
    `readiness()` before reporting ready."""
    cache: DeviceShapeCache | None = None

    def on_event(event: str) -> None:
        if metrics is None:
            return
        metrics.device_shape_cache_events.labels(event).inc()
        if cache is not None and event == "change":
            shapes = cache.shapes()
            for what, value in (
                ("shapes", len(shapes.shapes)),
                ("nodes", shapes.nodes),
                ("overflow", shapes.overflow),
                ("pending", shapes.pending),
            ):
                metrics.device_shapes.labels(what).set(value)

    cache = DeviceShapeCache(
        slices or KubeResourceSliceSource(api_client, timeout=timeout),
        classes or KubeDeviceClassSource(api_client, timeout=timeout),
        on_event=on_event,
    )
    return cache
